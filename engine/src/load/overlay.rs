//! Overlays (`--overlay FILE`) and `--undeclare KIND:NAME`: changes to the
//! tree for one invocation. The tree on disk is never changed.

use std::sync::Arc;

use csis_model::{Diagnostic, DocPath, ItemKind, Map, Origin, Value};

use crate::db::files::parse_file;
use crate::db::{Db, SourceFile, Tree};
use crate::load::reserved::{refuse_invalid_config_keys, refuse_reserved_names};

/// One named entry of an overlay collection.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct OverlayEntry {
    pub kind: ItemKind,
    pub name: String,
    /// The entry's keys, without `undeclare`.
    pub value: Arc<Value>,
    pub undeclare: bool,
    pub origin: Origin,
}

#[derive(Debug, PartialEq, Eq, Clone, Default)]
pub struct OverlayDocument {
    pub config: Option<Map>,
    pub entries: Vec<OverlayEntry>,
    pub diags: Vec<Diagnostic>,
}

fn allowed_keys(kinds: &[ItemKind]) -> Vec<&'static str> {
    let mut v = vec!["config"];
    v.extend(kinds.iter().map(|k| k.key()));
    v
}

#[salsa::tracked(returns(ref))]
pub fn overlay_document(db: &dyn Db, file: SourceFile) -> OverlayDocument {
    let path = file.path(db).clone();
    let parsed = parse_file(db, file);
    let mut out = OverlayDocument::default();
    let root = Origin::new(path.clone(), DocPath::root());
    if let Some(e) = &parsed.error {
        out.diags.push(e.clone().at(root));
        return out;
    }
    let Some(Value::Map(map)) = parsed.value.as_deref() else {
        out.diags.push(
            Diagnostic::error(format!("Overlay {path} must be a mapping at the top level"))
                .at(root),
        );
        return out;
    };
    let doc = Value::Map(map.clone());
    out.diags
        .extend(refuse_reserved_names(&path, &doc, &DocPath::root()));
    out.diags.extend(refuse_invalid_config_keys(&path, &doc));
    out.diags
        .extend(csis_secrets::refuse_markers_at(&path, &doc, true));
    let kinds = db.registry().item_kinds();
    let allowed = allowed_keys(&kinds);
    let unknown: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !allowed.contains(k))
        .collect();
    if !unknown.is_empty() {
        out.diags.push(
            Diagnostic::error(format!(
                "Overlay {path}: unknown top-level key(s) {}; allowed: [{}]",
                unknown.join(", "),
                allowed.join(", ")
            ))
            .at(root.key(unknown[0]))
            .on_key(),
        );
    }
    for (key, v) in map.iter() {
        if key == "config" {
            match v {
                Value::Map(m) => out.config = Some((**m).clone()),
                Value::Null => {}
                _ => out.diags.push(
                    Diagnostic::error(format!("Overlay {path}: 'config' must be a mapping"))
                        .at(root.key("config")),
                ),
            }
            continue;
        }
        let Some(kind) = kinds.iter().copied().find(|k| k.key() == key) else {
            continue;
        };
        let list_error = || {
            Diagnostic::error(format!(
                "Overlay {path}: '{key}' must be a list of named entries"
            ))
            .at(root.key(key))
        };
        let Some(items) = v.as_seq() else {
            out.diags.push(list_error());
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let Some(m) = item.as_map() else {
                out.diags.push(list_error());
                continue;
            };
            let Some(name) = m.get("name").and_then(Value::as_str) else {
                out.diags.push(list_error());
                continue;
            };
            let mut entry = m.clone();
            let undeclare = entry
                .shift_remove("undeclare")
                .and_then(|u| u.as_str().and_then(csis_model::fields::parse_bool))
                .unwrap_or(false);
            out.entries.push(OverlayEntry {
                kind,
                name: csis_model::naming::safe_name(name),
                value: Arc::new(Value::map(entry)),
                undeclare,
                origin: root.key(key).index(i),
            });
        }
    }
    out
}

/// One `--undeclare` flag, parsed.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct Undeclare {
    pub kind: ItemKind,
    pub name: String,
}

pub fn parse_undeclare(spec: &str, kinds: &[ItemKind]) -> Result<Undeclare, Diagnostic> {
    let Some((kind, name)) = spec.split_once(':') else {
        return Err(Diagnostic::error(format!(
            "--undeclare {spec}: expected <kind>:<name>"
        )));
    };
    if name.trim().is_empty() {
        return Err(Diagnostic::error(format!(
            "--undeclare {spec}: expected <kind>:<name>"
        )));
    }
    let Some(kind) = ItemKind::parse(kind.trim(), kinds) else {
        let allowed: Vec<&str> = kinds.iter().map(|k| k.key()).collect();
        return Err(Diagnostic::error(format!(
            "--undeclare {spec}: unknown kind {kind}; allowed: [{}]",
            allowed.join(", ")
        )));
    };
    Ok(Undeclare {
        kind,
        name: csis_model::naming::safe_name(name),
    })
}

/// Every overlay's `config:` merged, key by key, in command-line order.
#[salsa::tracked(returns(ref))]
pub fn overlay_config(db: &dyn Db, tree: Tree) -> Option<Map> {
    let mut merged: Option<Map> = None;
    for file in tree.overlays(db) {
        if let Some(c) = &overlay_document(db, *file).config {
            let m = merged.get_or_insert_with(Map::default);
            for (k, v) in c {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclare_flags() {
        assert_eq!(
            parse_undeclare("image:web", &ItemKind::CORE).unwrap(),
            Undeclare {
                kind: ItemKind::IMAGES,
                name: "web".into()
            }
        );
        assert_eq!(
            parse_undeclare("storages:Data", &ItemKind::CORE)
                .unwrap()
                .kind,
            ItemKind::STORAGES
        );
        assert_eq!(
            parse_undeclare("web", &ItemKind::CORE).unwrap_err().message,
            "--undeclare web: expected <kind>:<name>"
        );
        assert_eq!(
            parse_undeclare("box:web", &ItemKind::CORE)
                .unwrap_err()
                .message,
            "--undeclare box:web: unknown kind box; allowed: [users, groups, storages, images, instances, base_images]"
        );
    }
}
