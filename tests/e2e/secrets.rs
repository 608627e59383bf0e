//! Encrypted values end to end, with real age keys made in the test.

use std::path::Path;
use std::process::{Command, Output};

use age::secrecy::ExposeSecret;
use csis_test_support::{temp_tree, write_file};

/// `text` without what its `ENC[...]` markers hold: a ciphertext's
/// base64 may spell any short word (it once spelt "Rae"), so a check that
/// a value left the file looks only outside them.
fn outside_markers(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("ENC[") {
        out.push_str(&rest[..at]);
        rest = rest[at..].find(']').map_or("", |end| &rest[at + end + 1..]);
    }
    out.push_str(rest);
    out
}

fn keypair() -> (String, String) {
    let id = age::x25519::Identity::generate();
    (
        id.to_string().expose_secret().to_string(),
        id.to_public().to_string(),
    )
}

fn encrypt(plain: &str, recipient: &str) -> String {
    use base64::Engine as _;
    use std::io::Write;
    let r: age::x25519::Recipient = recipient.parse().unwrap();
    let enc = age::Encryptor::with_recipients(std::iter::once(&r as &dyn age::Recipient)).unwrap();
    let mut out = Vec::new();
    let mut w = enc.wrap_output(&mut out).unwrap();
    w.write_all(plain.as_bytes()).unwrap();
    w.finish().unwrap();
    format!(
        "ENC[age:{}]",
        base64::engine::general_purpose::STANDARD.encode(out)
    )
}

/// A tree whose users and group rosters are encrypted to `recipient`.
fn tree(recipient: &str) -> tempfile::TempDir {
    temp_tree([
        (
            "cfg/_config.yml",
            format!("id: secret\nencryption:\n  recipients: [{recipient}]\n"),
        ),
        (
            "cfg/builders.yml",
            "runtime_builders:\n  - {name: here, type: local, is_default: true, default_machine_type: small}\ngroup_builders:\n  - {name: unix, type: basic, is_default: true}\nuser_builders:\n  - {name: people, type: basic, is_default: true, email_as_username: false, email_domain: example.com, default_user_email_template: \"{{ user.name }}@{{ builder.email_domain }}\"}\n".to_string(),
        ),
        (
            "groups/people.yml",
            format!(
            "users:\n  - name: \"{}\"\n    first_name: \"{}\"\n    last_name: Quietly\n  - name: blake.bravo\n    first_name: Blake\n    last_name: Bravo\ngroups:\n  - name: ops\n    is_root: true\n    members: [\"{}\", blake.bravo]\n",
            encrypt("sable.secret", recipient),
            encrypt("Sable", recipient),
            encrypt("sable.secret", recipient),
        ),
        ),
    ])
}

fn csis(root: &Path, identity: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_csis"));
    c.current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("CSIS_NOW", "1796226804");
    match identity {
        Some(i) => c.env("CSIS_CONFIG_IDENTITY", i),
        None => c.env_remove("CSIS_CONFIG_IDENTITY"),
    };
    c.output().unwrap()
}

fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

#[test]
fn encrypted_values_load_and_never_reach_the_generated_tree() {
    let (key, recipient) = keypair();
    let t = tree(&recipient);
    let r = t.path();
    let out = csis(r, Some(&key), &["--brief", "validate"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // render shows markers, never the plaintext
    let render = csis(r, Some(&key), &["config", "render", "--format", "json"]);
    let text = String::from_utf8_lossy(&render.stdout).to_string();
    assert!(
        {
            let plain = outside_markers(&text);
            !plain.contains("sable.secret") && !plain.contains("Sable")
        },
        "{text}"
    );
    assert!(text.contains("ENC[age:"), "{text}");
    // a run emits ciphertext; no plaintext under generated/ or meta-state/
    let run = csis(r, Some(&key), &["run", "all"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let emitted = all_text(&r.join("generated")) + &all_text(&r.join("meta-state"));
    for plain in ["sable.secret", "Sable"] {
        assert!(
            !emitted.contains(plain),
            "{plain} reached the generated tree"
        );
    }
    assert!(emitted.contains("ENC[age:"));
    assert!(
        emitted.contains("blake.bravo"),
        "clear values are emitted as written"
    );
}

#[test]
fn identities_in_three_forms_and_the_refusals() {
    let (key, recipient) = keypair();
    let (other, _) = keypair();
    let t = tree(&recipient);
    let r = t.path();
    let brief = |identity: Option<&str>| {
        let o = csis(r, identity, &["--brief", "validate"]);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    // no identity: refused, naming the value's path
    let (code, err) = brief(None);
    assert_eq!(code, Some(1));
    assert!(err.contains("groups/people.yml:2:11: groups/people.yml: users[0].name: an encrypted value is present but CSIS_CONFIG_IDENTITY is not set"), "{err}");
    // an identity that opens nothing
    let (code, err) = brief(Some(&other));
    assert_eq!(code, Some(1));
    assert!(err.contains("users[0].first_name: no identity in CSIS_CONFIG_IDENTITY can decrypt this value (1 tried; it was encrypted to other recipients)"), "{err}");
    // an identity file (age-keygen layout) and a directory of *.age-identity
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("me.txt");
    std::fs::write(
        &file,
        format!("# created: now\n# public key: {recipient}\n{key}\n"),
    )
    .unwrap();
    assert_eq!(brief(Some(file.to_str().unwrap())).0, Some(0));
    std::fs::write(keys.path().join("a.age-identity"), format!("{other}\n")).unwrap();
    std::fs::write(keys.path().join("b.age-identity"), format!("{key}\n")).unwrap();
    assert_eq!(brief(Some(keys.path().to_str().unwrap())).0, Some(0));
    let empty = tempfile::tempdir().unwrap();
    let (_, err) = brief(Some(empty.path().to_str().unwrap()));
    assert!(
        err.contains("no *.age-identity files in that directory"),
        "{err}"
    );
    let (_, err) = brief(Some("/nowhere/at/all"));
    assert!(err.contains("CSIS_CONFIG_IDENTITY=/nowhere/at/all: not an AGE-SECRET-KEY-1 string, an identity file or a directory"), "{err}");
}

#[test]
fn markers_where_none_may_stand_are_refused_without_an_identity() {
    let (_, recipient) = keypair();
    let t = tree(&recipient);
    let r = t.path();
    let m = encrypt("x", &recipient);
    write_file(
        r,
        "storages/s.yml",
        &format!("storages:\n  - name: \"{m}\"\n    description: \"see {m}\"\n"),
    );
    let o = csis(r, None, &["--brief", "validate"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "storages/s.yml: storages[0].name: a declaration's 'name' may not be encrypted"
        ),
        "{err}"
    );
    assert!(err.contains("storages/s.yml: storages[0].description: an encrypted value is embedded in a longer string; make the marker the ENTIRE value"), "{err}");
}

#[test]
fn encrypt_then_reencrypt_to_a_new_recipient() {
    let (key, recipient) = keypair();
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write_file(
        r,
        "cfg/_config.yml",
        &format!(
            "id: s\nencryption:\n  recipients: [{recipient}]\nruntime_builders:\n  - {{name: here, type: local, is_default: true, default_machine_type: s}}\nuser_builders:\n  - {{name: people, type: basic, is_default: true, email_as_username: false}}\n"
        ),
    );
    // Block and flow style alike.
    let roster = "users:\n  - name: quinn.q  # the login\n    first_name: Quinn\n    last_name: 'Q'\n    email: quinn@example.com\n  - {name: rae.r, first_name: Rae, last_name: Romero, email: rae@example.com}\n";
    write_file(r, "groups/people.yml", roster);
    let out = csis(
        r,
        None,
        &[
            "encrypt",
            "--fields",
            "first_name,last_name,email",
            "groups/people.yml",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("groups/people.yml: 6 value(s) encrypted")
    );
    let text = std::fs::read_to_string(r.join("groups/people.yml")).unwrap();
    assert!(
        text.starts_with("users:\n  - name: quinn.q  # the login\n    first_name: \"ENC[age:"),
        "{text}"
    );
    assert!(
        {
            let plain = outside_markers(&text);
            !plain.contains("Quinn") && !plain.contains("quinn@example.com")
        },
        "{text}"
    );
    assert!(
        text.contains("\n  - {name: rae.r, first_name: \"ENC[age:"),
        "{text}"
    );
    assert!(
        {
            let plain = outside_markers(&text);
            !plain.contains("Rae")
                && !plain.contains("Romero")
                && !plain.contains("rae@example.com")
        },
        "{text}"
    );
    assert_eq!(csis(r, Some(&key), &["validate"]).status.code(), Some(0));

    // Rotate to a new recipient: the old key no longer opens anything.
    let (new_key, new_recipient) = keypair();
    write_file(
        r,
        "cfg/_config.yml",
        &std::fs::read_to_string(r.join("cfg/_config.yml"))
            .unwrap()
            .replace(&recipient, &new_recipient),
    );
    let out = csis(r, Some(&new_key), &["reencrypt"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the new key cannot open the old markers"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was changed"));
    assert_eq!(
        std::fs::read_to_string(r.join("groups/people.yml")).unwrap(),
        text
    );
    let out = csis(r, Some(&key), &["reencrypt"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("reencrypt: 6 marker(s) in 1 file(s) now encrypted to 1 recipient(s)")
    );
    let check = csis(r, Some(&new_key), &["decrypt-check"]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("decrypt-check: every marker opens (6)")
    );
    let old = csis(r, Some(&key), &["decrypt-check"]);
    assert_eq!(old.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&old.stderr).contains("groups/people.yml:3: cannot open: no identity in CSIS_CONFIG_IDENTITY can decrypt this value"));
}

/// Interoperability with the age reference tool, both ways (CI installs
/// age and sets CSIS_REQUIRE_AGE, so there a missing tool fails the test).
#[test]
fn markers_interoperate_with_the_age_command() {
    use std::io::Write;
    if !csis_test_support::tool_available("age-keygen", "CSIS_REQUIRE_AGE", "age") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let keyfile = t.path().join("key.txt");
    let keygen = Command::new("age-keygen")
        .arg("-o")
        .arg(&keyfile)
        .output()
        .expect("age-keygen (Debian package age) must be installed");
    assert!(
        keygen.status.success(),
        "{}",
        String::from_utf8_lossy(&keygen.stderr)
    );
    let keytext = std::fs::read_to_string(&keyfile).unwrap();
    let recipient = keytext
        .lines()
        .find_map(|l| l.strip_prefix("# public key: "))
        .unwrap()
        .to_string();
    // age -r ... | base64: opens in csis
    let mut child = Command::new("age")
        .args(["-r", &recipient])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"Morgan").unwrap();
    let cipher = child.wait_with_output().unwrap().stdout;
    use base64::Engine as _;
    let marker = format!(
        "ENC[age:{}]",
        base64::engine::general_purpose::STANDARD.encode(&cipher)
    );
    let r = tree(&recipient);
    let people = r.path().join("groups/people.yml");
    let text = std::fs::read_to_string(&people).unwrap();
    std::fs::write(
        &people,
        text.replace("first_name: Blake", &format!("first_name: \"{marker}\"")),
    )
    .unwrap();
    let out = csis(
        r.path(),
        Some(keyfile.to_str().unwrap()),
        &["--brief", "validate"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // csis's markers: base64 -d | age -d
    let ours = std::fs::read_to_string(&people).unwrap();
    let csis_marker = ours
        .split("first_name: \"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let payload = csis_marker
        .strip_prefix("ENC[age:")
        .unwrap()
        .strip_suffix(']')
        .unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .unwrap();
    let mut child = Command::new("age")
        .args(["-d", "-i", keyfile.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let plain = child.wait_with_output().unwrap();
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "Sable");
}

#[test]
fn an_email_built_from_an_encrypted_domain_inherits_its_ciphertext() {
    let (key, recipient) = keypair();
    let t = tree(&recipient);
    let r = t.path();
    let builders = std::fs::read_to_string(r.join("cfg/builders.yml")).unwrap();
    let domain = encrypt("hidden-corp.com", &recipient);
    std::fs::write(
        r.join("cfg/builders.yml"),
        builders.replace(
            "email_domain: example.com",
            &format!("email_domain: \"{domain}\""),
        ),
    )
    .unwrap();
    let out = csis(r, Some(&key), &["config", "render", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let blake = tree["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["first_name"] == "Blake")
        .unwrap();
    let email = blake["email"].as_str().unwrap();
    assert!(email.starts_with("blake.bravo@ENC[age:"), "{email}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hidden-corp.com"));
}

#[test]
fn a_real_run_executes_from_a_private_mirror_with_the_plaintext() {
    let (key, recipient) = keypair();
    let t = tree(&recipient);
    let r = t.path();
    assert!(
        Command::new("git")
            .current_dir(r)
            .args(["init", "-q"])
            .status()
            .unwrap()
            .success()
    );
    let out = csis(r, Some(&key), &["run", "identity", "--no-dry-run"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The step ran on the plaintext (the local store holds it)...
    let users = std::fs::read_to_string(r.join(".csis-local/identity/users.json")).unwrap();
    assert!(
        users.contains("sable.secret") && users.contains("Sable"),
        "{users}"
    );
    let mirrored = all_text(&r.join("_private/identity"));
    assert!(mirrored.contains("sable.secret"));
    // ...the generated tree and meta-state still hold none, and the mirror
    // is ignored by git.
    let emitted = all_text(&r.join("generated")) + &all_text(&r.join("meta-state"));
    assert!(!emitted.contains("sable.secret") && !emitted.contains("Sable"));
    let ignore = std::fs::read_to_string(r.join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "_private/"), "{ignore}");
}
