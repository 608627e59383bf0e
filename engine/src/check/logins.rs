//! The logins instances give users: two users may not share one (the same
//! local part at two domains, under `email_as_username`), and a login
//! that is still no account name (empty, or starting with `-`) is refused
//! where the user is declared. check/user_data.rs judges the rest of the
//! account-name rule per instance.

use std::collections::HashMap;

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Origin};

use crate::db::{Db, SourceFile, Tree};
use crate::load::items::{ItemId, indexed_in_file, indexed_in_overlays};
use crate::load::items_model::structured_item;

/// One user's login, as the cross-user check needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Login {
    login: String,
    /// The user's display name, trimmed.
    user: String,
    /// The user's `name:` key.
    at: Option<Origin>,
}

/// The logins of the users one file declares (those the index takes from
/// it). The tree-wide check reads one of these per file, not one
/// structured item per user: a save re-verifies what the report read, and
/// 20,000 users made it the largest part of every re-plan.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_logins(db: &dyn Db, tree: Tree, file: SourceFile) -> Vec<Login> {
    indexed_in_file(db, tree, file)
        .into_iter()
        .filter(|id| id.kind(db) == ItemKind::USERS)
        .filter_map(|id| login_of(db, id))
        .collect()
}

fn login_of<'db>(db: &'db dyn Db, id: ItemId<'db>) -> Option<Login> {
    let si = structured_item(db, id);
    let Some(Item::User(u)) = si.item.as_deref() else {
        return None;
    };
    Some(Login {
        login: u.login.clone(),
        user: u.root.named.display_name.trim().to_string(),
        at: si.origin.as_ref().map(|o| o.key("name")),
    })
}

/// The cross-user check, over every user's login in index order (the
/// files' users, then those an overlay declares), read in place: 20,000
/// logins on the main thread, after the warm-up computed each file's.
pub fn login_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let overlaid: Vec<Login> = indexed_in_overlays(db, tree, ItemKind::USERS)
        .into_iter()
        .filter_map(|id| login_of(db, id))
        .collect();
    let in_files = tree
        .item_files(db)
        .iter()
        .filter(|f| f.dir == ItemKind::USERS.dir())
        .flat_map(|f| file_logins(db, tree, f.file).iter());
    let mut out = Vec::new();
    let mut first: HashMap<&str, &Login, foldhash::fast::RandomState> = HashMap::default();
    for this in in_files.chain(&overlaid) {
        let (login, user) = (this.login.as_str(), this.user.as_str());
        if let Some(why) = csis_model::login::problem(login) {
            out.push(
                Diagnostic::error(format!(
                    "user '{user}' would log in as '{login}', which {why}; no instance can create that account"
                ))
                .at_opt(this.at.clone())
                .help(format!("give user '{user}' an email whose local part begins with a letter, a digit or '_'")),
            );
            continue;
        }
        match first.get(login) {
            Some(other) => out.push(
                Diagnostic::error(format!(
                    "users '{}' and '{user}' both log in as '{login}'; an instance can give only one of them that account",
                    other.user
                ))
                .at_opt(this.at.clone())
                .help(format!(
                    "a login is the email's local part, lower-cased, other characters as '_'; give one of them an email with another local part{}",
                    other.at.as_ref().map(|o| format!(" ('{}' is declared at {o})", other.user)).unwrap_or_default()
                )),
            ),
            None => {
                first.insert(login, this);
            }
        }
    }
    out
}
