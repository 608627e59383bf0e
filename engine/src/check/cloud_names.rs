//! Cloud resource names that collide: a runtime that derives its
//! resources' names from the declared ones (GCE lowercases, turns every
//! other character into a dash and truncates) can map two declarations to
//! one name, and then one bake or apply overwrites, adopts or fails on the
//! other's resource. Each runtime says what it derives
//! ([`csis_plugin_api::Builder::derived_names`]); this rule refuses, per
//! runtime and resource kind, every declaration whose derived name an
//! earlier one (in reading order) already has, naming both.

use std::collections::{BTreeMap, HashMap};

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Origin, Vct};
use csis_plugin_api::Builder;

use crate::db::files::parse_file;
use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;

/// The first declaration of a derived name.
struct First {
    kind: ItemKind,
    name: String,
    origin: Option<Origin>,
}

/// Every declaration whose derived cloud name an earlier one on the same
/// runtime already has.
pub fn cloud_name_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let b = builders(db, tree);
    let registry = db.registry();
    // One builder per runtime, asked for every item on it.
    let mut hooks: HashMap<String, Option<Box<dyn Builder>>> = HashMap::new();
    let build = |runtime: &str| -> Option<Box<dyn Builder>> {
        let d = b.resolve(Vct::RuntimeBuilderModel, runtime)?;
        Some((registry.model(d.classification, d.model)?.builder)(d))
    };
    let runtime_of = |vct: Vct, reference: &str| -> Option<String> {
        b.resolve(vct, reference)
            .and_then(|d| d.base.runtime().map(str::to_string))
    };
    let index = item_index(db, tree);
    let mut first: BTreeMap<(String, &'static str, String), First> = BTreeMap::new();
    let mut out = Vec::new();
    for kind in [ItemKind::IMAGES, ItemKind::INSTANCES, ItemKind::STORAGES] {
        for name in index.names(kind) {
            let si = structured_item(db, ItemId::new(db, tree, kind, name.as_str()));
            let runtimes: Vec<String> = match si.item.as_deref() {
                Some(Item::Image(img)) => img
                    .runtimes
                    .iter()
                    .filter_map(|e| runtime_of(Vct::ImageBuilderModel, &e.image_builder))
                    .collect(),
                Some(Item::Instance(inst)) => {
                    runtime_of(Vct::InstanceBuilderModel, &inst.root.named.type_)
                        .into_iter()
                        .collect()
                }
                // The runtime its builder applies on, as the storage's root
                // names the disk.
                Some(Item::Storage(st)) => vec![
                    runtime_of(Vct::StorageBuilderModel, &st.named.type_)
                        .unwrap_or_else(|| st.runtime.clone()),
                ],
                _ => continue,
            };
            let mut runtimes_seen: Vec<&str> = Vec::new();
            for runtime in &runtimes {
                if runtimes_seen.contains(&runtime.as_str()) {
                    continue;
                }
                runtimes_seen.push(runtime);
                let hook = hooks
                    .entry(runtime.clone())
                    .or_insert_with(|| build(runtime));
                let Some(hook) = hook else { continue };
                // One refusal per pair of declarations: an image whose
                // family collides has colliding image names too.
                let mut named: Vec<String> = Vec::new();
                for (what, derived) in hook.derived_names(kind, name) {
                    let key = (runtime.clone(), what, derived.clone());
                    match first.get(&key) {
                        Some(f) if !(f.kind == kind && f.name == *name) => {
                            if named.contains(&f.name) {
                                continue;
                            }
                            named.push(f.name.clone());
                            let at = f
                                .origin
                                .as_ref()
                                .map(|o| format!(" ({})", position(db, tree, o)))
                                .unwrap_or_default();
                            out.push(
                                Diagnostic::error(format!(
                                    "{} '{name}' becomes {what} '{derived}', as {} '{}'{at} does; two resources cannot share a name: rename one",
                                    kind.singular(),
                                    f.kind.singular(),
                                    f.name
                                ))
                                .at_opt(si.origin.as_ref().map(|o| o.key("name")))
                                .on_key(),
                            );
                        }
                        Some(_) => {}
                        None => {
                            first.insert(
                                key,
                                First {
                                    kind,
                                    name: name.clone(),
                                    origin: si.origin.as_ref().map(|o| o.key("name")),
                                },
                            );
                        }
                    }
                }
            }
        }
    }
    out
}

/// `file:line:col` of `origin`'s key, or the origin as written when its
/// file is not one of the tree's.
fn position(db: &dyn Db, tree: Tree, origin: &Origin) -> String {
    let file = tree
        .item_files(db)
        .iter()
        .map(|f| f.file)
        .chain(tree.overlays(db).iter().copied())
        .find(|f| f.path(db).as_ref() == origin.file.as_ref());
    let span = file.and_then(|f| parse_file(db, f).positions.nearest(&origin.path, true));
    match span {
        Some(s) => format!(
            "{}:{}:{}",
            csis_model::escape_controls(&origin.file),
            s.line,
            s.col
        ),
        None => csis_model::escape_controls(&origin.to_string()).into_owned(),
    }
}
