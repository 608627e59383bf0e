//! The in-bake assertions (spec: image_tests): shell lines a bake runs as
//! its last step, each exiting 1 with a line on stderr naming what is
//! missing. A build exists only because they passed; its record counts
//! the declared tests as `assertions`.
//!
//! Each assertion is a whole `if ...; then ...; exit 1; fi`: never an
//! AND-OR list, inside which `sh -e` would not stop (the spec's stage 53).

use csis_model::{Map, Value};

/// A shell word, quoted.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn fail(condition: &str, message: &str) -> String {
    format!(
        "if ! {condition}; then echo {} >&2; exit 1; fi",
        shell_quote(&format!("in-bake test failed: {message}"))
    )
}

fn entries<'a>(tests: &'a Map, key: &str) -> impl Iterator<Item = &'a Value> {
    tests.get(key).and_then(Value::as_seq).into_iter().flatten()
}

/// An entry's text: a string, or a mapping's `key`.
fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.as_str().or_else(|| v.get(key).and_then(Value::as_str))
}

/// One in-bake assertion: what it checks, as a build's record lists it
/// (`file /etc/motd`), and its shell line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InBakeCheck {
    pub what: String,
    pub line: String,
}

/// The assertions of a bake: the admin user and each of its keys (base
/// images and every image of their chains), then the declared tests in the
/// order files, packages, commands, services_enabled, users.
pub fn in_bake_assertions(admin_user: &str, admin_keys: &[String], tests: &Map) -> Vec<String> {
    in_bake_checks(admin_user, admin_keys, tests)
        .into_iter()
        .map(|c| c.line)
        .collect()
}

/// [`in_bake_assertions`] with what each one checks. An empty admin user
/// asks for no admin checks (a runtime that provisions none).
pub fn in_bake_checks(admin_user: &str, admin_keys: &[String], tests: &Map) -> Vec<InBakeCheck> {
    let mut out = Vec::new();
    let mut push = |what: String, condition: &str, message: &str| {
        out.push(InBakeCheck {
            what,
            line: fail(condition, message),
        });
    };
    let admin = admin_user.trim();
    if !admin.is_empty() {
        let u = shell_quote(admin);
        push(
            format!("admin user {admin}"),
            &format!("id -u {u} >/dev/null 2>&1"),
            &format!("admin user {admin} does not exist"),
        );
        for key in admin_keys {
            let kind: String = key.split_whitespace().take(1).collect();
            push(
                format!("admin key {kind} of {admin}"),
                &format!(
                    "grep -qxF {} \"$(getent passwd {u} | cut -d: -f6)/.ssh/authorized_keys\"",
                    shell_quote(key.trim())
                ),
                &format!("admin user {admin} lacks an admin public key ({kind})"),
            );
        }
    }
    for f in entries(tests, "files").filter_map(|v| text(v, "path")) {
        push(
            format!("file {f}"),
            &format!("test -e {}", shell_quote(f)),
            &format!("file {f} is missing"),
        );
    }
    for p in entries(tests, "packages").filter_map(|v| text(v, "name")) {
        let q = shell_quote(p);
        push(
            format!("package {p}"),
            &format!("{{ rpm -q {q} >/dev/null 2>&1 || dpkg -s {q} >/dev/null 2>&1; }}"),
            &format!("package {p} is not installed"),
        );
    }
    for c in entries(tests, "commands").filter_map(|v| text(v, "run")) {
        push(
            format!("command {c}"),
            &format!("sh -c {} >/dev/null", shell_quote(c)),
            &format!("command failed: {c}"),
        );
    }
    for s in entries(tests, "services_enabled").filter_map(|v| text(v, "name")) {
        push(
            format!("service {s} enabled"),
            &format!("systemctl is-enabled --quiet {}", shell_quote(s)),
            &format!("service {s} is not enabled"),
        );
    }
    for u in entries(tests, "users").filter_map(|v| text(v, "name")) {
        push(
            format!("user {u}"),
            &format!("id -u {} >/dev/null 2>&1", shell_quote(u)),
            &format!("user {u} does not exist"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_assertion_exits_for_itself() {
        let mut tests = Map::default();
        tests.insert("files".into(), Value::Seq(vec![Value::str("/opt/it's")]));
        tests.insert("packages".into(), Value::Seq(vec![Value::str("vim")]));
        let lines = in_bake_assertions("admin", &["ssh-ed25519 AAAA k".into()], &tests);
        assert_eq!(
            lines,
            vec![
                "if ! id -u 'admin' >/dev/null 2>&1; then echo 'in-bake test failed: admin user admin does not exist' >&2; exit 1; fi",
                "if ! grep -qxF 'ssh-ed25519 AAAA k' \"$(getent passwd 'admin' | cut -d: -f6)/.ssh/authorized_keys\"; then echo 'in-bake test failed: admin user admin lacks an admin public key (ssh-ed25519)' >&2; exit 1; fi",
                "if ! test -e '/opt/it'\\''s'; then echo 'in-bake test failed: file /opt/it'\\''s is missing' >&2; exit 1; fi",
                "if ! { rpm -q 'vim' >/dev/null 2>&1 || dpkg -s 'vim' >/dev/null 2>&1; }; then echo 'in-bake test failed: package vim is not installed' >&2; exit 1; fi",
            ]
        );
    }
}
