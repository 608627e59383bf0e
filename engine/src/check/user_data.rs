//! What an instance's user-data will carry, checked at validate: for an
//! instance whose builder emits cloud-config, the names instance-setup(8)
//! would skip at boot (the image group, its members and admins), and the
//! files of the document the builder emits (asked through
//! `Builder::user_data`, the function generation uses) that are too big to
//! carry or hold a NUL byte. Generation reads the rendered document back
//! as well; this catches the cause where it is written.

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Subject};

use crate::db::{Db, Tree};
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;
use crate::plan::hook_context::EngineContext;
use crate::plan::user_data::instance_builder;
use csis_cloud_config::{MAX_CARRIED, name_problem};

const NAME_RULE: &str =
    "cloud-config names are at most 32 characters of [A-Za-z0-9._-], not beginning with '.' or '-'";

pub(crate) fn user_data_of<'db>(db: &'db dyn Db, tree: Tree, id: ItemId<'db>) -> Vec<Diagnostic> {
    let item = |kind: ItemKind, name: &str| {
        let id = ItemId::new(db, tree, kind, csis_model::naming::as_safe_name(name));
        structured_item(db, id)
    };
    let name = id.name(db);
    let mut out = Vec::new();
    let si = structured_item(db, id);
    let Some(Item::Instance(inst)) = si.item.as_deref() else {
        return out;
    };
    let Some(builder) = instance_builder(db, id)
        .filter(|builder| builder.user_data_format() == Some("cloud-config"))
    else {
        return out;
    };
    let at = |key: &str| si.origin.as_ref().map(|o| o.key(key));
    // The files of the document generation emits, as instance-setup
    // carries them: the userdata lines arrive inside the builder's launch
    // script, so the limit applies to the script, not to the declared
    // lines alone.
    // Answering for this instance: a hook reading another one keeps this
    // process from keeping instances files' checks (load/kept_instances.rs).
    let document = builder.user_data(&EngineContext::about_instance(db, tree, name), name);
    for file in document.iter().flat_map(|d| &d.write_files) {
        let carries = if !inst.userdata.is_empty() && file.content.contains(&inst.userdata) {
            format!(" (userdata is {} of them)", inst.userdata.len())
        } else {
            String::new()
        };
        if file.content.contains('\0') {
            out.push(
                Diagnostic::error(format!(
                    "instance '{name}': user-data file '{}' holds a NUL byte; instance-setup refuses it at boot (a NUL ends a tmpfiles.extra line) -- remove it from userdata",
                    file.path
                ))
                .at_opt(at("userdata")),
            );
        } else if file.content.len() > MAX_CARRIED {
            out.push(
                Diagnostic::error(format!(
                    "instance '{name}': user-data file '{}' is {} bytes{carries}, over the {MAX_CARRIED} a file can carry at boot -- move the work into the image",
                    file.path,
                    file.content.len()
                ))
                .at_opt(at("userdata")),
            );
        }
    }
    // sudo reads no drop-in whose file name holds a dot: instance-setup
    // skips such a grant with a warning at boot.
    for account in document.iter().flat_map(|d| &d.accounts.users) {
        if account.sudo.is_some() && account.name.contains('.') {
            out.push(
                Diagnostic::warning(format!(
                    "instance '{name}': user-data account '{}' is granted sudo, but its name holds a dot, so instance-setup skips the grant at boot -- a user who needs sudo needs a name without a dot",
                    account.name
                ))
                .at_opt(at("image")),
            );
        }
    }
    let image = inst.image.as_deref().unwrap_or_default();
    let group = match item(ItemKind::IMAGES, image).item.as_deref() {
        Some(Item::Image(img)) => img.group.clone(),
        _ => None,
    };
    let Some(group) = group else { return out };
    if let Some(why) = name_problem(&group) {
        out.push(
            Diagnostic::error(format!(
                "instance '{name}': its user-data group '{group}' {why}; instance-setup would skip it at boot ({NAME_RULE}) -- rename the group"
            ))
            .at_opt(at("image")),
        );
    }
    let group_id = ItemId::new(
        db,
        tree,
        ItemKind::GROUPS,
        csis_model::naming::as_safe_name(&group),
    );
    for skipped in skipped_accounts(db, group_id) {
        out.push(
            Diagnostic::error(format!(
                "instance '{name}': user-data account {} (group '{group}') {}; instance-setup would skip the account at boot ({NAME_RULE}) -- rename the user",
                skipped.account, skipped.why
            ))
            .at_opt(at("image"))
            .following(Subject::item(ItemKind::USERS, &skipped.user)),
        );
    }
    out
}

/// An account of a group whose name instance-setup would skip.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SkippedAccount {
    user: String,
    /// `'login'`, or `'login' (user 'name')` when they differ.
    account: String,
    why: String,
}

/// The accounts of a group (its members and admins) instance-setup would
/// skip, once per group: every instance of the group's images carries the
/// same accounts (5,000 instances of a large tree looked up 200,000 users).
#[salsa::tracked(returns(ref))]
fn skipped_accounts<'db>(db: &'db dyn Db, group: ItemId<'db>) -> Vec<SkippedAccount> {
    let Some(Item::Group(g)) = structured_item(db, group).item.as_deref() else {
        return Vec::new();
    };
    let tree = group.tree(db);
    let mut accounts: Vec<&String> = g.members.iter().chain(&g.admins).collect();
    accounts.sort();
    accounts.dedup();
    let mut out = Vec::new();
    for user in accounts {
        // The account is the user's login; an empty or dash-first
        // login is refused where the user is declared (check/logins.rs).
        // A kept users file holds it (no secret makes it a marker there).
        let safe = csis_model::naming::as_safe_name(user);
        let declared = match crate::load::kept_users::kept_account(db, tree, &safe) {
            Some(kept) => Some(kept.login),
            None => {
                let id = ItemId::new(db, tree, ItemKind::USERS, safe);
                match structured_item(db, id).item.as_deref() {
                    Some(Item::User(u)) => Some(u.login.to_string()),
                    _ => None,
                }
            }
        };
        let login = match declared {
            Some(login) if csis_model::login::problem(&login).is_some() => continue,
            Some(login) => login,
            None => user.clone(),
        };
        let account = if &login == user {
            format!("'{user}'")
        } else {
            format!("'{login}' (user '{user}')")
        };
        if let Some(why) = name_problem(&login) {
            out.push(SkippedAccount {
                user: user.clone(),
                account,
                why: why.to_string(),
            });
        }
    }
    out
}
