//! `csis cloud-config check`: findings with line and column, exit 1 only
//! when a document or an entry is refused, `--offline` refusing what would
//! otherwise be ignored.

use std::process::Command;

fn check(args: &[&str], files: &[(&str, &str)]) -> (i32, String) {
    let t = csis_test_support::temp_tree(files.iter().copied());
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(t.path())
        .args(["cloud-config", "check"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

const GOOD: &str = "#cloud-config
hostname: web-001
users:
  - name: operator
    sudo: ALL=(ALL) NOPASSWD:ALL
    ssh-authorized-keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA operator@example
    no-create-home: true
";

#[test]
fn a_clean_document_passes_and_an_ignored_key_only_warns() {
    let (code, out) = check(&["good.yml"], &[("good.yml", GOOD)]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "good.yml:7:5: warning: users: account 'operator': 'no-create-home' is accepted and ignored (a systemd user record has nothing to map it to)\ngood.yml: ok (0 refused, 1 reported)\n"
    );
    let (code, out) = check(&["--offline", "good.yml"], &[("good.yml", GOOD)]);
    assert_eq!(code, 1, "--offline ignores nothing: {out}");
    assert!(out.starts_with("good.yml:7:5: error: "), "{out}");
}

#[test]
fn a_refused_entry_or_document_exits_1_and_every_file_is_reported() {
    let (code, out) = check(
        &["bad.yml", "list.yml"],
        &[
            ("bad.yml", "users:\n  - name: x\n    uid: 65535\n"),
            ("list.yml", "- a\n"),
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "bad.yml:3:10: error: users: account 'x': uid 65535 is refused (systemd refuses it, and a refused record fails every account in the seed); the account is refused
bad.yml: refused (1 refused, 0 reported)
list.yml:1:1: error: the top level is a list, not a mapping; the whole document is refused
list.yml: refused (1 refused, 0 reported)
"
    );
}

#[test]
fn a_known_key_of_the_wrong_shape_only_warns() {
    let (code, out) = check(
        &["shape.yml"],
        &[(
            "shape.yml",
            "#cloud-config\nusers: operator\nrepos: {name: Base}\n",
        )],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        "shape.yml:2:8: warning: users must be a list, not a scalar; it is skipped
shape.yml:3:8: warning: repos must be a list, not a mapping; it is skipped
shape.yml: ok (0 refused, 2 reported)
"
    );
}

#[test]
fn a_nul_in_a_sudo_rule_or_a_tuf_root_and_an_encoded_file_exit_1() {
    let (code, out) = check(
        &["nul.yml"],
        &[(
            "nul.yml",
            "#cloud-config
users:
  - name: ops
    sudo: \"ALL=(ALL) \\0ALL\"
repos:
  - name: Base
    url: http://repo.example/Base
    tuf_root: \"{\\0}\"
write_files:
  - path: /etc/motd
    encoding: b64
    content: aGk=
",
        )],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out,
        "nul.yml:4:11: error: users: account 'ops': a sudo rule holds a NUL byte; the account is refused
nul.yml:8:15: error: repos: 'Base': tuf_root holds a NUL byte; the repository is skipped
nul.yml:11:5: error: write_files: '/etc/motd': 'encoding' changes what ends up in the file and is refused; the file is skipped
nul.yml: refused (3 refused, 0 reported)
"
    );
}

/// The user-data csis emits for the example reads clean as instance-setup
/// reads it, and passes `cloud-init schema` (CI installs cloud-init and sets
/// CSIS_REQUIRE_CLOUD_INIT, so there a missing tool fails the test).
#[test]
fn the_example_user_data_is_valid_cloud_config() {
    let t = csis_test_support::tree("config");
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(t.path())
        .args(["run", "instance-image"])
        .env("CSIS_NOW", "1796226804")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = t
        .path()
        .join("generated/instance-image/local-instances/instance-generation");
    let mut docs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cloud-config"))
        .collect();
    docs.sort();
    assert_eq!(docs.len(), 2, "one document per local instance: {docs:?}");
    let cloud_init =
        csis_test_support::tool_available("cloud-init", "CSIS_REQUIRE_CLOUD_INIT", "cloud-init");
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        assert!(text.starts_with("#cloud-config\n"), "{text}");
        let check = Command::new(env!("CARGO_BIN_EXE_csis"))
            .args(["cloud-config", "check"])
            .arg(doc)
            .output()
            .unwrap();
        assert_eq!(
            check.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&check.stdout)
        );
        if cloud_init {
            let schema = Command::new("cloud-init")
                .args(["schema", "--config-file"])
                .arg(doc)
                .output()
                .unwrap();
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&schema.stdout),
                String::from_utf8_lossy(&schema.stderr)
            );
            // The exit status is the verdict: the wording of success
            // changed across releases ("Valid cloud-config: <file>" up to
            // 22.x, "Valid schema <file>" later), so no wording is
            // required.
            assert!(
                schema.status.success(),
                "{}: cloud-init schema exited {:?}: {said}",
                doc.display(),
                schema.status.code()
            );
        }
    }
}

/// The limit is on the launch script the user-data carries, which wraps the
/// userdata lines: validate refuses exactly what generation would, one byte
/// either side of 4095.
#[test]
fn a_launch_script_too_big_to_carry_is_refused_at_validate() {
    let t = csis_test_support::tree("local-run");
    let r = t.path();
    let declared = "echo \"hello from box\" > \"$CSIS_INSTANCE_DIR/greeting\"";
    let run = crate::support::csis_at(r, 1796226804, &["--brief", "run", "instance-image"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let dir = r.join("generated/instance-image");
    let script = csis_test_support::files_below(&dir)
        .into_values()
        .find(|p| p.to_string_lossy().ends_with("-box.user-data"))
        .unwrap();
    let around = std::fs::read(&script).unwrap().len() - declared.len();
    assert!(around > 200, "the launch script adds {around} bytes");
    let fill = |n: usize| format!("userdata: echo {}", "x".repeat(n - 5));
    let mut now = format!("userdata: {declared}");
    for (userdata, code) in [(4095 - around, 0), (4095 - around + 1, 1), (5000, 1)] {
        let next = fill(userdata);
        crate::support::edit(r, "instances/box.yml", &now, &next);
        now = next;
        let v = crate::support::csis_at(r, 1796226804, &["--brief", "validate"]);
        let stderr = String::from_utf8_lossy(&v.stderr).to_string();
        assert_eq!(v.status.code(), Some(code), "{userdata}: {stderr}");
        let run = crate::support::csis_at(r, 1796226804, &["--brief", "run", "instance-image"]);
        assert_eq!(run.status.code(), Some(code), "{userdata}: run");
        if code == 1 {
            assert_eq!(
                stderr,
                format!(
                    "instances/box.yml:4:15: instance 'box': user-data file '/var/lib/csis/launch.sh' is {} bytes (userdata is {userdata} of them), over the 4095 a file can carry at boot -- move the work into the image\nvalidate: 1 error(s)\n",
                    userdata + around
                )
            );
        }
    }
}
