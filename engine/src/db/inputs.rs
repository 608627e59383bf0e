//! The database's inputs: the tree, each file of it, and the item index.
//! One file, because the three name each other (the tree holds its files
//! and its index, the index names the file of each item, and each file
//! names its tree): split, their files would import each other.
//!
//! The item index is every item by kind and name, and where each is
//! declared: an input of the database ([`Tree::index`]), which
//! `load::index::compute_index` builds.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{Diagnostic, ItemKind};
use indexmap::IndexMap;

/// One file of the tree (or an overlay), by its path relative to the root
/// (an overlay: as given on the command line).
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub path: Arc<str>,
    #[returns(ref)]
    pub text: Arc<str>,
    /// The text's blake3 digest when the read that gave it took one (a
    /// plan's recording does), else `None` and `db::files::text_digest`
    /// hashes the text. Set with the text, always: a text set alone
    /// would keep the digest of the one it replaced.
    #[returns(ref)]
    pub read_digest: Option<[u8; 32]>,
    /// The tree the file was read for. A query of one file takes the file
    /// alone and its tree from here: a query of two keys (tree and file)
    /// interned the pair, and recorded a read of it, on every call, a
    /// tenth of the interning of a cold plan at ten times the reference
    /// tree (issue 40).
    #[returns(copy)]
    pub tree: Tree,
}

/// An item file and the item directory it was found under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemFile {
    pub dir: &'static str,
    pub file: SourceFile,
}

/// The whole configuration tree as the engine sees it.
#[salsa::input(debug)]
pub struct Tree {
    /// How messages name the root (`<root>/cfg`).
    #[returns(ref)]
    pub root_display: Arc<str>,
    /// cfg/*.yml and cfg/*.yaml, sorted by file name.
    #[returns(ref)]
    pub cfg_files: Vec<SourceFile>,
    /// Every file under the item directories, sorted by path.
    #[returns(ref)]
    pub item_files: Vec<ItemFile>,
    /// `--overlay` files in command-line order.
    #[returns(ref)]
    pub overlays: Vec<SourceFile>,
    /// `--undeclare KIND:NAME` flags in command-line order.
    #[returns(ref)]
    pub undeclare: Vec<String>,
    /// The process environment snapshot (ENV in templates).
    #[returns(ref)]
    pub env: Arc<BTreeMap<String, String>>,
    /// The run's start, seconds since the epoch, UTC (execution.*).
    #[returns(copy)]
    pub start_unix: i64,
    /// meta-state/*.yaml: the records runs leave (lineage, pins, ...).
    #[returns(ref)]
    pub meta_files: Vec<SourceFile>,
    /// Files the configuration refers to by path (modification scripts),
    /// read so their content enters fingerprints; a missing one is absent.
    #[returns(ref)]
    pub aux_files: Vec<SourceFile>,
    /// What the load learnt of the paths an image template chain names
    /// (its canonical path, whether it is a symlink), by path relative to
    /// the root: the facts the extends resolver asks besides file texts.
    #[returns(ref)]
    pub path_facts: Arc<BTreeMap<String, PathFact>>,
    /// The identities CSIS_CONFIG_IDENTITY names.
    #[returns(ref)]
    pub identities: csis_secrets::IdentitySource,
    /// Every item by kind and name. Derived from the item files, but held
    /// as an input the workspace refreshes after an edit (see
    /// `Workspace::set_file_text`): an edit that renames nothing leaves it
    /// untouched, so what reads it keeps its durability and is not
    /// re-verified.
    #[returns(ref)]
    pub index: ItemIndex,
}

/// A path's facts as the load found them through the `System`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PathFact {
    /// Every symlink followed; `None` when the path does not exist.
    pub canonical: Option<std::path::PathBuf>,
    /// The path itself is a symbolic link.
    pub symlink: bool,
    /// The blake3 digest of its bytes, taken for a file the configuration
    /// names by content rather than as text (a vendor root tarball).
    pub digest: Option<String>,
}

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
    /// The files with an entry the index does not take (a name declared
    /// before, or undeclared): every other file's entries are all taken,
    /// each with no lookup (`load::items::indexed_entries`).
    pub partial_files: std::collections::HashSet<SourceFile, foldhash::fast::RandomState>,
    /// The files under instances/ that declare instances and nothing else
    /// (`load::world::is_instances_file`): known here, where every entry
    /// is read, so that a key over the world reads one index, not each
    /// file's entries.
    pub instances_only: std::collections::HashSet<SourceFile, foldhash::fast::RandomState>,
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

    /// Remove `kind` `name`, as an overlay's `undeclare` or `--undeclare`
    /// asks: whether it was declared. The file that declared it then
    /// holds an entry the index does not take.
    pub fn undeclare(&mut self, kind: ItemKind, name: &str) -> bool {
        let Some(removed) = self.items.get_mut(&kind).and_then(|m| m.shift_remove(name)) else {
            return false;
        };
        if let ItemSource::Tree { file, .. } = removed {
            self.partial_files.insert(file);
        }
        self.undeclared.push((kind, name.to_string()));
        true
    }
}
