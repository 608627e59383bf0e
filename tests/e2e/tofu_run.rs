//! A real run of the tofu builders' roots: the runner executes each root's
//! sequence from the private mirror -- init, plan, the gate (csis
//! gate-plan reading `tofu show -json`), apply-check, apply, and the
//! instance's bind -- in that order, and the instance ends up pinned to
//! the build its root says it booted. `tofu` is a TEST DOUBLE on PATH (a
//! shell script recording its working directory and arguments); it never
//! ships. The runtime is the aws runtime plugin's `aws`.

use std::path::Path;
use std::process::{Command, Output};

use csis_test_support::temp_tree;

const T0: i64 = 1_796_226_804;

const TREE: &[(&str, &str)] = &[
    (
        "cfg/_config.yml",
        "id: tofu-run\nconfig:\n  admin_public_keys:\n    - \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleExampleExampleExampleExampleExampleEx admin@example.invalid\"\n  apply_storage: true\n  apply_instances: [cloud]\n",
    ),
    (
        "cfg/builders.yml",
        "runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small, store: store}
  - name: cloud
    type: aws
    default_machine_type: t3.small
    default_config_username: ec2-user
    region: us-east-1
    networking:
      network: vpc-1
      subnets: [{subnet_id: subnet-a, is_default: true, availability_zone: us-east-1a}]
image_builders:
  - {name: bake, type: local, is_default: true}
  - {name: amis, type: dummy, runtime: cloud}
instance_builders:
  - {name: vm, type: local, is_default: true}
  - {name: ec2, type: tofu-aws, runtime: cloud}
storage_builders:
  - {name: dirs, type: local, is_default: true}
  - {name: ebs, type: tofu-aws, runtime: cloud}
mod_builders:
  - {name: sh, type: bash, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
user_builders:
  - {name: people, type: basic, is_default: true, email_as_username: false}
os_builders:
  - name: tiny
    type: local
    is_default: true
    family: debian
    family_version: 12
    identity_types: [unix]
    storage_types: [local, ebs]
    runtimes:
      - image_builder: amis
",
    ),
    (
        "groups/people.yml",
        "users:\n  - {name: avery, first_name: Avery, last_name: Alpha}\ngroups:\n  - {name: ops, is_root: true, members: [avery], admins: [avery]}\n",
    ),
    (
        "images/web.yml",
        "images:\n  - name: web\n    source_image: tiny\n    group: ops\n    runtimes: [{image_builder: amis}]\n",
    ),
    (
        "instances/web.yml",
        "instances:\n  - name: web\n    type: ec2\n    image: web\n    storages: [{name: vol, mount_point: /srv/vol}]\n",
    ),
    (
        "storages/vol.yml",
        "storages:\n  - {name: vol, type: ebs, groups: [ops], availability_zone: us-east-1a}\n",
    ),
];

/// The stand-in `tofu` in `dir/bin`, appending `<cwd> <args>` to
/// `dir/calls`.
fn tofu_double(dir: &Path) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
# TEST DOUBLE standing in for OpenTofu in csis's tests; it is not OpenTofu.
echo "$(pwd) $*" >> '{calls}'
case "$1" in
  init) exit 0 ;;
  plan)
    for a in "$@"; do
      case "$a" in -out=*) echo "test double plan" > "${{a#-out=}}" ;; esac
    done
    exit 0 ;;
  show)
    if [ -f '{show}' ]; then cat '{show}'; else echo '{{"format_version": "1.2", "resource_changes": []}}'; fi
    exit 0 ;;
  apply) exit 0 ;;
  output) echo '{{"instances": {{"value": {{"web": {{"id": "i-0123", "image": "ami-0abc", "private_ip": "10.0.0.5"}}}}}}}}'; exit 0 ;;
esac
echo "test double: unexpected $*" >&2
exit 1
"#,
        calls = dir.join("calls").display(),
        show = dir.join("show.json").display()
    );
    let path = bin.join("tofu");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn csis(root: &Path, doubles: &Path, args: &[&str]) -> Output {
    csis_with(root, doubles, args, &[])
}

fn csis_with(root: &Path, doubles: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let path = format!(
        "{}:{}",
        doubles.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("PATH", path)
        .env("CSIS_NOW", T0.to_string())
        .env_remove("CSIS_RUN_ID")
        .env_remove("CSIS_ROOT_DIR")
        .env_remove("CSIS_LOCK_HELD")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap()
}

#[test]
fn a_real_run_executes_each_root_in_order_and_pins_the_instance() {
    // The instance's machine, as the apply would have left it: in moto's
    // EC2, from the AMI the double's output names, with its launch tags
    // (the verify step after bind-instance finds it by them).
    let Some(moto) = crate::moto::Moto::start() else {
        return;
    };
    moto.python(
        "ec2.run_instances(ImageId='ami-0abc', MinCount=1, MaxCount=1, TagSpecifications=[{'ResourceType': 'instance', 'Tags': [{'Key': 'csis_instance', 'Value': 'web'}, {'Key': 'csis_runtime', 'Value': 'cloud'}]}])",
    );
    let t = temp_tree(TREE.iter().copied());
    let r = std::fs::canonicalize(t.path()).unwrap();
    let doubles = tempfile::tempdir().unwrap();
    tofu_double(doubles.path());
    let out = csis_with(
        &r,
        doubles.path(),
        &["run", "storage", "instance-image", "--no-dry-run"],
        &moto.env(),
    );
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{log}");
    let calls = std::fs::read_to_string(doubles.path().join("calls")).unwrap();
    let calls = calls.replace(&format!("{}/", r.display()), "");
    assert_eq!(
        calls,
        "_private/storage/ebs/storage-generation init -input=false -backend=false
_private/storage/ebs/storage-generation plan -input=false -out=ebs.tfplan
_private/storage/ebs/storage-generation show -json ebs.tfplan
_private/storage/ebs/storage-generation apply -input=false ebs.tfplan
_private/instance-image/ec2/instance-generation init -input=false -backend=false
_private/instance-image/ec2/instance-generation plan -input=false -out=ec2.tfplan
_private/instance-image/ec2/instance-generation show -json ec2.tfplan
_private/instance-image/ec2/instance-generation apply -input=false ec2.tfplan
_private/instance-image/ec2/instance-generation output -json
",
        "{log}"
    );
    let pins = std::fs::read_to_string(r.join("meta-state/pins.yaml")).unwrap();
    assert!(pins.contains("  web: ami-0abc\n"), "{pins}");
    assert!(
        log.contains("verify web: ok (3 checks on ami-0abc)"),
        "{log}"
    );
}

#[test]
fn a_destroy_off_the_whitelist_stops_the_root_before_its_apply() {
    let t = temp_tree(TREE.iter().copied());
    let r = std::fs::canonicalize(t.path()).unwrap();
    let doubles = tempfile::tempdir().unwrap();
    tofu_double(doubles.path());
    std::fs::write(
        doubles.path().join("show.json"),
        r#"{"format_version": "1.2", "resource_changes": [{"address": "aws_ebs_volume.storage[\"vol\"]", "type": "aws_ebs_volume", "name": "storage", "index": "vol", "change": {"actions": ["delete"]}}]}"#,
    )
    .unwrap();
    let out = csis(&r, doubles.path(), &["run", "storage", "--no-dry-run"]);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(0), "{log}");
    assert!(log.contains("aws_ebs_volume.storage[\"vol\"]"), "{log}");
    let calls = std::fs::read_to_string(doubles.path().join("calls")).unwrap();
    assert!(!calls.contains(" apply "), "{calls}");
}
