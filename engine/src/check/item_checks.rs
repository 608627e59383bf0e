//! The checks of one item, reported for the whole tree.
//!
//! A tree-wide report concatenates per-item results. Each check runs
//! inside one query per item file ([`file_findings`]), not in a query per
//! item: the
//! first save of a file makes salsa re-verify every memo of its
//! durability (docs/performance.md, "First saves"), so the number of
//! memos, not what an edit recomputes, is what that save costs. Per file,
//! an edit re-runs the checks of the edited file's items (one image, or a
//! roster of users) and the report depends on a few thousand memos.

use std::collections::BTreeMap;

use csis_model::{Diagnostic, ItemKind};

use crate::db::{Db, SourceFile, Tree};
use crate::load::items::{ItemId, indexed_in_file, indexed_in_overlays, item_file_entries};

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
    /// Every check with the kinds of items it reads, as the tree-wide
    /// reports ask for them (and the parallel warm-up computes them).
    pub fn each(db: &dyn Db) -> Vec<(ItemCheck, Vec<ItemKind>)> {
        use ItemKind as K;
        vec![
            (ItemCheck::Structure, db.registry().item_kinds()),
            (ItemCheck::Own, vec![K::IMAGES, K::INSTANCES, K::STORAGES]),
            (ItemCheck::Attach, vec![K::INSTANCES]),
            (
                ItemCheck::LabelKeys,
                vec![K::IMAGES, K::INSTANCES, K::STORAGES],
            ),
            (ItemCheck::Zones, vec![K::STORAGES, K::INSTANCES]),
            (ItemCheck::BakeUsers, vec![K::IMAGES]),
            (ItemCheck::IdentityItem, vec![K::USERS, K::GROUPS]),
            (ItemCheck::UserData, vec![K::INSTANCES]),
        ]
    }

    /// The kinds `self` reads.
    fn kinds(self, db: &dyn Db) -> Vec<ItemKind> {
        Self::each(db)
            .into_iter()
            .find(|(c, _)| *c == self)
            .map(|(_, k)| k)
            .unwrap_or_default()
    }

    fn run<'db>(self, db: &'db dyn Db, tree: Tree, id: ItemId<'db>) -> Vec<Diagnostic> {
        match self {
            ItemCheck::Structure => crate::load::items_model::structured_item(db, id)
                .diags
                .to_vec(),
            ItemCheck::Own => crate::check::own_checks::item_diagnostics(db, tree, id),
            ItemCheck::Attach => crate::check::storages::attach_diagnostics(db, tree, id),
            ItemCheck::LabelKeys => crate::check::labels::label_keys_of(db, tree, id),
            ItemCheck::Zones => crate::check::zones::zones_of(db, tree, id),
            ItemCheck::BakeUsers => crate::check::bake_users::image_bake_users(db, tree, id),
            ItemCheck::IdentityItem => crate::check::identity_items::identity_item_of(db, tree, id),
            ItemCheck::UserData => crate::check::user_data::user_data_of(db, tree, id),
        }
    }
}

/// `check`'s diagnostics over every item of the kinds it reads, in
/// index order.
pub fn each_item(db: &dyn Db, tree: Tree, check: ItemCheck) -> Vec<Diagnostic> {
    let gathered = gathered_findings(db, tree);
    let mut out = Vec::new();
    for kind in check.kinds(db) {
        if let Some(diags) = gathered.found.get(&(check, kind)) {
            out.extend(diags.iter().cloned());
        }
        // Items an overlay declares come last, as in the index.
        for id in indexed_in_overlays(db, tree, kind) {
            out.extend(check.run(db, tree, id));
        }
    }
    out
}

/// What reading an item file into entries refused, file by file, read
/// through the files' findings: a save that changes no refusal leaves
/// them unchanged, and the tree-wide report is not re-run.
pub fn entries_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    gathered_findings(db, tree).entries.clone()
}

/// Run every item file's checks (memoized): what the cache's writer asks
/// before it keeps any instances file, since a hook reading across
/// instances is noted as the checks run (load/kept_instances.rs).
pub fn check_every_file(db: &dyn Db, tree: Tree) {
    gathered_findings(db, tree);
}

/// Every item file's findings, in file order, by check and kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Gathered {
    entries: Vec<Diagnostic>,
    found: BTreeMap<(ItemCheck, ItemKind), Vec<Diagnostic>>,
}

/// The item files' findings gathered in one pass, which each tree-wide
/// report takes its check's part of: gathered by each of them, the
/// files' findings were fetched nine times over, on the one core the
/// reports run on.
#[salsa::tracked(returns(ref))]
fn gathered_findings(db: &dyn Db, tree: Tree) -> Gathered {
    let mut out = Gathered::default();
    for f in tree.item_files(db) {
        let findings = file_findings(db, f.file);
        out.entries.extend(findings.entries.iter().cloned());
        for found in findings
            .found
            .iter()
            .filter(|found| found.kind.dir() == f.dir)
        {
            out.found
                .entry((found.check, found.kind))
                .or_default()
                .extend(found.diags.iter().cloned());
        }
    }
    out
}

/// What a tree-wide report needs from one item file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileFindings {
    /// Reading the file into entries.
    entries: Vec<Diagnostic>,
    /// Each check that found something, by kind.
    found: Vec<Found>,
}

impl FileFindings {
    /// Reading the file and every check over its items found nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.found.is_empty()
    }
}

/// What one check found over the items of one kind in one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    kind: ItemKind,
    check: ItemCheck,
    diags: Vec<Diagnostic>,
}

/// Reading one file, then every check over the items it declares (those
/// the index takes from it: not a duplicate, not undeclared), by kind and
/// check; only what found something.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_findings(db: &dyn Db, file: SourceFile) -> FileFindings {
    // A file whose checks the cache kept as finding nothing
    // (load/kept_quiet.rs).
    if crate::load::kept_quiet::kept_quiet(db, file) {
        return FileFindings {
            entries: item_file_entries(db, file).diags.clone(),
            found: Vec::new(),
        };
    }
    let tree = file.tree(db);
    // Each item's kind read once: asked per check and kind, it was half a
    // million interned lookups for a large tree.
    let items: Vec<_> = indexed_in_file(db, file)
        .iter()
        .map(|id| (id.kind(db), *id))
        .collect();
    let mut out = FileFindings {
        entries: item_file_entries(db, file).diags.clone(),
        found: Vec::new(),
    };
    for (check, kinds) in ItemCheck::each(db) {
        for kind in kinds {
            let diags: Vec<Diagnostic> = items
                .iter()
                .filter(|(k, _)| *k == kind)
                .flat_map(|(_, id)| check.run(db, tree, *id))
                .collect();
            if !diags.is_empty() {
                out.found.push(Found { kind, check, diags });
            }
        }
    }
    out
}
