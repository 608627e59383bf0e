//! The input every file of the tree is read through: its path and text.
//! Its own file so that the item index (index.rs) and the tree (mod.rs),
//! which both hold files, each import it and not each other.

use std::sync::Arc;

/// One file of the tree (or an overlay), by its path relative to the root
/// (an overlay: as given on the command line).
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub path: Arc<str>,
    #[returns(ref)]
    pub text: Arc<str>,
}
