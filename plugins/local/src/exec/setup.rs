//! What instance-setup (spec 004) does with an instance's cloud-config at
//! first boot, done to a local instance's root: its hostname, the image
//! group and its accounts (with their keys and sudo grants), and its
//! write_files (the launch script, the csis marker).
//!
//! The document is the `.cloud-config` file generation wrote beside the
//! launch spec (the `#cloud-config` line, then JSON). It becomes one
//! shell script that runs inside the instance's root in the sandbox, so
//! that every path it writes is the instance's, whatever symlinks the
//! image holds.

use serde_json::Value as J;

use csis_plugin_api::image_tests::shell_quote;

/// The setup script for `doc` (the document's mapping).
pub(super) fn setup_script(doc: &J) -> Result<String, String> {
    let mut s = String::from("set -eu\n");
    let str_of = |v: &J, key: &str| v.get(key).and_then(J::as_str).map(str::to_string);
    if let Some(host) = str_of(doc, "hostname") {
        s.push_str(&format!("echo {} > /etc/hostname\n", shell_quote(&host)));
    }
    // The next free id of a file, from 1000 (as useradd and groupadd
    // count); awk is in every userland csis bakes on.
    s.push_str(
        "next_id() { awk -F: 'BEGIN { n = 1000 } $3 >= n && $3 < 60000 { n = $3 + 1 } END { print n }' \"$1\"; }\n",
    );
    // Groups, with every member the document names: the groups entries'
    // members and each user's groups.
    let mut members: Vec<(String, Vec<String>)> = Vec::new();
    let mut member = |group: &str, user: Option<&str>| {
        let at = match members.iter().position(|(g, _)| g == group) {
            Some(i) => i,
            None => {
                members.push((group.to_string(), Vec::new()));
                members.len() - 1
            }
        };
        if let Some(u) = user
            && !members[at].1.iter().any(|m| m == u)
        {
            members[at].1.push(u.to_string());
        }
    };
    for entry in doc
        .get("groups")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
    {
        let Some(map) = entry.as_object() else {
            return Err(format!(
                "cloud-config groups: an entry is not a mapping: {entry}"
            ));
        };
        for (group, users) in map {
            member(group, None);
            for u in users.as_array().into_iter().flatten().filter_map(J::as_str) {
                member(group, Some(u));
            }
        }
    }
    let users = doc
        .get("users")
        .and_then(J::as_array)
        .cloned()
        .unwrap_or_default();
    for u in &users {
        let name = str_of(u, "name").ok_or("cloud-config users: an entry has no name")?;
        for g in u
            .get("groups")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
            .filter_map(J::as_str)
        {
            member(g, Some(&name));
        }
    }
    for (group, list) in &members {
        s.push_str(&format!(
            "grep -q {pat} /etc/group || echo {g}:x:\"$(next_id /etc/group)\":{list} >> /etc/group\n",
            pat = shell_quote(&format!("^{group}:")),
            g = shell_quote(group),
            list = shell_quote(&list.join(",")),
        ));
    }
    for u in &users {
        let name = str_of(u, "name").unwrap_or_default();
        let q = shell_quote(&name);
        let gecos = shell_quote(&str_of(u, "gecos").unwrap_or_default());
        let home = shell_quote(&format!("/home/{name}"));
        // A user group of its own, as useradd makes; a locked password.
        s.push_str(&format!(
            "if ! grep -q {pat} /etc/passwd; then id=\"$(next_id /etc/passwd)\"; echo {q}:x:\"$id\":\"$id\":{gecos}:{home}:/bin/bash >> /etc/passwd; echo {q}:x:\"$id\": >> /etc/group; [ ! -f /etc/shadow ] || echo {q}':!:::::::' >> /etc/shadow; fi\n",
            pat = shell_quote(&format!("^{name}:")),
        ));
        s.push_str(&format!("mkdir -p {home}/.ssh\n"));
        // The sandbox maps only root: a chown to the account's ids fails
        // there (docs/local-runtime.md, "The sandbox"), and the home stays
        // root's; on a machine it is the account's.
        let keys: Vec<String> = u
            .get("ssh_authorized_keys")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
            .filter_map(J::as_str)
            .map(shell_quote)
            .collect();
        if !keys.is_empty() {
            s.push_str(&format!(
                "printf '%s\\n' {} > {home}/.ssh/authorized_keys\nchmod 0600 {home}/.ssh/authorized_keys\n",
                keys.join(" ")
            ));
        }
        s.push_str(&format!(
            "chmod 0700 {home}/.ssh\nchown -R \"$(awk -F: -v u={q} '$1 == u {{ print $3 \":\" $4 }}' /etc/passwd)\" {home} 2>/dev/null || true\n"
        ));
        if let Some(sudo) = str_of(u, "sudo") {
            s.push_str(&format!(
                "mkdir -p /etc/sudoers.d\necho {} >> /etc/sudoers.d/90-cloud-init-users\nchmod 0440 /etc/sudoers.d/90-cloud-init-users\n",
                shell_quote(&format!("{name} {sudo}"))
            ));
        }
    }
    for f in doc
        .get("write_files")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
    {
        let path = str_of(f, "path").ok_or("cloud-config write_files: an entry has no path")?;
        if !path.starts_with('/') {
            return Err(format!(
                "cloud-config write_files: path '{path}' is not absolute"
            ));
        }
        let content = str_of(f, "content").unwrap_or_default();
        let dir = path
            .rsplit_once('/')
            .map_or("/", |(d, _)| if d.is_empty() { "/" } else { d });
        let p = shell_quote(&path);
        s.push_str(&format!(
            "mkdir -p {}\nprintf '%s' {} > {p}\n",
            shell_quote(dir),
            shell_quote(&content)
        ));
        if let Some(mode) = str_of(f, "permissions") {
            s.push_str(&format!("chmod {} {p}\n", shell_quote(&mode)));
        }
    }
    Ok(s)
}

/// The document's mapping from the text of a `.cloud-config` file csis
/// wrote.
pub(super) fn read_document(text: &str) -> Result<J, String> {
    let body = text
        .strip_prefix("#cloud-config\n")
        .ok_or("not a #cloud-config document")?;
    serde_json::from_str(body).map_err(|e| format!("not the document csis writes: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_script_applies_hostname_groups_accounts_and_files() {
        let doc = read_document(
            "#cloud-config\n{\"hostname\": \"box-001\", \"groups\": [{\"ops\": [\"ann\"]}], \"users\": [{\"name\": \"ann\", \"gecos\": \"Ann O'Neil\", \"groups\": [\"ops\"], \"sudo\": \"ALL=(ALL) NOPASSWD:ALL\", \"ssh_authorized_keys\": [\"ssh-ed25519 AAAA ann\"]}], \"write_files\": [{\"path\": \"/var/lib/csis/launch.sh\", \"content\": \"echo 'hi'\\n\", \"permissions\": \"0755\"}]}",
        )
        .unwrap();
        let script = setup_script(&doc).unwrap();
        // Run in the sandbox over a busybox root, as a launch runs it.
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let lay =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/userland.sh");
        assert!(
            std::process::Command::new(lay)
                .arg(r)
                .status()
                .unwrap()
                .success()
        );
        std::fs::write(
            r.join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\nsvc:x:1000:1000::/:/bin/false\n",
        )
        .unwrap();
        let code = crate::exec::sandbox::Sandbox::new(r)
            .run_bash("setup", &script)
            .unwrap();
        assert_eq!(code, Some(0), "{script}");
        let read = |p: &str| std::fs::read_to_string(r.join(p)).unwrap();
        assert_eq!(read("etc/hostname"), "box-001\n");
        assert_eq!(
            read("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\nsvc:x:1000:1000::/:/bin/false\nann:x:1001:1001:Ann O'Neil:/home/ann:/bin/bash\n"
        );
        assert_eq!(
            read("etc/group"),
            "root:x:0:\nops:x:1000:ann\nann:x:1001:\n"
        );
        assert_eq!(
            read("home/ann/.ssh/authorized_keys"),
            "ssh-ed25519 AAAA ann\n"
        );
        assert_eq!(
            read("etc/sudoers.d/90-cloud-init-users"),
            "ann ALL=(ALL) NOPASSWD:ALL\n"
        );
        assert_eq!(read("var/lib/csis/launch.sh"), "echo 'hi'\n");
    }
}
