//! Reading a user-data document as instance-setup(8) reads it (spec 004,
//! cloud-config(5)): what it refuses, what it reports and skips, what it
//! ignores. csis runs this over the user-data it emits and over any file
//! given to `csis cloud-config check`.
//!
//! The seed is untrusted: names and paths from it become file names,
//! fields of config lines and command arguments, so their character sets
//! are narrow on purpose.

use std::collections::{BTreeMap, BTreeSet};

use csis_model::{DocPath, Map, Value};

use csis_yaml::{Positions, Span, parse_first};

/// How much a finding costs the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The document, or one entry of it, is not applied.
    Refused,
    /// Reported and skipped or ignored; the rest lands. `--offline`
    /// refuses these too: nothing is ignored there.
    Skipped,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub line: usize,
    pub col: usize,
    pub severity: Severity,
    pub message: String,
}

/// The limit of one tmpfiles.extra value (a file's content, a trust
/// anchor).
pub const MAX_CARRIED: usize = 4095;

const TOP_KEYS: [&str; 7] = [
    "users",
    "groups",
    "ssh_authorized_keys",
    "hostname",
    "fqdn",
    "repos",
    "write_files",
];
const NOT_IMPLEMENTED: [&str; 7] = [
    "envar",
    "service",
    "runcmd",
    "fbootcmd",
    "packages",
    "package_upgrade",
    "wait-for-network",
];
const USER_KEYS: [&str; 13] = [
    "name",
    "gecos",
    "homedir",
    "shell",
    "primary_group",
    "groups",
    "uid",
    "gid",
    "passwd",
    "lock_passwd",
    "ssh_authorized_keys",
    "sudo",
    "system",
];
const USER_KEYS_IGNORED: [&str; 7] = [
    "no_create_home",
    "no_user_group",
    "no_log_init",
    "inactive",
    "expiredate",
    "ssh_import_id",
    "selinux_user",
];
const REPO_KEYS: [&str; 8] = [
    "name", "url", "path", "tuf_root", "priority", "enabled", "consumes", "stream",
];
const FILE_KEYS: [&str; 4] = ["path", "content", "permissions", "owner"];

/// Every finding of one user-data document, in document order.
pub fn check(bytes: &[u8], offline: bool) -> Vec<Finding> {
    let mut c = Checker {
        positions: Positions::default(),
        out: Vec::new(),
        offline,
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        c.at(
            1,
            1,
            Severity::Refused,
            "user-data is not UTF-8; the whole document is refused".into(),
        );
        return c.out;
    };
    if text.starts_with("#!") {
        c.at(
            1,
            1,
            Severity::Skipped,
            "user-data starting with #! is a script; scripts are not implemented, so nothing happens"
                .into(),
        );
        return c.out;
    }
    let (value, positions, later) = match parse_first(text) {
        Ok(parsed) => parsed,
        Err(e) => {
            let why = if e.message.contains("anchors") || e.message.contains("aliases") {
                "YAML anchors and aliases are refused: nested aliases expand beyond memory, and cloud-config has no use for them".to_string()
            } else {
                e.message
            };
            c.at(
                e.span.line,
                e.span.col,
                Severity::Refused,
                format!("{why}; the whole document is refused"),
            );
            return c.out;
        }
    };
    c.positions = positions;
    if let Some(span) = later {
        c.at(
            span.line,
            span.col,
            Severity::Skipped,
            "a second YAML document: everything after the first document is ignored".into(),
        );
    }
    match &value {
        Value::Null => {}
        Value::Map(top) => c.document(top),
        other => c.report(
            &DocPath::root(),
            Severity::Refused,
            format!(
                "the top level is a {}, not a mapping; the whole document is refused",
                other.kind_name()
            ),
        ),
    }
    c.out.sort_by_key(|f| (f.line, f.col));
    c.out
}

struct Checker {
    positions: Positions,
    out: Vec<Finding>,
    offline: bool,
}

impl Checker {
    fn at(&mut self, line: usize, col: usize, severity: Severity, message: String) {
        let severity = if self.offline {
            Severity::Refused
        } else {
            severity
        };
        self.out.push(Finding {
            line,
            col,
            severity,
            message,
        });
    }

    /// A finding at a node's value.
    fn report(&mut self, path: &DocPath, severity: Severity, message: String) {
        self.report_at(path, false, severity, message);
    }

    /// A finding at the key that holds a node.
    fn report_key(&mut self, path: &DocPath, severity: Severity, message: String) {
        self.report_at(path, true, severity, message);
    }

    fn report_at(&mut self, path: &DocPath, key: bool, severity: Severity, message: String) {
        let (line, col) = self
            .positions
            .nearest(path, key)
            .map_or((1, 1), |s: Span| (s.line, s.col));
        self.at(line, col, severity, message);
    }

    /// A top-level key's list; anything else is reported and skipped.
    fn list<'v>(&mut self, v: &'v Value, path: &DocPath, what: &str) -> Option<&'v [Value]> {
        if v.as_seq().is_none() {
            self.report(
                path,
                Severity::Skipped,
                format!(
                    "{what} must be a list, not a {}; it is skipped",
                    v.kind_name()
                ),
            );
        }
        v.as_seq()
    }

    fn document(&mut self, top: &Map) {
        let root = DocPath::root();
        for key in top.keys() {
            let path = root.key(key);
            if NOT_IMPLEMENTED.contains(&key.as_str()) {
                self.report_key(
                    &path,
                    Severity::Skipped,
                    format!("'{key}' is recognised but not implemented yet; it is skipped"),
                );
            } else if !TOP_KEYS.contains(&key.as_str()) {
                self.report_key(
                    &path,
                    Severity::Skipped,
                    format!("unknown key '{key}'; it is skipped"),
                );
            }
        }
        let users = match top.get("users") {
            Some(v) => self.users(v, &root.key("users")),
            None => 0,
        };
        if let Some(v) = top.get("groups") {
            self.groups(v, &root.key("groups"));
        }
        if let Some(v) = top.get("ssh_authorized_keys") {
            let path = root.key("ssh_authorized_keys");
            if self.lines(v, &path, "ssh_authorized_keys").is_some() && users == 0 {
                self.report(
                    &path,
                    Severity::Skipped,
                    "ssh_authorized_keys go to the first account in users, and there is none; the keys are not installed".into(),
                );
            }
        }
        self.hostname(top);
        if let Some(v) = top.get("write_files") {
            self.write_files(v, &root.key("write_files"));
        }
        if let Some(v) = top.get("repos") {
            self.repos(v, &root.key("repos"));
        }
    }

    /// A list of lines, or a single line (never split on commas).
    fn lines(&mut self, v: &Value, path: &DocPath, what: &str) -> Option<Vec<String>> {
        match v {
            Value::Scalar { text, .. } => Some(vec![text.clone()]),
            Value::Seq(items) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(s) => out.push(s.to_string()),
                        None => {
                            self.report(
                                &path.index(i),
                                Severity::Skipped,
                                format!(
                                    "{what}: an entry is a {}, not a line; it is skipped",
                                    item.kind_name()
                                ),
                            );
                        }
                    }
                }
                Some(out)
            }
            other => {
                self.report(
                    path,
                    Severity::Skipped,
                    format!(
                        "{what} must be a list of lines or one line, not a {}; it is skipped",
                        other.kind_name()
                    ),
                );
                None
            }
        }
    }

    /// The accounts; returns how many land.
    fn users(&mut self, v: &Value, path: &DocPath) -> usize {
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

    fn user(&mut self, item: &Value, path: &DocPath) -> bool {
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
                "sudo" => {
                    if let Some(rules) = self.lines(value, &at, "sudo") {
                        if rules.iter().any(|r| r.contains('\0')) {
                            refuse(self, &at, "a sudo rule holds a NUL byte".into());
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

    fn groups(&mut self, v: &Value, path: &DocPath) {
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

    /// hostname and fqdn mean the same thing; the first valid one wins.
    fn hostname(&mut self, top: &Map) {
        for key in ["hostname", "fqdn"] {
            let Some(v) = top.get(key) else { continue };
            let h = scalar_text(v);
            if let Some(why) = hostname_problem(&h) {
                self.report(
                    &DocPath::root().key(key),
                    Severity::Skipped,
                    format!("{key} '{h}' {why}; it is skipped"),
                );
            }
        }
    }

    fn write_files(&mut self, v: &Value, path: &DocPath) {
        let Some(items) = self.list(v, path, "write_files") else {
            return;
        };
        for (i, item) in items.iter().enumerate() {
            let at = path.index(i);
            let Some(entry) = item.as_map() else {
                self.report(
                    &at,
                    Severity::Refused,
                    format!(
                        "write_files: an entry must be a mapping, not a {}; it is skipped",
                        item.kind_name()
                    ),
                );
                continue;
            };
            let shown = entry.get("path").map(scalar_text).unwrap_or_default();
            let refuse = |c: &mut Checker, p: &DocPath, why: String| {
                c.report(
                    p,
                    Severity::Refused,
                    format!("write_files: '{shown}': {why}; the file is skipped"),
                );
            };
            for key in entry.keys() {
                let why = if ["encoding", "append", "defer"].contains(&key.as_str()) {
                    format!("'{key}' changes what ends up in the file and is refused")
                } else if !FILE_KEYS.contains(&key.as_str()) {
                    format!("unknown key '{key}'")
                } else {
                    continue;
                };
                self.report_key(
                    &at.key(key),
                    Severity::Refused,
                    format!("write_files: '{shown}': {why}; the file is skipped"),
                );
            }
            match entry.get("path") {
                None => refuse(self, &at, "path is required".into()),
                Some(p) => {
                    if let Some(why) = path_problem(&scalar_text(p)) {
                        refuse(self, &at.key("path"), why.into());
                    }
                }
            }
            if let Some(content) = entry.get("content") {
                let text = scalar_text(content);
                if text.contains('\0') {
                    refuse(
                        self,
                        &at.key("content"),
                        "the content holds a NUL byte".into(),
                    );
                } else if text.len() > MAX_CARRIED {
                    refuse(
                        self,
                        &at.key("content"),
                        format!(
                            "the content is {} bytes, over the {MAX_CARRIED} a file can carry",
                            text.len()
                        ),
                    );
                }
            }
            if let Some(p) = entry.get("permissions") {
                let ok = matches!(p, Value::Scalar { text, plain: false }
                    if (3..=4).contains(&text.len()) && text.chars().all(|c| ('0'..='7').contains(&c)));
                if !ok {
                    refuse(
                        self,
                        &at.key("permissions"),
                        format!(
                            "permissions {} must be a quoted string of three or four octal digits, such as \"0644\"",
                            shown_scalar(p)
                        ),
                    );
                }
            }
            if let Some(o) = entry.get("owner") {
                let owner = scalar_text(o);
                let (user, group) = owner.split_once(':').unwrap_or((&owner, &owner));
                if let Some(why) = name_problem(user).or_else(|| name_problem(group)) {
                    refuse(
                        self,
                        &at.key("owner"),
                        format!("owner '{owner}': a name {why}"),
                    );
                }
            }
        }
    }

    fn repos(&mut self, v: &Value, path: &DocPath) {
        let Some(items) = self.list(v, path, "repos") else {
            return;
        };
        // name -> (index, enabled, consumes); only entries that pass their
        // own checks.
        let mut good: BTreeMap<String, (usize, bool, Vec<String>)> = BTreeMap::new();
        let mut lower_seen: BTreeSet<String> = BTreeSet::new();
        let mut names: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = path.index(i);
            let Some(entry) = item.as_map() else {
                self.report(
                    &at,
                    Severity::Refused,
                    format!(
                        "repos: an entry must be a mapping, not a {}; it is skipped",
                        item.kind_name()
                    ),
                );
                names.push(String::new());
                continue;
            };
            let name = entry.get("name").map(scalar_text).unwrap_or_default();
            names.push(name.clone());
            let unknown: Vec<&String> = entry
                .keys()
                .filter(|k| !REPO_KEYS.contains(&k.as_str()))
                .collect();
            for key in &unknown {
                self.report_key(
                    &at.key(key),
                    Severity::Refused,
                    format!("repos: '{name}': unknown key '{key}'; the repository is skipped"),
                );
            }
            let mut refused = !unknown.is_empty();
            let mut refuse = |c: &mut Checker, p: &DocPath, why: String| {
                refused = true;
                c.report(
                    p,
                    Severity::Refused,
                    format!("repos: '{name}': {why}; the repository is skipped"),
                );
            };
            if entry.get("name").is_none() {
                refuse(self, &at, "name is required".into());
            } else if let Some(why) = repo_name_problem(&name) {
                refuse(self, &at.key("name"), format!("the name {why}"));
            } else if !lower_seen.insert(name.to_lowercase()) {
                refuse(
                    self,
                    &at.key("name"),
                    "another repository's name differs only in case (the file names are lowercased and would collide)".into(),
                );
            }
            match (entry.get("url"), entry.get("path")) {
                (Some(_), Some(_)) => refuse(self, &at, "url and path cannot be combined".into()),
                (None, None) => refuse(self, &at, "one of url or path is required".into()),
                (Some(_), None) if entry.get("tuf_root").is_none() => refuse(
                    self,
                    &at.key("url"),
                    "url needs tuf_root (the trust anchor's content)".into(),
                ),
                (None, Some(_)) if entry.get("tuf_root").is_some() => refuse(
                    self,
                    &at.key("tuf_root"),
                    "tuf_root with path is an error: a local repository has no trust anchor".into(),
                ),
                _ => {}
            }
            if let Some(anchor) = entry.get("tuf_root") {
                let text = scalar_text(anchor);
                if text.contains('\0') {
                    refuse(
                        self,
                        &at.key("tuf_root"),
                        "tuf_root holds a NUL byte".into(),
                    );
                } else if text.len() > MAX_CARRIED {
                    refuse(
                        self,
                        &at.key("tuf_root"),
                        format!(
                            "tuf_root is {} bytes, over the {MAX_CARRIED} a trust anchor can carry",
                            text.len()
                        ),
                    );
                }
            }
            if let Some(p) = entry.get("priority")
                && scalar_text(p).parse::<i64>().is_err()
            {
                refuse(
                    self,
                    &at.key("priority"),
                    format!("priority must be an integer, not {}", shown_scalar(p)),
                );
            }
            let enabled = match entry.get("enabled") {
                None => Some(true),
                Some(e) => bool_of(e),
            };
            if enabled.is_none() {
                refuse(
                    self,
                    &at.key("enabled"),
                    "enabled must be true or false".into(),
                );
            }
            let consumes: Vec<String> = match entry.get("consumes") {
                None => Vec::new(),
                Some(Value::Seq(cs)) => cs.iter().map(scalar_text).collect(),
                Some(other) => {
                    refuse(
                        self,
                        &at.key("consumes"),
                        format!(
                            "consumes must be a list of repository names, not a {}",
                            other.kind_name()
                        ),
                    );
                    Vec::new()
                }
            };
            if !refused {
                good.insert(name, (i, enabled.unwrap_or(true), consumes));
            }
        }
        // A consumer of a refused or disabled provider, and every member
        // of a consumes cycle, is refused too; until nothing changes.
        let all: BTreeSet<&String> = names.iter().filter(|n| !n.is_empty()).collect();
        loop {
            let mut drop: Vec<(String, String)> = Vec::new();
            for (name, (_, _, consumes)) in &good {
                for c in consumes {
                    match good.get(c) {
                        Some((_, true, _)) => {}
                        Some((_, false, _)) => drop.push((
                            name.clone(),
                            format!("it consumes '{c}', which is disabled"),
                        )),
                        None if all.contains(c) => drop
                            .push((name.clone(), format!("it consumes '{c}', which is refused"))),
                        None => {}
                    }
                }
            }
            if drop.is_empty() {
                break;
            }
            for (name, why) in drop {
                if let Some((i, _, _)) = good.remove(&name) {
                    self.report(
                        &path.index(i).key("consumes"),
                        Severity::Refused,
                        format!("repos: '{name}': {why}; the repository is skipped"),
                    );
                }
            }
        }
        for name in cycle_members(&good) {
            if let Some((i, _, _)) = good.remove(&name) {
                self.report(
                    &path.index(i).key("consumes"),
                    Severity::Refused,
                    format!(
                        "repos: '{name}': it is part of a consumes cycle; the repository is skipped"
                    ),
                );
            }
        }
        for (name, (i, _, consumes)) in &good {
            for c in consumes.iter().filter(|c| !all.contains(c)) {
                self.report(
                    &path.index(*i).key("consumes"),
                    Severity::Skipped,
                    format!("repos: '{name}': consumes '{c}', which this document does not define; it must be an enabled repository already on the target"),
                );
            }
        }
    }
}

/// Repositories on a consumes cycle among the given ones.
fn cycle_members(good: &BTreeMap<String, (usize, bool, Vec<String>)>) -> Vec<String> {
    let mut out = Vec::new();
    for start in good.keys() {
        // Is `start` reachable from itself?
        let mut stack: Vec<&String> = good[start].2.iter().collect();
        let mut seen: BTreeSet<&String> = BTreeSet::new();
        while let Some(n) = stack.pop() {
            if n == start {
                out.push(start.clone());
                break;
            }
            if seen.insert(n)
                && let Some((_, _, next)) = good.get(n)
            {
                stack.extend(next.iter());
            }
        }
    }
    out
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::Scalar { text, .. } => text.clone(),
        Value::Null => String::new(),
        other => format!("<{}>", other.kind_name()),
    }
}

fn shown_scalar(v: &Value) -> String {
    match v {
        Value::Scalar { text, plain: true } => text.clone(),
        Value::Scalar { text, plain: false } => format!("{text:?}"),
        other => format!("a {}", other.kind_name()),
    }
}

/// Booleans as cloud-init reads them.
fn bool_of(v: &Value) -> Option<bool> {
    match scalar_text(v).to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Whether a passwd value is a crypt(5) hash in the modular form
/// `$<id>$<fields>$...` (`$6$`, `$y$`, `$2b$`, ...), possibly locked by
/// leading `!`s. Anything else (a bare word, an empty string, a
/// traditional 13-character DES hash, which cannot be told from a
/// plaintext password) is taken for a plaintext password.
fn looks_like_password_hash(v: &Value) -> bool {
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

/// Why a string is not an account or group name, if it is not.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name.chars().count() > 32 {
        return Some("is over 32 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Some("has characters outside [A-Za-z0-9._-]");
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Some("begins with a dot or a dash");
    }
    None
}

fn repo_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Some("has characters outside letters, digits, '.', '_' and '-'");
    }
    if name.starts_with('.') {
        return Some("begins with a dot");
    }
    None
}

/// A uid or gid: an integer or a numeric string, 0 to 4294967294, never
/// 65535.
fn id_problem(v: &Value) -> Option<String> {
    let text = scalar_text(v);
    match text.trim().parse::<u64>() {
        Err(_) => Some(format!("'{text}' is not a number")),
        Ok(65535) => Some("65535 is refused (systemd refuses it, and a refused record fails every account in the seed)".into()),
        Ok(n) if n > 4_294_967_294 => Some(format!("{n} is outside 0 to 4294967294")),
        Ok(_) => None,
    }
}

/// Why a hostname is not valid, if it is not: at most 64 bytes of
/// dot-separated labels of letters, digits and '-', none empty, none
/// starting or ending with '-'.
pub fn hostname_problem(h: &str) -> Option<&'static str> {
    if h.is_empty() {
        return Some("is empty");
    }
    if h.len() > 64 {
        return Some("is over 64 bytes");
    }
    for label in h.split('.') {
        if label.is_empty() {
            return Some("has an empty label");
        }
        if !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Some("has characters other than letters, digits, '-' and '.'");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Some("has a label starting or ending with '-'");
        }
    }
    None
}

/// Why a write_files path is refused, if it is.
pub fn path_problem(p: &str) -> Option<&'static str> {
    if !p.starts_with('/') {
        return Some("the path must be absolute");
    }
    if p.split('/').any(|c| c == "..") {
        return Some("the path has a '..' component");
    }
    if p.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("the path holds whitespace or a control character");
    }
    if p.chars().any(|c| matches!(c, '%' | '\\' | '"' | '\'')) {
        return Some("the path holds %, \\, \" or ' (tmpfiles would expand or decode it)");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line:col level message` per finding.
    fn found(text: &str, offline: bool) -> Vec<String> {
        check(text.as_bytes(), offline)
            .into_iter()
            .map(|f| {
                let level = match f.severity {
                    Severity::Refused => "error",
                    Severity::Skipped => "warning",
                };
                format!("{}:{} {level} {}", f.line, f.col, f.message)
            })
            .collect()
    }

    #[test]
    fn whole_document_refusals() {
        assert_eq!(
            check(b"#cloud-config\nhostname: \xff\n", false)[0].message,
            "user-data is not UTF-8; the whole document is refused"
        );
        assert_eq!(
            found("#cloud-config\n- a\n- b\n", false),
            ["2:1 error the top level is a list, not a mapping; the whole document is refused"]
        );
        assert_eq!(
            found("a: &x [1]\nb: *x\n", false),
            [
                "1:4 error YAML anchors and aliases are refused: nested aliases expand beyond memory, and cloud-config has no use for them; the whole document is refused"
            ]
        );
        assert_eq!(
            found("#!/bin/sh\necho hi\n", false),
            [
                "1:1 warning user-data starting with #! is a script; scripts are not implemented, so nothing happens"
            ]
        );
        assert!(
            found("#cloud-config\n", false).is_empty(),
            "an empty document does nothing"
        );
        assert_eq!(
            found(
                "users:\n  - name: a\n    sudo: ALL=(ALL) NOPASSWD: ALL\n",
                false
            ),
            [
                "3:29 error invalid YAML: mapping values are not allowed in this context; the whole document is refused"
            ]
        );
        assert_eq!(
            found("hostname: a\n---\nhostname: b\n", false),
            ["2:1 warning a second YAML document: everything after the first document is ignored"]
        );
    }

    #[test]
    fn unknown_and_not_implemented_keys_are_skipped_and_offline_refuses_them() {
        let text = "colour: blue\npackages: [vim]\n";
        assert_eq!(
            found(text, false),
            [
                "1:1 warning unknown key 'colour'; it is skipped",
                "2:1 warning 'packages' is recognised but not implemented yet; it is skipped",
            ]
        );
        assert!(found(text, true).iter().all(|f| f.contains(" error ")));
    }

    #[test]
    fn accounts() {
        let text = "\
users:
  - default
  - name: ok_user
    lock_passwd: Off
    system: YES
    uid: \"1001\"
    no-log-init: true
  - name: waytoolongnamewaytoolongnamewaytoolong
  - name: bad/name
  - gecos: no name
  - name: ids
    uid: 4294967295
    gid: abc
  - name: flags
    system: sometimes
  - name: grp
    primary-group: \"-wheel\"
    groups: [ok, \"bad group\"]
  - name: dotted.name
    sudo: ALL=(ALL) ALL
  - name: extra
    favourite: tea
";
        assert_eq!(
            found(text, false),
            [
                "2:5 warning users: the entry 'default' is skipped: there is no baked-in default user for it to refer to",
                "7:5 warning users: account 'ok_user': 'no-log-init' is accepted and ignored (a systemd user record has nothing to map it to)",
                "8:11 error users: account name 'waytoolongnamewaytoolongnamewaytoolong' is over 32 characters; the account is skipped",
                "9:11 error users: account name 'bad/name' has characters outside [A-Za-z0-9._-]; the account is skipped",
                "10:5 error users: an account without a name is skipped",
                "12:10 error users: account 'ids': uid 4294967295 is outside 0 to 4294967294; the account is refused",
                "13:10 error users: account 'ids': gid 'abc' is not a number; the account is refused",
                "15:13 error users: account 'flags': system must be a boolean (true/false, yes/no, on/off), not 'sometimes'; the account is refused",
                "17:20 warning users: account 'grp': primary-group '-wheel' begins with a dot or a dash; it is dropped and the account kept",
                "18:13 warning users: account 'grp': group 'bad group' has characters outside [A-Za-z0-9._-]; it is dropped and the account kept",
                "20:11 warning users: account 'dotted.name': a name with a dot gets no sudo grant (sudo skips a drop-in whose file name holds a dot)",
                "22:5 error users: account 'extra': unknown key 'favourite'; the account is refused",
            ]
        );
        assert_eq!(
            found("users:\n  - name: a\n    uid: 65535\n", false),
            [
                "3:10 error users: account 'a': uid 65535 is refused (systemd refuses it, and a refused record fails every account in the seed); the account is refused"
            ]
        );
    }

    #[test]
    fn keys_without_accounts_and_groups() {
        assert_eq!(
            found("ssh_authorized_keys: ssh-ed25519 AAAA a@b\n", false),
            [
                "1:22 warning ssh_authorized_keys go to the first account in users, and there is none; the keys are not installed"
            ]
        );
        assert_eq!(
            found(
                "groups:\n  - admins\n  - devs: [alice, .bob]\n  - \"9 x\"\n",
                false
            ),
            [
                "3:11 warning groups: group 'devs': member '.bob' begins with a dot or a dash; the member is skipped",
                "4:5 error groups: group name '9 x' has characters outside [A-Za-z0-9._-]; the group is skipped",
            ]
        );
    }

    #[test]
    fn hostnames() {
        assert!(found("hostname: web-001.example.com\n", false).is_empty());
        let long = format!("hostname: {}\n", "a".repeat(65));
        assert_eq!(
            found(&long, false),
            [format!(
                "1:11 warning hostname '{}' is over 64 bytes; it is skipped",
                "a".repeat(65)
            )]
        );
        assert_eq!(
            found("fqdn: a..b\nhostname: -a\n", false),
            [
                "1:7 warning fqdn 'a..b' has an empty label; it is skipped",
                "2:11 warning hostname '-a' has a label starting or ending with '-'; it is skipped",
            ]
        );
        assert_eq!(
            found("hostname: web_1\n", false),
            [
                "1:11 warning hostname 'web_1' has characters other than letters, digits, '-' and '.'; it is skipped"
            ]
        );
    }

    #[test]
    fn write_files_entries() {
        let big = "x".repeat(MAX_CARRIED + 1);
        let text = format!(
            "write_files:
  - path: /etc/ok.conf
    permissions: \"0600\"
    owner: root:wheel
  - path: etc/rel
  - path: /etc/../shadow
  - path: /etc/%h
  - path: \"/etc/a\\tb\"
  - path: /etc/perm
    permissions: 0600
  - path: /etc/perm2
    permissions: \"rw\"
  - path: /etc/own
    owner: \"root:-x\"
  - path: /etc/nul
    content: \"a\\0b\"
  - path: /etc/big
    content: {big}
  - path: /etc/app
    append: true
  - content: x
"
        );
        assert_eq!(
            found(&text, false),
            [
                "5:11 error write_files: 'etc/rel': the path must be absolute; the file is skipped",
                "6:11 error write_files: '/etc/../shadow': the path has a '..' component; the file is skipped",
                "7:11 error write_files: '/etc/%h': the path holds %, \\, \" or ' (tmpfiles would expand or decode it); the file is skipped",
                "8:11 error write_files: '/etc/a\tb': the path holds whitespace or a control character; the file is skipped",
                "10:18 error write_files: '/etc/perm': permissions 0600 must be a quoted string of three or four octal digits, such as \"0644\"; the file is skipped",
                "12:18 error write_files: '/etc/perm2': permissions \"rw\" must be a quoted string of three or four octal digits, such as \"0644\"; the file is skipped",
                "14:12 error write_files: '/etc/own': owner 'root:-x': a name begins with a dot or a dash; the file is skipped",
                "16:14 error write_files: '/etc/nul': the content holds a NUL byte; the file is skipped",
                "18:14 error write_files: '/etc/big': the content is 4096 bytes, over the 4095 a file can carry; the file is skipped",
                "20:5 error write_files: '/etc/app': 'append' changes what ends up in the file and is refused; the file is skipped",
                "21:5 error write_files: '': path is required; the file is skipped",
            ]
        );
    }

    #[test]
    fn repositories() {
        let text = "repos:
  - name: Base
    url: http://r/Base
    priority: 10
    tuf_root: '{}'
  - name: BASE
    path: /srv/r
  - name: Common
    url: http://r/Common
    consumes: [Base, OnTarget]
    tuf_root: '{}'
  - name: NoAnchor
    url: http://r/x
  - name: Both
    url: http://r/y
    path: /y
    tuf_root: '{}'
  - name: LocalAnchor
    path: /z
    tuf_root: '{}'
  - name: .dot
    path: /d
  - name: Off
    path: /o
    enabled: false
  - name: OnOff
    path: /p
    consumes: [Off]
  - name: OnRefused
    path: /q
    consumes: [NoAnchor]
  - name: X
    path: /x
    consumes: [Y]
    priority: high
  - name: Y
    path: /y
    consumes: [Y2]
  - name: Y2
    path: /y2
    consumes: [Y]
  - name: Z
    path: /z
    mirror: true
";
        assert_eq!(
            found(text, false),
            [
                "6:11 error repos: 'BASE': another repository's name differs only in case (the file names are lowercased and would collide); the repository is skipped",
                "10:15 warning repos: 'Common': consumes 'OnTarget', which this document does not define; it must be an enabled repository already on the target",
                "13:10 error repos: 'NoAnchor': url needs tuf_root (the trust anchor's content); the repository is skipped",
                "14:5 error repos: 'Both': url and path cannot be combined; the repository is skipped",
                "20:15 error repos: 'LocalAnchor': tuf_root with path is an error: a local repository has no trust anchor; the repository is skipped",
                "21:11 error repos: '.dot': the name begins with a dot; the repository is skipped",
                "28:15 error repos: 'OnOff': it consumes 'Off', which is disabled; the repository is skipped",
                "31:15 error repos: 'OnRefused': it consumes 'NoAnchor', which is refused; the repository is skipped",
                "35:15 error repos: 'X': priority must be an integer, not high; the repository is skipped",
                "38:15 error repos: 'Y': it is part of a consumes cycle; the repository is skipped",
                "41:15 error repos: 'Y2': it is part of a consumes cycle; the repository is skipped",
                "44:5 error repos: 'Z': unknown key 'mirror'; the repository is skipped",
            ]
        );
    }

    #[test]
    fn a_nul_byte_in_a_sudo_rule_refuses_the_account() {
        assert_eq!(
            found(
                "users:\n  - name: ops\n    sudo: \"ALL=(ALL) \\0ALL\"\n  - name: dev\n    sudo: [\"ALL=(ALL) ALL\", \"x\\0y\"]\n",
                false
            ),
            [
                "3:11 error users: account 'ops': a sudo rule holds a NUL byte; the account is refused",
                "5:11 error users: account 'dev': a sudo rule holds a NUL byte; the account is refused",
            ]
        );
    }

    #[test]
    fn trust_anchors_with_a_nul_byte_or_too_big_to_carry() {
        let big = "x".repeat(MAX_CARRIED + 1);
        let text = format!(
            "repos:
  - name: Nul
    url: http://r/n
    tuf_root: \"{{\\0}}\"
  - name: Big
    url: http://r/b
    tuf_root: {big}
  - name: Fits
    url: http://r/f
    tuf_root: {fits}
",
            fits = "x".repeat(MAX_CARRIED)
        );
        assert_eq!(
            found(&text, false),
            [
                "4:15 error repos: 'Nul': tuf_root holds a NUL byte; the repository is skipped",
                "7:15 error repos: 'Big': tuf_root is 4096 bytes, over the 4095 a trust anchor can carry; the repository is skipped",
            ]
        );
    }

    #[test]
    fn repository_names_locations_and_flags() {
        let text = "repos:
  - url: http://r/anon
    tuf_root: '{}'
  - name: \"a b\"
    path: /ab
  - name: \"Ünïcode\"
    path: /u
  - name: Nowhere
    priority: 3
  - name: Maybe
    path: /m
    enabled: sometimes
  - name: Yes
    path: /y
    enabled: yes
  - name: Scalar
    path: /s
    consumes: Base
  - name: Mapped
    path: /mp
    consumes: {Base: true}
";
        assert_eq!(
            found(text, false),
            [
                "2:5 error repos: '': name is required; the repository is skipped",
                "4:11 error repos: 'a b': the name has characters outside letters, digits, '.', '_' and '-'; the repository is skipped",
                "6:11 error repos: 'Ünïcode': the name has characters outside letters, digits, '.', '_' and '-'; the repository is skipped",
                "8:5 error repos: 'Nowhere': one of url or path is required; the repository is skipped",
                "12:14 error repos: 'Maybe': enabled must be true or false; the repository is skipped",
                "18:15 error repos: 'Scalar': consumes must be a list of repository names, not a scalar; the repository is skipped",
                "21:15 error repos: 'Mapped': consumes must be a list of repository names, not a mapping; the repository is skipped",
            ]
        );
    }

    #[test]
    fn a_known_key_with_a_value_of_the_wrong_shape() {
        let text = "users: operator
groups: {admins: [a]}
write_files: /etc/motd
repos: {name: Base}
ssh_authorized_keys: {key: ssh-ed25519 AAAA a@b}
";
        assert_eq!(
            found(text, false),
            [
                "1:8 warning users must be a list, not a scalar; it is skipped",
                "2:9 warning groups must be a list, not a mapping; it is skipped",
                "3:14 warning write_files must be a list, not a scalar; it is skipped",
                "4:8 warning repos must be a list, not a mapping; it is skipped",
                "5:22 warning ssh_authorized_keys must be a list of lines or one line, not a mapping; it is skipped",
            ]
        );
        // --offline ignores nothing.
        assert!(found(text, true).iter().all(|f| f.contains(" error ")));
    }

    #[test]
    fn entries_of_the_wrong_shape() {
        let text = "users:
  - operator
  - [a, b]
  - name: keys
    ssh-authorized-keys: [ssh-ed25519 AAAA k@h, {a: b}]
    sudo: {ALL: ALL}
groups:
  - [admins]
  - {devs: [a], ops: [b]}
  - {wheel: [a]}
write_files:
  - /etc/motd
repos:
  - Base
ssh_authorized_keys: [ssh-ed25519 AAAA k@h, [x]]
";
        assert_eq!(
            found(text, false),
            [
                "2:5 error users: an account must be a mapping, not a scalar; the entry is refused",
                "3:5 error users: an account must be a mapping, not a list; the entry is refused",
                "5:49 warning ssh-authorized-keys: an entry is a mapping, not a line; it is skipped",
                "6:11 warning sudo must be a list of lines or one line, not a mapping; it is skipped",
                "8:5 error groups: an entry must be a name or a single-key mapping of a name to its members, not a list; it is skipped",
                "9:5 error groups: an entry must be a name or a single-key mapping of a name to its members, not a mapping; it is skipped",
                "12:5 error write_files: an entry must be a mapping, not a scalar; it is skipped",
                "14:5 error repos: an entry must be a mapping, not a scalar; it is skipped",
                "15:45 warning ssh_authorized_keys: an entry is a list, not a line; it is skipped",
            ]
        );
    }

    #[test]
    fn groups_as_one_comma_separated_string() {
        assert!(
            found(
                "users:\n  - name: a\n    groups: \"wheel, adm,,video\"\n",
                false
            )
            .is_empty()
        );
        assert_eq!(
            found(
                "users:\n  - name: a\n    groups: \"wheel, bad group,.hidden\"\ngroups:\n  - devs: \"alice, .bob\"\n",
                false
            ),
            [
                "3:13 warning users: account 'a': group 'bad group' has characters outside [A-Za-z0-9._-]; it is dropped and the account kept",
                "3:13 warning users: account 'a': group '.hidden' begins with a dot or a dash; it is dropped and the account kept",
                "5:11 warning groups: group 'devs': member '.bob' begins with a dot or a dash; the member is skipped",
            ]
        );
    }

    /// Sudo rules and key lines are never split on commas: a sudoers
    /// command list and key options (`no-pty,from="a,b"`) use them.
    #[test]
    fn sudo_and_key_lines_are_never_split_on_commas() {
        let mut c = Checker {
            positions: Positions::default(),
            out: Vec::new(),
            offline: false,
        };
        let sudo = "ALL=(ALL) NOPASSWD: /usr/bin/systemctl restart a, /usr/bin/journalctl";
        let key = "no-pty,from=\"10.0.0.1,10.0.0.2\" ssh-ed25519 AAAA k@h";
        for line in [sudo, key] {
            assert_eq!(
                c.lines(&Value::str(line), &DocPath::root(), "sudo"),
                Some(vec![line.to_string()])
            );
        }
        assert_eq!(
            c.lines(
                &Value::Seq(vec![Value::str(sudo), Value::str(key)]),
                &DocPath::root(),
                "sudo"
            ),
            Some(vec![sudo.to_string(), key.to_string()])
        );
        assert!(c.out.is_empty());
        // Read from a document: one rule, one grant refused for the dot,
        // and nothing about a second rule.
        let doc = format!(
            "users:\n  - name: a.b\n    sudo: '{sudo}'\n    ssh-authorized-keys: '{key}'\n"
        );
        assert_eq!(
            found(&doc, false),
            [
                "3:11 warning users: account 'a.b': a name with a dot gets no sudo grant (sudo skips a drop-in whose file name holds a dot)"
            ]
        );
    }

    #[test]
    fn a_space_in_a_path_is_refused() {
        assert_eq!(
            found("write_files:\n  - path: \"/etc/my file\"\n", false),
            [
                "2:11 error write_files: '/etc/my file': the path holds whitespace or a control character; the file is skipped"
            ]
        );
    }

    #[test]
    fn encoding_defer_and_unknown_file_keys_refuse_the_file() {
        let text = "write_files:
  - path: /etc/a
    encoding: b64
    content: eA==
  - path: /etc/b
    defer: true
  - path: /etc/c
    mode: \"0644\"
";
        assert_eq!(
            found(text, false),
            [
                "3:5 error write_files: '/etc/a': 'encoding' changes what ends up in the file and is refused; the file is skipped",
                "6:5 error write_files: '/etc/b': 'defer' changes what ends up in the file and is refused; the file is skipped",
                "8:5 error write_files: '/etc/c': unknown key 'mode'; the file is skipped",
            ]
        );
    }

    #[test]
    fn passwd_is_a_hash_never_a_plaintext_password() {
        let hashes = [
            "$6$rounds=4096$saltsalt$2pMNN0Fv0GEvrN0lD3e0x1ZSbVW7hnhj5LYcoIxmPC6/",
            "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7",
            "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
            "$1$salt$hash",
            "!$6$saltsalt$hash",
        ];
        for h in hashes {
            let doc = format!("users:\n  - name: a\n    lock_passwd: false\n    passwd: '{h}'\n");
            assert!(found(&doc, false).is_empty(), "{h}");
        }
        let refused = "4:13 error users: account 'a': passwd must be a password hash (crypt(5), such as $6$<salt>$<hash> from mkpasswd), never a plaintext password; the account is refused";
        for plain in [
            "hunter2",
            "''",
            "'$ecret'",
            "'$6$onlysalt'",
            "'$6$salt$has h'",
            "abcdefghijklm",
            "[a]",
        ] {
            let doc = format!("users:\n  - name: a\n    lock_passwd: false\n    passwd: {plain}\n");
            let f = found(&doc, false);
            assert_eq!(f, [refused], "{plain}");
        }
        // The value itself is never repeated in a finding.
        assert!(!found("users:\n  - name: a\n    passwd: hunter2\n", false)[0].contains("hunter2"));
    }
}
