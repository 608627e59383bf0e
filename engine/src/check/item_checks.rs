//! The checks that are one query per item, reported for the whole tree.
//!
//! A tree-wide report concatenates per-item results. Read item by item,
//! it would depend on every item's memo (27,000 on a large tree), and salsa
//! re-verifies every one of those dependencies after each edit; read
//! through one query per (file, kind, check), it depends on a few thousand,
//! and only the edited file's query re-runs.

use csis_model::{Diagnostic, ItemKind};

use crate::db::index::ItemSource;
use crate::db::{Db, SourceFile, Tree};
use crate::load::items::{ItemId, item_file_names, item_index};

/// A per-item check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemCheck {
    /// What structuring the item found.
    Structure,
    /// Its own foreign keys, policies, test specs, hostname.
    Own,
    /// An instance's storage mappings under the strict attach rule.
    Attach,
    LabelKeys,
    Zones,
    BakeUsers,
    IdentityItem,
    UserData,
}

impl ItemCheck {
    fn run<'db>(self, db: &'db dyn Db, tree: Tree, id: ItemId<'db>) -> &'db Vec<Diagnostic> {
        match self {
            ItemCheck::Structure => &crate::load::items_model::structured_item(db, tree, id).diags,
            ItemCheck::Own => crate::check::validate::item_diagnostics(db, tree, id),
            ItemCheck::Attach => crate::check::storages::attach_diagnostics(db, tree, id),
            ItemCheck::LabelKeys => crate::check::labels::label_keys_of(db, tree, id),
            ItemCheck::Zones => crate::check::zones::zones_of(db, tree, id),
            ItemCheck::BakeUsers => crate::check::bake_users::image_bake_users(db, tree, id),
            ItemCheck::IdentityItem => crate::check::identity_items::identity_item_of(db, tree, id),
            ItemCheck::UserData => crate::check::user_data::user_data_of(db, tree, id),
        }
    }
}

/// `check`'s diagnostics over every item of `kinds`, in index order.
pub fn each_item(db: &dyn Db, tree: Tree, kinds: &[ItemKind], check: ItemCheck) -> Vec<Diagnostic> {
    let index = item_index(db, tree);
    let mut out = Vec::new();
    for kind in kinds {
        for f in tree.item_files(db).iter().filter(|f| f.dir == kind.dir()) {
            out.extend(
                file_findings(db, tree, f.file, *kind, check)
                    .iter()
                    .cloned(),
            );
        }
        // Items an overlay declares come last, as in the index.
        let declared = index.items.get(kind).into_iter().flatten();
        for (name, source) in declared {
            if let ItemSource::Overlay { .. } = source {
                let id = ItemId::new(db, *kind, name.clone());
                out.extend(check.run(db, tree, id).iter().cloned());
            }
        }
    }
    out
}

/// `check` over the items of one kind one file declares: those the index
/// takes from it (not a duplicate, not undeclared).
#[salsa::tracked(returns(ref))]
fn file_findings(
    db: &dyn Db,
    tree: Tree,
    file: SourceFile,
    kind: ItemKind,
    check: ItemCheck,
) -> Vec<Diagnostic> {
    let indexed = item_index(db, tree).items.get(&kind);
    let mut out = Vec::new();
    for (n, (k, name)) in item_file_names(db, tree, file).iter().enumerate() {
        let here = ItemSource::Tree { file, index: n };
        if *k == kind && indexed.and_then(|m| m.get(name)) == Some(&here) {
            let id = ItemId::new(db, kind, name.clone());
            out.extend(check.run(db, tree, id).iter().cloned());
        }
    }
    out
}
