//! Parsing one file: the first queries over every input file.
//!
//! [`document`] parses a file to its value alone (memoized for cfg/ as
//! [`file_document`]; an item file's entries call it directly), so an edit
//! that changes no value (a comment, whitespace, moved lines) is backdated
//! at the first query over it and nothing downstream re-executes.
//! [`parse_file`] parses with
//! positions, on demand: for a diagnostic's `file:line:col`, `--explain`,
//! and the few files whose readers place their findings themselves
//! (overlays, lineage); an item file's positions are never built unless a
//! diagnostic points into it, which keeps a cold load's memory and time
//! (and a save's re-verified memos) down.

use std::collections::HashMap;
use std::sync::Arc;

use csis_model::{Diagnostic, DocPath, Origin, Value};

use crate::db::{Db, SourceFile, Tree};
use csis_yaml::{self as yaml, Positions};

#[derive(Debug, PartialEq, Eq)]
pub struct ParsedFile {
    pub value: Option<Arc<Value>>,
    pub positions: Arc<Positions>,
    pub error: Option<Diagnostic>,
    /// The span of a YAML syntax error (it has no document path).
    pub error_span: Option<yaml::Span>,
}

/// The blake3 digest of a file's text: what the persisted cache keys a
/// file's entries by, and what every key over many files (`load::world`)
/// is made of. The digest the read took, when it took one (no query: a
/// plan after an edit asked one per file, each finding the field set);
/// else hashed once, memoized, not again by each key it enters.
pub fn text_digest(db: &dyn Db, file: SourceFile) -> &[u8; 32] {
    match file.read_digest(db) {
        Some(digest) => digest,
        None => hashed_text(db, file),
    }
}

#[salsa::tracked(returns(ref))]
fn hashed_text(db: &dyn Db, file: SourceFile) -> [u8; 32] {
    crate::db::cache::digest(file.text(db))
}

#[salsa::tracked(returns(ref))]
pub fn parse_file(db: &dyn Db, file: SourceFile) -> ParsedFile {
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
            // Located at the parser's position: the place names the file.
            error: Some(Diagnostic::error(e.message.clone())),
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

/// The file's document, as a query: what cfg/ is read through.
#[salsa::tracked(returns(ref))]
pub fn file_document(db: &dyn Db, file: SourceFile) -> FileDocument {
    document(db, file)
}

/// The file's document; refuses anything but a mapping at the top level.
/// An empty file is an empty mapping. An item file's entries call this
/// directly: one memo fewer per item file, which is what every save
/// re-verifies (a comment-only edit then stops at the entries, equal and
/// backdated, instead of at the document).
pub fn document(db: &dyn Db, file: SourceFile) -> FileDocument {
    let path = file.path(db);
    let value = match yaml::parse_value(file.text(db)) {
        Ok(v) => v,
        Err(e) => {
            return FileDocument {
                value: None,
                diags: vec![
                    Diagnostic::error(e.message).at(Origin::new(path.clone(), DocPath::root())),
                ],
            };
        }
    };
    match value {
        Value::Map(_) => FileDocument {
            value: Some(Arc::new(value)),
            diags: Vec::new(),
        },
        Value::Null => FileDocument {
            value: Some(Arc::new(Value::Map(Default::default()))),
            diags: Vec::new(),
        },
        other => FileDocument {
            value: None,
            diags: vec![
                Diagnostic::error(format!(
                    "the document must be a mapping at the top level, got {}",
                    other.described()
                ))
                .at(Origin::new(path.clone(), DocPath::root()))
                .help("write `key: value` pairs at the top level"),
            ],
        },
    }
}

/// The files the configuration refers to by path ([`Tree::aux_files`]),
/// by that path. A query: every image's fingerprint looks up each script
/// its modifications name, and a scan of every such file per lookup was
/// quadratic in the images (and read every file's path, a dependency of
/// each fingerprint).
#[salsa::tracked(returns(ref))]
fn aux_files_by_path(
    db: &dyn Db,
    tree: Tree,
) -> HashMap<Arc<str>, SourceFile, foldhash::fast::RandomState> {
    let mut out = HashMap::default();
    for f in tree.aux_files(db) {
        // The first of a path, as a scan in order finds it.
        out.entry(f.path(db).clone()).or_insert(*f);
    }
    out
}

/// The file the configuration refers to as `path`, when the tree has it.
pub fn aux_file(db: &dyn Db, tree: Tree, path: &str) -> Option<SourceFile> {
    aux_files_by_path(db, tree).get(path).copied()
}
