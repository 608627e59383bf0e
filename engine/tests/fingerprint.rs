//! Input fingerprints: pinned to a literal, and unmoved by what must not
//! move them.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::plan::fingerprint::{SeriesKey, input_fingerprint};

const TREE: &str = r#"
--- cfg/_config.yml
id: fp
config:
  admin_public_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFingerprintFixtureKey admin@example.invalid"]
runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small, default_config_username: ignored}
image_builders:
  - {name: bake, type: local, is_default: true}
mod_builders:
  - {name: sh, type: bash, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
storage_builders:
  - {name: disk, type: local, is_default: true}
os_builders:
  - name: tiny
    type: local
    is_default: true
    family: debian
    family_version: 12
    identity_types: [unix]
    storage_types: [local]
    runtimes:
      - {image_builder: bake, image_id: vendor/tiny, ssh_username: debian, default_machine_type: m1}
--- images/web.yml
images:
  - name: web
    source_image: tiny
    runtimes:
      - {image_builder: bake, machine_type: big, ssh_username: web}
    tests:
      files: [/etc/motd]
    modifications:
      - name: motd
        script: echo hi > "$CSIS_IMAGE_ROOT/etc/motd"
        ensure: [test -f "$CSIS_IMAGE_ROOT/etc/motd"]
"#;

fn fingerprint(tree: &str, series: &str) -> String {
    let ws = csis_test_support::workspace(tree, &[]);
    let d = ws.load_diagnostics();
    assert!(d.iter().all(|d| !d.is_error()), "{d:?}");
    let key = SeriesKey::new(&ws.db, series.to_string(), "here".to_string());
    input_fingerprint(&ws.db, ws.tree, key)
        .as_ref()
        .unwrap()
        .hex
        .clone()
}

#[test]
fn the_fixture_image_has_this_fingerprint() {
    assert_eq!(
        fingerprint(TREE, "tiny"),
        "df44a8a2d78cb8e2797fba171d510f8bd89076cb1fd7f2ab97d892afc1c2f8fa"
    );
    assert_eq!(
        fingerprint(TREE, "web"),
        "18bcd17ad955422bb11f80e477e5674967743d863319d3d5d67f9f36a801f6ab"
    );
}

#[test]
fn key_order_machine_types_and_usernames_move_nothing() {
    let base = (fingerprint(TREE, "tiny"), fingerprint(TREE, "web"));
    let reordered = TREE.replace(
        "      - name: motd\n        script: echo hi > \"$CSIS_IMAGE_ROOT/etc/motd\"\n        ensure: [test -f \"$CSIS_IMAGE_ROOT/etc/motd\"]\n",
        "      - ensure: [test -f \"$CSIS_IMAGE_ROOT/etc/motd\"]\n        script: echo hi > \"$CSIS_IMAGE_ROOT/etc/motd\"\n        name: motd\n",
    );
    assert_ne!(reordered, TREE);
    let machines = TREE
        .replace("machine_type: big", "machine_type: huge")
        .replace("default_machine_type: m1", "default_machine_type: m9")
        .replace("default_machine_type: small", "default_machine_type: tiny");
    let users = TREE
        .replace("ssh_username: web", "ssh_username: someone")
        .replace("ssh_username: debian", "ssh_username: admin")
        .replace(
            "default_config_username: ignored",
            "default_config_username: other",
        );
    for (what, tree) in [
        ("key order", reordered),
        ("machine types", machines),
        ("usernames", users),
    ] {
        assert_eq!(
            (fingerprint(&tree, "tiny"), fingerprint(&tree, "web")),
            base,
            "{what} moved a fingerprint"
        );
    }
}

#[test]
fn content_moves_the_image_and_its_descendants_but_not_its_parent() {
    let base = (fingerprint(TREE, "tiny"), fingerprint(TREE, "web"));
    let script = TREE.replace("echo hi", "echo hello");
    assert_eq!(fingerprint(&script, "tiny"), base.0);
    assert_ne!(fingerprint(&script, "web"), base.1);
    let vendor = TREE.replace("vendor/tiny", "vendor/tiny-2");
    assert_ne!(fingerprint(&vendor, "tiny"), base.0);
    assert_ne!(
        fingerprint(&vendor, "web"),
        base.1,
        "the parent's fingerprint is an input"
    );
    let keys = TREE.replace("FingerprintFixtureKey", "AnotherFixtureKeyXX");
    assert_ne!(fingerprint(&keys, "tiny"), base.0);
}
