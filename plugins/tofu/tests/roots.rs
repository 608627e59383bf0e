//! The roots the tofu builders generate, through a dry run of the engine:
//! every file, the deferred sequence in the runner script, the apply flag,
//! the state backends, an undeclared storage's destroy, and the whole
//! roots through the independent HCL check.
//!
//! The runtimes `aws` and `gce` here come from [`TestClouds`], a test-only
//! stand-in with the runtime plugins' contract (Cloud base model; `profile`
//! on aws, `project` and `zone` on gce).
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use csis_engine::db::run_input::RunOptions;
use csis_engine::db::system::{MemorySystem, System};
use csis_engine::run::{Level, RunRequest, RunSummary, run};
use csis_engine::workspace::LoadOptions;
use csis_model::models::BaseModelKind;
use csis_model::{Fields, Map, Value, Vct};
use csis_plugin_api::{Builder, BuilderDecl, ModelSpec, Plugin};
use csis_test_support::{ROOT, memory_system, parse, workspace_with};

/// Test-only runtimes with the contract's fields; they make no claim about
/// any provider and generate nothing.
struct TestClouds;
struct Nothing;
impl Builder for Nothing {}

fn nothing(_: &BuilderDecl) -> Box<dyn Builder> {
    Box::new(Nothing)
}

fn read_keys(f: &mut Fields<'_>, keys: &[&'static str]) -> Map {
    let mut m = Map::new();
    for k in keys {
        if let Some(v) = f.opt_str(k) {
            m.insert((*k).into(), Value::str(v));
        }
    }
    m
}

fn aws_extra(f: &mut Fields<'_>) -> Map {
    read_keys(
        f,
        &[
            "profile",
            "vpc_id",
            "default_disk_size",
            "ssh_username",
            "session",
        ],
    )
}

fn gce_extra(f: &mut Fields<'_>) -> Map {
    read_keys(f, &["project", "zone", "default_disk_size"])
}

impl Plugin for TestClouds {
    fn name(&self) -> &'static str {
        "test-clouds"
    }
    fn models(&self) -> Vec<ModelSpec> {
        let spec = |name, read_extra| ModelSpec {
            name,
            aliases: &[],
            classification: Vct::CloudBuilderModel,
            base: BaseModelKind::Cloud,
            read_extra,
            builder: nothing,
        };
        vec![spec("aws", aws_extra), spec("gce", gce_extra)]
    }
}

const PLUGINS: &[&dyn Plugin] = &[
    &csis_plugin_dummy::DummyPlugin,
    &csis_plugin_local::LocalPlugin,
    &csis_plugin_tofu::TofuPlugin,
    &TestClouds,
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

struct Outcome {
    summary: RunSummary,
    log: Vec<String>,
    sys: MemorySystem,
}

fn dry_run(tree: &str, extra: &[(&str, &str)], lifecycles: &[&str]) -> Outcome {
    let mut files = parse(tree);
    for (p, t) in extra {
        files.insert((*p).to_string(), (*t).to_string());
    }
    let text = csis_test_support::inline(&files);
    let ws = workspace_with(&text, PLUGINS, &[], &LoadOptions::default());
    let sys = memory_system(Path::new(ROOT), &files);
    let req = RunRequest {
        lifecycles: lifecycles.iter().map(|s| s.to_string()).collect(),
        options: RunOptions {
            dry_run: true,
            ..RunOptions::default()
        },
        no_apply: false,
        csis: PathBuf::from("csis"),
        commit: false,
        record: true,
        stats: false,
        no_state_query: true,
        lock_token: None,
        explain: false,
    };
    let mut log = Vec::new();
    let summary = run(&ws, &sys, &req, &mut |level: Level, line: String| {
        log.push(format!("{level:?}: {line}"));
    });
    Outcome { summary, log, sys }
}

fn ok_run(tree: &str, lifecycles: &[&str]) -> Outcome {
    let o = dry_run(tree, &[], lifecycles);
    assert!(o.summary.ok, "{:#?}", o.log);
    o
}

fn gen_file(o: &Outcome, rel: &str) -> String {
    o.sys.read(&Path::new(ROOT).join("generated").join(rel))
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

const BASE_CONFIG: &str = "  use_state_backends: true\n  apply_instances: true\n  apply_storage: true\n";

#[test]
fn the_aws_instance_root_has_every_file_and_parses() {
    let o = ok_run(&tree(BASE_CONFIG), &["instance-image"]);
    let files = gen_files(&o, "instance-image/ec2");
    assert_eq!(
        files.keys().cloned().collect::<Vec<_>>(),
        [
            "instance-generation/ec2.tfbackend.hcl",
            "instance-generation/main.tf",
            "instance-generation/outputs.tf",
            "instance-generation/provider.tf",
            "instance-generation/variables.tf",
            "instance-generation/versions.tf",
            "instance-generation/web.user-data",
        ]
    );
    check_hcl(&o, "instance-image");
    for (k, v) in gen_files(&o, "instance-image") {
        if k.ends_with(".sh") { println!("=== {k}\n{v}"); }
    }
}
