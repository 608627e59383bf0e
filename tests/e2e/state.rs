//! `csis state query` over real local runs: what exists compared with
//! meta-state, the hard drift that refuses the next validation, and the
//! first step of every run.

use crate::support::{csis_at, edit, ok};
use csis_test_support::tree;
use std::path::Path;
use std::process::Output;

const T0: i64 = 1_796_226_804;
const B0: &str = "2026_12_02T15_53_24";

fn query(root: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["state", "query"];
    args.extend(extra);
    csis_at(root, T0 + 60, &args)
}

fn stdout(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn built() -> tempfile::TempDir {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    t
}

#[test]
fn after_a_real_run_reality_matches_meta_state() {
    let t = built();
    let out = query(t.path(), &["--strict"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        ["state query: 0 missing, 0 foreign, 0 changed, 0 stale, 0 hard, 0 unavailable"]
    );
    let report = std::fs::read_to_string(t.path().join("generated/state-report.json")).unwrap();
    assert_eq!(report, "{\n  \"entries\": [],\n  \"unavailable\": []\n}\n");
}

#[test]
fn a_pinned_build_gone_is_hard_and_refuses_validation_and_the_next_run() {
    let t = built();
    std::fs::remove_dir_all(t.path().join(format!("store/images/mid-here-{B0}"))).unwrap();
    let out = query(t.path(), &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "without --strict drift is a report"
    );
    assert_eq!(
        stdout(&out),
        [
            format!(
                "hard: missing image mid-here-{B0} (here): a pinned build is gone (pinned by top@here)"
            ),
            "state query: 1 missing, 0 foreign, 0 changed, 0 stale, 1 hard, 0 unavailable"
                .to_string(),
        ]
    );
    assert_eq!(query(t.path(), &["--strict"]).status.code(), Some(1));
    let message = format!(
        "state: missing image mid-here-{B0}: a pinned build is gone (pinned by top@here) (from state-report.json; re-run 'state query' after fixing)"
    );
    let v = csis_at(t.path(), T0 + 60, &["--brief", "validate"]);
    assert_eq!(v.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&v.stderr),
        format!("{message}\nvalidate: 1 error(s)\n")
    );
    // A run asks again first, and refuses with the same error.
    let run = csis_at(t.path(), T0 + 60, &["run", "all"]);
    assert_eq!(run.status.code(), Some(1));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["validation_errors"][0], message.as_str());
    assert_eq!(summary["state"]["hard"], 1);
    assert_eq!(summary["state"]["missing"], 1);
}

#[test]
fn foreign_stale_and_missing_instances_are_reported_not_hard() {
    let t = built();
    let images = t.path().join("store/images");
    // A second build of top; box moves to it, so the first is stale.
    ok(csis_at(
        t.path(),
        T0 + 30,
        &[
            "run",
            "instance-image",
            "--no-dry-run",
            "--force-bake",
            "top",
        ],
    ));
    ok(csis_at(t.path(), T0 + 40, &["upgrade", "instance", "box"]));
    std::fs::remove_dir_all(t.path().join("store/instances/box")).unwrap();
    // A build lineage does not record (a real run would remove it first).
    csis_test_support::copy_tree(
        &images.join(format!("top-here-{B0}")),
        &images.join("top-here-2026_11_01T00_00_00"),
    );
    let out = query(t.path(), &[]);
    assert_eq!(
        stdout(&out),
        [
            "foreign image top-here-2026_11_01T00_00_00 (here): carries csis_series 'top' but meta-state/lineage.yaml does not record it".to_string(),
            format!(
                "stale image top-here-{B0} (here): superseded by top's head and pinned by nothing (retention disposes it)"
            ),
            "missing instance box (here): recorded launched in meta-state/launch-params.yaml but not running".to_string(),
            "state query: 1 missing, 1 foreign, 0 changed, 1 stale, 0 hard, 0 unavailable".to_string(),
        ]
    );
    assert_eq!(query(t.path(), &["--strict"]).status.code(), Some(1));
    ok(csis_at(t.path(), T0 + 60, &["validate"]));
    // A copy of a recorded build says it is that build's run: adopting it
    // would give one run two builds, so state import refuses.
    let out = csis_at(t.path(), T0 + 70, &["state", "import"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!(
            "error: state import refused, nothing adopted: build 'top-here-2026_11_01T00_00_00' says it is top@here of run {B0}, which lineage records as 'top-here-{B0}'"
        )
    );
}

#[test]
fn a_storage_recorded_active_but_absent_and_a_pin_to_no_build_are_hard() {
    let t = built();
    std::fs::remove_dir_all(t.path().join("store/storages/data")).unwrap();
    edit(
        t.path(),
        "meta-state/pins.yaml",
        &format!("box: top-here-{B0}"),
        "box: top-here-2026_01_01T00_00_00",
    );
    let lines = stdout(&query(t.path(), &[]));
    assert_eq!(
        lines[..2],
        [
            "hard: missing pin top-here-2026_01_01T00_00_00 (-): pinned by instance box, but meta-state/lineage.yaml records no such build",
            "hard: missing storage data (here): recorded active in meta-state/storage-state.yaml but absent",
        ]
    );
    let v = csis_at(t.path(), T0 + 60, &["--brief", "validate"]);
    assert_eq!(v.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&v.stderr);
    assert!(
        stderr.contains(
            "state: missing storage data: recorded active in meta-state/storage-state.yaml but absent (from state-report.json; re-run 'state query' after fixing)"
        )
    );
    assert!(
        stderr.contains(
            "state: missing pin top-here-2026_01_01T00_00_00: pinned by instance box, but meta-state/lineage.yaml records no such build (from state-report.json; re-run 'state query' after fixing)"
        ),
        "{stderr}"
    );
}

#[test]
fn a_runtime_that_cannot_be_asked_is_unavailable_never_empty() {
    let t = tree("config");
    let out = csis_at(t.path(), T0, &["state", "query"]);
    assert_eq!(
        stdout(&out),
        [
            "unavailable: dummy-cloud: this runtime cannot be asked what exists",
            "state query: 0 missing, 0 foreign, 0 changed, 0 stale, 0 hard, 1 unavailable",
        ]
    );
    assert_eq!(
        csis_at(t.path(), T0, &["state", "query", "--strict"])
            .status
            .code(),
        Some(1)
    );
    let run = ok(csis_at(t.path(), T0, &["run", "all"]));
    assert!(
        run.contains(
            "warning: state: unavailable: dummy-cloud: this runtime cannot be asked what exists"
        ),
        "{run}"
    );
}

#[test]
fn no_state_query_leaves_the_last_report_standing() {
    let t = built();
    std::fs::remove_dir_all(t.path().join(format!("store/images/mid-here-{B0}"))).unwrap();
    // The report of the real run is clean; skipping the query keeps it.
    ok(csis_at(
        t.path(),
        T0 + 60,
        &["run", "all", "--no-state-query"],
    ));
    let run = csis_at(t.path(), T0 + 90, &["run", "all"]);
    assert_eq!(run.status.code(), Some(1));
}
