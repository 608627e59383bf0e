//! Claimed hostnames: a real run that launches asks each instance's group
//! registry (the dummy group builder's is a file the test writes) before
//! anything runs.

use crate::support::{csis_at, edit, ok};
use csis_test_support::tree;
use std::path::Path;

const T0: i64 = 1_796_226_804;

/// local-run with its group `ops` kept by a dummy group builder, which has
/// a server registry.
fn registry_tree() -> tempfile::TempDir {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "cfg/builders.yml",
        "  - {name: unix, type: basic, is_default: true}\n",
        "  - {name: unix, type: basic, is_default: true}\n  - {name: reg, type: dummy}\n",
    );
    edit(
        r,
        "cfg/builders.yml",
        "identity_types: [unix]",
        "identity_types: [unix, dummy]",
    );
    edit(
        r,
        "groups/people.yml",
        "{name: ops, is_root",
        "{name: ops, type: reg, is_root",
    );
    std::fs::create_dir_all(r.join(".dummy-registry")).unwrap();
    t
}

fn registry(root: &Path, json: &str) {
    std::fs::write(root.join(".dummy-registry/ops.json"), json).unwrap();
}

fn refused(root: &Path, now: i64, args: &[&str]) -> String {
    let out = csis_at(root, now, args);
    assert_eq!(out.status.code(), Some(1));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["validation_errors"].as_array().unwrap().len(), 1);
    summary["validation_errors"][0]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_new_machine_may_not_enroll_under_a_registered_name() {
    let t = registry_tree();
    registry(t.path(), r#"{"box-001": ["srv-7f3a"]}"#);
    assert_eq!(
        refused(t.path(), T0, &["run", "all", "--no-dry-run"]),
        "instance 'box': canonical hostname 'box-001' is already registered to 1 server(s) in group 'ops' (srv-7f3a); launching would enroll a second machine under the same name. Retire the stale registration first"
    );
    assert!(!t.path().join("store/instances/box").exists());
    // A dry run, a run without instance-image, and a run that does not
    // apply launch nothing, and ask nothing.
    ok(csis_at(t.path(), T0, &["run", "all"]));
    ok(csis_at(t.path(), T0, &["run", "storage", "--no-dry-run"]));
    ok(csis_at(
        t.path(),
        T0,
        &["run", "all", "--no-dry-run", "--no-apply"],
    ));
    ok(csis_at(t.path(), T0, &["validate"]));
}

#[test]
fn a_registry_that_does_not_answer_refuses_the_launch() {
    let t = registry_tree();
    std::fs::write(t.path().join(".dummy-registry/ops.down"), "").unwrap();
    assert_eq!(
        refused(t.path(), T0, &["run", "instance-image", "--no-dry-run"]),
        "instance 'box': could not check whether canonical hostname 'box-001' is already claimed (group 'ops''s server registry did not answer: no answer within its timeout); refusing to launch on silence"
    );
}

#[test]
fn a_launched_machine_must_be_its_names_only_registration() {
    let t = registry_tree();
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    registry(t.path(), r#"{"box-001": ["srv-1"]}"#);
    ok(csis_at(t.path(), T0 + 60, &["run", "all", "--no-dry-run"]));
    registry(t.path(), r#"{"box-001": ["srv-1", "srv-2"]}"#);
    assert_eq!(
        refused(t.path(), T0 + 120, &["run", "all", "--no-dry-run"]),
        "instance 'box': canonical hostname 'box-001' is registered to 2 servers in group 'ops' (srv-1, srv-2) and only one of them is this machine; sft ssh cannot choose. Deregister the others."
    );
}
