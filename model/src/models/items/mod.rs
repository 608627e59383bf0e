//! The items of images/, instances/, groups/ and storages/ (and the
//! synthesized base images), with their sub-items.
//!
//! One file per item family: `images.rs` (images, base images, their
//! `runtimes:` entries and `modifications:` entries), `instances.rs`
//! (instances and their `storages:` mappings), `groups.rs`, `users.rs`,
//! `storages.rs`. What they share is here: where a refusal lands.

mod groups;
mod images;
mod instances;
mod storages;
mod users;

pub use groups::{Group, MAX_GID};
pub use images::{
    BaseImage, BaseImageImageBuilderSubconfig, Image, ImageImageBuilderSubconfig, ModItemModel,
};
pub use instances::{Instance, StorageMapping};
pub use storages::{SHARE_MODES, STORAGE_STATES, Storage};
pub use users::{PROFILE, Profile, User};

use crate::diag::{Diagnostic, Origin};
use crate::fields::Fields;

/// Where a refusal about `key` lands: the key's value when declared, else
/// the mapping.
fn at_key_or_map(f: &Fields<'_>, key: &str) -> Origin {
    if f.has(key) {
        f.origin_of(key)
    } else {
        f.origin().clone()
    }
}

fn refuse(f: &mut Fields<'_>, key: &str, msg: String) {
    let at = at_key_or_map(f, key);
    f.error(Diagnostic::error(msg).at(at));
}
