//! An edit applied to a loaded workspace: a file's new text set with the
//! durability it was loaded with, the item index rebuilt only when the
//! edit may have renamed an item, and whether the edit wants a reload.

use std::sync::Arc;

use salsa::{Durability, Setter};

use crate::load::items::item_file_names;
use crate::workspace::{Workspace, durability_for};

impl Workspace {
    /// Whether the tree must be loaded again to follow an edit: an image
    /// template chain now names a file (an `extends` changed, or a
    /// `template:`) the load did not read, or an entry now reads a remote
    /// state object (s3, gcs) the load did not.
    pub fn wants_reload(&self) -> bool {
        !crate::load::templates::wanted_paths(&self.db, self.tree).is_empty()
            || (!crate::load::interp::declared(&self.db, self.tree)
                .remote
                .is_empty()
                && crate::load::interp::interpolation_files(&self.db, self.tree)
                    .remote
                    .iter()
                    .any(|r| !self.remote_tried.contains(&r.location)))
    }

    /// Whether the load took `path`'s digest (a vendor root tarball): a
    /// change to it is followed by a load, which takes it again.
    pub fn digested(&self, path: &str) -> bool {
        self.tree
            .path_facts(&self.db)
            .get(path)
            .is_some_and(|f| f.digest.is_some())
    }

    /// Replace one file's text (an edit). Returns false for a file the tree
    /// does not hold.
    pub fn set_file_text(&mut self, path: &str, text: &str) -> bool {
        let Some(f) = self.files.get(path).copied() else {
            return false;
        };
        if f.text(&self.db).as_ref() == text {
            return true;
        }
        // The durability the file was loaded with: lowering it would stop
        // salsa from backdating anything downstream (see `durability_for`).
        let durability = durability_for(path);
        // Item names come from the item files (rendered with cfg/): the
        // index is rebuilt only when the edit may have renamed something.
        let tree = self.tree;
        let item_file = tree.item_files(&self.db).iter().any(|i| i.file == f);
        let names_before = item_file.then(|| item_file_names(&self.db, f));
        f.set_text(&mut self.db)
            .with_durability(durability)
            .to(Arc::from(text));
        f.set_read_digest(&mut self.db)
            .with_durability(durability)
            .to(None);
        let renamed = match names_before {
            Some(before) => before != item_file_names(&self.db, f),
            // cfg/ and overlays may rename; records and scripts cannot.
            None => {
                !tree.meta_files(&self.db).contains(&f) && !tree.aux_files(&self.db).contains(&f)
            }
        };
        if renamed {
            let index = crate::load::index::compute_index(&self.db, tree);
            if &index != tree.index(&self.db) {
                tree.set_index(&mut self.db)
                    .with_durability(Durability::MEDIUM)
                    .to(index);
            }
        }
        true
    }
}
