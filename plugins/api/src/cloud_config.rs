//! User-data as a `#cloud-config` document, for runtimes whose instances
//! boot with cloud-init: the launch parameters and the image group's
//! accounts. The engine reads every `#cloud-config` asset back as
//! instance-setup(8) would and fails generation on what it would refuse.

use serde_json::{Value as J, json};

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
    pub users: Vec<Account>,
    /// Group name and members.
    pub groups: Vec<(String, Vec<String>)>,
    pub write_files: Vec<WriteFile>,
}

impl UserData {
    /// The document: the `#cloud-config` line, then the mapping as JSON
    /// (a YAML subset, so every string is quoted and nothing is guessed).
    pub fn render(&self) -> String {
        let users: Vec<J> = self
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
