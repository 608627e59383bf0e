//! User-data as a `#cloud-config` document, for runtimes whose instances
//! boot with cloud-init: the launch parameters and the image group's
//! accounts. The engine reads every `#cloud-config` asset back as
//! instance-setup(8) would and fails generation on what it would refuse.

use std::sync::Arc;

use csis_model::ItemKind;
use csis_model::models::{Item, ItemView};
use serde_json::{Value as J, json};

use crate::builder::HookContext;

/// A cloud runtime's last bake step before the verification: on an image
/// with cloud-init, cloud-init forgets this machine, so an instance
/// launched from the image runs its user-data afresh.
pub const CLOUD_INIT_CLEAN: &str =
    "if command -v cloud-init >/dev/null 2>&1; then cloud-init clean --logs; fi";

/// One account of the image's group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    /// The real name.
    pub gecos: String,
    pub groups: Vec<String>,
    /// A sudoers line without the account name (`ALL=(ALL) ALL`); one
    /// string, as every cloud-init schema accepts.
    pub sudo: Option<String>,
    /// OpenSSH public key lines.
    pub ssh_authorized_keys: Vec<String>,
}

/// A file the instance gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteFile {
    pub path: String,
    pub content: String,
    /// Three or four octal digits; emitted quoted.
    pub permissions: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserData {
    pub hostname: String,
    /// The accounts and the group entry, shared with every document of
    /// the group's instances (a copy per instance was a fortieth of a cold
    /// plan of the reference tree, whose checks build 5,000 documents).
    pub accounts: Arc<GroupAccounts>,
    pub write_files: Vec<WriteFile>,
}

impl UserData {
    /// The document: the `#cloud-config` line, then the mapping as JSON
    /// (a YAML subset, so every string is quoted and nothing is guessed).
    pub fn render(&self) -> String {
        let users: Vec<J> = self
            .accounts
            .users
            .iter()
            .map(|a| {
                let mut u = json!({ "name": a.name, "gecos": a.gecos, "lock_passwd": true });
                if !a.groups.is_empty() {
                    u["groups"] = json!(a.groups);
                }
                if let Some(sudo) = &a.sudo {
                    u["sudo"] = json!(sudo);
                }
                if !a.ssh_authorized_keys.is_empty() {
                    u["ssh_authorized_keys"] = json!(a.ssh_authorized_keys);
                }
                u
            })
            .collect();
        let groups: Vec<J> = self
            .accounts
            .groups
            .iter()
            .map(|(g, members)| json!({ g.as_str(): members }))
            .collect();
        let files: Vec<J> = self
            .write_files
            .iter()
            .map(|f| {
                json!({
                    "path": f.path,
                    "content": f.content,
                    "permissions": f.permissions,
                    "owner": "root:root",
                })
            })
            .collect();
        let doc = json!({
            "hostname": self.hostname,
            "groups": groups,
            "users": users,
            "write_files": files,
        });
        let body = serde_json::to_string_pretty(&doc).unwrap_or_default();
        format!("#cloud-config\n{body}\n")
    }
}

/// The accounts and the group entry of an image's owning group, as every
/// cloud-config user-data carries them: one account per member and admin
/// (its login, real name and public keys; admins with a passwordless sudo
/// grant, since the accounts are key-only), and the group with their
/// logins. Encrypted names stay markers; the private mirror carries the
/// plaintext. Nothing when the image has no group or it is not declared.
///
/// Builders read these through [`HookContext::group_accounts`], which the
/// engine answers once per group: every instance of the group's images
/// carries the same accounts.
pub fn group_accounts(ctx: &dyn HookContext, group: Option<&str>) -> GroupAccounts {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let group_view = group.and_then(|g| ctx.item(ItemKind::GROUPS, g));
    if let Some(view) = &group_view
        && let Item::Group(g) = view.item.as_ref()
    {
        let gname = view.emit(g.name());
        // By safe name, as the group's checks find its members: a member
        // written `Avery.Alpha` is user `avery.alpha`, and one account.
        let safe = |m: &String| csis_model::naming::safe_name(m);
        let admins: Vec<String> = g.admins.iter().map(safe).collect();
        let mut members: Vec<String> = g.members.iter().map(safe).chain(admins.clone()).collect();
        members.sort();
        members.dedup();
        let mut logins = Vec::new();
        for m in &members {
            let AccountFields { login, gecos, keys } =
                ctx.user_account(m).unwrap_or_else(|| AccountFields {
                    login: view.emit(m),
                    gecos: String::new(),
                    keys: Vec::new(),
                });
            logins.push(login.clone());
            users.push(Account {
                name: login,
                gecos,
                groups: vec![gname.clone()],
                // The accounts are key-only (lock_passwd): a grant that
                // asks for a password could never be used.
                sudo: admins
                    .contains(m)
                    .then(|| "ALL=(ALL) NOPASSWD:ALL".to_string()),
                ssh_authorized_keys: keys,
            });
        }
        groups.push((gname, logins));
    }
    GroupAccounts { users, groups }
}

/// What one user's account is made of, as it may be emitted: its login
/// (the account's name: the email's local part under email_as_username,
/// not the user's name), its real name and its public keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountFields {
    pub login: String,
    pub gecos: String,
    pub keys: Vec<String>,
}

/// `view`'s account, when it is a user: what
/// [`HookContext::user_account`] answers unless the engine knows it
/// without structuring the user.
pub fn account_fields(view: &ItemView) -> Option<AccountFields> {
    let Item::User(user) = view.item.as_ref() else {
        return None;
    };
    Some(AccountFields {
        login: view.emit(&user.login),
        gecos: view.emit(&format!("{} {}", user.first_name, user.last_name)),
        keys: user.public_keys.iter().map(|k| view.emit(k)).collect(),
    })
}

/// The accounts of an image's group and the group with their logins, as
/// [`group_accounts`] reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupAccounts {
    pub users: Vec<Account>,
    pub groups: Vec<(String, Vec<String>)>,
}
