//! The input fingerprint of a packer bake is the local runtime's for the
//! same inputs, rule for rule: the runtime, the image builder and the
//! machine types are not inputs; the bake disk is (the runtime's
//! default_disk_size).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use csis_engine::plan::fingerprint::{SeriesKey, input_fingerprint};

const LOCAL: &str = r#"
--- cfg/_config.yml
id: fp
config:
  admin_public_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFingerprintFixtureKey admin@example.invalid"]
runtime_builders:
  - {name: rt, type: local, is_default: true, default_machine_type: small}
image_builders:
  - {name: bake, type: local, is_default: true}
OS_TYPE_LINE
"#;

const AWS: &str = r#"
--- cfg/_config.yml
id: fp
config:
  admin_public_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFingerprintFixtureKey admin@example.invalid"]
runtime_builders:
  - name: rt
    type: aws
    is_default: true
    region: us-east-1
    default_machine_type: t3.micro
    networking:
      network: vpc-1
      subnets: [{subnet_id: subnet-1, is_default: true}]
image_builders:
  - {name: bake, type: packer, is_default: true}
OS_TYPE_LINE
"#;

/// What both trees declare alike.
const COMMON: &str = r#"mod_builders:
  - {name: sh, type: bash, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
os_builders:
  - name: tiny
    type: OS_TYPE
    is_default: true
    family: debian
    family_version: 12
    admin_user: ops
    identity_types: [unix]
    runtimes:
      - {image_builder: bake, image_id: ami-0abc, default_machine_type: MACHINE}
--- images/web.yml
images:
  - name: web
    source_image: tiny
    runtimes:
      - {image_builder: bake, machine_type: MACHINE}
    tests:
      files: [/etc/motd]
    modifications:
      - name: motd
        script: echo hi > "$CSIS_IMAGE_ROOT/etc/motd"
        ensure: [test -f "$CSIS_IMAGE_ROOT/etc/motd"]
"#;

fn tree(head: &str, os_type: &str, machine: &str) -> String {
    head.replace(
        "OS_TYPE_LINE\n",
        &COMMON
            .replace("OS_TYPE", os_type)
            .replace("MACHINE", machine),
    )
}

fn fingerprints(tree: &str) -> (String, String) {
    let ws = csis_test_support::workspace(tree, &[]);
    let d = ws.load_diagnostics();
    assert!(d.iter().all(|d| !d.is_error()), "{d:?}");
    let fp = |series: &str| {
        let key = SeriesKey::new(&ws.db, series.to_string(), "rt".to_string());
        input_fingerprint(&ws.db, ws.tree, key)
            .as_ref()
            .unwrap()
            .hex
            .clone()
    };
    (fp("tiny"), fp("web"))
}

#[test]
fn a_packer_bake_on_aws_has_the_local_fingerprint_for_the_same_inputs() {
    let local = fingerprints(&tree(LOCAL, "local", "small"));
    let aws = fingerprints(&tree(AWS, "packer", "t3.micro"));
    assert_eq!(local, aws);
}

#[test]
fn a_machine_type_is_no_input_and_the_bake_disk_is() {
    let before = fingerprints(&tree(AWS, "packer", "t3.micro"));
    let bigger = tree(AWS, "packer", "m7i.4xlarge").replace("t3.micro", "c7g.large");
    assert_eq!(fingerprints(&bigger), before);
    let disk = tree(AWS, "packer", "t3.micro").replace(
        "    region: us-east-1\n",
        "    region: us-east-1\n    default_disk_size: 64\n",
    );
    let (base, child) = fingerprints(&disk);
    assert_ne!(base, before.0);
    assert_ne!(child, before.1);
}
