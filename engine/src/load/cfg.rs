//! Merging cfg/*.yml into one document.
//!
//! Files are read in file-name order. Lists under one key are concatenated;
//! any other key is overwritten by a later file. Each list entry remembers
//! the file and place it came from, so later stages can point at it.

use std::sync::Arc;

use csis_model::vct::BUILDER_KEYS;
use csis_model::{Diagnostic, DocPath, Map, Origin, Seg, Subject, Value};
use indexmap::IndexMap;

use crate::db::files::file_document;
use crate::db::{Db, Tree};
use crate::load::reserved::{refuse_invalid_config_keys, refuse_reserved_names};

/// The merged cfg/ document and where each part came from.
#[derive(Debug, PartialEq, Eq, Clone, Default)]
pub struct CfgDocument {
    pub value: Arc<Value>,
    /// For a top-level key that is not a list: where its value came from.
    key_origins: IndexMap<String, Origin>,
    /// For a list key: where each entry came from.
    list_origins: IndexMap<String, Vec<Origin>>,
    pub diags: Vec<Diagnostic>,
}

impl CfgDocument {
    /// The origin of a node of the merged document.
    pub fn origin(&self, path: &DocPath) -> Option<Origin> {
        let mut segs = path.0.iter();
        let Some(Seg::Key(key)) = segs.next() else {
            return None;
        };
        if let Some(entries) = self.list_origins.get(&**key) {
            let Some(Seg::Index(i)) = segs.next() else {
                return entries
                    .first()
                    .map(|o| Origin::new(o.file.clone(), DocPath::root().key(key)));
            };
            let base = entries.get(*i)?;
            return Some(Origin::new(
                base.file.clone(),
                base.path.joined(segs.cloned()),
            ));
        }
        let base = self.key_origins.get(&**key)?;
        Some(Origin::new(
            base.file.clone(),
            base.path.joined(segs.cloned()),
        ))
    }

    pub fn map(&self) -> Option<&Map> {
        self.value.as_map()
    }
}

/// The keys whose entries must carry unique names.
fn is_named_list(key: &str) -> bool {
    key == "executables" || BUILDER_KEYS.iter().any(|(k, _)| *k == key)
}

/// The refusal of a root with no cfg/ YAML: nothing else can be read.
pub fn missing_cfg(db: &dyn Db, tree: Tree) -> Option<Diagnostic> {
    tree.cfg_files(db).is_empty().then(|| {
        Diagnostic::error(format!(
            "Failed to read configuration from {}/cfg",
            tree.root_display(db)
        ))
        .help("no cfg/ directory or no YAML in it; check --root-dir")
    })
}

#[salsa::tracked(returns(ref))]
pub fn cfg_document(db: &dyn Db, tree: Tree) -> CfgDocument {
    let files = tree.cfg_files(db);
    let mut doc = CfgDocument::default();
    if let Some(missing) = missing_cfg(db, tree) {
        doc.diags.push(missing);
        return doc;
    }
    let mut merged = Map::default();
    for file in files {
        let fd = file_document(db, *file);
        let Some(value) = fd.value.as_deref() else {
            // What the file declared is missing: what names it follows.
            doc.diags.extend(
                fd.diags
                    .iter()
                    .map(|d| d.clone().refusing(Subject::Declarations)),
            );
            continue;
        };
        doc.diags.extend(fd.diags.iter().cloned());
        let path = file.path(db).clone();
        doc.diags
            .extend(refuse_reserved_names(&path, value, &DocPath::root()));
        doc.diags.extend(refuse_invalid_config_keys(&path, value));
        doc.diags
            .extend(csis_secrets::refuse_markers_at(&path, value, true));
        let Some(map) = value.as_map() else { continue };
        for (key, v) in map {
            let origin = Origin::new(path.clone(), DocPath::root().key(key));
            match v {
                Value::Seq(items) => {
                    let origins = doc.list_origins.entry(key.clone()).or_default();
                    let target = merged
                        .entry(key.clone())
                        .or_insert_with(|| Value::Seq(Vec::new()));
                    if !matches!(target, Value::Seq(_)) {
                        *target = Value::Seq(Vec::new());
                        origins.clear();
                    }
                    if let Value::Seq(list) = target {
                        for (i, item) in items.iter().enumerate() {
                            list.push(item.clone());
                            origins.push(origin.index(i));
                        }
                    }
                    doc.key_origins.shift_remove(key);
                }
                other => {
                    doc.list_origins.shift_remove(key);
                    doc.key_origins.insert(key.clone(), origin);
                    merged.insert(key.clone(), other.clone());
                }
            }
        }
    }
    let named = check_list_names(&merged, &doc);
    doc.diags.extend(named);
    doc.value = Arc::new(Value::map(merged));
    doc
}

/// Duplicate names within a list and templated names or types.
fn check_list_names(merged: &Map, doc: &CfgDocument) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (key, v) in merged {
        let Value::Seq(items) = v else { continue };
        if !is_named_list(key) {
            continue;
        }
        let mut seen: IndexMap<String, usize> = IndexMap::new();
        for (i, item) in items.iter().enumerate() {
            let here = DocPath::root().key(key).index(i);
            let name = item.get("name").and_then(Value::as_str);
            if let Some(n) = name {
                if n.contains("{{") {
                    out.push(
                        Diagnostic::error(format!(
                            "Name '{n}' in list for key '{key}' contains template markers."
                        ))
                        .at_opt(doc.origin(&here.key("name")))
                        .help("a name is never a template; write it out"),
                    );
                } else if let Some(first) = seen.get(n) {
                    let first_at = doc
                        .origin(&DocPath::root().key(key).index(*first))
                        .map(|o| format!(" (first declared at {o})"))
                        .unwrap_or_default();
                    out.push(
                        Diagnostic::error(format!(
                            "Duplicate name '{n}' found in list for key '{key}'"
                        ))
                        .at_opt(doc.origin(&here.key("name")))
                        .help(format!("rename one of the entries{first_at}")),
                    );
                } else {
                    seen.insert(n.to_string(), i);
                }
            }
            if let Some(t) = item.get("type").and_then(Value::as_str)
                && t.contains("{{")
            {
                out.push(
                    Diagnostic::error(format!(
                        "Type '{t}' in list for key '{key}' contains template markers."
                    ))
                    .at_opt(doc.origin(&here.key("type")))
                    .help("a type is never a template; name the model"),
                );
            }
        }
    }
    out
}
