//! The order builders' hooks fire in: by classification as
//! [`HOOK_ORDER`] lists them, then by name; generation, the finalize hooks
//! and the builders' `.gitignore` entries follow it.

use std::sync::Arc;

use csis_model::Vct;
use csis_plugin_api::BuilderDecl;

use crate::db::{Db, Tree};
use crate::load::builders::{Builders, builders};

/// The builder classifications in hook order: runtime, state, group, user,
/// OS, mod, storage, image, instance (each sorted by name).
pub const HOOK_ORDER: [Vct; 9] = [
    Vct::RuntimeBuilderModel,
    Vct::StateBackendModel,
    Vct::GroupBuilderModel,
    Vct::UserBuilderModel,
    Vct::OsBuilderModel,
    Vct::ModBuilderModel,
    Vct::StorageBuilderModel,
    Vct::ImageBuilderModel,
    Vct::InstanceBuilderModel,
];

/// The builders whose hooks fire, in hook order: (classification, name).
pub(super) fn builders_in_hook_order(db: &dyn Db, tree: Tree) -> Vec<(Vct, String)> {
    let b = builders(db, tree);
    let mut out = Vec::new();
    for vct in HOOK_ORDER {
        let mut names: Vec<&String> = b
            .by_class
            .get(&vct)
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        names.sort();
        out.extend(names.into_iter().map(|n| (vct, n.clone())));
    }
    out
}

/// The gitignore entries the configuration adds: cfg/'s, then every
/// builder's.
pub(super) fn gitignore_entries(db: &dyn Db, tree: Tree) -> Vec<String> {
    let b = builders(db, tree);
    let mut v: Vec<String> = b
        .config
        .as_ref()
        .map(|c| c.gitignore.clone())
        .unwrap_or_default();
    for d in decls_in_hook_order(b) {
        v.extend(d.base.common().gitignore.iter().cloned());
    }
    v
}

/// Every declared builder in hook order: by classification as
/// [`HOOK_ORDER`] lists them, then by name.
pub(super) fn decls_in_hook_order(b: &Builders) -> Vec<&Arc<BuilderDecl>> {
    HOOK_ORDER
        .iter()
        .flat_map(|vct| {
            let mut decls: Vec<&Arc<BuilderDecl>> = b
                .by_class
                .get(vct)
                .map(|m| m.values().collect())
                .unwrap_or_default();
            decls.sort_by(|a, c| a.name().cmp(c.name()));
            decls
        })
        .collect()
}
