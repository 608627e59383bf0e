//! Cloud resource names that collide: a runtime that derives its
//! resources' names from the declared ones (GCE lowercases, turns every
//! other character into a dash and truncates) can map two declarations to
//! one name, and then one bake or apply overwrites, adopts or fails on the
//! other's resource. Each runtime says what it derives
//! ([`csis_plugin_api::Builder::derived_names`]); this rule refuses, per
//! runtime and resource kind, every declaration whose derived name an
//! earlier one (in reading order) already has, naming both. Runtimes that
//! share a namespace (two gce runtimes on one project) are compared
//! together ([`csis_plugin_api::Builder::name_scope`]).

use std::collections::HashMap;
use std::sync::Arc;

use csis_model::{Diagnostic, ItemKind, Origin, Vct};
use csis_plugin_api::Builder;

use crate::db::files::parse_file;
use crate::db::{Db, SourceFile, Tree};
use crate::load::builders::{Builders, builders};
use crate::load::items::{ItemId, indexed_entries, indexed_in_overlays};
use crate::load::items_model::structured_item;
use crate::load::kept_instances::{InstanceLinks, KeptInstances, instance_links, kept_file};
use crate::load::kept_world::{KeptWorld, kept_world};
use crate::plan::bakes::image_series;
use crate::state::storage_state::storage_runtime;

/// One name an item's runtime derives from its declared name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, salsa::SalsaValue)]
pub(crate) struct Derived {
    /// The runtime's namespace ([`Builder::name_scope`]).
    scope: String,
    /// What it names (`GCE disk name`).
    what: &'static str,
    name: String,
}

/// The kinds whose runtimes derive cloud names from their names.
pub(crate) const NAMED_KINDS: [ItemKind; 3] =
    [ItemKind::IMAGES, ItemKind::INSTANCES, ItemKind::STORAGES];

/// An item of a file (its kind and name) with the names its runtimes
/// derive.
type FileName = (ItemKind, Arc<str>, Vec<Derived>);

/// The first declaration of a derived name.
struct First<'a> {
    kind: ItemKind,
    name: &'a str,
}

/// Where an item's name is declared, looked up only for a diagnostic:
/// kept with each item's derived names, the origins were a fiftieth of a
/// cold plan's memory (issue 40).
fn name_origin(db: &dyn Db, tree: Tree, kind: ItemKind, name: &str) -> Option<Origin> {
    structured_item(db, ItemId::new(db, tree, kind, name)).origin_of("name")
}

/// Every declaration whose derived cloud name an earlier one in the same
/// namespace already has.
pub fn cloud_name_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    // What an overlay declares has no file's query.
    let overlaid: Vec<(ItemKind, ItemId<'_>, Vec<Derived>)> = NAMED_KINDS
        .into_iter()
        .flat_map(|kind| {
            indexed_in_overlays(db, tree, kind)
                .into_iter()
                .map(move |id| (kind, id, item_cloud_names(db, id)))
        })
        .collect();
    let mut first: HashMap<(&str, &'static str, &str), First<'_>, foldhash::fast::RandomState> =
        HashMap::default();
    let mut out = Vec::new();
    for kind in NAMED_KINDS {
        // In index order: each file's items through the ids its query
        // holds (a pass over the index by name interned every item
        // again), then what an overlay declares.
        let in_files = tree
            .item_files(db)
            .iter()
            .filter(|f| f.dir == kind.dir())
            .flat_map(|f| file_cloud_names(db, f.file).iter())
            .filter(|(of, _, _)| *of == kind)
            .map(|(_, name, names)| (&**name, &names[..]));
        let declared_by_overlays = overlaid
            .iter()
            .filter(|(of, _, _)| *of == kind)
            .map(|(_, id, names)| (id.name(db).as_str(), &names[..]));
        for (name, names) in in_files.chain(declared_by_overlays) {
            // One refusal per pair of declarations: an image whose family
            // collides has colliding image names too.
            let mut named: Vec<&str> = Vec::new();
            for d in names {
                let key = (d.scope.as_str(), d.what, d.name.as_str());
                match first.get(&key) {
                    // The same item on two runtimes of one namespace.
                    Some(f) if f.name == name => {}
                    Some(f) => {
                        if named.contains(&f.name) {
                            continue;
                        }
                        named.push(f.name);
                        let at = name_origin(db, tree, f.kind, f.name)
                            .map(|o| format!(" ({})", position(db, tree, &o)))
                            .unwrap_or_default();
                        out.push(
                            Diagnostic::error(format!(
                                "{} '{name}' becomes {} '{}', as {} '{}'{at} does; two resources cannot share a name: rename one",
                                kind.singular(),
                                d.what,
                                d.name,
                                f.kind.singular(),
                                f.name
                            ))
                            .at_opt(name_origin(db, tree, kind, name))
                            .on_key(),
                        );
                    }
                    None => {
                        first.insert(key, First { kind, name });
                    }
                }
            }
        }
    }
    out
}

/// The names the runtimes of each item one file declares derive from its
/// name (those the index takes from the file, in file order; an item
/// that derives none is left out): a query, so an edit that keeps every
/// name and runtime of the file (a description) re-runs no tree-wide
/// comparison. One per file, not per item: a memo per image, instance
/// and storage was 12 MB of a cold plan of four times the reference tree
/// (issue 40).
///
/// What the cache kept of an item (a kept instances file's instance, an
/// image's series and a storage's runtime when it took the world's
/// files) is read by the item's place or name: interning each of them
/// was most of the cloud names' cost after an edit (issue 40).
#[salsa::tracked(returns(ref))]
pub(crate) fn file_cloud_names(db: &dyn Db, file: SourceFile) -> Vec<FileName> {
    let tree = file.tree(db);
    let b = builders(db, tree);
    // Read once for the file's every item, not a query each per item.
    let kept = Kept {
        world: kept_world(db, tree),
        instances: kept_file(db, file),
    };
    indexed_entries(db, file)
        .filter(|(_, item)| NAMED_KINDS.contains(&item.kind))
        .map(|(entry, item)| {
            let (kind, name) = (item.kind, &*item.name);
            let runtimes = kept
                .runtimes(b, entry, kind, name)
                .unwrap_or_else(|| item_runtimes(db, ItemId::new(db, tree, kind, name)));
            let names = derived_names(db, b, kind, name, runtimes);
            (kind, item.name.clone(), names)
        })
        .filter(|(_, _, names)| !names.is_empty())
        .collect()
}

/// The names an item's runtimes derive from its name.
fn item_cloud_names(db: &dyn Db, id: ItemId<'_>) -> Vec<Derived> {
    let (tree, kind, name) = (id.tree(db), id.kind(db), id.name(db));
    derived_names(db, builders(db, tree), kind, name, item_runtimes(db, id))
}

/// What the cache kept of one file's items: the world's unit (its images'
/// series and storages), the file's own (its instances).
struct Kept<'db> {
    world: Option<&'db KeptWorld>,
    instances: Option<&'db KeptInstances>,
}

impl Kept<'_> {
    /// The runtimes of the `entry`-th entry (`kind` `name`) as the cache
    /// kept them, read without its id; `None` when it kept nothing of it.
    fn runtimes(
        &self,
        b: &Builders,
        entry: usize,
        kind: ItemKind,
        name: &str,
    ) -> Option<Vec<String>> {
        if kind == ItemKind::INSTANCES {
            Some(instance_runtimes(b, &self.instances?.links(entry)?))
        } else if kind == ItemKind::IMAGES {
            Some(self.world?.series(name)?.runtimes)
        } else if kind == ItemKind::STORAGES {
            Some(vec![self.world?.storage(name)?.runtime.clone()])
        } else {
            None
        }
    }
}

/// The runtimes an item names: an instance's builder's, an image's (in
/// entry order, as the plan reads them), a storage's.
fn item_runtimes(db: &dyn Db, id: ItemId<'_>) -> Vec<String> {
    let (tree, kind) = (id.tree(db), id.kind(db));
    if kind == ItemKind::INSTANCES {
        instance_links(db, id)
            .map(|links| instance_runtimes(builders(db, tree), &links))
            .unwrap_or_default()
    } else if kind == ItemKind::IMAGES {
        image_series(db, id)
            .as_ref()
            .map(|s| s.runtimes.clone())
            .unwrap_or_default()
    } else if kind == ItemKind::STORAGES {
        storage_runtime(db, id).into_iter().collect()
    } else {
        Vec::new()
    }
}

/// The runtime of an instance's builder.
fn instance_runtimes(b: &Builders, links: &InstanceLinks<'_>) -> Vec<String> {
    b.resolve(Vct::InstanceBuilderModel, links.builder())
        .and_then(|d| d.base.runtime().map(str::to_string))
        .into_iter()
        .collect()
}

/// The names `runtimes` derive from item `name` of `kind`.
fn derived_names(
    db: &dyn Db,
    b: &Builders,
    kind: ItemKind,
    name: &str,
    mut runtimes: Vec<String>,
) -> Vec<Derived> {
    runtimes.sort();
    runtimes.dedup();
    let mut out = Vec::new();
    for runtime in &runtimes {
        let Some(d) = b.resolve(Vct::RuntimeBuilderModel, runtime) else {
            continue;
        };
        let Some(spec) = db.registry().model(d.classification, d.model) else {
            continue;
        };
        let hook: Box<dyn Builder> = (spec.builder)(d);
        // Most runtimes derive no name: the scope is named only for one
        // that does (asked of every image, instance and storage).
        let derived = hook.derived_names(kind, name);
        if derived.is_empty() {
            continue;
        }
        let scope = hook
            .name_scope()
            .unwrap_or_else(|| format!("runtime '{runtime}'"));
        for (what, derived) in derived {
            let d = Derived {
                scope: scope.clone(),
                what,
                name: derived,
            };
            if !out.contains(&d) {
                out.push(d);
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
