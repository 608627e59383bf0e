//! The field reader: a mapping's keys checked against those allowed, each
//! field typed (string, bool, integer, list, section) and every refusal
//! placed at its node. It knows no section of the template.

use csis_model::{DocPath, Map, Value, value::Typed};

use super::Reader;
use crate::Problem;
use crate::types::Carried;
use crate::vars::Variables;

fn where_(path: &DocPath) -> String {
    if path.is_root() {
        "the template".to_string()
    } else {
        path.to_string()
    }
}

impl Reader<'_> {
    pub(super) fn err(&mut self, path: &DocPath, key: bool, message: String) {
        let span = if key {
            self.pos.key(path).or_else(|| self.pos.nearest(path, true))
        } else {
            self.pos.nearest(path, false)
        };
        let (line, col) = span.map(|s| (s.line, s.col)).unwrap_or((0, 0));
        self.problems
            .push(Problem::error(self.file, line, col, message));
    }

    pub(super) fn substitute(&mut self, v: &mut Value, path: &DocPath, vars: &Variables) {
        match v {
            // The scalar keeps its style: a plain `${x}` is typed by its
            // field after substitution (`sudo: ${admin}` reads a boolean).
            Value::Scalar { text, .. } => {
                if text.contains("${") {
                    match vars.expand(text) {
                        Ok(new) => *text = new,
                        Err(m) => self.err(path, false, m),
                    }
                }
            }
            Value::Seq(items) => {
                for (i, x) in items.iter_mut().enumerate() {
                    self.substitute(x, &path.index(i), vars);
                }
            }
            Value::Map(m) => {
                for (k, x) in m.iter_mut() {
                    let p = path.key(k);
                    self.substitute(x, &p, vars);
                }
            }
            Value::Null => {}
        }
    }

    /// A mapping whose keys are all in `allowed`; `None` (after a
    /// problem) when it is not a mapping.
    pub(super) fn map<'v>(
        &mut self,
        v: &'v Value,
        path: &DocPath,
        allowed: &[&str],
    ) -> Option<&'v Map> {
        match v {
            Value::Map(m) => {
                for k in m.keys() {
                    if !allowed.contains(&k.as_str()) {
                        self.err(
                            &path.key(k),
                            true,
                            format!(
                                "unknown key '{k}' in {}; expected one of: {}",
                                where_(path),
                                allowed.join(", ")
                            ),
                        );
                    }
                }
                Some(m)
            }
            Value::Null => None,
            other => {
                self.err(
                    path,
                    false,
                    format!(
                        "{} must be a mapping, not a {}",
                        where_(path),
                        other.kind_name()
                    ),
                );
                None
            }
        }
    }

    pub(super) fn string(&mut self, m: &Map, path: &DocPath, k: &str) -> String {
        let p = path.key(k);
        match m.get(k) {
            None | Some(Value::Null) => String::new(),
            Some(Value::Scalar { text, .. }) => text.clone(),
            Some(other) => {
                self.err(
                    &p,
                    false,
                    format!("{p} must be a string, not a {}", other.kind_name()),
                );
                String::new()
            }
        }
    }

    pub(super) fn bool(&mut self, m: &Map, path: &DocPath, k: &str) -> Option<bool> {
        let p = path.key(k);
        let v = m.get(k)?;
        match v.typed() {
            Typed::Null => None,
            Typed::Bool(b) => Some(b),
            _ => {
                self.err(&p, false, format!("{p} must be true or false"));
                None
            }
        }
    }

    pub(super) fn int(&mut self, m: &Map, path: &DocPath, k: &str) -> Option<i64> {
        let p = path.key(k);
        let v = m.get(k)?;
        match v.typed() {
            Typed::Null => None,
            Typed::Int(i) => Some(i),
            _ => {
                self.err(&p, false, format!("{p} must be an integer"));
                None
            }
        }
    }

    /// A list of strings, `None` when absent (`Some(vec![])` for `[]`).
    pub(super) fn opt_strings(&mut self, m: &Map, path: &DocPath, k: &str) -> Option<Vec<String>> {
        let p = path.key(k);
        match m.get(k)? {
            Value::Null => None,
            Value::Seq(items) => {
                let mut out = Vec::new();
                for (i, x) in items.iter().enumerate() {
                    match x {
                        Value::Scalar { text, .. } => out.push(text.clone()),
                        other => {
                            let pi = p.index(i);
                            self.err(
                                &pi,
                                false,
                                format!("{pi} must be a string, not a {}", other.kind_name()),
                            );
                        }
                    }
                }
                Some(out)
            }
            other => {
                self.err(
                    &p,
                    false,
                    format!("{p} must be a list of strings, not a {}", other.kind_name()),
                );
                None
            }
        }
    }

    pub(super) fn strings(&mut self, m: &Map, path: &DocPath, k: &str) -> Vec<String> {
        self.opt_strings(m, path, k).unwrap_or_default()
    }

    /// A list of mappings, each read by `f`.
    pub(super) fn list<T>(
        &mut self,
        m: &Map,
        path: &DocPath,
        k: &str,
        mut f: impl FnMut(&mut Self, &Value, &DocPath) -> Option<T>,
    ) -> Vec<T> {
        let p = path.key(k);
        match m.get(k) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Seq(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(i, x)| f(self, x, &p.index(i)))
                .collect(),
            Some(other) => {
                self.err(
                    &p,
                    false,
                    format!("{p} must be a list, not a {}", other.kind_name()),
                );
                Vec::new()
            }
        }
    }

    /// A section: `None` when absent; a present empty or null section is
    /// `Some(default)`.
    pub(super) fn section<T: Default>(
        &mut self,
        m: &Map,
        path: &DocPath,
        k: &str,
        allowed: &[&str],
        f: impl FnOnce(&mut Self, &Map, &DocPath) -> T,
    ) -> Option<T> {
        let v = m.get(k)?;
        let p = path.key(k);
        match self.map(v, &p, allowed) {
            Some(inner) => Some(f(self, inner, &p)),
            None if v.is_null() => Some(T::default()),
            None => None,
        }
    }

    /// A field ICT reads and the reference does not describe: its value
    /// as written (`None` when absent or null), not checked.
    pub(super) fn carried(&mut self, m: &Map, k: &str) -> Option<Carried> {
        match m.get(k)? {
            Value::Null => None,
            v => Some(v.clone()),
        }
    }
}
