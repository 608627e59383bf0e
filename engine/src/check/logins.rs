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
use crate::load::kept_world::{WorldCheck, quiet_check};

/// One user's login, as the cross-user check needs it. What a message
/// says of the user (its name, where it is declared) is looked up by its
/// id when there is a message: an origin and a name per user, kept in
/// every file's memo, were a thirtieth of a cold plan's memory (issue 40).
#[derive(Clone, Debug, PartialEq, Eq, salsa::SalsaValue)]
pub struct Login<'db> {
    login: String,
    id: ItemId<'db>,
}

impl Login<'_> {
    /// The user's display name, trimmed.
    fn user(&self, db: &dyn Db) -> String {
        match structured_item(db, self.id).item.as_deref() {
            Some(Item::User(u)) => u.root.named.display_name.trim().to_string(),
            _ => String::new(),
        }
    }

    /// The user's `name:` key.
    fn at(&self, db: &dyn Db) -> Option<Origin> {
        structured_item(db, self.id).origin_of("name")
    }
}

/// The logins of the users one file declares (those the index takes from
/// it). The tree-wide check reads one of these per file, not one
/// structured item per user: a save re-verifies what the report read, and
/// 20,000 users made it the largest part of every re-plan.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_logins<'db>(db: &'db dyn Db, file: SourceFile) -> Vec<Login<'db>> {
    if let Some(kept) = crate::load::kept_users::kept_users(db, file) {
        return indexed_in_file(db, file)
            .iter()
            .zip(kept.logins())
            .map(|(id, login)| Login {
                login: login.clone(),
                id: *id,
            })
            .collect();
    }
    indexed_in_file(db, file)
        .iter()
        .copied()
        .filter(|id| id.kind(db) == ItemKind::USERS)
        .filter_map(|id| login_of(db, id))
        .collect()
}

fn login_of<'db>(db: &'db dyn Db, id: ItemId<'db>) -> Option<Login<'db>> {
    let si = structured_item(db, id);
    let Some(Item::User(u)) = si.item.as_deref() else {
        return None;
    };
    Some(Login {
        login: u.login.to_string(),
        id,
    })
}

/// The cross-user check, over every user's login in index order (the
/// files' users, then those an overlay declares), read in place: 20,000
/// logins on the main thread, after the warm-up computed each file's. A
/// query, so the cache's writer asks it again for nothing
/// (`load::kept_world`).
#[salsa::tracked(returns(ref))]
pub fn login_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    // It reads users only: kept when it found nothing
    // (load/kept_world.rs).
    if quiet_check(db, tree, WorldCheck::Logins) {
        return Vec::new();
    }
    let overlaid: Vec<Login> = indexed_in_overlays(db, tree, ItemKind::USERS)
        .into_iter()
        .filter_map(|id| login_of(db, id))
        .collect();
    let in_files = tree
        .item_files(db)
        .iter()
        .filter(|f| f.dir == ItemKind::USERS.dir())
        .flat_map(|f| file_logins(db, f.file).iter());
    let mut out = Vec::new();
    // Sized for every user at once: grown by doubling, its inserts were
    // more than half of this check's samples at ten times the reference
    // tree.
    let users = crate::load::items::item_index(db, tree)
        .items
        .get(&ItemKind::USERS)
        .map_or(0, |names| names.len());
    let mut first: HashMap<&str, &Login, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(users, Default::default());
    for this in in_files.chain(&overlaid) {
        let login = this.login.as_str();
        if let Some(why) = csis_model::login::problem(login) {
            let user = this.user(db);
            out.push(
                Diagnostic::error(format!(
                    "user '{user}' would log in as '{login}', which {why}; no instance can create that account"
                ))
                .at_opt(this.at(db))
                .help(format!("give user '{user}' an email whose local part begins with a letter, a digit or '_'")),
            );
            continue;
        }
        match first.get(login) {
            Some(other) => out.push(
                Diagnostic::error(format!(
                    "users '{}' and '{}' both log in as '{login}'; an instance can give only one of them that account",
                    other.user(db),
                    this.user(db)
                ))
                .at_opt(this.at(db))
                .help(format!(
                    "a login is the email's local part, lower-cased, other characters as '_'; give one of them an email with another local part{}",
                    other.at(db).map(|o| format!(" ('{}' is declared at {o})", other.user(db))).unwrap_or_default()
                )),
            ),
            None => {
                first.insert(login, this);
            }
        }
    }
    out
}
