//! What reading an item file gives (its entries, `items.rs` reads them),
//! and those entries as the persisted cache keeps them (`db::cache`): a
//! fresh process whose file has the text the cache was written from takes
//! its entries from there instead of parsing it.
//!
//! Kept only for a file that read cleanly and holds no encrypted value:
//! its entries are then a function of its path and text alone (the
//! plugin set, which decides the kinds a directory holds, keys the whole
//! cache). A file with findings is parsed again, so that every finding
//! keeps the one code path that makes it; a file with secrets is never
//! written to disk decrypted.

use std::sync::Arc;

use bytes::Bytes;

use csis_model::diag::Origin;
use csis_model::packed::{
    PackedValue, read_flag, read_len, read_str, write_flag, write_len, write_str,
};
use csis_model::path::{DocPath, Seg};
use csis_model::{Diagnostic, ItemKind};

/// One item entry as written in its file.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct RawItem {
    pub kind: ItemKind,
    /// The decrypted values of its encrypted fields.
    pub secrets: Vec<csis_model::models::Secret>,
    /// The normalized name (safe_name), shared with the item index.
    pub name: Arc<str>,
    /// Packed: every entry is held from the load to the end of a plan but
    /// read once, when its item is structured (issue 40).
    pub value: PackedValue,
    /// Where it is written ([`RawItem::origin`]).
    pub at: EntryOrigin,
    /// Whether the value holds an interpolation placeholder or an
    /// `env_file:`: found as the file is read, on every core, rather than
    /// by walking every item again on one thread to find what
    /// interpolation reads.
    pub interpolates: bool,
}

impl RawItem {
    /// Where the entry is written.
    pub fn origin(&self) -> Origin {
        match &self.at {
            EntryOrigin::Listed { list, index } => list.index(*index),
            EntryOrigin::At(origin) => origin.clone(),
        }
    }
}

/// Where an entry is written: an entry taken from the cache, by the list
/// it is in and its place there (its origin made when asked: one held
/// per entry was a path allocated for each of a large tree's entries,
/// though only a finding or a structuring reads one), or an origin as
/// the parse made it (shared with the structured item) or an overlay's.
/// Equal when they name the same place, whichever way.
#[derive(Debug, Clone)]
pub enum EntryOrigin {
    Listed { list: Origin, index: usize },
    At(Origin),
}

impl PartialEq for EntryOrigin {
    fn eq(&self, other: &Self) -> bool {
        use EntryOrigin::{At, Listed};
        match (self, other) {
            (At(a), At(b)) => a == b,
            (Listed { list: a, index: i }, Listed { list: b, index: j }) => a == b && i == j,
            (Listed { list, index }, At(at)) | (At(at), Listed { list, index }) => {
                let (segs, last) = (&*list.path.0, &*at.path.0);
                list.file == at.file
                    && last.len() == segs.len() + 1
                    && last.starts_with(segs)
                    && last.last() == Some(&Seg::Index(*index))
            }
        }
    }
}

impl Eq for EntryOrigin {}

#[derive(Debug, PartialEq, Eq, Clone, Default)]
pub struct ItemFileEntries {
    pub items: Vec<RawItem>,
    pub diags: Vec<Diagnostic>,
}

/// Whether the entries of the file at `path` are kept (see the module's
/// comment).
pub fn keeps(path: &str, entries: &ItemFileEntries) -> bool {
    entries.diags.is_empty() && entries.items.iter().all(|item| place(path, item).is_some())
}

/// Where a kept entry is: `<kind key>[i]` of its file. None for an entry
/// that is not kept.
fn place(path: &str, item: &RawItem) -> Option<usize> {
    if !item.secrets.is_empty() {
        return None;
    }
    let key = item.kind.key();
    match &item.at {
        EntryOrigin::Listed { list, index } => match &*list.path.0 {
            [Seg::Key(k)] if &*list.file == path && **k == *key => Some(*index),
            _ => None,
        },
        EntryOrigin::At(origin) => match &*origin.path.0 {
            [Seg::Key(k), Seg::Index(i)] if &*origin.file == path && **k == *key => Some(*i),
            _ => None,
        },
    }
}

/// The bytes kept for `entries` of the file at `path`; None when they are
/// not to be kept.
pub fn encode(path: &str, entries: &ItemFileEntries) -> Option<Vec<u8>> {
    if !entries.diags.is_empty() {
        return None;
    }
    let size: usize = entries
        .items
        .iter()
        .map(|i| i.value.len() + i.name.len() + 24)
        .sum();
    let mut out = Vec::with_capacity(size + 8);
    write_len(entries.items.len(), &mut out);
    for item in &entries.items {
        let i = place(path, item)?;
        write_str(item.kind.key(), &mut out);
        write_len(i, &mut out);
        write_str(&item.name, &mut out);
        write_flag(item.interpolates, &mut out);
        write_len(item.value.as_bytes().len(), &mut out);
        out.extend_from_slice(item.value.as_bytes());
    }
    Some(out)
}

/// The entries `encode` kept, for the file at `path` whose directory holds
/// `kinds`; None when the bytes are not such entries.
pub fn decode(path: &Arc<str>, kinds: &[ItemKind], unit: &Bytes) -> Option<ItemFileEntries> {
    // The values are ranges of the unit as the cache read it: a copy of
    // each unit was half of what taking a file's entries cost, most of it
    // the faults of the fresh memory.
    let bytes: &[u8] = unit;
    let mut at = 0;
    let count = read_len(bytes, &mut at)?;
    let mut items = Vec::with_capacity(count.min(bytes.len()));
    // One list origin per kind, shared by its entries as a parse shares it.
    let mut lists: Vec<(ItemKind, Origin)> = Vec::new();
    for _ in 0..count {
        let key = read_str(bytes, &mut at)?;
        let kind = *kinds.iter().find(|k| k.key() == key)?;
        let index = read_len(bytes, &mut at)?;
        let name = read_str(bytes, &mut at)?;
        let interpolates = read_flag(bytes, &mut at)?;
        let len = read_len(bytes, &mut at)?;
        let end = at.checked_add(len)?;
        let value = PackedValue::in_buffer(unit, at..end)?;
        at = end;
        let list = match lists.iter().find(|(k, _)| *k == kind) {
            Some((_, list)) => list.clone(),
            None => {
                let list = Origin::new(path.clone(), DocPath::root()).key(key);
                lists.push((kind, list.clone()));
                list
            }
        };
        items.push(RawItem {
            kind,
            secrets: Vec::new(),
            name: Arc::from(name),
            value,
            at: EntryOrigin::Listed { list, index },
            interpolates,
        });
    }
    (at == bytes.len()).then_some(ItemFileEntries {
        items,
        diags: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry's place, as the cache keeps it (its list and index) or as
    /// the parse made it (its origin): the same place is equal either
    /// way, and makes the same origin.
    #[test]
    fn an_entrys_place_is_equal_however_it_is_held() {
        let list = Origin::new("images/a.yml", DocPath::root()).key("images");
        let listed = EntryOrigin::Listed {
            list: list.clone(),
            index: 2,
        };
        let at = EntryOrigin::At(list.index(2));
        assert_eq!(listed, at);
        assert_eq!(at, listed);
        assert_ne!(listed, EntryOrigin::At(list.index(3)));
        assert_ne!(listed, EntryOrigin::At(list.clone()));
        let elsewhere = Origin::new("images/b.yml", DocPath::root()).key("images");
        assert_ne!(listed, EntryOrigin::At(elsewhere.index(2)));
        assert_ne!(
            listed,
            EntryOrigin::At(
                Origin::new("images/a.yml", DocPath::root())
                    .key("users")
                    .index(2)
            )
        );
        let item = |at: EntryOrigin| RawItem {
            kind: ItemKind::IMAGES,
            secrets: Vec::new(),
            name: Arc::from("a"),
            value: PackedValue::pack(&csis_model::Value::Null),
            at,
            interpolates: false,
        };
        assert_eq!(item(listed.clone()).origin(), list.index(2));
        assert_eq!(place("images/a.yml", &item(listed)), Some(2));
        assert_eq!(place("images/a.yml", &item(at)), Some(2));
        assert_eq!(
            place("images/b.yml", &item(EntryOrigin::At(list.index(2)))),
            None
        );
    }
}
