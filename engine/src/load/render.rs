//! `config render`: the tree as csis sees it, raw (as written, overlays
//! applied) or resolved (after the string stage, template resolution and
//! structuring, defaults filled).

use csis_model::vct::BUILDER_KEYS;
use serde_json::{Map as JMap, Value as J};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::cfg::cfg_document;
use crate::load::items::{indexed_of_kind, raw_item};
use crate::load::items_model::structured_item;

/// The raw view: cfg/ merged as written, then each item collection.
pub fn raw_tree(db: &dyn Db, tree: Tree) -> J {
    let mut out = match cfg_document(db, tree).value.to_json() {
        J::Object(m) => m,
        _ => JMap::new(),
    };
    for kind in db.registry().item_kinds() {
        let items: Vec<J> = indexed_of_kind(db, tree, kind)
            .into_iter()
            .filter_map(|id| raw_item(db, tree, id).map(|r| r.value.unpack().to_json()))
            .collect();
        if !items.is_empty() {
            out.insert(kind.key().to_string(), J::Array(items));
        }
    }
    J::Object(out)
}

/// The resolved view: every model with its defaults.
pub fn resolved_tree(db: &dyn Db, tree: Tree) -> J {
    let b = builders(db, tree);
    let mut out = JMap::new();
    if let Some(c) = &b.config
        && let Ok(J::Object(m)) = serde_json::to_value(c.as_ref())
    {
        out.extend(m);
    }
    let exes: Vec<J> = b
        .executables
        .values()
        .filter_map(|e| serde_json::to_value(e).ok())
        .collect();
    out.insert("executables".into(), J::Array(exes));
    for (key, vct) in BUILDER_KEYS {
        let decls: Vec<J> = b
            .by_class
            .get(&vct)
            .into_iter()
            .flat_map(|m| m.values())
            .map(|d| {
                let mut j = serde_json::to_value(&d.base).unwrap_or(J::Null);
                if let J::Object(m) = &mut j {
                    m.insert("type".into(), J::String(d.model.to_string()));
                    for (k, v) in &d.extra {
                        m.insert(k.clone(), v.to_json());
                    }
                }
                j
            })
            .collect();
        out.insert(key.to_string(), J::Array(decls));
    }
    for kind in db.registry().item_kinds() {
        let items: Vec<J> = indexed_of_kind(db, tree, kind)
            .into_iter()
            .filter_map(|id| {
                let si = structured_item(db, id);
                let mut j = serde_json::to_value(si.item.as_deref()?).ok()?;
                // Decrypted values print as their markers.
                redact(&mut j, &si.secrets);
                if let J::Object(m) = &mut j {
                    login_beside_name(m);
                    if !si.mods.is_empty() {
                        m.insert("modifications".into(), serde_json::to_value(&si.mods).ok()?);
                    }
                    if !si.storages.is_empty() {
                        m.insert("storages".into(), serde_json::to_value(&si.storages).ok()?);
                    }
                }
                Some(j)
            })
            .collect();
        if !items.is_empty() {
            out.insert(kind.key().to_string(), J::Array(items));
        }
    }
    J::Object(out)
}

/// A user's login reads next to its name (it is derived from it).
fn login_beside_name(m: &mut JMap<String, J>) {
    let Some(login) = m.shift_remove("login") else {
        return;
    };
    *m = std::mem::take(m)
        .into_iter()
        .flat_map(|(k, v)| {
            let after = (k == "name").then(|| ("login".to_string(), login.clone()));
            std::iter::once((k, v)).chain(after)
        })
        .collect();
}

/// The places where a rendered value still holds a template tag, for
/// "every templated value resolved" checks. A builder's `*_template` fields
/// are templates by definition (rendered per item) and are skipped.
pub fn unresolved_tags(v: &J) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &J, path: &str, out: &mut Vec<String>) {
        match v {
            J::String(s) if s.contains("{{") => out.push(format!("{path}: {s}")),
            J::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| walk(x, &format!("{path}[{i}]"), out)),
            J::Object(m) => m
                .iter()
                .filter(|(k, _)| !k.ends_with("_template"))
                .for_each(|(k, x)| walk(x, &format!("{path}.{k}"), out)),
            _ => {}
        }
    }
    walk(v, "", &mut out);
    out
}

/// Every string holding a decrypted value, with the plaintext replaced by
/// its marker; mapping keys too (a record keyed by an encrypted user name).
pub(crate) fn redact(v: &mut J, secrets: &[csis_model::models::Secret]) {
    if secrets.is_empty() {
        return;
    }
    match v {
        J::String(s) => *s = csis_model::models::emit_with(secrets, s),
        J::Array(a) => a.iter_mut().for_each(|x| redact(x, secrets)),
        J::Object(m) => {
            *m = std::mem::take(m)
                .into_iter()
                .map(|(k, mut x)| {
                    redact(&mut x, secrets);
                    (csis_model::models::emit_with(secrets, &k), x)
                })
                .collect();
        }
        _ => {}
    }
}
