//! Item files (groups/**, storages/**, images/**, instances/**) and the
//! index of every item by kind and name, with overlays applied.
//!
//! The index holds names and places only, never values, so editing one
//! item's fields leaves the index equal and salsa stops there: only that
//! item's own queries re-execute.

use std::borrow::Cow;
use std::sync::Arc;

use csis_model::naming::as_safe_name;
use csis_model::{Diagnostic, DocPath, ItemKind, Origin, PackedValue, Subject, Value};
use csis_string_stage::interp::{ENV_FILE_KEY, has_placeholder};

use crate::db::{Db, SourceFile, Tree};
use crate::db::{ItemIndex, ItemSource};
use crate::load::entries;
pub use crate::load::entries::{EntryOrigin, ItemFileEntries, RawItem};
use crate::load::overlay::overlay_document;
use crate::load::reserved::refuse_reserved_names;

/// The item kinds a file may declare, by the directory it lives under.
fn kinds_for(db: &dyn Db, path: &str) -> (String, Vec<ItemKind>) {
    let top = path.split('/').next().unwrap_or_default().to_string();
    let kinds = db
        .registry()
        .item_kinds()
        .into_iter()
        .filter(|k| k.is_read() && k.dir() == top)
        .collect();
    (top, kinds)
}

/// The entries of one item file.
#[salsa::tracked(returns(ref))]
pub fn item_file_entries(db: &dyn Db, file: SourceFile) -> ItemFileEntries {
    let tree = file.tree(db);
    let path = file.path(db).clone();
    if let Some(kept) = db.cache().and_then(|cache| {
        cache.take_shared(&path, crate::db::files::text_digest(db, file), |bytes| {
            entries::decode(&path, &kinds_for(db, &path).1, bytes)
        })
    }) {
        return kept;
    }
    let mut out = ItemFileEntries::default();
    let fd = crate::db::files::document(db, file);
    let (dir, kinds) = kinds_for(db, &path);
    let Some(doc) = fd.value.as_deref() else {
        // The items the file declared are missing: what names one of the
        // kinds its directory holds follows from this.
        out.diags.extend(fd.diags.iter().map(|d| {
            kinds
                .iter()
                .fold(d.clone(), |d, k| d.refusing(Subject::Item(*k, None)))
        }));
        return out;
    };
    out.diags.extend(fd.diags.iter().cloned());
    out.diags.extend(
        refuse_reserved_names(&path, doc, &DocPath::root())
            .into_iter()
            .filter(|d| !is_blank_user_name_with_email(doc, d)),
    );
    out.diags.extend(
        csis_secrets::refuse_markers_at(&path, doc, false)
            .into_iter()
            .filter(|d| !is_user_name(d)),
    );
    // The document is this call's own: its entries are moved out of it,
    // not copied (a copy was a tenth of parsing the tree).
    let Some(doc) = fd.value else { return out };
    let Value::Map(map) = Arc::unwrap_or_clone(doc) else {
        return out;
    };
    let root = Origin::new(path.clone(), DocPath::root());
    for (key, v) in *map {
        let key = key.as_str();
        let Some(kind) = kinds.iter().copied().find(|k| k.key() == key) else {
            let holds: Vec<String> = kinds.iter().map(|k| format!("{}:", k.key())).collect();
            out.diags.push(
                Diagnostic::error(format!(
                    "unknown top-level key '{key}'; a file under {dir}/ holds {}",
                    holds.join(" and ")
                ))
                .at(root.key(key))
                .on_key(),
            );
            continue;
        };
        let items = match v {
            Value::Seq(items) => items,
            Value::Null => Vec::new(),
            _ => {
                out.diags.push(
                    Diagnostic::error(format!("'{key}' must be a list of named entries"))
                        .at(root.key(key)),
                );
                continue;
            }
        };
        // One key for every entry's origin to share.
        let list = root.key(key);
        // Exactly as many as the list holds: the entries are kept to the
        // end of a plan, and growing by doubling left a quarter unused.
        out.items.reserve_exact(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let origin = list.index(i);
            let name = match &item {
                Value::Map(m) => m.get("name").and_then(Value::as_str),
                _ => {
                    out.diags.push(
                        Diagnostic::error(format!(
                            "{key}[{i}] must be a mapping, got {}",
                            item.described()
                        ))
                        .at(origin),
                    );
                    continue;
                }
            };
            let Some(name) = name.or_else(|| named_by_email(kind, &item)) else {
                // A null name is already refused as a reserved word.
                if item.get("name").is_none() {
                    out.diags.push(
                        // A reference to a name of this kind may mean
                        // this entry: it is this error's until it has one.
                        Diagnostic::error(format!("{key}[{i}]: every entry needs a name"))
                            .at(origin)
                            .refusing(Subject::Item(kind, None)),
                    );
                }
                continue;
            };
            let name = name.to_string();
            let mut value = item;
            let mut secrets = Vec::new();
            decrypt_fields(
                db,
                tree,
                kind,
                &mut value,
                &origin,
                &mut secrets,
                &mut out.diags,
            );
            let name = value
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.trim().is_empty())
                .or_else(|| named_by_email(kind, &value))
                .unwrap_or(&name);
            out.items.push(RawItem {
                kind,
                secrets,
                name: Arc::from(&*as_safe_name(name)),
                interpolates: mentions(&value),
                value: PackedValue::pack(&value),
                // As made here: the structured item shares it.
                at: EntryOrigin::At(origin),
            });
        }
    }
    out
}

/// Whether an entry holds a placeholder or an `env_file:`.
pub(crate) fn mentions(entry: &Value) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::Scalar { text, .. } => has_placeholder(text),
            Value::Seq(s) => s.iter().any(walk),
            Value::Map(m) => m.values().any(walk),
            Value::Null => false,
        }
    }
    entry.get(ENV_FILE_KEY).is_some() || walk(entry)
}

/// A user whose name is blank (absent, null or empty) is named by its
/// email: email_as_username's "a blank name is set from the email". The
/// user's builder decides at structuring whether that is allowed.
fn named_by_email(kind: ItemKind, item: &Value) -> Option<&str> {
    if kind != ItemKind::USERS
        || item
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.trim().is_empty())
    {
        return None;
    }
    item.get("email")
        .and_then(Value::as_str)
        .filter(|e| !e.trim().is_empty())
}

/// The reserved-word refusal of a blank user name that its email names.
fn is_blank_user_name_with_email(doc: &Value, d: &Diagnostic) -> bool {
    let Some(o) = &d.origin else { return false };
    let [
        csis_model::Seg::Key(k),
        csis_model::Seg::Index(i),
        csis_model::Seg::Key(n),
    ] = &o.path.0[..]
    else {
        return false;
    };
    &**k == "users"
        && &**n == "name"
        && doc
            .get("users")
            .and_then(Value::as_seq)
            .and_then(|users| users.get(*i))
            .and_then(|u| named_by_email(ItemKind::USERS, u))
            .is_some()
}

/// A user's own name is an encrypted field, unlike any other declaration's.
fn is_user_name(d: &Diagnostic) -> bool {
    d.origin.as_ref().is_some_and(|o| {
        matches!(&o.path.0[..], [csis_model::Seg::Key(k), csis_model::Seg::Index(_), csis_model::Seg::Key(n)] if &**k == "users" && &**n == "name")
    })
}

/// The fields declared encrypted, per kind: scalars, and lists decrypted
/// element by element.
fn encrypted_fields(kind: ItemKind) -> (&'static [&'static str], &'static [&'static str]) {
    match kind {
        ItemKind::USERS => (&["name", "first_name", "last_name", "email"], &[]),
        ItemKind::GROUPS => (&[], &["members", "admins"]),
        _ => (&[], &[]),
    }
}

/// Decrypt every marker in an item's encrypted fields, remembering each
/// plaintext with its marker.
fn decrypt_fields(
    db: &dyn Db,
    tree: Tree,
    kind: ItemKind,
    value: &mut Value,
    origin: &Origin,
    secrets: &mut Vec<csis_model::models::Secret>,
    diags: &mut Vec<Diagnostic>,
) {
    let (scalars, lists) = encrypted_fields(kind);
    let Value::Map(m) = value else { return };
    // `at` is called only for a marker: a place built for every field
    // of every item was most of this function's time.
    let mut open = |text: &mut String, at: &dyn Fn() -> Origin| {
        if !csis_secrets::is_marker(text) {
            return;
        }
        let at = at();
        match csis_secrets::decrypt(text, tree.identities(db)) {
            Ok(plain) => {
                secrets.push(csis_model::models::Secret {
                    plaintext: plain.clone(),
                    marker: text.clone(),
                });
                *text = plain;
            }
            Err(e) => {
                diags.push(Diagnostic::error(format!("{}: {}: {e}", at.file, at.path)).at(at))
            }
        }
    };
    for key in scalars {
        if let Some(Value::Scalar { text, .. }) = m.get_mut(*key) {
            open(text, &|| origin.key(key));
        }
    }
    for key in lists {
        if let Some(Value::Seq(items)) = m.get_mut(*key) {
            for (i, item) in items.iter_mut().enumerate() {
                if let Value::Scalar { text, .. } = item {
                    open(text, &|| origin.key(key).index(i));
                }
            }
        }
    }
}

/// The kind and name of each entry of one item file, in order: all the
/// index reads of a file, so an edit that renames nothing leaves the
/// index as it was (the workspace compares them before and after).
pub fn item_file_names(db: &dyn Db, file: SourceFile) -> Vec<(ItemKind, Arc<str>)> {
    item_file_entries(db, file)
        .items
        .iter()
        .map(|item| (item.kind, item.name.clone()))
        .collect()
}

/// The items one file declares that the index takes from it (not a
/// duplicate, not undeclared), in file order: what a per-file query over
/// the file's items reads. A query: the file's checks and its logins both
/// ask, and each name looked up in the index and interned again was a
/// twentieth of a cold plan of ten times the reference tree, where the
/// index no longer fits a cache (issue 40).
#[salsa::tracked(returns(ref))]
pub fn indexed_in_file<'db>(db: &'db dyn Db, file: SourceFile) -> Vec<ItemId<'db>> {
    let tree = file.tree(db);
    indexed_entries(db, file)
        .map(|(_, item)| ItemId::new(db, tree, item.kind, &*item.name))
        .collect()
}

/// The entries of `file` the index takes, each with its place in the
/// file, in file order: what a kept unit's key and count, and the cloud
/// names of what the cache kept, read of a file, with no item interned
/// (after an edit, interning each kept file's 30 instances and each users
/// file's 200 users only to count and name them was a twentieth of the
/// plan; issue 40).
pub fn indexed_entries<'db>(
    db: &'db dyn Db,
    file: SourceFile,
) -> impl Iterator<Item = (usize, &'db RawItem)> + 'db {
    let index = item_index(db, file.tree(db));
    let partial = index.partial_files.contains(&file);
    item_file_entries(db, file)
        .items
        .iter()
        .enumerate()
        .filter(move |(n, item)| {
            !partial
                || index.items.get(&item.kind).and_then(|m| m.get(&item.name))
                    == Some(&ItemSource::Tree { file, index: *n })
        })
}

/// Every item of `kind`, in index order (the files', then what an overlay
/// declares), through each file's ids: a pass by name interned and looked
/// up every item again, which at ten times the reference tree costs a
/// main-memory read each (issue 40).
pub fn indexed_of_kind<'db>(db: &'db dyn Db, tree: Tree, kind: ItemKind) -> Vec<ItemId<'db>> {
    let mut out: Vec<ItemId<'db>> = tree
        .item_files(db)
        .iter()
        .filter(|f| f.dir == kind.dir())
        .flat_map(|f| indexed_in_file(db, f.file).iter().copied())
        .filter(|id| id.kind(db) == kind)
        .collect();
    out.extend(indexed_in_overlays(db, tree, kind));
    out
}

/// The items of `kind` an overlay declares, in index order (after the
/// files' own).
pub fn indexed_in_overlays<'db>(db: &'db dyn Db, tree: Tree, kind: ItemKind) -> Vec<ItemId<'db>> {
    item_index(db, tree)
        .items
        .get(&kind)
        .into_iter()
        .flatten()
        .filter(|(_, source)| matches!(source, ItemSource::Overlay { .. }))
        .map(|(name, _)| ItemId::new(db, tree, kind, &**name))
        .collect()
}

/// The tree's item index (see [`Tree::index`]).
pub fn item_index(db: &dyn Db, tree: Tree) -> &ItemIndex {
    tree.index(db)
}

/// The identity of one item, interned so queries can take it as a key.
/// Never collected (`revisions = usize::MAX`): an item's id lives as long
/// as the workspace, so salsa keeps no LRU of them and a lookup records
/// no read (a cold plan makes hundreds of thousands of them).
#[salsa::interned(debug, revisions = usize::MAX)]
pub struct ItemId<'db> {
    /// The tree it is an item of: a query about one item takes its id
    /// alone (a query of two keys interns the pair on every call).
    #[returns(copy)]
    pub tree: Tree,
    #[returns(copy)]
    pub kind: ItemKind,
    #[returns(ref)]
    pub name: compact_str::CompactString,
}

/// An item's declaration with every overlay update applied key by key.
///
/// Not a query of its own: its readers depend on the item's file's
/// entries directly, one memo per file rather than one per item (which
/// is what a first save pays for; docs/performance.md, "First saves").
///
/// The entry itself, borrowed, when no overlay touches it (every item of
/// a tree loaded without overlays): a copy of it per reader was a fortieth
/// of a cold plan.
pub fn raw_item<'db>(db: &'db dyn Db, tree: Tree, id: ItemId<'db>) -> Option<Cow<'db, RawItem>> {
    let kind = id.kind(db);
    let name = id.name(db);
    let source = *item_index(db, tree).items.get(&kind)?.get(name.as_str())?;
    // The value the overlays make of the item, before decryption.
    let (mut item, mut value) = match source {
        ItemSource::Tree { file, index } => {
            let entry = item_file_entries(db, file).items.get(index)?;
            let mut updates = tree
                .overlays(db)
                .iter()
                .flat_map(|f| overlay_document(db, *f).entries.iter())
                .filter(|e| e.kind == kind && e.name == *name && !e.undeclare)
                .peekable();
            if updates.peek().is_none() {
                return Some(Cow::Borrowed(entry));
            }
            let mut value = entry.value.unpack();
            for e in updates {
                value.merge_over(&e.value);
            }
            (entry.clone(), value)
        }
        ItemSource::Overlay { file, index } => {
            let e = overlay_document(db, file).entries.get(index)?;
            let item = RawItem {
                kind,
                secrets: Vec::new(),
                name: e.name.as_str().into(),
                // Both set below, once the value is decrypted.
                interpolates: false,
                value: PackedValue::pack(&e.value),
                at: EntryOrigin::At(e.origin.clone()),
            };
            (item, (*e.value).clone())
        }
    };
    // Overlay values decrypt like the tree's; a refusal here is the
    // overlay's own (its diagnostics are reported with the item).
    let mut ignored = Vec::new();
    let origin = item.origin();
    decrypt_fields(
        db,
        tree,
        kind,
        &mut value,
        &origin,
        &mut item.secrets,
        &mut ignored,
    );
    item.interpolates = mentions(&value);
    item.value = PackedValue::pack(&value);
    Some(Cow::Owned(item))
}
