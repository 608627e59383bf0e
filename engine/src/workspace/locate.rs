//! Diagnostics mapped back to their files: the file, line and column a
//! diagnostic's origin points at, for messages and logs.

use csis_model::{Diagnostic, Origin};
use csis_yaml::Span;

use crate::db::files::parse_file;
use crate::workspace::{Located, Workspace};

impl Workspace {
    /// `file:line:col: message` (a warning says so), for logs and
    /// `--brief`: one line, whatever the file's name or the message holds
    /// (control characters are escaped).
    pub fn describe(&self, d: &Diagnostic) -> String {
        let level = match d.severity {
            csis_model::Severity::Error => "",
            csis_model::Severity::Warning => "warning: ",
        };
        let line = match self.locate(d) {
            Some(loc) => format!(
                "{}:{}:{}: {level}{}",
                loc.file, loc.span.line, loc.span.col, d.message
            ),
            None => format!("{level}{}", d.message),
        };
        csis_model::escape_controls(&line).into_owned()
    }

    /// The file, text and span a diagnostic points at.
    pub fn locate(&self, d: &Diagnostic) -> Option<Located> {
        self.locate_origin(d.origin.as_ref()?, d.anchor == csis_model::Anchor::Key)
    }

    /// `file:line:col` of a node (its key when `key`), or of its nearest
    /// ancestor the file has.
    pub fn position(&self, origin: &Origin, key: bool) -> Option<String> {
        self.locate_origin(origin, key).map(|l| {
            let file = csis_model::escape_controls(&l.file);
            format!("{file}:{}:{}", l.span.line, l.span.col)
        })
    }

    fn locate_origin(&self, origin: &Origin, key: bool) -> Option<Located> {
        let Origin { file, path } = origin;
        let sf = self.files.get(file.as_ref())?;
        let parsed = parse_file(&self.db, *sf);
        let span = if path.is_root() && parsed.error_span.is_some() {
            parsed.error_span?
        } else {
            parsed.positions.nearest(path, key).unwrap_or(Span {
                offset: 0,
                len: 0,
                line: 1,
                col: 1,
            })
        };
        Some(Located {
            file: file.to_string(),
            text: sf.text(&self.db).clone(),
            span,
        })
    }
}
