//! Identity items checked by their own plugin: each user and group is
//! handed to the builder that owns it, and what the builder refuses is a
//! validation error naming the item. Users' public keys, which reach
//! machines through user-data, are checked here too.

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;

pub(crate) fn identity_item_of<'db>(
    db: &'db dyn Db,
    tree: Tree,
    id: ItemId<'db>,
) -> Vec<Diagnostic> {
    let (kind, name) = (id.kind(db), id.name(db));
    let vct = if kind == ItemKind::USERS {
        Vct::UserBuilderModel
    } else {
        Vct::GroupBuilderModel
    };
    let mut out = Vec::new();
    let si = structured_item(db, id);
    let Some(item) = si.item.as_deref() else {
        return out;
    };
    if let Item::User(u) = item {
        for (i, k) in u.public_keys.iter().enumerate() {
            if let Some(why) = crate::check::formats::public_key_problem(k) {
                out.push(
                    Diagnostic::error(format!("user '{name}': public key rejected: {why}"))
                        .at_opt(si.origin.as_ref().map(|o| o.key("public_keys").index(i))),
                );
            }
        }
    }
    let type_ = match item {
        Item::User(u) => &u.root.named.type_,
        Item::Group(g) => &g.root.named.type_,
        _ => return out,
    };
    let b = builders(db, tree);
    let Some(d) = b.resolve(vct, type_) else {
        return out;
    };
    let Some(spec) = db.registry().model(d.classification, d.model) else {
        return out;
    };
    for message in (spec.builder)(d).validate_identity_item(item) {
        out.push(
            Diagnostic::error(format!(
                "{} '{name}' ({}): {message}",
                kind.singular(),
                d.name()
            ))
            .at_opt(si.origin.clone()),
        );
    }
    out
}
