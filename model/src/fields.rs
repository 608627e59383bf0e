//! Structuring a YAML mapping into a model, field by field.
//!
//! Every model reads its mapping through one [`Fields`] reader: each read
//! marks the key as known, and [`Fields::finish`] refuses whatever was left
//! unread with the key's position. A plugin model that extends a base model
//! lets the base read its fields from the same reader, then reads its own,
//! then finishes: the composition serde's `flatten` cannot give together with
//! `deny_unknown_fields`. Errors are gathered, not thrown, so one load lists
//! every problem at once.

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, Origin};
use crate::value::{Map, Value};

/// A reader over one mapping. `owner` names the object in messages
/// ("RuntimeBuilderModel 'aws'").
pub struct Fields<'a> {
    map: &'a Map,
    origin: Origin,
    owner: String,
    known: Vec<&'static str>,
    diags: &'a mut Vec<Diagnostic>,
}

/// The truth values YAML 1.1 and pydantic accept, in any case.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "y" | "t" | "1" => Some(true),
        "false" | "no" | "off" | "n" | "f" | "0" => Some(false),
        _ => None,
    }
}

impl<'a> Fields<'a> {
    pub fn new(
        map: &'a Map,
        origin: Origin,
        owner: impl Into<String>,
        diags: &'a mut Vec<Diagnostic>,
    ) -> Fields<'a> {
        Fields {
            map,
            origin,
            owner: owner.into(),
            known: Vec::new(),
            diags,
        }
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn set_owner(&mut self, owner: impl Into<String>) {
        self.owner = owner.into();
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The place of one key's value, for messages about it.
    pub fn origin_of(&self, key: &str) -> Origin {
        self.origin.key(key)
    }

    pub fn error(&mut self, diag: Diagnostic) {
        self.diags.push(diag);
    }

    /// Report an error at a key's value.
    pub fn error_at(&mut self, key: &str, message: impl Into<String>) {
        let d = Diagnostic::error(message).at(self.origin.key(key));
        self.diags.push(d);
    }

    /// The raw value under `key`, marking it known. Null counts as absent.
    pub fn raw(&mut self, key: &'static str) -> Option<&'a Value> {
        self.known.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Mark `keys` known, and say whether the mapping declares any of them
    /// (even as null): one pass over the mapping's keys, for a group of
    /// optional keys most mappings leave out.
    pub fn any_present(&mut self, keys: &[&'static str]) -> bool {
        self.known.extend_from_slice(keys);
        self.map.keys().any(|k| keys.contains(&k.as_str()))
    }

    /// Whether the mapping declares `key` at all (even as null), without
    /// marking it known.
    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// Whether the mapping holds a key one slip from `key` (`sorce_image`
    /// for `source_image`): the unknown-key refusal names it, so a check
    /// that `key` is missing would only repeat the same cause.
    pub fn misspells(&self, key: &str) -> bool {
        self.map
            .keys()
            .any(|k| k != key && crate::suggest::did_you_mean(k, [key]).is_some())
    }

    /// Mark a key known without reading it (a key the caller handles).
    pub fn skip(&mut self, key: &'static str) {
        self.known.push(key);
    }

    fn wrong(&mut self, key: &str, want: &str, got: &Value) {
        let msg = format!(
            "{}: field '{key}' must be {want}, got {}",
            self.owner,
            got.described()
        );
        // A lone value where a list goes: the one slip worth spelling out.
        let help = match (want, got) {
            ("a list of strings", Value::Scalar { text, .. }) => {
                Some(format!("write a list, even of one: `{key}: [{text}]`"))
            }
            ("a list of mappings", Value::Scalar { .. }) => Some(format!(
                "write a list of mappings: each entry a `- key: value` line below `{key}:`, or `{key}: [{{key: value}}]`"
            )),
            _ => None,
        };
        let d = Diagnostic::error(msg).at(self.origin.key(key));
        self.diags.push(match help {
            Some(h) => d.help(h),
            None => d,
        });
    }

    pub fn opt_str(&mut self, key: &'static str) -> Option<String> {
        let v = self.raw(key)?;
        match v {
            Value::Scalar { text, .. } => Some(text.clone()),
            other => {
                self.wrong(key, "a string", other);
                None
            }
        }
    }

    /// [`Fields::opt_str`] of a value that becomes a path, a mount point
    /// or a name on a machine (`what` says which): one holding a control
    /// character is refused at its value, and still returned for the
    /// rules that follow.
    pub fn opt_path(&mut self, key: &'static str, what: &str) -> Option<String> {
        let s = self.opt_str(key)?;
        self.refuse_controls(key, what, &s);
        Some(s)
    }

    /// [`Fields::opt_str`] of a mount point: one that holds a control
    /// character or whitespace is refused at its value
    /// ([`crate::naming::mount_point_problem`]), and still returned for
    /// the rules that follow.
    pub fn opt_mount_point(&mut self, key: &'static str) -> Option<String> {
        let s = self.opt_str(key)?;
        let problem = crate::naming::mount_point_problem(&s);
        self.refuse_problem(key, problem);
        Some(s)
    }

    /// Report `problem` (a rule's message, if the value broke it) at
    /// `key`'s value, after the owner.
    pub fn refuse_problem(&mut self, key: &str, problem: Option<String>) {
        if let Some(problem) = problem {
            let msg = format!("{}: {problem}", self.owner);
            self.error_at(key, msg);
        }
    }

    /// [`Fields::str_or`] of an account name (`admin_user`): a non-empty
    /// one that is no account name ([`crate::login::ACCOUNT_NAME_RULE`])
    /// is refused at its value, since useradd would refuse it on the
    /// machine. A blank one is left to the item's own check (`admin_user
    /// may not be empty`), so that it is reported once.
    pub fn login_or(&mut self, key: &'static str, default: &str) -> String {
        let s = self.str_or(key, default);
        if !s.trim().is_empty()
            && let Some(why) = crate::login::account_name_problem(&s)
        {
            let shown = s.escape_debug();
            let problem = format!(
                "{key} '{shown}' {why}, so no account can be created for it ({}); write a login such as '{default}'",
                crate::login::ACCOUNT_NAME_RULE
            );
            self.refuse_problem(key, Some(problem));
        }
        s
    }

    /// Refuse `value`, read from `key` as `what`, when it holds a control
    /// character ([`crate::naming::control_char`]).
    pub fn refuse_controls(&mut self, key: &str, what: &str, value: &str) {
        if let Some(problem) = crate::naming::control_char_problem(what, value) {
            let msg = format!("{}: {problem}", self.owner);
            self.error_at(key, msg);
        }
    }

    pub fn str_or(&mut self, key: &'static str, default: &str) -> String {
        self.opt_str(key).unwrap_or_else(|| default.to_string())
    }

    /// A required string; a missing one is reported and read as "".
    pub fn req_str(&mut self, key: &'static str) -> String {
        match self.opt_str(key) {
            Some(s) => s,
            None => {
                if self.map.get(key).is_none_or(|v| v.is_null()) {
                    let msg = format!("{}: field '{key}' is required", self.owner);
                    let d = Diagnostic::error(msg).at(self.origin.clone());
                    self.diags.push(d);
                }
                String::new()
            }
        }
    }

    pub fn opt_bool(&mut self, key: &'static str) -> Option<bool> {
        let v = self.raw(key)?;
        match v.as_str().and_then(parse_bool) {
            Some(b) => Some(b),
            None => {
                self.wrong(key, "a boolean (true/false, yes/no, on/off)", v);
                None
            }
        }
    }

    pub fn bool_or(&mut self, key: &'static str, default: bool) -> bool {
        self.opt_bool(key).unwrap_or(default)
    }

    pub fn opt_int(&mut self, key: &'static str) -> Option<i64> {
        let v = self.raw(key)?;
        match v.as_str().and_then(|t| t.trim().parse::<i64>().ok()) {
            Some(i) => Some(i),
            None => {
                self.wrong(key, "an integer", v);
                None
            }
        }
    }

    /// A list of strings; a lone scalar is refused.
    pub fn str_list(&mut self, key: &'static str) -> Vec<String> {
        let Some(v) = self.raw(key) else {
            return Vec::new();
        };
        let Some(items) = v.as_seq() else {
            self.wrong(key, "a list of strings", v);
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) => out.push(s.to_string()),
                None => {
                    let msg = format!(
                        "{}: {key}[{i}] must be a string, got {}",
                        self.owner,
                        item.described()
                    );
                    let d = Diagnostic::error(msg).at(self.origin.key(key).index(i));
                    self.diags.push(d);
                }
            }
        }
        out
    }

    /// [`Fields::str_list`] of paths relative to the configuration root
    /// (a modification's `scripts:`): an entry that would leave the root
    /// ([`crate::confine::relative_path_problem`]: absolute, `..`, a
    /// control character) is refused at its position and left out, so
    /// nothing downstream reads, fingerprints or runs it.
    pub fn rel_path_list(&mut self, key: &'static str) -> Vec<String> {
        // Each string's index in the list as written (str_list leaves out
        // the entries that are no strings), for its position.
        let at: Vec<usize> = self
            .raw(key)
            .and_then(Value::as_seq)
            .map(|items| {
                let strings = items
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.as_str().is_some());
                strings.map(|(i, _)| i).collect()
            })
            .unwrap_or_default();
        let mut out = Vec::new();
        for (path, i) in self.str_list(key).into_iter().zip(at) {
            match crate::confine::relative_path_problem(&format!("{key}[{i}]"), &path) {
                Some(problem) => {
                    let msg = format!("{}: {problem}", self.owner);
                    let origin = self.origin.key(key).index(i);
                    self.diags.push(Diagnostic::error(msg).at(origin));
                }
                None => out.push(path),
            }
        }
        out
    }

    /// A list of strings without duplicates, sorted (sets print sorted).
    pub fn str_set(&mut self, key: &'static str) -> Vec<String> {
        let mut v = self.str_list(key);
        v.sort();
        v.dedup();
        v
    }

    /// A mapping of string to string (tags); numbers are coerced to text.
    pub fn str_map(&mut self, key: &'static str) -> BTreeMap<String, String> {
        let Some(v) = self.raw(key) else {
            return BTreeMap::new();
        };
        let Some(m) = v.as_map() else {
            self.wrong(key, "a mapping of strings", v);
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for (k, item) in m {
            match item {
                Value::Scalar { text, .. } => {
                    out.insert(k.clone(), text.clone());
                }
                Value::Null => {
                    out.insert(k.clone(), String::new());
                }
                other => {
                    let msg = format!(
                        "{}: {key}.{k} must be a string, got {}",
                        self.owner,
                        other.described()
                    );
                    let d = Diagnostic::error(msg).at(self.origin.key(key).key(k));
                    self.diags.push(d);
                }
            }
        }
        out
    }

    /// A free-form mapping (config, variables, tests).
    pub fn any_map(&mut self, key: &'static str) -> Map {
        let Some(v) = self.raw(key) else {
            return Map::default();
        };
        match v.as_map() {
            Some(m) => m.clone(),
            None => {
                self.wrong(key, "a mapping", v);
                Map::default()
            }
        }
    }

    /// An optional free-form mapping (None when absent or null).
    pub fn opt_any_map(&mut self, key: &'static str) -> Option<Map> {
        let v = self.raw(key)?;
        match v.as_map() {
            Some(m) => Some(m.clone()),
            None => {
                self.wrong(key, "a mapping", v);
                None
            }
        }
    }

    /// A nested mapping, with its origin, for a sub-model to read.
    pub fn sub_map(&mut self, key: &'static str) -> Option<(&'a Map, Origin)> {
        let v = self.raw(key)?;
        match v.as_map() {
            Some(m) => Some((m, self.origin.key(key))),
            None => {
                self.wrong(key, "a mapping", v);
                None
            }
        }
    }

    /// A list of mappings (runtimes:, subnets:), each with its origin.
    pub fn map_list(&mut self, key: &'static str) -> Vec<(&'a Map, Origin)> {
        let Some(v) = self.raw(key) else {
            return Vec::new();
        };
        let Some(items) = v.as_seq() else {
            self.wrong(key, "a list of mappings", v);
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.as_map() {
                Some(m) => out.push((m, self.origin.key(key).index(i))),
                None => {
                    let msg = format!(
                        "{}: {key}[{i}] must be a mapping, got {}",
                        self.owner,
                        item.described()
                    );
                    let d = Diagnostic::error(msg).at(self.origin.key(key).index(i));
                    self.diags.push(d);
                }
            }
        }
        out
    }

    /// Read a nested model with its own reader over the same diagnostics.
    pub fn nested<T>(
        &mut self,
        map: &'a Map,
        origin: Origin,
        owner: impl Into<String>,
        read: impl FnOnce(&mut Fields<'_>) -> T,
    ) -> T {
        let mut f = Fields::new(map, origin, owner, self.diags);
        let out = read(&mut f);
        f.finish();
        out
    }

    /// Refuse every key nobody read, at the key's position.
    pub fn finish(self) {
        // Sorted only for a message: every item of a tree is finished,
        // and sorting its known keys was a twentieth of a cold plan.
        let allowed = || {
            let mut allowed: Vec<&str> = self.known.clone();
            allowed.sort_unstable();
            allowed.dedup();
            allowed
        };
        for key in self.map.keys() {
            if !self.known.iter().any(|k| k == key) {
                let allowed = allowed();
                let hint = crate::suggest::hint(key, allowed.iter().copied());
                let msg = format!("{}: unknown key '{key}'", self.owner);
                let help = format!(
                    "unknown key '{key}' in {}; allowed: [{}]{hint}",
                    in_sentence(&self.owner),
                    allowed.join(", ")
                );
                let d = Diagnostic::error(msg)
                    .at(self.origin.key(key))
                    .on_key()
                    .help(help);
                self.diags.push(d);
            }
        }
    }
}

/// An owner as it reads inside a sentence: "Modification 'm'" becomes
/// "modification 'm'"; "OS builder 'alma'" keeps its acronym.
pub fn in_sentence(owner: &str) -> String {
    let mut chars = owner.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if !second.is_uppercase() => {
            first.to_lowercase().chain(owner.chars().skip(1)).collect()
        }
        _ => owner.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::DocPath;

    fn map(pairs: &[(&str, Value)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn plain(t: &str) -> Value {
        Value::Scalar {
            text: t.into(),
            plain: true,
        }
    }

    #[test]
    fn numbers_read_as_strings_and_yaml11_booleans_as_bools() {
        let m = map(&[
            ("family_version", plain("10")),
            ("v", plain("9.4")),
            ("auto", plain("Yes")),
            ("off", plain("OFF")),
        ]);
        let mut diags = Vec::new();
        let mut f = Fields::new(&m, Origin::new("f.yml", DocPath::root()), "X", &mut diags);
        assert_eq!(f.opt_str("family_version").as_deref(), Some("10"));
        assert_eq!(f.opt_str("v").as_deref(), Some("9.4"));
        assert_eq!(f.opt_bool("auto"), Some(true));
        assert_eq!(f.opt_bool("off"), Some(false));
        f.finish();
        assert!(diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn unread_keys_are_refused_naming_the_key() {
        let m = map(&[("name", plain("a")), ("colour", plain("red"))]);
        let mut diags = Vec::new();
        let mut f = Fields::new(
            &m,
            Origin::new("f.yml", DocPath::root()),
            "X 'a'",
            &mut diags,
        );
        let _ = f.opt_str("name");
        f.finish();
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].message, "X 'a': unknown key 'colour'");
        assert_eq!(
            diags[0].help.as_deref(),
            Some("unknown key 'colour' in x 'a'; allowed: [name]")
        );
        assert_eq!(in_sentence("Modification 'm'"), "modification 'm'");
        assert_eq!(in_sentence("OS builder 'alma'"), "OS builder 'alma'");
        assert_eq!(
            diags[0]
                .origin
                .as_ref()
                .map(|o| o.path.to_string())
                .as_deref(),
            Some("colour")
        );
    }

    /// A path list keeps the entries that stay below the root; each other
    /// one is refused at its own index, counted as written (a number
    /// entry before it included).
    #[test]
    fn a_path_list_refuses_each_entry_that_leaves_the_root_at_its_index() {
        let m = map(&[(
            "scripts",
            Value::Seq(vec![
                plain("ok.sh"),
                Value::Seq(Vec::new()),
                plain("../../out.sh"),
                plain("/etc/x"),
            ]),
        )]);
        let mut diags = Vec::new();
        let mut f = Fields::new(
            &m,
            Origin::new("f.yml", DocPath::root()),
            "M 'm'",
            &mut diags,
        );
        assert_eq!(f.rel_path_list("scripts"), ["ok.sh"]);
        f.finish();
        let seen: Vec<(String, String)> = diags
            .iter()
            .map(|d| {
                let at = d
                    .origin
                    .as_ref()
                    .map(|o| o.path.to_string())
                    .unwrap_or_default();
                (at, d.message.chars().take(30).collect())
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("scripts[1]".into(), "M 'm': scripts[1] must be a st".into()),
                ("scripts[2]".into(), "M 'm': scripts[2] '../../out.s".into()),
                ("scripts[3]".into(), "M 'm': scripts[3] '/etc/x' is ".into()),
            ]
        );
    }
}
