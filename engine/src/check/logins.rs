//! The logins instances give users: two users may not share one (the same
//! local part at two domains, under `email_as_username`), and a login
//! that is still no account name (empty, or starting with `-`) is refused
//! where the user is declared. check/user_data.rs judges the rest of the
//! account-name rule per instance.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Origin};

use crate::db::{Db, Tree};
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;

pub fn login_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut first: BTreeMap<String, (String, Option<Origin>)> = BTreeMap::new();
    for name in item_index(db, tree).names(ItemKind::USERS) {
        let si = structured_item(db, tree, ItemId::new(db, ItemKind::USERS, name.clone()));
        let Some(Item::User(u)) = si.item.as_deref() else {
            continue;
        };
        let user = u.root.named.display_name.trim();
        let at = si.origin.as_ref().map(|o| o.key("name"));
        if let Some(why) = csis_model::login::problem(&u.login) {
            out.push(
                Diagnostic::error(format!(
                    "user '{user}' would log in as '{}', which {why}; no instance can create that account",
                    u.login
                ))
                .at_opt(at)
                .help(format!("give user '{user}' an email whose local part begins with a letter, a digit or '_'")),
            );
            continue;
        }
        match first.get(&u.login) {
            Some((other, other_at)) => out.push(
                Diagnostic::error(format!(
                    "users '{other}' and '{user}' both log in as '{}'; an instance can give only one of them that account",
                    u.login
                ))
                .at_opt(at)
                .help(format!(
                    "a login is the email's local part, lower-cased, other characters as '_'; give one of them an email with another local part{}",
                    other_at.as_ref().map(|o| format!(" ('{other}' is declared at {o})")).unwrap_or_default()
                )),
            ),
            None => {
                first.insert(u.login.clone(), (user.to_string(), at));
            }
        }
    }
    out
}
