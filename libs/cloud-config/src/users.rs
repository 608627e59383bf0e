//! users and groups: the accounts instance-setup creates, their keys,
//! sudo rules and passwords, and the groups with their members.

use std::collections::BTreeMap;

use csis_model::naming::{gecos_problem, sudo_rule_problem};
use csis_model::{DocPath, Value};

use crate::names::name_problem;
use crate::values::{bool_of, scalar_text};
use crate::{Checker, Severity, USER_KEYS, USER_KEYS_IGNORED};

impl Checker {
    /// The accounts; returns how many land.
    pub(crate) fn users(&mut self, v: &Value, path: &DocPath) -> usize {
        let Some(items) = self.list(v, path, "users") else {
            return 0;
        };
        let mut landed = 0;
        for (i, item) in items.iter().enumerate() {
            if self.user(item, &path.index(i)) {
                landed += 1;
            }
        }
        landed
    }

    pub(crate) fn user(&mut self, item: &Value, path: &DocPath) -> bool {
        let entry = match item {
            Value::Map(m) => m,
            Value::Scalar { text, .. } if text == "default" => {
                self.report(
                    path,
                    Severity::Skipped,
                    "users: the entry 'default' is skipped: there is no baked-in default user for it to refer to".into(),
                );
                return false;
            }
            other => {
                self.report(
                    path,
                    Severity::Refused,
                    format!(
                        "users: an account must be a mapping, not a {}; the entry is refused",
                        other.kind_name()
                    ),
                );
                return false;
            }
        };
        let fields: BTreeMap<String, (&String, &Value)> = entry
            .iter()
            .map(|(k, v)| (k.replace('-', "_"), (k, v)))
            .collect();
        let Some((_, name_value)) = fields.get("name") else {
            self.report(
                path,
                Severity::Refused,
                "users: an account without a name is skipped".into(),
            );
            return false;
        };
        let name = name_value.as_str().unwrap_or_default().to_string();
        let refuse = |c: &mut Checker, at: &DocPath, why: String| {
            c.report(
                at,
                Severity::Refused,
                format!("users: account '{name}': {why}; the account is refused"),
            );
        };
        if let Some(why) = name_problem(&name) {
            self.report(
                &path.key("name"),
                Severity::Refused,
                format!("users: account name '{name}' {why}; the account is skipped"),
            );
            return false;
        }
        let mut ok = true;
        for (norm, (key, value)) in &fields {
            let at = path.key(key);
            if USER_KEYS_IGNORED.contains(&norm.as_str()) {
                self.report_key(
                    &at,
                    Severity::Skipped,
                    format!("users: account '{name}': '{key}' is accepted and ignored (a systemd user record has nothing to map it to)"),
                );
                continue;
            }
            if !USER_KEYS.contains(&norm.as_str()) {
                self.report_key(
                    &at,
                    Severity::Refused,
                    format!("users: account '{name}': unknown key '{key}'; the account is refused"),
                );
                ok = false;
                continue;
            }
            match norm.as_str() {
                "uid" | "gid" => {
                    if let Some(why) = id_problem(value) {
                        refuse(self, &at, format!("{key} {why}"));
                        ok = false;
                    }
                }
                "lock_passwd" | "system" if bool_of(value).is_none() => {
                    refuse(
                        self,
                        &at,
                        format!(
                            "{key} must be a boolean (true/false, yes/no, on/off), not '{}'",
                            scalar_text(value)
                        ),
                    );
                    ok = false;
                }
                // The value is never echoed: it may be a plaintext
                // password.
                "passwd" if !looks_like_password_hash(value) => {
                    refuse(
                        self,
                        &at,
                        format!(
                            "{key} must be a password hash (crypt(5), such as $6$<salt>$<hash> from mkpasswd), never a plaintext password"
                        ),
                    );
                    ok = false;
                }
                "primary_group" => {
                    let g = scalar_text(value);
                    if let Some(why) = name_problem(&g) {
                        self.report(
                            &at,
                            Severity::Skipped,
                            format!("users: account '{name}': primary-group '{g}' {why}; it is dropped and the account kept"),
                        );
                    }
                }
                "groups" => {
                    let names: Vec<String> = match value {
                        Value::Scalar { text, .. } => {
                            text.split(',').map(|s| s.trim().to_string()).collect()
                        }
                        Value::Seq(items) => items.iter().map(scalar_text).collect(),
                        _ => Vec::new(),
                    };
                    for g in names.iter().filter(|g| !g.is_empty()) {
                        if let Some(why) = name_problem(g) {
                            self.report(
                                &at,
                                Severity::Skipped,
                                format!("users: account '{name}': group '{g}' {why}; it is dropped and the account kept"),
                            );
                        }
                    }
                }
                // useradd refuses the whole account for a gecos it
                // cannot write into /etc/passwd.
                "gecos" => {
                    if let Some(why) = gecos_problem("gecos", &scalar_text(value)) {
                        refuse(self, &at, why);
                        ok = false;
                    }
                }
                "sudo" => {
                    if let Some(rules) = self.lines(value, &at, "sudo") {
                        if rules.iter().any(|r| r.contains('\0')) {
                            refuse(self, &at, "a sudo rule holds a NUL byte".into());
                            ok = false;
                        } else if let Some(why) = rules.iter().find_map(|r| sudo_rule_problem(r)) {
                            refuse(self, &at, why);
                            ok = false;
                        } else if name.contains('.') && !rules.is_empty() {
                            self.report(
                                &at,
                                Severity::Skipped,
                                format!("users: account '{name}': a name with a dot gets no sudo grant (sudo skips a drop-in whose file name holds a dot)"),
                            );
                        }
                    }
                }
                "ssh_authorized_keys" => {
                    self.lines(value, &at, "ssh-authorized-keys");
                }
                _ => {}
            }
        }
        ok
    }

    pub(crate) fn groups(&mut self, v: &Value, path: &DocPath) {
        let Some(items) = self.list(v, path, "groups") else {
            return;
        };
        for (i, item) in items.iter().enumerate() {
            let at = path.index(i);
            let (name, members) = match item {
                Value::Scalar { text, .. } => (text.clone(), None),
                Value::Map(m) if m.len() == 1 => match m.iter().next() {
                    Some((k, v)) => (k.clone(), Some(v)),
                    None => continue,
                },
                other => {
                    self.report(
                        &at,
                        Severity::Refused,
                        format!("groups: an entry must be a name or a single-key mapping of a name to its members, not a {}; it is skipped", other.kind_name()),
                    );
                    continue;
                }
            };
            if let Some(why) = name_problem(&name) {
                self.report(
                    &at,
                    Severity::Refused,
                    format!("groups: group name '{name}' {why}; the group is skipped"),
                );
                continue;
            }
            let members: Vec<String> = match members {
                Some(Value::Seq(ms)) => ms.iter().map(scalar_text).collect(),
                Some(Value::Scalar { text, .. }) => {
                    text.split(',').map(|s| s.trim().to_string()).collect()
                }
                _ => Vec::new(),
            };
            for m in &members {
                if let Some(why) = name_problem(m) {
                    self.report(
                        &at.key(&name),
                        Severity::Skipped,
                        format!(
                            "groups: group '{name}': member '{m}' {why}; the member is skipped"
                        ),
                    );
                }
            }
        }
    }
}

/// Whether a passwd value is a crypt(5) hash in the modular form
/// `$<id>$<fields>$...` (`$6$`, `$y$`, `$2b$`, ...), possibly locked by
/// leading `!`s. Anything else (a bare word, an empty string, a
/// traditional 13-character DES hash, which cannot be told from a
/// plaintext password) is taken for a plaintext password.
pub(crate) fn looks_like_password_hash(v: &Value) -> bool {
    let Value::Scalar { text, .. } = v else {
        return false;
    };
    let Some(rest) = text.trim_start_matches('!').strip_prefix('$') else {
        return false;
    };
    let fields: Vec<&str> = rest.split('$').collect();
    fields.len() >= 3
        && fields.iter().all(|f| {
            !f.is_empty()
                && f.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '=' | ','))
        })
        && fields[0]
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '=' | ','))
}

/// A uid or gid: an integer or a numeric string, 0 to 4294967294, never
/// 65535.
pub(crate) fn id_problem(v: &Value) -> Option<String> {
    let text = scalar_text(v);
    match text.trim().parse::<u64>() {
        Err(_) => Some(format!("'{text}' is not a number")),
        Ok(65535) => Some("65535 is refused (systemd refuses it, and a refused record fails every account in the seed)".into()),
        Ok(n) if n > 4_294_967_294 => Some(format!("{n} is outside 0 to 4294967294")),
        Ok(_) => None,
    }
}
