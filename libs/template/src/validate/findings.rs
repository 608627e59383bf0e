//! Findings as the section rules collect them, turned into [`Problem`]s
//! with positions, and the shared field rules (required, one of, unique)
//! every section reports through.

use std::path::Path;

use csis_model::{DocPath, Seg, Value};

use crate::{Problem, Severity};

pub(crate) struct Finding {
    pub path: DocPath,
    pub message: String,
    pub severity: Severity,
}

#[derive(Default)]
pub(crate) struct Findings(pub Vec<Finding>);

impl Findings {
    pub fn err(&mut self, path: DocPath, message: impl Into<String>) {
        self.0.push(Finding {
            path,
            message: message.into(),
            severity: Severity::Error,
        });
    }

    pub fn warn(&mut self, path: DocPath, message: impl Into<String>) {
        self.0.push(Finding {
            path,
            message: message.into(),
            severity: Severity::Warning,
        });
    }

    pub(super) fn into_problems(self, file: &Path, text: Option<&str>) -> Vec<Problem> {
        let parsed = text.and_then(|t| csis_yaml::parse(t).ok());
        self.0
            .into_iter()
            .map(|f| {
                // A scalar's own position; else the key of the nearest
                // node the text has (a section, or the one a missing
                // field belongs in).
                let (line, col) = parsed
                    .as_ref()
                    .and_then(|(v, p)| match node(v, &f.path) {
                        Some(Value::Scalar { .. }) => p.value(&f.path),
                        _ => p.nearest(&f.path, true),
                    })
                    .map(|s| (s.line, s.col))
                    .unwrap_or((0, 0));
                Problem {
                    file: file.to_path_buf(),
                    line,
                    col,
                    message: f.message,
                    severity: f.severity,
                }
            })
            .collect()
    }
}

/// The node at `path`, when the document has it.
fn node<'v>(v: &'v Value, path: &DocPath) -> Option<&'v Value> {
    let mut at = v;
    for seg in path.0.iter() {
        at = match seg {
            Seg::Key(k) => at.get(k)?,
            Seg::Index(i) => at.as_seq()?.get(*i)?,
        };
    }
    Some(at)
}

pub(super) fn root() -> DocPath {
    DocPath::root()
}

pub(super) fn one_of(f: &mut Findings, path: DocPath, value: &str, allowed: &[&str]) {
    if !value.is_empty() && !allowed.contains(&value) {
        let m = format!("{path}: '{value}' is not one of: {}", allowed.join(", "));
        f.err(path, m);
    }
}

pub(super) fn required(f: &mut Findings, path: DocPath, value: &str, why: &str) {
    if value.is_empty() {
        let m = format!("{path} is required{why}");
        f.err(path, m);
    }
}

pub(super) fn unique(f: &mut Findings, path: &DocPath, list: &[String], what: &str) {
    for (i, x) in list.iter().enumerate() {
        if list[..i].contains(x) {
            f.err(
                path.index(i),
                format!("{path}: {what} '{x}' is listed twice"),
            );
        }
    }
}
