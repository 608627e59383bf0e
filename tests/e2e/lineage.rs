//! The minimal bake plan over real runs on the local runtime: what bakes,
//! what is current, what pins stay, and the scope refusal.

use crate::support::{csis_at, edit, ok};
use csis_test_support::{fixture_dir, tree};
use std::path::Path;

const DAY: i64 = 86_400;
const T0: i64 = 1_796_226_804;

/// `csis plan` as `<series>@<runtime>: <reason>` lines.
fn plan(root: &Path, now: i64, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["plan"];
    args.extend(extra);
    let out = csis_at(root, now, &args);
    ok(out).lines().map(str::to_string).collect()
}

fn pins(root: &Path) -> String {
    std::fs::read_to_string(root.join("meta-state/pins.yaml")).unwrap()
}

#[test]
fn the_first_run_bakes_everything_and_the_second_nothing() {
    let t = tree("local-run");
    assert_eq!(
        plan(t.path(), T0, &[]),
        [
            "tiny@here: bake: no build yet",
            "base@here: bake: no build yet",
            "mid@here: bake: no build yet",
            "top@here: bake: no build yet",
            "Plan: 4 to bake, 0 current, 1 instance to launch.",
        ]
    );
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    assert_eq!(
        plan(t.path(), T0 + 60, &[]),
        [
            "tiny@here: skip: current",
            "base@here: skip: current",
            "mid@here: skip: current",
            "top@here: skip: current",
            "Plan: 0 to bake, 4 current, 0 instances to launch.",
        ]
    );
    let log = ok(csis_at(t.path(), T0 + 60, &["run", "all", "--no-dry-run"]));
    assert!(!log.contains("local bake"), "{log}");
    let lineage = ok(csis_at(t.path(), T0 + 60, &["lineage", "show"]));
    assert_eq!(lineage.matches("-here-").count(), 4, "{lineage}");
}

#[test]
fn a_changed_modification_rebakes_that_image_and_pinned_children_stay() {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    let before = pins(t.path());
    edit(t.path(), "images/chain.yml", "echo mid >", "echo middle >");
    let p = plan(t.path(), T0 + 60, &[]);
    assert_eq!(p[0], "tiny@here: skip: current");
    assert_eq!(p[1], "base@here: skip: current");
    assert!(
        p[2].starts_with("mid@here: bake: inputs changed (fingerprint "),
        "{p:?}"
    );
    assert_eq!(
        p[3], "top@here: skip: current",
        "top is pinned to the old mid"
    );
    ok(csis_at(t.path(), T0 + 60, &["run", "all", "--no-dry-run"]));
    let after = pins(t.path());
    assert!(
        after.contains("\"top@here\": mid-here-2026_12_02T15_53_24"),
        "{after}"
    );
    assert_eq!(
        before
            .lines()
            .filter(|l| l.contains("@here\":"))
            .collect::<Vec<_>>(),
        after
            .lines()
            .filter(|l| l.contains("@here\":"))
            .collect::<Vec<_>>(),
        "pinned consumers stay pinned"
    );
}

#[test]
fn under_follow_a_parent_rebake_rebakes_its_children_and_moves_the_pin() {
    let t = tree("local-run");
    edit(
        t.path(),
        "images/chain.yml",
        "  - name: top\n    source_image: mid\n",
        "  - name: top\n    source_image: mid\n    parent_policy: follow\n",
    );
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    edit(t.path(), "images/chain.yml", "echo mid >", "echo middle >");
    let p = plan(t.path(), T0 + 60, &[]);
    assert_eq!(
        p[3],
        "top@here: bake: parent mid re-bakes this run (parent_policy: follow)"
    );
    let log = ok(csis_at(t.path(), T0 + 60, &["run", "all", "--no-dry-run"]));
    assert!(
        log.contains("pins: top@here -> mid-here-2026_12_02T15_54_24 (follow)"),
        "{log}"
    );
    let top = t
        .path()
        .join("store/images/top-here-2026_12_02T15_54_24/root/etc/layer-mid");
    assert_eq!(std::fs::read_to_string(top).unwrap(), "middle\n");
}

#[test]
fn refresh_days_due_rebakes_the_base() {
    let t = tree("local-run");
    edit(
        t.path(),
        "cfg/builders.yml",
        "    storage_types: [local]\n",
        "    storage_types: [local]\n    update: {policy: security, refresh_days: 2}\n",
    );
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    assert_eq!(plan(t.path(), T0 + DAY, &[])[0], "tiny@here: skip: current");
    assert_eq!(
        plan(t.path(), T0 + 3 * DAY, &[])[0],
        "tiny@here: bake: refresh due (update.refresh_days: 2; tiny-here-2026_12_02T15_53_24 is 3 days old)"
    );
}

#[test]
fn force_bake_and_only_image_at_runtime() {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    assert_eq!(
        plan(
            t.path(),
            T0 + 60,
            &["--only", "mid@here", "--force-bake", "mid"]
        ),
        [
            "tiny@here: skip: not selected",
            "base@here: skip: not selected",
            "mid@here: bake: forced (--force-bake)",
            "top@here: skip: not selected",
            "Plan: 1 to bake, 0 current, 3 skipped, 0 instances to launch.",
            "image 'top' on here stays on build mid-here-2026_12_02T15_53_24 while 'mid' re-bakes (parent_policy: pinned); to move it after the bake: csis upgrade image top --runtime here",
        ]
    );
    let out = csis_at(t.path(), T0 + 60, &["plan", "--force-bake", "nope"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_real_run_baking_outside_its_apply_scope_is_refused() {
    let t = tree("local-run");
    edit(
        t.path(),
        "cfg/builders.yml",
        "  - {name: here, type: local, is_default: true, default_machine_type: small, store: store}\n",
        "  - {name: here, type: local, is_default: true, default_machine_type: small, store: store}\n  - {name: there, type: local, default_machine_type: small, store: store2}\n",
    );
    edit(
        t.path(),
        "cfg/_config.yml",
        "config:\n",
        "config:\n  apply_instances: [there]\n",
    );
    let out = csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: run scope: bake(s) outside the apply scope [there]: tiny@here, base@here, mid@here, top@here -- pass --allow-unscoped-bakes, or select images with --only / --only-runtime"),
        "{err}"
    );
    assert!(!t.path().join("store").exists(), "nothing was baked");
    // A dry run warns; an explicit selection or the flag allows it.
    let dry = csis_at(t.path(), T0, &["run", "all"]);
    assert!(String::from_utf8_lossy(&dry.stderr).contains("warning: run scope:"));
    ok(csis_at(
        t.path(),
        T0,
        &["run", "all", "--no-dry-run", "--allow-unscoped-bakes"],
    ));
    let out = csis_at(
        t.path(),
        T0 + 60,
        &["run", "storage", "--apply-runtime", "there"],
    );
    ok(out);
}

#[test]
fn plan_as_json_on_the_example() {
    let root = fixture_dir("config");
    let out = csis_at(&root, T0, &["plan", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["ok"], true);
    assert_eq!(plan["error"], serde_json::Value::Null);
    let entries = plan["plan"].as_array().unwrap();
    let keys: Vec<String> = entries
        .iter()
        .map(|e| {
            format!(
                "{}@{}",
                e["series"].as_str().unwrap(),
                e["runtime"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            "alma10@local",
            "alma10@dummy-cloud",
            "debian12@local",
            "alma-base@local",
            "alma-base@dummy-cloud",
            "debian-batch@local",
            "alma-tools@local",
            "research-workstation@local",
        ]
    );
    for e in entries {
        assert_eq!(e["decision"], "bake");
        assert_eq!(e["reason"], "bake: no build yet");
        assert_eq!(e["fingerprint"].as_str().unwrap().len(), 64);
    }
    assert!(!root.join("generated").exists(), "plan generates nothing");
}

#[test]
fn relabel_moves_a_renamed_series_builds_and_nothing_re_bakes() {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    let mid = "mid-here-2026_12_02T15_53_24";
    let top = "top-here-2026_12_02T15_53_24";
    let relabel = |args: &[&str]| {
        let mut a = vec!["lineage", "relabel"];
        a.extend(args);
        crate::support::csis_text(t.path(), T0 + 60, &a)
    };
    // Still declared: refused.
    assert_eq!(
        relabel(&["mid", "middle"]),
        (
            Some(1),
            "error: lineage relabel refused, nothing changed: 'mid' is still declared; rename it in the tree first, then relabel its builds\n".into()
        )
    );
    edit(
        t.path(),
        "images/chain.yml",
        "name: mid\n",
        "name: middle\n",
    );
    edit(
        t.path(),
        "images/chain.yml",
        "source_image: mid\n",
        "source_image: middle\n",
    );
    assert_eq!(
        relabel(&["mid", "nowhere"]).1,
        "error: lineage relabel refused, nothing changed: 'nowhere' is not a declared image or OS builder\n"
    );
    assert_eq!(
        relabel(&["base", "middle"]).1,
        "error: lineage relabel refused, nothing changed: 'base' is still declared; rename it in the tree first, then relabel its builds\n"
    );
    // Without --commit: what it would do.
    let lineage_before = std::fs::read_to_string(t.path().join("meta-state/lineage.yaml")).unwrap();
    assert_eq!(
        relabel(&["mid", "middle"]),
        (
            Some(0),
            format!(
                "lineage relabel: {mid} (here): csis_series mid -> middle\n\
                 lineage relabel: nothing changed; pass --commit to retag and record\n"
            )
        )
    );
    assert_eq!(
        std::fs::read_to_string(t.path().join("meta-state/lineage.yaml")).unwrap(),
        lineage_before
    );
    assert_eq!(
        relabel(&["mid", "middle", "--commit"]),
        (
            Some(0),
            format!(
                "lineage relabel: {mid} (here): csis_series mid -> middle\n\
                 lineage relabel: {mid} (middle@here): fingerprint restamped, only the rename changed it\n\
                 lineage relabel: {top} (top@here): fingerprint restamped, only the rename changed it\n\
                 lineage relabel: 1 build of 'mid' now recorded as 'middle'\n"
            )
        )
    );
    // The store's build follows (its tag and its series head), the pin
    // is keyed by the new name, and nothing re-bakes.
    let store = t.path().join("store");
    let manifest =
        std::fs::read_to_string(store.join("images").join(mid).join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"csis_series\": \"middle\""),
        "{manifest}"
    );
    assert_eq!(
        std::fs::read_to_string(store.join("heads/middle@here")).unwrap(),
        format!("{mid}\n")
    );
    assert!(!store.join("heads/mid@here").exists());
    assert!(
        pins(t.path()).contains("\"middle@here\": base-here-"),
        "{}",
        pins(t.path())
    );
    assert_eq!(
        plan(t.path(), T0 + 60, &[]),
        [
            "tiny@here: skip: current",
            "base@here: skip: current",
            "middle@here: skip: current",
            "top@here: skip: current",
            "Plan: 0 to bake, 4 current, 0 instances to launch.",
        ]
    );
    let query = ok(csis_at(t.path(), T0 + 60, &["state", "query"]));
    assert!(
        query.ends_with(
            "state query: 0 missing, 0 foreign, 0 changed, 0 stale, 0 hard, 0 unavailable\n"
        ),
        "{query}"
    );
    // Nothing of 'mid' is left to relabel.
    assert_eq!(
        relabel(&["mid", "middle"]).1,
        "error: lineage relabel refused, nothing changed: meta-state/lineage.yaml records no build of 'mid'\n"
    );
}
