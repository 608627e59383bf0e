//! The per-item check `ItemCheck::Own`: the families of [`Checks`] that
//! read one image, instance or storage and the names it points at (foreign
//! keys, policies, test specs, the canonical hostname), in one order.

use csis_model::Diagnostic;
use csis_model::models::Item;

use crate::check::context::Checks;
use crate::db::{Db, Tree};
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;

/// One image's, instance's or storage's own checks: foreign keys,
/// policies, test specs, the canonical hostname.
pub(crate) fn item_diagnostics<'db>(
    db: &'db dyn Db,
    tree: Tree,
    id: ItemId<'db>,
) -> Vec<Diagnostic> {
    let mut v = Checks::new(db, tree);
    let si = structured_item(db, id);
    let origin = si.origin.as_ref();
    let at = |k: &str| origin.map(|o| o.key(k));
    match si.item.as_deref() {
        Some(Item::Image(img)) => {
            v.image_keys(img, origin);
            v.image_policies(img, &at);
            let name = img.root.name();
            v.test_spec(&format!("image '{name}'"), &img.tests, at("tests"));
        }
        Some(Item::Instance(inst)) => {
            v.instance_keys(inst, &si.storages, origin);
            v.instance_policies(inst, &at);
            v.canonical_hostname(inst, origin);
        }
        Some(Item::Storage(s)) => v.storage_keys(s, origin),
        _ => {}
    }
    v.out
}
