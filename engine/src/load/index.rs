//! The item index a load computes once and the workspace stores
//! (`Tree::index`): every item by kind and name in reading order, the
//! duplicates refused, then what overlays and `--undeclare` add and take
//! away. Read through `load::items::item_index`.

use std::sync::Arc;

use csis_model::{Diagnostic, ItemKind};

use crate::db::{Db, SourceFile, Tree};
use crate::db::{ItemIndex, ItemSource, Names};
use crate::load::items::{ItemFileEntries, RawItem, item_file_entries};
use crate::load::overlay::{overlay_document, parse_undeclare};

/// Builds the item index from the item files' names, the overlays and
/// `--undeclare`: what the workspace stores in [`Tree::index`].
pub fn compute_index(db: &dyn Db, tree: Tree) -> ItemIndex {
    let mut index = ItemIndex::default();
    let kinds = db.registry().item_kinds();
    for kind in &kinds {
        index.items.insert(*kind, Names::default());
    }
    // Each file's entries are read once, then taken kind by kind (users
    // before groups, whatever the files' order). The first declaration
    // of a name is the one the index already holds.
    let files: Vec<(&str, SourceFile, &ItemFileEntries)> = tree
        .item_files(db)
        .iter()
        .map(|f| (f.dir, f.file, item_file_entries(db, f.file)))
        .collect();
    for (dir, file, entries) in &files {
        if *dir == ItemKind::INSTANCES.dir()
            && !entries.items.is_empty()
            && entries.items.iter().all(|e| e.kind == ItemKind::INSTANCES)
        {
            index.instances_only.insert(*file);
        }
    }
    // Each kind's names on a core of its own (a large tree's users are
    // twenty thousand), each reading every file's entries for its own, its
    // duplicates found as they are inserted: sorted out by kind first on
    // one thread, the entries kept the other cores waiting. Beside them,
    // the files with an entry of no kind the index holds.
    use rayon::prelude::*;
    let (built, unheld): (Vec<(Names, Vec<Duplicate<'_>>)>, Vec<SourceFile>) = rayon::join(
        || {
            kinds
                .par_iter()
                .map(|kind| names_of(*kind, &files))
                .collect()
        },
        || {
            files
                .iter()
                .filter(|(_, _, entries)| {
                    entries
                        .items
                        .iter()
                        .any(|e| !kinds.iter().any(|k| k.key() == e.kind.key()))
                })
                .map(|(_, file, _)| *file)
                .collect()
        },
    );
    index.partial_files.extend(unheld);
    for (kind, (names, duplicates)) in kinds.iter().copied().zip(built) {
        index.items.insert(kind, names);
        let origin =
            |f: SourceFile, i: usize| item_file_entries(db, f).items.get(i).map(RawItem::origin);
        for d in duplicates {
            index.partial_files.insert(d.again.0);
            let prev = origin(d.first.0, d.first.1)
                .map(|o| o.to_string())
                .unwrap_or_default();
            index.diags.push(
                Diagnostic::error(format!(
                    "Duplicate name '{}' found in list for key '{}'",
                    d.name,
                    kind.key()
                ))
                .at_opt(origin(d.again.0, d.again.1).map(|o| o.key("name")))
                .help(format!(
                    "rename one of the entries (first declared at {prev})"
                )),
            );
        }
    }
    for file in tree.overlays(db) {
        let od = overlay_document(db, *file);
        for (i, entry) in od.entries.iter().enumerate() {
            if !index.items.contains_key(&entry.kind) {
                continue;
            }
            if entry.undeclare {
                if !index.undeclare(entry.kind, &entry.name) {
                    index.diags.push(
                        Diagnostic::warning(format!(
                            "Overlay {}: {} '{}' is not declared; nothing to undeclare.",
                            file.path(db),
                            entry.kind.singular(),
                            entry.name
                        ))
                        .at(entry.origin.clone()),
                    );
                }
            } else if let Some(m) = index.items.get_mut(&entry.kind)
                && !m.contains_key(entry.name.as_str())
            {
                m.insert(
                    Arc::from(entry.name.as_str()),
                    ItemSource::Overlay {
                        file: *file,
                        index: i,
                    },
                );
                index
                    .overlay_declared
                    .push((entry.kind, entry.name.clone()));
            }
        }
    }
    for spec in tree.undeclare(db) {
        match parse_undeclare(spec, &kinds) {
            Err(d) => index.diags.push(d),
            Ok(u) => {
                if !index.undeclare(u.kind, &u.name) {
                    index.diags.push(Diagnostic::warning(format!(
                        "--undeclare {spec}: {} '{}' is not declared; nothing to undeclare.",
                        u.kind.singular(),
                        u.name
                    )));
                }
            }
        }
    }
    index
}

/// A name declared a second time: where first, and where again.
struct Duplicate<'a> {
    name: &'a str,
    first: (SourceFile, usize),
    again: (SourceFile, usize),
}

/// `kind`'s names from the files' entries in reading order; the first
/// declaration of a name is the one kept.
fn names_of<'a>(
    kind: ItemKind,
    files: &[(&str, SourceFile, &'a ItemFileEntries)],
) -> (Names, Vec<Duplicate<'a>>) {
    let of_kind = || {
        files.iter().flat_map(move |(_, file, entries)| {
            entries
                .items
                .iter()
                .enumerate()
                .filter(move |(_, item)| item.kind.key() == kind.key())
                .map(move |(n, item)| (*file, n, item))
        })
    };
    let mut names = Names::default();
    let mut duplicates = Vec::new();
    names.reserve(of_kind().count());
    for (file, n, item) in of_kind() {
        match names.entry(item.name.clone()) {
            indexmap::map::Entry::Occupied(first) => {
                if let ItemSource::Tree { file: f, index: i } = *first.get() {
                    duplicates.push(Duplicate {
                        name: &item.name,
                        first: (f, i),
                        again: (file, n),
                    });
                }
            }
            indexmap::map::Entry::Vacant(slot) => {
                slot.insert(ItemSource::Tree { file, index: n });
            }
        }
    }
    (names, duplicates)
}
