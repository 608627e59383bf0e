//! The rules of the reference over a typed template. Each finding carries
//! the document path of its node, so a caller with the file's text gets
//! `file:line:col` (the `_located` forms); without it line and col are 0.

use std::path::Path;

use csis_model::DocPath;

use crate::types::*;
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

    fn into_problems(self, file: &Path, text: Option<&str>) -> Vec<Problem> {
        let pos = text.and_then(|t| csis_yaml::parse(t).ok()).map(|(_, p)| p);
        self.0
            .into_iter()
            .map(|f| {
                let (line, col) = pos
                    .as_ref()
                    .and_then(|p| p.nearest(&f.path, true))
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

fn root() -> DocPath {
    DocPath::root()
}

/// Only image and target required (a user template), plus every rule on
/// what the template does set.
pub fn validate_user(file: &Path, t: &Template) -> Vec<Problem> {
    check(t, false).into_problems(file, None)
}

/// [`validate_user`] with positions from the file's text.
pub fn validate_user_located(file: &Path, text: &str, t: &Template) -> Vec<Problem> {
    check(t, false).into_problems(file, Some(text))
}

/// The merged template, validated in full (systemConfig required, every
/// cross-field rule of the reference).
pub fn validate_merged(file: &Path, t: &Template) -> Vec<Problem> {
    check(t, true).into_problems(file, None)
}

/// [`validate_merged`] with positions looked up in `text` (the leaf's
/// text, say: a node the leaf does not have gets line 0).
pub fn validate_merged_located(file: &Path, text: &str, t: &Template) -> Vec<Problem> {
    check(t, true).into_problems(file, Some(text))
}

pub(crate) fn check(t: &Template, merged: bool) -> Findings {
    let mut f = Findings::default();
    let r = root();
    if t.image.name.is_empty() {
        f.err(r.key("image").key("name"), "image.name is required");
    }
    if t.image.version.is_empty() {
        f.err(r.key("image").key("version"), "image.version is required");
    }
    for (k, v) in [
        ("os", &t.target.os),
        ("dist", &t.target.dist),
        ("arch", &t.target.arch),
        ("imageType", &t.target.image_type),
    ] {
        if v.is_empty() {
            f.err(r.key("target").key(k), format!("target.{k} is required"));
        }
    }
    if merged && t.system_config.is_none() {
        f.err(
            r.key("systemConfig"),
            "systemConfig is required in the merged template",
        );
    }
    f
}
