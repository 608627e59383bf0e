//! A real run's bakes as a graph (fixtures/clouds against moto, the
//! packer, tofu and gcloud test doubles): independent bakes at once, a
//! child only after its parent's build is recorded, `--jobs` bounding how
//! many, a failed bake stopping its descendants only (or everything not
//! started, with `--fail-fast`), concurrent records losing nothing, and
//! each bake's outcome in the run summary and the journal.

use serde_json::Value as J;

use crate::support::read;

const NOW: i64 = 1_796_226_804;

/// The line index of the first log line holding `text`.
fn line_of(out: &str, text: &str) -> usize {
    out.lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no line with {text:?} in\n{out}"))
}

fn summary_bakes(root: &std::path::Path) -> Vec<(String, String, Option<String>)> {
    let s: J = serde_json::from_str(&read(&root.join("generated/run-summary.json"))).unwrap();
    s["bakes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            assert!(
                b["outcome"] == "not-attempted" || b["started"].is_string(),
                "{b}"
            );
            (
                b["bake"].as_str().unwrap().to_string(),
                b["outcome"].as_str().unwrap().to_string(),
                b["reason"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn independent_bakes_run_at_once_and_a_child_only_after_its_parent_is_recorded() {
    let Some((moto, t, d)) = crate::moto::clouds(|_| {}) else {
        return;
    };
    let root = t.path();
    // The first two builds of a run wait until both have started: bakes
    // one at a time never get past it.
    let together = [("PACKER_DOUBLE_TOGETHER", "2")];
    let (code, out) = moto.csis_with(
        root,
        d.path(),
        NOW,
        &["run", "all", "--no-dry-run"],
        &together,
    );
    assert_eq!(code, Some(0), "{out}");
    // Each chain in order: a child's first step after its parent's record.
    for cloud in ["aws", "gce"] {
        for (parent, child) in [("base", "app"), ("app", "web")] {
            let recorded = line_of(&out, &format!("[{parent}@{cloud}] lineage: recorded "));
            let started = line_of(&out, &format!("[{child}@{cloud}] executing "));
            assert!(recorded < started, "{parent} -> {child} on {cloud}:\n{out}");
        }
    }
    let bakes = summary_bakes(root);
    assert_eq!(bakes.len(), 8, "{bakes:?}");
    assert!(bakes.iter().all(|(_, o, _)| o == "baked"), "{bakes:?}");
    let runs = read(&root.join("meta-state/runs.yaml"));
    assert!(
        runs.contains("bake: \"web@gce\"\n        outcome: baked\n"),
        "{runs}"
    );
    // Every build recorded, none lost to another's record.
    let lineage = read(&root.join("meta-state/lineage.yaml"));
    assert_eq!(lineage.matches("\n  - build_id: ").count(), 8, "{lineage}");

    // --jobs 1: one bake at a time, so the first never meets a second.
    let (code, out) = moto.csis_with(
        root,
        d.path(),
        NOW + 3600,
        &[
            "run",
            "base-image",
            "--no-dry-run",
            "--force-bake",
            "debian12",
            "--jobs",
            "1",
        ],
        &together,
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("[debian12@aws] 1796226804,,error,debian12: no other build ran at the same time (test double)\n"),
        "{out}"
    );
}

#[test]
fn a_failed_bake_stops_its_descendants_and_the_other_chain_bakes() {
    let Some((moto, t, d)) = crate::moto::clouds(|_| {}) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis_with(
        root,
        d.path(),
        NOW,
        &["run", "all", "--no-dry-run"],
        &[("PACKER_DOUBLE_FAIL", "app@aws")],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("[web@aws] not attempted: app@aws did not bake\n"),
        "{out}"
    );
    assert!(
        out.contains("error: [instance-image/execution] bake app@aws failed (command returned 1: (cd pk-aws/image-generation && packer build -machine-readable -var \"csis_run=${CSIS_RUN_ID}\" app.pkr.hcl))\n"),
        "{out}"
    );
    let bakes = summary_bakes(root);
    let outcome = |key: &str| {
        bakes
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, o, r)| (o.as_str(), r.clone()))
            .unwrap()
    };
    assert_eq!(outcome("base@aws").0, "baked");
    assert_eq!(outcome("app@aws").0, "failed");
    assert_eq!(
        outcome("web@aws"),
        (
            "not-attempted",
            Some("not attempted: app@aws did not bake".into())
        )
    );
    for series in ["base", "app", "web"] {
        assert_eq!(outcome(&format!("{series}@gce")).0, "baked", "{bakes:?}");
    }
    // Nothing recorded for what did not bake; the other chain's builds are.
    let lineage = read(&root.join("meta-state/lineage.yaml"));
    assert!(
        lineage.contains("series: web\n    runtime: gce\n"),
        "{lineage}"
    );
    assert!(
        !lineage.contains("series: app\n    runtime: aws\n"),
        "{lineage}"
    );
    assert!(
        !lineage.contains("series: web\n    runtime: aws\n"),
        "{lineage}"
    );
}

#[test]
fn fail_fast_starts_no_bake_after_the_first_failure() {
    let Some((moto, t, d)) = crate::moto::clouds(|_| {}) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis_with(
        root,
        d.path(),
        NOW,
        &["run", "all", "--no-dry-run", "--jobs", "1", "--fail-fast"],
        &[("PACKER_DOUBLE_FAIL", "app@aws")],
    );
    assert_eq!(code, Some(1), "{out}");
    let bakes = summary_bakes(root);
    let got: Vec<(&str, &str)> = bakes
        .iter()
        .map(|(k, o, _)| (k.as_str(), o.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("debian12@aws", "baked"),
            ("debian12@gce", "baked"),
            ("base@aws", "baked"),
            ("app@aws", "failed"),
            ("web@aws", "not-attempted"),
            ("base@gce", "not-attempted"),
            ("app@gce", "not-attempted"),
            ("web@gce", "not-attempted"),
        ]
    );
    assert!(
        out.contains(
            "[base@gce] not attempted: the run stops at the first failure (--fail-fast)\n"
        ),
        "{out}"
    );
}

/// Eight base bakes recorded at once, each `lineage record` a child of
/// the run under its tree lock: every build is in lineage.
#[test]
fn eight_bakes_recorded_at_once_lose_nothing() {
    let Some((moto, t, d)) = crate::moto::clouds(|root| {
        let path = root.join("cfg/builders.yml");
        let mut text = read(&path);
        for n in ["b", "c", "d"] {
            text.push_str(&format!(
                "  - name: debian12{n}\n    type: packer\n    family: debian\n    family_version: 12\n    admin_user: csis-admin\n    identity_types: [unix]\n    storage_types: [ebs, pd]\n    runtimes:\n      - image_builder: pk-aws\n        query: {{name: \"debian-12-amd64-*\"}}\n        owners: [\"136693071363\"]\n      - image_builder: pk-gce\n        query: {{family: debian-12}}\n        owners: [debian-cloud]\n"
            ));
        }
        std::fs::write(&path, text).unwrap();
    }) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis_with(
        root,
        d.path(),
        NOW,
        &["run", "base-image", "--no-dry-run", "--jobs", "8"],
        &[("PACKER_DOUBLE_TOGETHER", "8")],
    );
    assert_eq!(code, Some(0), "{out}");
    let lineage = read(&root.join("meta-state/lineage.yaml"));
    assert_eq!(lineage.matches("\n  - build_id: ").count(), 8, "{lineage}");
    for n in ["", "b", "c", "d"] {
        for cloud in ["aws", "gce"] {
            assert!(
                lineage.contains(&format!("series: debian12{n}\n    runtime: {cloud}\n")),
                "debian12{n}@{cloud}:\n{lineage}"
            );
        }
    }
}
