//! The input every file of the tree is read through: its path, its text
//! and the tree it belongs to. Its own file so that the item index
//! (index.rs) and the tree (mod.rs), which both hold files, each import
//! it and not each other.

use std::sync::Arc;

/// One file of the tree (or an overlay), by its path relative to the root
/// (an overlay: as given on the command line).
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub path: Arc<str>,
    #[returns(ref)]
    pub text: Arc<str>,
    /// The tree the file was read for. A query of one file takes the file
    /// alone and its tree from here: a query of two keys (tree and file)
    /// interned the pair, and recorded a read of it, on every call, a
    /// tenth of the interning of a cold plan at ten times the reference
    /// tree (issue 40).
    #[returns(copy)]
    pub tree: crate::db::Tree,
}
