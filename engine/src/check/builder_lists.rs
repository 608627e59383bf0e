//! A kind of item declared with no builder of its class at all (a first
//! tree without `group_builders:` or `mod_builders:`): one error per
//! missing list, at the first item that needs it. Every error about an
//! item with no builder to take it follows from this one and is folded
//! under it (csis_model::cause), so a person reads the cause once.

use csis_model::{Diagnostic, ItemKind, Subject, Value, Vct};

use crate::db::{Db, Tree};
use crate::load::builder_labels::label_in_sentence;
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index, raw_item};

/// The builder lists cfg/ lacks for the items the tree declares.
#[salsa::tracked(returns(ref))]
pub fn missing_builder_lists(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let b = builders(db, tree);
    let index = item_index(db, tree);
    let mut out = Vec::new();
    let mut refuse = |vct: Vct, needs: String, at: Option<csis_model::Origin>| {
        out.push(
            Diagnostic::error(format!(
                "{needs} a {what}, and cfg/ declares none -- declare one under {key}: with is_default: true",
                what = label_in_sentence(vct),
                key = csis_model::vct::builder_list_key(vct).unwrap_or("its builder list"),
            ))
            .at_opt(at)
            .refusing(Subject::Builder(vct.sanitize(), None))
            // A list written under a misspelt key is refused there.
            .following(Subject::Builder(vct.sanitize(), None)),
        );
    };
    for (kind, vct) in [
        (ItemKind::USERS, Vct::UserBuilderModel),
        (ItemKind::GROUPS, Vct::GroupBuilderModel),
        (ItemKind::STORAGES, Vct::StorageBuilderModel),
        (ItemKind::INSTANCES, Vct::InstanceBuilderModel),
    ] {
        if !b.names(vct).is_empty() {
            continue;
        }
        if let Some(first) = index.names(kind).next() {
            let at = raw_item(db, tree, ItemId::new(db, tree, kind, first)).map(|r| r.origin());
            refuse(
                vct,
                format!(
                    "{} '{first}' (and every {} after it) needs",
                    kind.singular(),
                    kind.singular()
                ),
                at,
            );
        }
    }
    if b.names(Vct::ModBuilderModel).is_empty() {
        let with_mods = index.names(ItemKind::IMAGES).find_map(|name| {
            let raw = raw_item(db, tree, ItemId::new(db, tree, ItemKind::IMAGES, name))?;
            let has = raw
                .value
                .get("modifications")
                .as_ref()
                .and_then(Value::as_seq)
                .is_some_and(|s| !s.is_empty());
            has.then(|| (name, raw.origin().key("modifications")))
        });
        if let Some((image, at)) = with_mods {
            refuse(
                Vct::ModBuilderModel,
                format!("the modifications of image '{image}' (and of every image after it) need"),
                Some(at),
            );
        }
    }
    out
}
