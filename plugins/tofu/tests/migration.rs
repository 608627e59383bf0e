//! A real run's `--migrate-state <ws>` reaches the root of that workspace:
//! its sequence starts with `csis state-migration begin` (the root is still
//! initialised against the old location) and `finish` instead of `tofu
//! init`; every other root inits as always.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use csis_engine::db::run_input::RunOptions;
use csis_engine::run::RunRequest;
use csis_plugin_api::Plugin;
use csis_test_support::{MemoryRun, ROOT, parse, run_in_memory};

const PLUGINS: &[&dyn Plugin] = &[
    &csis_plugin_local::LocalPlugin,
    &csis_plugin_aws::AwsPlugin,
    &csis_plugin_tofu::TofuPlugin,
];

const TREE: &str = r#"
--- cfg/_config.yml
id: t
config:
  use_state_backends: true
--- cfg/builders.yml
runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small}
  - name: aws
    type: aws
    default_machine_type: t3.small
    region: us-east-1
    networking:
      network: vpc-1
      subnets:
        - {subnet_id: subnet-a, is_default: true, availability_zone: us-east-1a}
image_builders:
  - {name: ib, type: local, is_default: true}
instance_builders:
  - {name: vm, type: local, is_default: true}
storage_builders:
  - {name: dirs, type: local, is_default: true}
  - {name: ebs, type: tofu-aws, runtime: aws, state_configuration: moved}
  - {name: ebs2, type: tofu-aws, runtime: aws}
state_backends:
  - {name: tfstate, type: s3, is_default: true, config: {bucket: old-state, region: us-east-1}}
  - {name: moved, type: s3, config: {bucket: new-state, region: us-east-1}}
mod_builders:
  - {name: sh, type: bash, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
user_builders:
  - {name: people, type: basic, is_default: true, email_as_username: false}
os_builders:
  - name: alma
    type: local
    is_default: true
    family: alma-linux
    family_version: 10
    runtimes:
      - image_builder: ib
--- storages/s.yml
storages:
  - {name: data, type: ebs, availability_zone: us-east-1a}
  - {name: logs, type: ebs2, availability_zone: us-east-1a}
--- meta-state/state-locations.yaml
workspaces:
  ebs: {backend: tfstate, type: s3, location: s3://old-state/ebs.tfstate, run: r1}
  ebs2: {backend: tfstate, type: s3, location: s3://old-state/ebs2.tfstate, run: r1}
"#;

#[test]
fn a_migrating_workspace_begins_and_finishes_its_move_where_the_others_init() {
    let req = RunRequest {
        shard: None,
        lifecycles: vec!["storage".into()],
        options: RunOptions {
            dry_run: false,
            migrate_state: vec!["ebs".into()],
            ..RunOptions::default()
        },
        // Generation only: nothing executes, so the runner script is the
        // whole outcome.
        no_apply: true,
        csis: PathBuf::from("csis"),
        no_state_query: true,
        jobs: 0,
        fail_fast: false,
        ..RunRequest::default()
    };
    let MemoryRun { summary, log, sys } = run_in_memory(&parse(TREE), PLUGINS, &req);
    assert!(summary.ok, "{log:#?}");
    let script = sys.read(&Path::new(ROOT).join("generated/storage/run-storage.sh"));
    let steps = |dir: &str| -> Vec<String> {
        let prefix = format!("(cd {dir} && ");
        script
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .map(|l| l.strip_suffix(')').unwrap_or(l).to_string())
            .take(3)
            .collect()
    };
    assert_eq!(
        steps("ebs/storage-generation"),
        [
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" state-migration begin --workspace ebs --backend-config ebs.tfbackend.hcl",
            "\"$CSIS\" --root-dir \"${CSIS_ROOT}\" state-migration finish --workspace ebs",
            "tofu plan -input=false -out=ebs.tfplan",
        ]
    );
    assert_eq!(
        steps("ebs2/storage-generation")[0],
        "tofu init -input=false -backend-config=ebs2.tfbackend.hcl"
    );
}
