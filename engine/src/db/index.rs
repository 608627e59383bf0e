//! The item index: every item by kind and name, and where each is
//! declared. An input of the database (see [`crate::db::Tree::index`]);
//! `load::items::compute_index` builds it.

use csis_model::{Diagnostic, ItemKind};
use indexmap::IndexMap;

use crate::db::SourceFile;

/// Where an item's declaration lives.
#[derive(Debug, PartialEq, Eq, Clone, Copy, Hash)]
pub enum ItemSource {
    /// The n-th entry of an item file.
    Tree { file: SourceFile, index: usize },
    /// Declared by an overlay for this invocation only (transient).
    Overlay { file: SourceFile, index: usize },
}

/// One kind's items by name, in reading order. foldhash, not SipHash
/// (here and for the kinds): a cold plan looks names up hundreds of
/// thousands of times.
pub type Names = IndexMap<std::sync::Arc<str>, ItemSource, foldhash::fast::RandomState>;

/// Every item by kind and name, in reading order (users before groups),
/// after overlays and `--undeclare`.
#[derive(Debug, PartialEq, Eq, Clone, Default)]
pub struct ItemIndex {
    pub items: IndexMap<ItemKind, Names, foldhash::fast::RandomState>,
    /// Names declared by overlays (transient).
    pub overlay_declared: Vec<(ItemKind, String)>,
    /// Names removed by overlays or flags.
    pub undeclared: Vec<(ItemKind, String)>,
    pub diags: Vec<Diagnostic>,
}

impl ItemIndex {
    pub fn names(&self, kind: ItemKind) -> impl Iterator<Item = &str> {
        self.items
            .get(&kind)
            .into_iter()
            .flat_map(|m| m.keys().map(|n| &**n))
    }

    pub fn contains(&self, kind: ItemKind, name: &str) -> bool {
        self.items.get(&kind).is_some_and(|m| m.contains_key(name))
    }
}
