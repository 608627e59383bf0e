//! What `plan` and a real run say about instances: each instance once,
//! though its image bakes on several runtimes, and "launched" only for a
//! machine that was launched; a tree with no local runtime runs no local
//! step.

use serde_json::Value as J;

const NOW: i64 = 1_796_226_804;

#[test]
fn plan_names_each_instance_that_stays_once() {
    let Some((moto, t, d)) = crate::moto::clouds(|_| {}) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis(root, d.path(), NOW, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    // No local runtime here: nothing of the local identity step.
    assert!(!out.contains("local identity"), "{out}");
    assert!(!root.join(".csis-local").exists(), "{out}");
    // web re-bakes on both clouds; each instance is pinned to its own
    // cloud's build.
    crate::support::append(root, "scripts/site.sh", "echo moved\n");
    let (code, plan) = moto.csis(root, d.path(), NOW + 60, &["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    for instance in ["web-aws", "web-gce"] {
        let line = format!("instance '{instance}' stays on build ");
        assert_eq!(plan.matches(&line).count(), 1, "{plan}");
    }
    let (code, json) = moto.csis(root, d.path(), NOW + 60, &["plan", "--format", "json"]);
    assert_eq!(code, Some(0), "{json}");
    let report: J = serde_json::from_str(&json).unwrap();
    let stays: Vec<&str> = report["summary"]["stays"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["what"].as_str().unwrap())
        .collect();
    assert_eq!(stays, ["instance 'web-aws'", "instance 'web-gce'"]);
}

#[test]
fn a_real_run_launches_only_what_changed() {
    let t = csis_test_support::tree("local-run");
    let root = t.path();
    let launched = "[instance-image/execution] launched box from ";
    let first = crate::support::ok(crate::support::csis_at(
        root,
        NOW,
        &["run", "all", "--no-dry-run"],
    ));
    assert!(first.contains(launched), "{first}");
    let (_, plan) = crate::support::csis_text(root, NOW + 60, &["plan"]);
    assert!(plan.contains(", 0 instances to launch."), "{plan}");
    let second = crate::support::ok(crate::support::csis_at(
        root,
        NOW + 60,
        &["run", "all", "--no-dry-run"],
    ));
    assert!(!second.contains(launched), "{second}");
    let build = first
        .split(launched)
        .nth(1)
        .and_then(|r| r.lines().next())
        .unwrap();
    assert!(
        second.contains(&format!(
            "[instance-image/execution] instance box runs {build} as run 2026_12_02T15_53_24 launched it; nothing to launch\n"
        )),
        "{second}"
    );
    // A new build of top, then the instance's pin moved to it: the plan
    // names the replacement the next run makes.
    crate::support::ok(crate::support::csis_at(
        root,
        NOW + 120,
        &["run", "all", "--no-dry-run", "--force-bake", "top"],
    ));
    let upgraded = crate::support::ok(crate::support::csis_at(
        root,
        NOW + 180,
        &["upgrade", "instance", "box"],
    ));
    let new_build = upgraded.trim().rsplit(" -> ").next().unwrap().to_string();
    let (_, plan) = crate::support::csis_text(root, NOW + 180, &["plan"]);
    assert!(
        plan.contains("Plan: 0 to bake, 4 current, 0 instances to launch, 1 to replace.\n"),
        "{plan}"
    );
    assert!(
        plan.contains(&format!(
            "instance 'box' is replaced by the next apply: its pin moved from {build} to {new_build} since run 2026_12_02T15_53_24 launched it, and a machine runs the build it was launched from\n"
        )),
        "{plan}"
    );
    let third = crate::support::ok(crate::support::csis_at(
        root,
        NOW + 240,
        &["run", "all", "--no-dry-run"],
    ));
    assert!(
        third.contains(&format!("{launched}{new_build}\n")),
        "{third}"
    );
    assert!(
        third.contains(&format!(
            "pins: instance box is pinned to {new_build} already\n"
        )),
        "{third}"
    );
    let (_, plan) = crate::support::csis_text(root, NOW + 300, &["plan"]);
    assert!(plan.contains(", 0 instances to launch.\n"), "{plan}");
}
