//! The roots the tofu builders generate, through a dry run of the engine:
//! every file, the deferred sequence in the runner script, the apply flag,
//! the state backends, an undeclared storage's destroy, and the whole
//! roots through the independent HCL check.
//!
//! The runtimes are the real `aws` and `gce` runtime plugins'.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use csis_engine::db::run_input::RunOptions;
use csis_engine::db::system::System;
use csis_engine::run::RunRequest;
use csis_plugin_api::Plugin;
use csis_test_support::{MemoryRun as Outcome, ROOT, parse, run_in_memory};

const PLUGINS: &[&dyn Plugin] = &[
    &csis_plugin_dummy::DummyPlugin,
    &csis_plugin_local::LocalPlugin,
    &csis_plugin_tofu::TofuPlugin,
    &csis_plugin_aws::AwsPlugin,
    &csis_plugin_gce::GcePlugin,
];

/// One AWS and one GCE runtime, an instance and a storage on each; the
/// `config:` lines are `config`.
fn tree(config: &str) -> String {
    format!(
        r#"
--- cfg/_config.yml
id: t
config:
  admin_public_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBc7aWdsY2NqZXh0cmFrZXlmb3J0ZXN0cw avery@example.com"]
{config}
--- cfg/builders.yml
runtime_builders:
  - {{name: here, type: local, is_default: true, default_machine_type: small}}
  - name: aws
    type: aws
    default_machine_type: t3.small
    default_config_username: ec2-user
    region: us-east-1
    profile: corp
    networking:
      network: vpc-1
      subnets:
        - {{subnet_id: subnet-a, is_default: true, availability_zone: us-east-1a}}
        - {{subnet_id: subnet-b, availability_zone: us-east-1b}}
      availability_zones:
        - {{name: us-east-1a, is_default: true}}
  - name: gcp
    type: gce
    default_machine_type: e2-small
    default_config_username: packer
    region: europe-west1
    project: corp-proj
    zone: europe-west1-b
    networking:
      network: corp-net
      subnets:
        - {{subnet_id: corp-sub, is_default: true}}
image_builders:
  - {{name: ib, type: local, is_default: true}}
  - {{name: ib-aws, type: dummy, runtime: aws}}
  - {{name: ib-gce, type: dummy, runtime: gcp}}
instance_builders:
  - {{name: vm, type: local, is_default: true}}
  - {{name: ec2, type: tofu-aws, runtime: aws}}
  - {{name: gce-vms, type: tofu-gce, runtime: gcp, state_configuration: gstate}}
storage_builders:
  - {{name: dirs, type: local, is_default: true}}
  - {{name: ebs, type: tofu-aws, runtime: aws}}
  - {{name: pd, type: tofu-gce, runtime: gcp, state_configuration: gstate}}
state_backends:
  - {{name: tfstate, type: s3, is_default: true, config: {{bucket: corp-state, prefix: csis/, region: us-east-1, use_lockfile: true}}}}
  - {{name: gstate, type: gcs, config: {{bucket: corp-gstate, prefix: csis/}}}}
mod_builders:
  - {{name: sh, type: bash, is_default: true}}
group_builders:
  - {{name: unix, type: basic, is_default: true}}
user_builders:
  - {{name: people, type: basic, is_default: true, email_as_username: false}}
os_builders:
  - name: alma
    type: local
    is_default: true
    family: alma-linux
    family_version: 10
    identity_types: [unix]
    storage_types: [ebs, pd]
    runtimes:
      - image_builder: ib-aws
      - image_builder: ib-gce
--- groups/people.yml
users:
  - {{name: avery, first_name: Avery, last_name: Alpha}}
groups:
  - {{name: ops, is_root: true, members: [avery], admins: [avery]}}
--- images/web.yml
images:
  - name: web
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib-aws
      - image_builder: ib-gce
--- instances/web.yml
instances:
  - name: web
    type: ec2
    image: web
    machine_type: t3.large
    userdata: echo web is up
    storages:
      - {{name: data, mount_point: /srv/data}}
      - {{name: logs, mount_point: /srv/logs, min_size: 20}}
  - name: api
    type: gce-vms
    image: web
    storages:
      - {{name: gce_data, mount_point: /srv/data}}
--- storages/s.yml
storages:
  - {{name: data, type: ebs, groups: [ops], availability_zone: us-east-1a, config: {{size: 50}}}}
  - {{name: logs, type: ebs, groups: [ops], availability_zone: us-east-1a}}
  - {{name: gce_data, type: pd, groups: [ops], availability_zone: europe-west1-b}}
"#
    )
}

fn dry_run(tree: &str, extra: &[(&str, &str)], lifecycles: &[&str]) -> Outcome {
    let mut files = parse(tree);
    for (p, t) in extra {
        files.insert((*p).to_string(), (*t).to_string());
    }
    let req = RunRequest {
        shard: None,
        lifecycles: lifecycles.iter().map(|s| s.to_string()).collect(),
        options: RunOptions {
            dry_run: true,
            ..RunOptions::default()
        },
        csis: PathBuf::from("csis"),
        record: true,
        no_state_query: true,
        jobs: 0,
        fail_fast: false,
        ..RunRequest::default()
    };
    run_in_memory(&files, PLUGINS, &req)
}

fn ok_run(tree: &str, lifecycles: &[&str]) -> Outcome {
    let o = dry_run(tree, &[], lifecycles);
    assert!(o.summary.ok, "{:#?}", o.log);
    o
}

fn gen_file(o: &Outcome, rel: &str) -> String {
    o.sys.read(&Path::new(ROOT).join("generated").join(rel))
}

/// The runner script's lines that run in `dir`, without the `(cd dir && `.
fn steps_in(o: &Outcome, lifecycle: &str, dir: &str) -> Vec<String> {
    let prefix = format!("(cd {dir} && ");
    gen_file(o, &format!("{lifecycle}/run-{lifecycle}.sh"))
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|l| l.strip_suffix(')').unwrap_or(l).to_string())
        .collect()
}

/// What a refused run logged as errors.
fn errors(o: &Outcome) -> Vec<String> {
    assert!(!o.summary.ok, "{:#?}", o.log);
    o.log
        .iter()
        .filter(|l| l.starts_with("Error: "))
        .cloned()
        .collect()
}

/// Every generated file below `generated/<dir>`, by path relative to it.
fn gen_files(o: &Outcome, dir: &str) -> BTreeMap<String, String> {
    let base = Path::new(ROOT).join("generated").join(dir);
    o.sys
        .list_files(&base)
        .unwrap()
        .into_iter()
        .map(|p| {
            (
                p.strip_prefix(&base).unwrap().to_string_lossy().to_string(),
                o.sys.read(&p),
            )
        })
        .collect()
}

/// The roots below `generated/<dir>` on disk, through check_hcl.py.
fn check_hcl(o: &Outcome, dir: &str) {
    let tmp = tempfile::tempdir().unwrap();
    csis_test_support::write_tree(tmp.path(), gen_files(o, dir));
    if let Err(problems) = csis_test_support::check_hcl(&[tmp.path()]) {
        panic!("{problems}");
    }
}

const BASE_CONFIG: &str =
    "  use_state_backends: true\n  apply_instances: true\n  apply_storage: true\n";

#[test]
fn the_instance_roots_have_every_file_and_pass_the_independent_check() {
    let o = ok_run(&tree(BASE_CONFIG), &["instance-image"]);
    let files = gen_files(&o, "instance-image/ec2/instance-generation");
    assert_eq!(
        files.keys().cloned().collect::<Vec<_>>(),
        [
            "ec2.tfbackend.hcl",
            "main.tf",
            "outputs.tf",
            "provider.tf",
            "variables.tf",
            "versions.tf",
            "web.user-data",
        ]
    );
    let gce = gen_files(&o, "instance-image/gce-vms/instance-generation");
    assert_eq!(
        gce.keys().cloned().collect::<Vec<_>>(),
        [
            "api.user-data",
            "gce_vms.tfbackend.hcl",
            "main.tf",
            "outputs.tf",
            "provider.tf",
            "variables.tf",
            "versions.tf",
        ]
    );
    check_hcl(&o, "instance-image");
}

#[test]
fn an_aws_instance_boots_its_series_newest_build_with_its_storages_attached_in_order() {
    let o = ok_run(&tree(BASE_CONFIG), &["instance-image"]);
    let main = gen_file(&o, "instance-image/ec2/instance-generation/main.tf");
    for expected in [
        // The newest build of the series in this tree (its id, `t`):
        // another tree's series of the same name is not a candidate.
        "data \"aws_ami\" \"series\" {\n  for_each    = toset([\"web\"])\n  most_recent = true\n  owners      = [\"self\"]\n\n  filter {\n    name   = \"tag:csis_series\"\n    values = [each.key]\n  }\n\n  filter {\n    name   = \"tag:csis_tree\"\n    values = [\"t\"]\n  }\n}\n",
        // A changed user-data is a new machine, which the plan names.
        "  user_data                   = each.value.user_data\n  user_data_replace_on_change = true\n",
        "      ami               = data.aws_ami.series[\"web\"].id\n      instance_type     = \"t3.large\"\n      subnet_id         = \"subnet-a\"\n      availability_zone = \"us-east-1a\"\n",
        "      user_data         = replace(replace(file(\"${path.module}/web.user-data\"), \"@@csis-volume:data@@\", replace(data.aws_ebs_volume.storage[\"data\"].id, \"-\", \"\")), \"@@csis-volume:logs@@\", replace(data.aws_ebs_volume.storage[\"logs\"].id, \"-\", \"\"))\n",
        "    \"web/data\" = {\n      instance    = \"web\"\n      storage     = \"data\"\n      device_name = \"/dev/xvdf\"\n    }\n    \"web/logs\" = {\n      instance    = \"web\"\n      storage     = \"logs\"\n      device_name = \"/dev/xvdg\"\n    }\n",
        "resource \"aws_instance\" \"instance\" {\n  for_each                    = local.instances\n  ami                         = each.value.ami\n",
        "resource \"aws_volume_attachment\" \"attach\" {\n  for_each    = local.attachments\n  device_name = each.value.device_name\n  volume_id   = data.aws_ebs_volume.storage[each.value.storage].id\n  instance_id = aws_instance.instance[each.value.instance].id\n}\n",
    ] {
        assert!(main.contains(expected), "{expected}\n--- in ---\n{main}");
    }
    let outputs = gen_file(&o, "instance-image/ec2/instance-generation/outputs.tf");
    assert!(outputs.contains("value       = { for name, i in aws_instance.instance : name => { id = i.id, image = i.ami, private_ip = i.private_ip } }\n"), "{outputs}");
    let versions = gen_file(&o, "instance-image/ec2/instance-generation/versions.tf");
    assert!(versions.contains("    aws = {\n      source  = \"hashicorp/aws\"\n      version = \"~> 5.0\"\n    }\n  }\n\n  backend \"s3\" {}\n}\n"), "{versions}");
    assert_eq!(
        gen_file(&o, "instance-image/ec2/instance-generation/provider.tf"),
        "# Generated by csis: the provider of the instance-image root of tofu-aws builder ec2 on runtime aws.\nprovider \"aws\" {\n  region  = var.region\n  profile = var.profile\n}\n"
    );
    // The user-data mounts by the NVMe by-id name first: /dev/xvdf never
    // appears on a Nitro instance.
    let ud = gen_file(&o, "instance-image/ec2/instance-generation/web.user-data");
    assert!(
        ud.starts_with("#cloud-config\n{\n  \"hostname\": \"web-001\",\n"),
        "{ud}"
    );
    assert!(ud.contains("csis_mount /dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_@@csis-volume:data@@ /dev/xvdf data /srv/data\\ninstall -d -m 2770 -g ops /srv/data/ops\\ncsis_mount /dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_@@csis-volume:logs@@ /dev/xvdg logs /srv/logs\\n"), "{ud}");
    assert!(
        ud.contains(
            "echo web is up\\nmkdir -p /var/lib/csis\\ntouch /var/lib/csis/launch-applied\\n"
        ),
        "{ud}"
    );
}

#[test]
fn a_gce_instance_boots_its_family_and_attaches_disks_under_names_without_underscores() {
    let o = ok_run(&tree(BASE_CONFIG), &["instance-image"]);
    let main = gen_file(&o, "instance-image/gce-vms/instance-generation/main.tf");
    for expected in [
        // The family of the series in this tree (its id, `t`).
        "data \"google_compute_image\" \"series\" {\n  for_each = toset([\"t-web\"])\n  family   = each.key\n  project  = var.project\n}\n",
        "      image        = data.google_compute_image.series[\"t-web\"].self_link\n      build        = data.google_compute_image.series[\"t-web\"].name\n      machine_type = \"e2-small\"\n      zone         = \"europe-west1-b\"\n      network      = \"corp-net\"\n      subnetwork   = \"corp-sub\"\n      user_data    = file(\"${path.module}/api.user-data\")\n",
        "    \"api/gce_data\" = {\n      instance    = \"api\"\n      storage     = \"gce_data\"\n      disk        = \"gce-data\"\n      zone        = \"europe-west1-b\"\n      device_name = \"gce-data\"\n    }\n",
        "  metadata                  = {\n    user-data = each.value.user_data\n  }\n\n  boot_disk {\n    initialize_params {\n      image = each.value.image\n    }\n  }\n",
        "  machine_type              = each.value.machine_type\n  allow_stopping_for_update = true\n",
        // A changed user-data replaces the machine: the provider would
        // update the metadata in place, which cloud-init never reads again.
        "resource \"terraform_data\" \"user_data\" {\n  for_each = local.instances\n  input    = sha256(each.value.user_data)\n}\n",
        "  lifecycle {\n    ignore_changes       = [attached_disk]\n    replace_triggered_by = [terraform_data.user_data[each.key]]\n  }\n",
        "resource \"google_compute_attached_disk\" \"attach\" {\n  for_each    = local.attachments\n  disk        = each.value.disk\n  instance    = google_compute_instance.instance[each.value.instance].id\n",
    ] {
        assert!(main.contains(expected), "{expected}\n--- in ---\n{main}");
    }
    assert_eq!(
        gen_file(&o, "instance-image/gce-vms/instance-generation/provider.tf"),
        "# Generated by csis: the provider of the instance-image root of tofu-gce builder gce-vms on runtime gcp.\nprovider \"google\" {\n  project = var.project\n  region  = var.region\n  zone    = var.zone\n}\n"
    );
    let vars = gen_file(
        &o,
        "instance-image/gce-vms/instance-generation/variables.tf",
    );
    assert!(
        vars.contains(
            "variable \"project\" {\n  type        = string\n  default     = \"corp-proj\"\n"
        ),
        "{vars}"
    );
    let ud = gen_file(
        &o,
        "instance-image/gce-vms/instance-generation/api.user-data",
    );
    assert!(ud.contains("csis_mount /dev/disk/by-id/google-gce-data /dev/disk/by-id/google-gce-data gce_data /srv/data\\n"), "{ud}");
    assert_eq!(
        gen_file(
            &o,
            "instance-image/gce-vms/instance-generation/gce_vms.tfbackend.hcl"
        ),
        "# Generated by csis: the state of workspace gce_vms on state backend gstate (gcs), read by tofu init -backend-config.\nbucket = \"corp-gstate\"\nprefix = \"csis/gce_vms\"\n"
    );
}

#[test]
fn the_runner_runs_init_plan_gate_apply_check_apply_and_binds_each_instance() {
    let o = ok_run(&tree(BASE_CONFIG), &["instance-image"]);
    assert_eq!(
        steps_in(&o, "instance-image", "ec2/instance-generation"),
        [
            "tofu init -input=false -backend-config=ec2.tfbackend.hcl",
            "tofu plan -input=false -out=ec2.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" gate-plan --planfile ec2.tfplan --whitelist 'aws_instance.instance[\"web\"]' --whitelist aws_volume_attachment.attach --require-unmounted",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" apply-check --lifecycle instance-image --builder ec2 --runtime aws",
            "tofu apply -input=false ec2.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" lineage bind-instance --instance web --tofu-outputs .",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" verify instance web",
        ]
    );
    assert_eq!(
        ecce(&o, "gce-vms/instance-generation"),
        [
            "tofu init -input=false -backend-config=gce_vms.tfbackend.hcl",
            "tofu plan -input=false -out=gce_vms.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" gate-plan --planfile gce_vms.tfplan --whitelist google_compute_attached_disk.attach --whitelist 'google_compute_instance.instance[\"api\"]' --require-unmounted",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" apply-check --lifecycle instance-image --builder gce-vms --runtime gcp",
            "tofu apply -input=false gce_vms.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" lineage bind-instance --instance api --tofu-outputs .",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" verify instance api",
        ]
    );
}

fn ecce(o: &Outcome, dir: &str) -> Vec<String> {
    steps_in(o, "instance-image", dir)
}

#[test]
fn a_root_the_apply_flag_does_not_allow_stops_after_its_gate() {
    // A list names builders or runtimes.
    let o = ok_run(
        &tree("  use_state_backends: true\n  apply_instances: [gcp]\n"),
        &["instance-image"],
    );
    let ec2 = ecce(&o, "ec2/instance-generation");
    assert_eq!(ec2.len(), 3, "{ec2:#?}");
    assert!(ec2[2].contains(" gate-plan "), "{ec2:#?}");
    assert_eq!(ecce(&o, "gce-vms/instance-generation").len(), 7);
    let o = ok_run(
        &tree("  use_state_backends: true\n  apply_instances: [ec2]\n"),
        &["instance-image"],
    );
    assert_eq!(ecce(&o, "ec2/instance-generation").len(), 7);
    assert_eq!(ecce(&o, "gce-vms/instance-generation").len(), 3);
    // Unset: plan and gate only.
    let o = ok_run(&tree("  use_state_backends: true\n"), &["instance-image"]);
    assert_eq!(ecce(&o, "ec2/instance-generation").len(), 3);
    assert_eq!(ecce(&o, "gce-vms/instance-generation").len(), 3);
}

#[test]
fn without_state_backends_a_root_inits_without_a_backend() {
    let o = ok_run(&tree("  apply_instances: true\n"), &["instance-image"]);
    let files = gen_files(&o, "instance-image/ec2/instance-generation");
    assert!(
        !files.keys().any(|k| k.ends_with(".tfbackend.hcl")),
        "{files:#?}"
    );
    assert!(
        !files["versions.tf"].contains("backend \""),
        "{}",
        files["versions.tf"]
    );
    assert_eq!(
        ecce(&o, "ec2/instance-generation")[0],
        "tofu init -input=false -backend=false"
    );
    check_hcl(&o, "instance-image");
}

#[test]
fn a_pinned_instance_boots_its_build() {
    let o = dry_run(
        &tree(BASE_CONFIG),
        &[(
            "meta-state/pins.yaml",
            "instances:\n  web: ami-0123456789abcdef0\n  api: web-t-2026\nimages: {}\nupgrades: []\npending_replacements: []\n",
        )],
        &["instance-image"],
    );
    assert!(o.summary.ok, "{:#?}", o.log);
    let main = gen_file(&o, "instance-image/ec2/instance-generation/main.tf");
    assert!(
        main.contains("      ami               = \"ami-0123456789abcdef0\"\n"),
        "{main}"
    );
    assert!(!main.contains("data \"aws_ami\""), "{main}");
    let gce = gen_file(&o, "instance-image/gce-vms/instance-generation/main.tf");
    assert!(gce.contains("      image        = \"projects/corp-proj/global/images/web-t-2026\"\n      build        = \"web-t-2026\"\n"), "{gce}");
    assert!(!gce.contains("data \"google_compute_image\""), "{gce}");
    check_hcl(&o, "instance-image");
}

#[test]
fn the_storage_roots_create_each_storage_and_pass_the_independent_check() {
    let o = ok_run(&tree(BASE_CONFIG), &["storage"]);
    let main = gen_file(&o, "storage/ebs/storage-generation/main.tf");
    assert!(main.contains("  storages = {\n    data = {\n      availability_zone = \"us-east-1a\"\n      size              = 50\n      type              = \"gp3\"\n      tags              = {\n        Name         = \"data\"\n        csis_storage = \"data\"\n      }\n    }\n    logs = {\n      availability_zone = \"us-east-1a\"\n      size              = 20\n"), "{main}");
    assert!(
        main.contains(
            "resource \"aws_ebs_volume\" \"storage\" {\n  for_each          = local.storages\n"
        ),
        "{main}"
    );
    let gce = gen_file(&o, "storage/pd/storage-generation/main.tf");
    assert!(gce.contains("    gce_data = {\n      name   = \"gce-data\"\n      zone   = \"europe-west1-b\"\n      size   = 100\n      type   = \"pd-balanced\"\n"), "{gce}");
    check_hcl(&o, "storage");
    assert_eq!(
        steps_in(&o, "storage", "ebs/storage-generation"),
        [
            "tofu init -input=false -backend-config=ebs.tfbackend.hcl",
            "tofu plan -input=false -out=ebs.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" gate-plan --planfile ebs.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" apply-check --lifecycle storage --builder ebs --runtime aws",
            "tofu apply -input=false ebs.tfplan",
        ]
    );
}

#[test]
fn an_undeclared_storage_leaves_the_root_and_its_destroy_is_whitelisted() {
    let o = dry_run(
        &tree(BASE_CONFIG),
        &[(
            "meta-state/storage-state.yaml",
            "storages:\n  old_disk:\n    state: active\n    generation: 1\n    builder: ebs\n    history: []\n",
        )],
        &["storage"],
    );
    assert!(o.summary.ok, "{:#?}", o.log);
    let main = gen_file(&o, "storage/ebs/storage-generation/main.tf");
    assert!(!main.contains("old_disk"), "{main}");
    assert_eq!(
        steps_in(&o, "storage", "ebs/storage-generation")[2],
        "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" gate-plan --planfile ebs.tfplan --whitelist 'aws_ebs_volume.storage[\"old_disk\"]'"
    );
    // The root stays when nothing declared is left in it.
    let t = tree(BASE_CONFIG).replace(
        "  - {name: data, type: ebs, groups: [ops], availability_zone: us-east-1a, config: {size: 50}}\n  - {name: logs, type: ebs, groups: [ops], availability_zone: us-east-1a}\n",
        "",
    ).replace(
        "    storages:\n      - {name: data, mount_point: /srv/data}\n      - {name: logs, mount_point: /srv/logs, min_size: 20}\n",
        "",
    );
    let o = dry_run(
        &t,
        &[(
            "meta-state/storage-state.yaml",
            "storages:\n  data:\n    state: active\n    generation: 1\n    builder: ebs\n    history: []\n",
        )],
        &["storage"],
    );
    assert!(o.summary.ok, "{:#?}", o.log);
    let main = gen_file(&o, "storage/ebs/storage-generation/main.tf");
    assert!(main.contains("  storages = {}\n"), "{main}");
    assert!(
        steps_in(&o, "storage", "ebs/storage-generation")[2]
            .ends_with(" --whitelist 'aws_ebs_volume.storage[\"data\"]'")
    );
    check_hcl(&o, "storage");
}

#[test]
fn a_local_state_backend_keeps_the_state_below_the_configuration_root() {
    let t = tree(BASE_CONFIG).replace(
        "  - {name: tfstate, type: s3, is_default: true, config: {bucket: corp-state, prefix: csis/, region: us-east-1, use_lockfile: true}}\n",
        "  - {name: tfstate, type: local, is_default: true, config: {bucket: state}}\n",
    );
    let o = ok_run(&t, &["storage"]);
    assert_eq!(
        gen_file(&o, "storage/ebs/storage-generation/ebs.tfbackend.hcl"),
        "# Generated by csis: the state of workspace ebs on state backend tfstate (local), read by tofu init -backend-config.\npath = \"../../../../state/ebs.tfstate\"\n"
    );
    assert!(
        gen_file(&o, "storage/ebs/storage-generation/versions.tf")
            .contains("  backend \"local\" {}\n")
    );
    assert!(
        gen_file(&o, "storage/ebs/storage-generation/versions.tf")
            .contains("  required_version = \">= 1.6.0\"\n")
    );
    check_hcl(&o, "storage");
}

#[test]
fn the_s3_backend_file_carries_key_region_locking_and_the_runtimes_profile() {
    let o = ok_run(&tree(BASE_CONFIG), &["storage"]);
    // No profile on the backend: the runtime's, as its provider uses it,
    // so tofu init reads the state in the account the plan acts in.
    assert_eq!(
        gen_file(&o, "storage/ebs/storage-generation/ebs.tfbackend.hcl"),
        "# Generated by csis: the state of workspace ebs on state backend tfstate (s3), read by tofu init -backend-config.\nbucket       = \"corp-state\"\nkey          = \"csis/ebs.tfstate\"\nregion       = \"us-east-1\"\nencrypt      = true\nuse_lockfile = true\nprofile      = \"corp\"\n"
    );
    // use_lockfile is OpenTofu 1.10's: the root asks for it.
    assert!(
        gen_file(&o, "storage/ebs/storage-generation/versions.tf")
            .contains("  required_version = \">= 1.10.0\"\n"),
    );
}

#[test]
fn a_state_backend_without_a_region_or_with_an_unknown_key_is_refused_at_load() {
    let t = tree(BASE_CONFIG).replace(
        "config: {bucket: corp-state, prefix: csis/, region: us-east-1, use_lockfile: true}",
        "config: {bucket: corp-state, lock: true, encrypt: maybe}",
    );
    let o = dry_run(&t, &[], &["storage"]);
    let all = format!("{:#?}", o.log);
    assert!(!o.summary.ok, "{all}");
    for expected in [
        "state backend 'tfstate' (s3): unknown config key 'lock' -- allowed: [bucket, prefix, region, encrypt, dynamodb_table, use_lockfile, profile]",
        "state backend 'tfstate' (s3): config.region is required -- the region of bucket 'corp-state', e.g. config: {bucket: corp-state, region: us-east-1}",
        "state backend 'tfstate' (s3): config.encrypt must be true or false, got 'maybe'",
    ] {
        assert!(all.contains(expected), "{expected}\n{all}");
    }
}

#[test]
fn a_builder_on_a_runtime_of_another_type_is_refused() {
    let t = tree(BASE_CONFIG).replace(
        "  - {name: pd, type: tofu-gce, runtime: gcp, state_configuration: gstate}",
        "  - {name: pd, type: tofu-gce, runtime: aws, state_configuration: gstate}",
    );
    // Refused at validate, at the builder's runtime field; the storage's
    // GCE zone then also disagrees with the runtime it would be created on,
    // which is true and is said too.
    assert_eq!(
        errors(&dry_run(&t, &[], &["storage"])),
        [
            "Error: validation: cfg/builders.yml:38:41: storage builder 'pd' (type tofu-gce) launches on runtime 'aws' of type 'aws' -- point its runtime at a runtime of type gce",
            "Error: validation: storages/s.yml:4:66: storage 'gce_data' declares availability zone 'europe-west1-b' but runtime 'aws' (its default availability zone or subnet) is in 'us-east-1a' -- a zone is replace-forcing; fix the declaration, never the plan"
        ]
    );
    let t = tree(BASE_CONFIG).replace(
        "  - {name: ebs, type: tofu-aws, runtime: aws}",
        "  - {name: ebs, type: tofu-aws, runtime: here}",
    );
    assert_eq!(
        errors(&dry_run(&t, &[], &["storage"])),
        [
            "Error: validation: cfg/builders.yml:37:42: storage builder 'ebs' (type tofu-aws) launches on runtime 'here' of type 'local', which has no region or networking -- point its runtime at a runtime of type aws"
        ]
    );
}

#[test]
fn a_gce_runtime_without_a_project_is_refused_at_load() {
    let t = tree(BASE_CONFIG).replace("    project: corp-proj\n", "");
    assert_eq!(
        errors(&dry_run(&t, &[], &["storage"])),
        [
            "Error: validation: cfg/builders.yml:16:5: Runtime builder gcp: field 'project' is required"
        ]
    );
}

#[test]
fn the_profile_may_come_from_the_runtime_credentials() {
    let t = tree(BASE_CONFIG).replace(
        "    profile: corp\n",
        "    credentials: {profile_name: corp-sso}\n",
    );
    let o = ok_run(&t, &["storage"]);
    let vars = gen_file(&o, "storage/ebs/storage-generation/variables.tf");
    assert!(vars.contains("  default     = \"corp-sso\"\n"), "{vars}");
}

#[test]
fn a_storage_asking_to_be_destroyed_leaves_the_root_whitelisted() {
    let t = tree(BASE_CONFIG).replace(
        "  - {name: gce_data, type: pd",
        "  - {name: scratch, type: ebs, groups: [ops], state: destroyed}\n  - {name: gce_data, type: pd",
    );
    let o = dry_run(
        &t,
        &[(
            "meta-state/storage-state.yaml",
            "storages:\n  scratch:\n    state: active\n    generation: 1\n    builder: ebs\n    history: []\n",
        )],
        &["storage"],
    );
    assert!(o.summary.ok, "{:#?}", o.log);
    let main = gen_file(&o, "storage/ebs/storage-generation/main.tf");
    assert!(!main.contains("scratch"), "{main}");
    assert!(
        steps_in(&o, "storage", "ebs/storage-generation")[2]
            .ends_with(" --whitelist 'aws_ebs_volume.storage[\"scratch\"]'")
    );
}

#[test]
fn an_instance_attaching_another_clouds_storage_is_refused() {
    let t = tree(BASE_CONFIG).replace(
        "      - {name: gce_data, mount_point: /srv/data}\n",
        "      - {name: gce_data, mount_point: /srv/data}\n      - {name: extra, mount_point: /srv/aws}\n",
    )
    .replace(
        "  - {name: gce_data, type: pd",
        "  - {name: extra, type: ebs, groups: [ops]}\n  - {name: gce_data, type: pd",
    );
    let o = dry_run(&t, &[], &["instance-image"]);
    let all = format!("{:#?}", o.log);
    assert!(!o.summary.ok, "{all}");
    assert!(
        all.contains("instance 'api' (instance builder 'gce-vms', type tofu-gce) attaches storage 'extra' of storage builder 'ebs' (type tofu-aws); a tofu-gce instance attaches tofu-gce storages only"),
        "{all}"
    );
}

#[test]
fn validation_reads_the_same_user_data_the_root_boots_with() {
    let long = "x".repeat(5000);
    let t = tree(BASE_CONFIG).replace(
        "    userdata: echo web is up\n",
        &format!("    userdata: echo {long}\n"),
    );
    let o = dry_run(&t, &[], &["instance-image"]);
    let all = format!("{:#?}", o.log);
    assert!(!o.summary.ok, "{all}");
    assert!(
        all.contains("instance 'web': user-data file '/var/lib/csis/launch.sh' is "),
        "{all}"
    );
}

#[test]
fn a_builder_with_an_executable_entry_runs_its_binary() {
    let t = tree(BASE_CONFIG).replace(
        "  - {name: ec2, type: tofu-aws, runtime: aws}",
        "  - {name: ec2, type: tofu-aws, runtime: aws, executable: tofu18}",
    );
    let o = dry_run(
        &t,
        &[
            (
                "cfg/executables.yml",
                "executables:\n  - {name: tofu18, binary: /opt/tofu/bin/tofu}\n",
            ),
            ("/opt/tofu/bin/tofu", "test double: never run\n"),
        ],
        &["instance-image"],
    );
    assert!(o.summary.ok, "{:#?}", o.log);
    assert_eq!(
        ecce(&o, "ec2/instance-generation"),
        [
            "/opt/tofu/bin/tofu init -input=false -backend-config=ec2.tfbackend.hcl",
            "/opt/tofu/bin/tofu plan -input=false -out=ec2.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" gate-plan --planfile ec2.tfplan --tofu /opt/tofu/bin/tofu --whitelist 'aws_instance.instance[\"web\"]' --whitelist aws_volume_attachment.attach --require-unmounted",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" apply-check --lifecycle instance-image --builder ec2 --runtime aws",
            "/opt/tofu/bin/tofu apply -input=false ec2.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" lineage bind-instance --instance web --tofu-outputs . --tofu /opt/tofu/bin/tofu",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" verify instance web",
        ]
    );
}

#[test]
fn the_roots_keep_their_state_where_meta_state_records_it() {
    let o = ok_run(&tree(BASE_CONFIG), &["storage", "instance-image"]);
    let record = o
        .sys
        .read(&Path::new(ROOT).join("meta-state/state-locations.yaml"));
    for (ws, location, backend_file, line) in [
        (
            "ebs",
            "s3://corp-state/csis/ebs.tfstate",
            "storage/ebs/storage-generation/ebs.tfbackend.hcl",
            "key          = \"csis/ebs.tfstate\"\n",
        ),
        (
            "ec2",
            "s3://corp-state/csis/ec2.tfstate",
            "instance-image/ec2/instance-generation/ec2.tfbackend.hcl",
            "key          = \"csis/ec2.tfstate\"\n",
        ),
        (
            "gce_vms",
            "gcs://corp-gstate/csis/gce_vms/default.tfstate",
            "instance-image/gce-vms/instance-generation/gce_vms.tfbackend.hcl",
            "prefix = \"csis/gce_vms\"\n",
        ),
    ] {
        assert!(
            record.contains(&format!("  {ws}:\n")) && record.contains(location),
            "{ws} {location}\n{record}"
        );
        let text = gen_file(&o, backend_file);
        assert!(text.contains(line), "{text}");
    }
}

#[test]
fn an_ephemeral_instance_is_torn_down_through_a_second_gated_plan() {
    let t = tree(BASE_CONFIG).replace(
        "  - name: api\n    type: gce-vms\n",
        "  - name: api\n    type: gce-vms\n    ephemeral: true\n",
    );
    let o = ok_run(&t, &["instance-image"]);
    // The spec's order: launch, verify instance, a second plan with the
    // instance absent, its gate, its apply.
    let steps = ecce(&o, "gce-vms/instance-generation");
    assert_eq!(
        steps[4..],
        [
            "tofu apply -input=false gce_vms.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" lineage bind-instance --instance api --tofu-outputs .",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" verify instance api",
            "tofu plan -input=false -destroy '-target=google_compute_instance.instance[\"api\"]' -out=gce_vms-teardown-api.tfplan",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" gate-plan --planfile gce_vms-teardown-api.tfplan --whitelist google_compute_attached_disk.attach --whitelist 'google_compute_instance.instance[\"api\"]' --require-unmounted",
            "tofu apply -input=false gce_vms-teardown-api.tfplan",
        ]
    );
    // Under on_failure: teardown its verdict is only recorded: the
    // machine goes whatever it is, and the run fails from its records.
    let o = ok_run(
        &t.replace(
            "    ephemeral: true\n",
            "    ephemeral: true\n    on_failure: teardown\n",
        ),
        &["instance-image"],
    );
    assert_eq!(
        ecce(&o, "gce-vms/instance-generation")[6],
        "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" verify instance api --record-only"
    );
    // Not applied, not torn down.
    let o = ok_run(
        &t.replace("  apply_instances: true\n", ""),
        &["instance-image"],
    );
    assert_eq!(ecce(&o, "gce-vms/instance-generation").len(), 3);
}

#[test]
fn a_decommissioned_instance_keeps_its_root_and_its_destroy_is_whitelisted() {
    // api's declaration is gone; meta-state says a real apply launched it.
    let t = tree(BASE_CONFIG).replace(
        "  - name: api\n    type: gce-vms\n    image: web\n    storages:\n      - {name: gce_data, mount_point: /srv/data}\n",
        "",
    );
    let o = dry_run(
        &t,
        &[(
            "meta-state/launch-params.yaml",
            "instances:\n  api:\n    params: {image: web, build: unbound, hostname: api-001}\n    run: \"2026_12_01T00_00_00\"\n    launched: true\n    launched_run: \"2026_12_01T00_00_00\"\n",
        )],
        &["instance-image"],
    );
    assert!(o.summary.ok, "{:#?}", o.log);
    let main = gen_file(&o, "instance-image/gce-vms/instance-generation/main.tf");
    assert!(
        main.contains("  instances   = {}\n  attachments = {}\n"),
        "{main}"
    );
    assert_eq!(
        ecce(&o, "gce-vms/instance-generation")[2],
        "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" gate-plan --planfile gce_vms.tfplan --whitelist google_compute_attached_disk.attach --whitelist 'google_compute_instance.instance[\"api\"]' --require-unmounted"
    );
    assert!(
        ecce(&o, "ec2/instance-generation")[2]
            .contains(" --whitelist 'aws_instance.instance[\"api\"]' ")
    );
    check_hcl(&o, "instance-image");
}

#[test]
fn the_move_guard_compares_the_gcs_object_the_backend_writes() {
    let recorded = (
        "meta-state/state-locations.yaml",
        "workspaces:\n  pd:\n    backend: gstate\n    type: gcs\n    location: \"gcs://corp-gstate/csis/pd/default.tfstate\"\n    run: R0\nmigrations: []\n",
    );
    let standing = (
        "meta-state/storage-state.yaml",
        "storages:\n  gce_data:\n    state: active\n    generation: 1\n    builder: pd\n",
    );
    let o = dry_run(&tree(BASE_CONFIG), &[recorded, standing], &["storage"]);
    assert!(o.summary.ok, "{:#?}", o.log);
    let moved = tree(BASE_CONFIG).replace(
        "config: {bucket: corp-gstate, prefix: csis/}",
        "config: {bucket: corp-gstate, prefix: other/}",
    );
    assert_eq!(
        errors(&dry_run(&moved, &[recorded, standing], &["storage"])),
        [
            "Error: validation: cfg/builders.yml:38:67: workspace 'pd' would move its state from gcs://corp-gstate/csis/pd/default.tfstate to gcs://corp-gstate/other/pd/default.tfstate while storage 'gce_data' stand(s) in it -- move it with a real run's --migrate-state pd (or restore state_configuration); never rebind past the refusal"
        ]
    );
}

#[test]
fn an_unpinned_gce_instance_looks_up_the_family_its_series_is_baked_into() {
    let t = tree(BASE_CONFIG)
        .replace(
            "  - name: web\n    source_image: alma",
            "  - name: 2web\n    source_image: alma",
        )
        .replace("    image: web\n", "    image: 2web\n");
    let o = ok_run(&t, &["instance-image"]);
    let main = gen_file(&o, "instance-image/gce-vms/instance-generation/main.tf");
    // The family the packer googlecompute source bakes series 2web into.
    assert_eq!(csis_plugin_gce::image_family("t", "2web"), "t-csis-2web");
    for expected in [
        "data \"google_compute_image\" \"series\" {\n  for_each = toset([\"t-csis-2web\"])\n",
        "      image        = data.google_compute_image.series[\"t-csis-2web\"].self_link\n",
        // Labels are GCE label values, as the baked image's labels are.
        "      labels       = {\n        csis_instance = \"api\"\n        csis_series   = \"2web\"\n      }\n",
    ] {
        assert!(main.contains(expected), "{expected}\n--- in ---\n{main}");
    }
    let storage = gen_file(
        &ok_run(&t, &["storage"]),
        "storage/pd/storage-generation/main.tf",
    );
    assert!(
        storage.contains("    csis_storage = \"gce_data\"\n"),
        "{storage}"
    );
}

#[test]
fn aws_machines_run_with_a_session_instance_profile_the_root_makes_or_the_runtime_names() {
    // Made by the root: a role with the managed SSM policy, and IMDSv2.
    let o = ok_run(&tree(BASE_CONFIG), &["instance-image"]);
    let main = gen_file(&o, "instance-image/ec2/instance-generation/main.tf");
    for expected in [
        "resource \"aws_iam_role\" \"session\" {\n  name_prefix        = \"csis-ssm-\"\n",
        "  policy_arn = \"arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore\"\n",
        "resource \"aws_iam_instance_profile\" \"session\" {\n  name_prefix = \"csis-ssm-\"\n  role        = aws_iam_role.session.name\n}\n",
        "  iam_instance_profile        = aws_iam_instance_profile.session.name\n",
        "  metadata_options {\n    http_endpoint = \"enabled\"\n    http_tokens   = \"required\"\n  }\n",
    ] {
        assert!(main.contains(expected), "{expected}\n--- in ---\n{main}");
    }
    // Named by the runtime: used as it is, and nothing IAM is made.
    let t = tree(BASE_CONFIG).replace(
        "    profile: corp\n",
        "    profile: corp\n    session_instance_profile: corp-ssm\n",
    );
    let o = ok_run(&t, &["instance-image"]);
    let main = gen_file(&o, "instance-image/ec2/instance-generation/main.tf");
    assert!(
        main.contains("  iam_instance_profile        = \"corp-ssm\"\n"),
        "{main}"
    );
    assert!(!main.contains("aws_iam_"), "{main}");
}
