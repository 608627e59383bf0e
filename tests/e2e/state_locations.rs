//! State locations over real runs: recorded after each run, a move refused
//! while a storage stands in the root, and `--migrate-state` moving it.

use crate::support::{csis_at, edit, ok};
use csis_test_support::tree;

const T0: i64 = 1_796_226_804;

/// local-run plus a dummy cloud runtime whose storage builder keeps
/// terraform state, and two local state backends.
pub(crate) fn backends_tree() -> tempfile::TempDir {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "cfg/builders.yml",
        "runtime_builders:\n",
        "runtime_builders:\n  - {name: cloud, type: dummy, default_machine_type: m, region: r1, networking: {network: vpc-1, subnets: [{subnet_id: s-1, is_default: true}]}}\n",
    );
    edit(
        r,
        "cfg/builders.yml",
        "  - {name: dirs, type: local, is_default: true}\n",
        "  - {name: dirs, type: local, is_default: true}\n  - {name: bucket, type: dummy, runtime: cloud}\nstate_backends:\n  - {name: primary, type: local, is_default: true, config: {bucket: state-a}}\n  - {name: secondary, type: local, config: {bucket: state-b}}\n",
    );
    edit(
        r,
        "cfg/_config.yml",
        "config:\n",
        "config:\n  use_state_backends: true\n",
    );
    std::fs::write(
        r.join("storages/logs.yml"),
        "storages:\n  - {name: logs, type: bucket, runtime: cloud}\n",
    )
    .unwrap();
    t
}

fn locations(root: &std::path::Path) -> String {
    std::fs::read_to_string(root.join("meta-state/state-locations.yaml")).unwrap()
}

#[test]
fn a_run_records_every_state_keeping_root() {
    let t = backends_tree();
    let first = csis_at(
        t.path(),
        T0,
        &["run", "all", "--no-dry-run", "--migrate-state", "bucket"],
    );
    assert_eq!(first.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&first.stderr).contains(
        "validation: --migrate-state bucket: meta-state records no location for workspace 'bucket'; there is nothing to migrate from"
    ));
    ok(csis_at(t.path(), T0, &["run", "all"]));
    assert_eq!(
        locations(t.path()),
        "# csis meta-state: state-locations.yaml. Written by csis; change it through csis commands.
workspaces:
  bucket:
    backend: primary
    type: local
    location: \"local://state-a/bucket.tfstate\"
    run: \"2026_12_02T15_53_24\"
  cloud:
    backend: primary
    type: local
    location: \"local://state-a/cloud.tfstate\"
    run: \"2026_12_02T15_53_24\"
migrations: []
"
    );
}

#[test]
fn a_location_may_not_move_while_a_storage_stands_in_it_except_by_migration() {
    let t = backends_tree();
    let r = t.path();
    ok(csis_at(r, T0, &["run", "all", "--no-dry-run"]));
    edit(
        r,
        "cfg/builders.yml",
        "{name: bucket, type: dummy, runtime: cloud}",
        "{name: bucket, type: dummy, runtime: cloud, state_configuration: secondary}",
    );
    let v = csis_at(r, T0 + 60, &["--brief", "validate"]);
    assert_eq!(v.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&v.stderr),
        "cfg/builders.yml:10:70: workspace 'bucket' would move its state from local://state-a/bucket.tfstate to local://state-b/bucket.tfstate while storage 'logs' stand(s) in it -- move it with a real run's --migrate-state bucket (or restore state_configuration); never rebind past the refusal\nvalidate: 1 error(s)\n"
    );
    let dry = csis_at(r, T0 + 60, &["run", "all", "--migrate-state", "bucket"]);
    assert_eq!(dry.status.code(), Some(1));
    // Refused before the run starts: said once, nothing recorded.
    assert_eq!(
        String::from_utf8_lossy(&dry.stderr),
        "error: --migrate-state moves state and needs --no-dry-run: a dry run never moves state.\n"
    );
    let log = ok(csis_at(
        r,
        T0 + 60,
        &["run", "all", "--no-dry-run", "--migrate-state", "bucket"],
    ));
    assert!(log.contains(
        "state-locations: workspace bucket moved from local://state-a/bucket.tfstate to local://state-b/bucket.tfstate"
    ));
    assert!(locations(r).ends_with(
        "migrations:\n  - workspace: bucket\n    from: \"local://state-a/bucket.tfstate\"\n    to: \"local://state-b/bucket.tfstate\"\n    run: \"2026_12_02T15_54_24\"\n"
    ));
    ok(csis_at(r, T0 + 90, &["validate"]));
    // Naming a workspace that does not move is refused.
    let again = csis_at(
        r,
        T0 + 120,
        &["run", "all", "--no-dry-run", "--migrate-state", "bucket"],
    );
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains(
        "validation: --migrate-state bucket: workspace 'bucket' does not move (its state stays at local://state-b/bucket.tfstate)"
    ));
}

#[test]
fn a_move_with_nothing_standing_is_recorded() {
    let t = backends_tree();
    let r = t.path();
    ok(csis_at(r, T0, &["run", "all"]));
    edit(
        r,
        "cfg/builders.yml",
        "{name: bucket, type: dummy, runtime: cloud}",
        "{name: bucket, type: dummy, runtime: cloud, state_configuration: secondary}",
    );
    ok(csis_at(r, T0 + 60, &["run", "all"]));
    assert!(locations(r).contains("location: \"local://state-b/bucket.tfstate\""));
    assert!(locations(r).ends_with("migrations: []\n"));
}
