//! Values that break the machine they configure (issue 32, defect 7):
//! each is checked where it enters, against what it becomes. A mount
//! point becomes an fstab field, a user's name parts a gecos, an
//! `admin_user` an account, an `ensure` entry a line of the
//! provisioner's script, and user-data's gecos and sudo rules what
//! useradd and sudoers read.

use std::process::Command;

use csis_test_support::{temp_tree, tree};

use crate::support::{csis_at, edit, here, ok, read, validate_refuses};

const NOW: i64 = 1796226804;

#[test]
fn a_mount_point_with_whitespace_is_refused_at_its_value() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "instances/box.yml",
        "mount_point: /srv/data}",
        r#"mount_point: "/srv/my data"}"#,
    );
    assert_eq!(
        validate_refuses(r),
        "instances/box.yml:6:35: StorageMapping 'data': mount point '/srv/my data' holds whitespace, which /etc/fstab cannot hold unescaped; write it without spaces\nvalidate: 1 error(s)\n"
    );

    // A storage's own mount point, a tab this time (a control character
    // as well, which is named first).
    edit(r, "instances/box.yml", r#""/srv/my data""#, "/srv/data");
    edit(
        r,
        "storages/data.yml",
        "    groups: [ops]\n",
        "    groups: [ops]\n    mount_point: /srv/x y\n",
    );
    assert_eq!(
        validate_refuses(r),
        "storages/data.yml:4:18: Storage 'data': mount point '/srv/x y' holds whitespace, which /etc/fstab cannot hold unescaped; write it without spaces\nvalidate: 1 error(s)\n"
    );
}

#[test]
fn a_name_part_that_cannot_be_a_gecos_is_refused_at_its_value() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "groups/people.yml",
        "last_name: Alpha}",
        r#"last_name: "Al:pha"}"#,
    );
    edit(
        r,
        "groups/people.yml",
        "last_name: Bravo}",
        r#"last_name: "Bra\nvo"}"#,
    );
    assert_eq!(
        validate_refuses(r),
        "groups/people.yml:6:67: User avery.alpha@example.com: last_name 'Al:pha' holds ':', which useradd refuses in a gecos (it separates /etc/passwd fields); write it without ':'\n\
         groups/people.yml:7:68: User blake.bravo@example.com: last_name 'Bra\\nvo' holds a control character (U+000A), which useradd refuses in a gecos; write it on one line without control characters\n\
         validate: 2 error(s)\n"
    );
}

#[test]
fn an_admin_user_that_is_no_login_is_refused_at_its_value() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "cfg/builders.yml",
        "    family: debian\n",
        "    family: debian\n    admin_user: my admin\n",
    );
    assert_eq!(
        validate_refuses(r),
        "cfg/builders.yml:20:17: OS builder tiny: admin_user 'my admin' has characters outside [A-Za-z0-9._-], so no account can be created for it (an account name is at most 32 characters of [A-Za-z0-9._-], not beginning with '.' or '-'); write a login such as 'csisadmin'\nvalidate: 1 error(s)\n"
    );
}

/// The inline script of the provisioner that a modification with an
/// `ensure` entry becomes, as packer writes it to a file.
fn inline_script(hcl: &str) -> String {
    let line = hcl
        .lines()
        .find(|l| l.trim_start().starts_with("inline ") && l.contains("already applied"))
        .unwrap_or_else(|| panic!("no inline with an ensure:\n{hcl}"));
    let list = line.split_once('=').map(|(_, v)| v.trim()).unwrap();
    let lines: Vec<String> = serde_json::from_str(list).unwrap();
    lines.join("\n") + "\n"
}

#[test]
fn an_ensure_entry_ending_in_a_comment_yields_a_provisioner_bash_accepts() {
    let web = read(&here("packer/web.yml")).replace(
        r#"ensure: [test -f "$CSIS_IMAGE_ROOT/etc/motd"]"#,
        r#"ensure: ['test -f "$CSIS_IMAGE_ROOT/etc/motd" # written once', 'true']"#,
    );
    let t = temp_tree([
        ("cfg/_config.yml", read(&here("packer/config.yml"))),
        ("images/web.yml", web),
        ("scripts/tools.sh", "echo tools\n".to_string()),
    ]);
    ok(csis_at(t.path(), NOW, &["run", "all"]));
    let hcl = read(
        &t.path()
            .join("generated/instance-image/pk-gce/image-generation/web.pkr.hcl"),
    );
    let script = inline_script(&hcl);
    assert!(script.contains("# written once\n)"), "{script}");
    let path = t.path().join("inline.sh");
    std::fs::write(&path, &script).unwrap();
    let out = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{script}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cloud_config_check_refuses_a_gecos_and_a_sudo_rule_useradd_and_sudoers_cannot_read() {
    let t = temp_tree([(
        "seed.yml",
        "#cloud-config\nusers:\n  - name: ops\n    gecos: \"Ops: the team\"\n  - name: dev\n    gecos: \"Dev\\nTeam\"\n  - name: adm\n    sudo: \"ALL=(ALL) ALL\\nALL ALL=(ALL) NOPASSWD:ALL\"\n",
    )]);
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(t.path())
        .args(["cloud-config", "check", "seed.yml"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "seed.yml:4:12: error: users: account 'ops': gecos 'Ops: the team' holds ':', which useradd refuses in a gecos (it separates /etc/passwd fields); write it without ':'; the account is refused\n\
         seed.yml:6:12: error: users: account 'dev': gecos 'Dev\\nTeam' holds a control character (U+000A), which useradd refuses in a gecos; write it on one line without control characters; the account is refused\n\
         seed.yml:8:11: error: users: account 'adm': sudo rule 'ALL=(ALL) ALL\\nALL ALL=(ALL) NOPASSWD:ALL' holds a control character (U+000A); sudoers reads one rule per line: write each rule as its own line without control characters; the account is refused\n\
         seed.yml: refused (3 refused, 0 reported)\n"
    );
    assert_eq!(out.status.code(), Some(1));
}
