//! Parsing one file: the first queries over every input file.
//!
//! [`parse_file`] returns the value and the positions together and
//! re-executes on every edit. [`file_document`] keeps only the value, so an
//! edit that changes no value (a comment, whitespace, moved lines) is
//! backdated there and nothing downstream re-executes.

use std::sync::Arc;

use csis_model::{Diagnostic, DocPath, Origin, Value};

use crate::db::{Db, SourceFile};
use csis_yaml::{self as yaml, Positions};

#[derive(Debug, PartialEq, Eq)]
pub struct ParsedFile {
    pub value: Option<Arc<Value>>,
    pub positions: Arc<Positions>,
    pub error: Option<Diagnostic>,
    /// The span of a YAML syntax error (it has no document path).
    pub error_span: Option<yaml::Span>,
}

#[salsa::tracked(returns(ref))]
pub fn parse_file(db: &dyn Db, file: SourceFile) -> ParsedFile {
    let path = file.path(db).clone();
    match yaml::parse(file.text(db)) {
        Ok((value, positions)) => ParsedFile {
            value: Some(Arc::new(value)),
            positions: Arc::new(positions),
            error: None,
            error_span: None,
        },
        Err(e) => ParsedFile {
            value: None,
            positions: Arc::new(Positions::default()),
            error: Some(Diagnostic::error(format!("{path}: {}", e.message))),
            error_span: Some(e.span),
        },
    }
}

/// A file's top-level mapping, without positions.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct FileDocument {
    pub value: Option<Arc<Value>>,
    pub diags: Vec<Diagnostic>,
}

/// The file's document; refuses anything but a mapping at the top level.
/// An empty file is an empty mapping.
#[salsa::tracked(returns(ref))]
pub fn file_document(db: &dyn Db, file: SourceFile) -> FileDocument {
    let parsed = parse_file(db, file);
    let path = file.path(db);
    if let Some(err) = &parsed.error {
        let d = err.clone().at(Origin::new(path.clone(), DocPath::root()));
        return FileDocument {
            value: None,
            diags: vec![d],
        };
    }
    match parsed.value.as_deref() {
        Some(Value::Map(_)) => FileDocument {
            value: parsed.value.clone(),
            diags: Vec::new(),
        },
        Some(Value::Null) | None => FileDocument {
            value: Some(Arc::new(Value::Map(Default::default()))),
            diags: Vec::new(),
        },
        Some(other) => FileDocument {
            value: None,
            diags: vec![
                Diagnostic::error(format!(
                    "{path}: the document must be a mapping at the top level, got a {}",
                    other.kind_name()
                ))
                .at(Origin::new(path.clone(), DocPath::root()))
                .help("write `key: value` pairs at the top level"),
            ],
        },
    }
}
