//! `--explain` over real runs on the local runtime: each bake's chain of
//! causes (the input that changed, where it is declared, the lineage path)
//! and each rewritten file's changed values traced to their declarations.

use crate::support::{csis_at, edit, ok};
use csis_test_support::tree;
use std::path::Path;

const T0: i64 = 1_796_226_804;
const B0: &str = "2026_12_02T15_53_24";

fn explain(root: &Path) -> Vec<String> {
    ok(csis_at(root, T0 + 60, &["plan", "--explain"]))
        .lines()
        .map(str::to_string)
        .collect()
}

fn lineage_line(series: &[&str]) -> String {
    let steps: Vec<String> = series
        .iter()
        .map(|s| format!("{s} ({s}-here-{B0})"))
        .collect();
    format!("    lineage: {}", steps.join(" -> "))
}

#[test]
fn a_first_plan_explains_every_bake_by_the_missing_build() {
    let t = tree("local-run");
    let p = ok(csis_at(t.path(), T0, &["plan", "--explain"]));
    let lines: Vec<&str> = p.lines().collect();
    assert_eq!(
        &lines[..3],
        [
            "tiny@here: bake: no build yet",
            "    meta-state/lineage.yaml records no build of tiny@here (declared at cfg/builders.yml:16:5)",
            "    lineage: tiny (no build)",
        ]
    );
    assert_eq!(
        lines[9..],
        [
            "top@here: bake: no build yet",
            "    meta-state/lineage.yaml records no build of top@here (declared at images/chain.yml:17:5)",
            "    lineage: tiny (no build) -> base (no build) -> mid (no build) -> top (no build)",
            "Plan: 4 to bake, 0 current, 1 instance to launch.",
        ]
    );
}

#[test]
fn a_changed_modification_names_its_field_file_and_line() {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    edit(t.path(), "images/chain.yml", "echo mid >", "echo middle >");
    let p = explain(t.path());
    assert!(
        p[2].starts_with("mid@here: bake: inputs changed (fingerprint "),
        "{p:?}"
    );
    assert_eq!(
        p[3],
        format!(
            "    modifications[marker].fields.script changed since mid-here-{B0} at images/chain.yml:15:9"
        )
    );
    assert_eq!(p[4], lineage_line(&["tiny", "base", "mid"]));
    assert_eq!(p[5], "top@here: skip: current", "a skip is not explained");
    assert_eq!(p[6], "Plan: 1 to bake, 3 current, 0 instances to launch.");
    assert!(
        p[7].starts_with("image 'top' on here stays on build mid-here-"),
        "{p:?}"
    );
    assert_eq!(p.len(), 8);
}

#[test]
fn a_changed_base_image_input_points_into_cfg() {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    edit(
        t.path(),
        "cfg/builders.yml",
        "family_version: 12",
        "family_version: 13",
    );
    let p = explain(t.path());
    assert_eq!(
        p[1],
        format!("    vendor.family_version changed since tiny-here-{B0} at cfg/builders.yml:20:5")
    );
    assert_eq!(p[2], lineage_line(&["tiny"]));
}

#[test]
fn under_follow_the_chain_goes_down_to_the_parents_change() {
    let t = tree("local-run");
    edit(
        t.path(),
        "images/chain.yml",
        "  - name: top\n    source_image: mid\n",
        "  - name: top\n    source_image: mid\n    parent_policy: follow\n",
    );
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    edit(t.path(), "images/chain.yml", "echo mid >", "echo middle >");
    let p = explain(t.path());
    assert_eq!(
        p[5],
        "top@here: bake: parent mid re-bakes this run (parent_policy: follow)"
    );
    let mid_reason = p[2].trim_start_matches("mid@here: ");
    assert_eq!(
        p[6],
        format!(
            "    top follows its parent at images/chain.yml:18:5 and mid@here bakes ({mid_reason})"
        )
    );
    assert_eq!(
        p[7],
        format!(
            "      modifications[marker].fields.script changed since mid-here-{B0} at images/chain.yml:15:9"
        )
    );
    assert_eq!(p[8], lineage_line(&["tiny", "base", "mid", "top"]));
}

#[test]
fn a_build_recorded_without_inputs_says_so() {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    // A lineage.yaml written before builds recorded their inputs.
    let path = t.path().join("meta-state/lineage.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut kept = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line == "    inputs:" {
            skipping = true;
        } else if !line.starts_with("      ") {
            skipping = false;
        }
        if !skipping {
            kept.push(line);
        }
    }
    assert!(kept.len() < text.lines().count());
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    edit(t.path(), "images/chain.yml", "echo mid >", "echo middle >");
    let p = explain(t.path());
    assert_eq!(
        p[3],
        format!(
            "    mid-here-{B0} records no inputs (recorded before csis kept them): only the fingerprint tells the change"
        )
    );
}

#[test]
fn run_explain_traces_rewritten_files_and_keeps_it_in_the_summary() {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    edit(t.path(), "images/chain.yml", "echo mid >", "echo middle >");
    let first = ok(csis_at(t.path(), T0 + 30, &["run", "all", "--explain"]));
    let spec = "generated/instance-image/bake/image-generation/bake-image-generation-mid.json";
    let reason = |log: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix("bake plan: mid@here: "))
            .unwrap()
            .to_string()
    };
    // The spec the first (real) run wrote had no parent build yet.
    assert!(
        first.contains(&format!(
            "    parent_build: \"null\" -> \"base-here-{B0}\" <- meta-state/lineage.yaml (build base-here-{B0})\n    mid@here {}\n",
            reason(&first)
        )),
        "{first}"
    );
    edit(
        t.path(),
        "images/chain.yml",
        "echo middle >",
        "echo centre >",
    );
    let log = ok(csis_at(t.path(), T0 + 60, &["run", "all", "--explain"]));
    let lines: Vec<&str> = log
        .lines()
        .skip_while(|l| *l != format!("explain: rewrote {spec}:"))
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(
        lines[0].starts_with("    fingerprint: \"")
            && lines[0].ends_with("<- the input fingerprint of mid@here"),
        "{log}"
    );
    assert_eq!(
        lines[1],
        r#"    modifications[0].script: "echo middle > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"" -> "echo centre > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"" <- images/chain.yml:15:17 (image mid)"#
    );
    assert_eq!(lines[2], format!("    mid@here {}", reason(&log)));

    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    let explain = &summary["explain"];
    assert_eq!(
        explain["bakes"]["mid@here"][0],
        format!(
            "modifications[marker].fields.script changed since mid-here-{B0} at images/chain.yml:15:9"
        )
    );
    assert_eq!(explain["rewritten"][spec][1], lines[1].trim_start());
    // Without --explain the summary has no explain key.
    ok(csis_at(t.path(), T0 + 90, &["run", "all"]));
    let summary = std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap();
    assert!(!summary.contains("\"explain\""));
}

#[test]
fn a_rewritten_runner_script_names_the_bake_its_new_lines_run() {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    ok(csis_at(t.path(), T0 + 30, &["run", "all"]));
    edit(t.path(), "images/chain.yml", "echo mid >", "echo middle >");
    let log = ok(csis_at(t.path(), T0 + 60, &["run", "all", "--explain"]));
    let lines: Vec<&str> = log
        .lines()
        .skip_while(|l| *l != "explain: rewrote generated/instance-image/run-instance-image.sh:")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .collect();
    assert!(
        lines.iter().any(|l| l.starts_with(
            r#"    line 17: (absent) -> "\"$CSIS\" local bake --spec bake/image-generation/bake-image-generation-mid.json" <- mid@here bake: inputs changed (fingerprint "#
        )),
        "{log}"
    );
    // The dry run at T0 + 30 baked nothing and so left no spec for mid.
    assert!(
        log.contains(
            "explain: rewrote generated/instance-image/bake/image-generation/bake-image-generation-mid.json:\n    new file\n    mid@here bake: inputs changed"
        ),
        "{log}"
    );
}

#[test]
fn plan_stats_counts_queries_per_stage() {
    let t = tree("local-run");
    let out = ok(csis_at(t.path(), T0, &["plan", "--stats"]));
    for stage in ["validate", "plan"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("stats: {stage}: "))
                    && l.contains(" queries executed, ")),
            "{out}"
        );
    }
    assert!(out.contains("stats: peak memory "), "{out}");
    let json = ok(csis_at(
        t.path(),
        T0,
        &["plan", "--stats", "--format", "json"],
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        v["stats"]["stages"]["validate"]["executed"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(v["stats"]["stages"]["plan"]["ms"].as_f64().is_some());
    let plain = ok(csis_at(t.path(), T0, &["plan", "--format", "json"]));
    assert!(!plain.contains("\"stats\"") && !plain.contains("\"explain\""));
}

#[test]
fn a_due_refresh_names_the_build_and_the_policy() {
    let t = tree("local-run");
    edit(
        t.path(),
        "cfg/builders.yml",
        "    storage_types: [local]\n",
        "    storage_types: [local]\n    update: {policy: security, refresh_days: 2}\n",
    );
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    let out = ok(csis_at(t.path(), T0 + 3 * 86_400, &["plan", "--explain"]));
    let lines: Vec<&str> = out.lines().take(3).collect();
    assert_eq!(
        lines,
        [
            &format!(
                "tiny@here: bake: refresh due (update.refresh_days: 2; tiny-here-{B0} is 3 days old)"
            ),
            &format!(
                "    tiny-here-{B0} was baked in run {B0}; the refresh period is set at cfg/builders.yml:23:5"
            ),
            &lineage_line(&["tiny"]),
        ]
    );
}
