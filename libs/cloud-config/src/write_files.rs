//! hostname and write_files: the machine's name and the files written
//! before first boot.

use csis_model::{DocPath, Map, Value};

use crate::names::{hostname_problem, name_problem, path_problem};
use crate::values::{carried_problem, scalar_text, shown_scalar};
use crate::{Checker, FILE_KEYS, Severity};

impl Checker {
    /// hostname and fqdn mean the same thing; the first valid one wins.
    pub(crate) fn hostname(&mut self, top: &Map) {
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

    pub(crate) fn write_files(&mut self, v: &Value, path: &DocPath) {
        let Some(items) = self.list(v, path, "write_files") else {
            return;
        };
        for (i, item) in items.iter().enumerate() {
            let at = path.index(i);
            let Some(entry) = self.entry(item, &at, "write_files") else {
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
            if let Some(why) = entry
                .get("content")
                .and_then(|v| carried_problem(&scalar_text(v), "the content", "a file"))
            {
                refuse(self, &at.key("content"), why);
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
}
