//! Identity items checked by their own plugin: each user and group is
//! handed to the builder that owns it, and what the builder refuses is a
//! validation error naming the item. Users' public keys, which reach
//! machines through user-data, are checked here too.

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Vct};

use crate::builders::builders;
use crate::db::{Db, Tree};
use crate::items::{ItemId, item_index};
use crate::items_model::structured_item;

pub fn identity_item_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let b = builders(db, tree);
    let registry = db.registry();
    let index = item_index(db, tree);
    let mut out = Vec::new();
    for (kind, vct) in [
        (ItemKind::USERS, Vct::UserBuilderModel),
        (ItemKind::GROUPS, Vct::GroupBuilderModel),
    ] {
        for name in index.names(kind) {
            let si = structured_item(db, tree, ItemId::new(db, kind, name.clone()));
            let Some(item) = si.item.as_deref() else {
                continue;
            };
            if let Item::User(u) = item {
                for (i, k) in u.public_keys.iter().enumerate() {
                    if let Some(why) = crate::validate::public_key_problem(k) {
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
                _ => continue,
            };
            let Some(d) = b.resolve(vct, type_) else {
                continue;
            };
            let Some(spec) = registry.model(d.classification, d.model) else {
                continue;
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
        }
    }
    out
}
