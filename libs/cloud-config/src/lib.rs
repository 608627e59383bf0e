//! Reading a user-data document as instance-setup(8) reads it (spec 004,
//! cloud-config(5)): what it refuses, what it reports and skips, what it
//! ignores. csis runs this over the user-data it emits and over any file
//! given to `csis cloud-config check`.
//!
//! The seed is untrusted: names and paths from it become file names,
//! fields of config lines and command arguments, so their character sets
//! are narrow on purpose.

use csis_model::{DocPath, Map, Value};

use csis_yaml::{Positions, Span, parse_first, parse_first_value};

mod names;
mod repos;
mod users;
mod values;
mod write_files;

pub use names::{hostname_problem, name_problem, path_problem};

#[cfg(test)]
mod tests;

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
    // Most user-data has nothing to report: it is checked without
    // positions first (a parse with them costs about 2.5 times as much, and
    // generation checks every instance's), and again with them only to
    // place what the first pass found.
    let found = check_with(bytes, offline, false);
    if found.is_empty() {
        return found;
    }
    check_with(bytes, offline, true)
}

fn check_with(bytes: &[u8], offline: bool, positioned: bool) -> Vec<Finding> {
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
    let parsed = if positioned {
        parse_first(text)
    } else {
        let unplaced = Span {
            offset: 0,
            len: 0,
            line: 1,
            col: 1,
        };
        parse_first_value(text)
            .map(|(v, later)| (v, Positions::default(), later.then_some(unplaced)))
    };
    let (value, positions, later) = match parsed {
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

    /// A list entry that must be a mapping; anything else is refused and
    /// skipped.
    fn entry<'v>(&mut self, item: &'v Value, at: &DocPath, what: &str) -> Option<&'v Map> {
        if item.as_map().is_none() {
            self.report(
                at,
                Severity::Refused,
                format!(
                    "{what}: an entry must be a mapping, not a {}; it is skipped",
                    item.kind_name()
                ),
            );
        }
        item.as_map()
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
}
