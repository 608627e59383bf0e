//! upgrade, forget, release and dispose over real runs on the local
//! runtime, with the spec's refusals.

use crate::support::{csis_at, csis_text, edit, ok};
use csis_test_support::tree;
use std::process::Output;

const T0: i64 = 1_796_226_804; // run 2026_12_02T15_53_24
const T1: i64 = T0 + 60; // run 2026_12_02T15_54_24

fn refused(o: Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).trim_end().to_string()
}

/// Two real runs: `mid` re-baked in the second, `top` still pinned to the
/// first `mid`.
fn two_runs() -> tempfile::TempDir {
    let t = tree("local-run");
    ok(csis_at(t.path(), T0, &["run", "all", "--no-dry-run"]));
    edit(t.path(), "images/chain.yml", "echo mid >", "echo middle >");
    ok(csis_at(t.path(), T1, &["run", "all", "--no-dry-run"]));
    t
}

const MID0: &str = "mid-here-2026_12_02T15_53_24";
const MID1: &str = "mid-here-2026_12_02T15_54_24";
const TOP0: &str = "top-here-2026_12_02T15_53_24";

#[test]
fn upgrade_moves_one_pin_and_refuses_what_it_cannot() {
    let t = two_runs();
    let r = t.path();
    assert_eq!(
        ok(csis_at(r, T1, &["upgrade", "image", "top"])).trim(),
        format!("upgrade: image top@here: {MID0} -> {MID1}")
    );
    let pins = std::fs::read_to_string(r.join("meta-state/pins.yaml")).unwrap();
    assert!(pins.contains(&format!("\"top@here\": {MID1}")), "{pins}");
    assert!(pins.contains("op: upgrade"), "{pins}");
    assert_eq!(
        refused(csis_at(r, T1, &["upgrade", "image", "top"])),
        format!("error: upgrade: image 'top@here' is already pinned to {MID1}")
    );
    assert_eq!(
        refused(csis_at(r, T1, &["upgrade", "image", "ghost"])),
        "error: upgrade: image 'ghost' is not defined in the configuration"
    );
    assert_eq!(
        refused(csis_at(r, T1, &["upgrade", "image", "top", "--to", "nope"])),
        "error: upgrade: build 'nope' is not recorded in lineage"
    );
    assert_eq!(
        refused(csis_at(r, T1, &["upgrade", "image", "top", "--to", TOP0])),
        format!("error: upgrade: build '{TOP0}' belongs to series 'top', not 'mid'")
    );
    assert_eq!(
        refused(csis_at(r, T1, &["upgrade", "instance", "nobody"])),
        "error: upgrade: instance 'nobody' is not defined in the configuration"
    );
    assert_eq!(
        refused(csis_at(r, T1, &["upgrade", "instance", "box"])),
        format!("error: upgrade: instance 'box' is already pinned to {TOP0}")
    );
}

#[test]
fn forget_refuses_a_declared_instance_and_drops_a_stale_record() {
    let t = two_runs();
    let r = t.path();
    assert_eq!(
        refused(csis_at(r, T1, &["forget", "instance", "box"])),
        "error: forget: instance 'box' is declared; remove its declaration (decommission it) before forgetting its record"
    );
    std::fs::remove_file(r.join("instances/box.yml")).unwrap();
    let state = std::fs::read_to_string(r.join("meta-state/instance-state.yaml")).unwrap();
    assert!(state.contains("    current:\n"), "{state}");
    assert_eq!(
        ok(csis_at(r, T1, &["forget", "instance", "box"])).trim(),
        format!("forget: instance box (was on {TOP0})")
    );
    // Its generation closes: nothing of it stands any more.
    let state = std::fs::read_to_string(r.join("meta-state/instance-state.yaml")).unwrap();
    assert!(state.contains("current: null"), "{state}");
    assert!(state.contains("why: forget"), "{state}");
    assert_eq!(
        refused(csis_at(r, T1, &["forget", "instance", "box"])),
        "error: forget: instance 'box' has no record in pins.yaml or launch-params.yaml"
    );
}

#[test]
fn release_records_and_refuses() {
    let t = two_runs();
    let r = t.path();
    assert_eq!(
        ok(csis_at(
            r,
            T1,
            &["release", "top", "--build", TOP0, "--model", "prod"]
        ))
        .trim(),
        format!("release: {TOP0} of top released for model prod")
    );
    let releases = std::fs::read_to_string(r.join("meta-state/releases.yaml")).unwrap();
    assert!(releases.contains(&format!("top: {TOP0}")), "{releases}");
    assert_eq!(
        refused(csis_at(r, T1, &["release", "top", "--build", "nope"])),
        "error: release refused: build 'nope' is not recorded in lineage; only baked builds can be released"
    );
    assert_eq!(
        refused(csis_at(r, T1, &["release", "mid", "--build", TOP0])),
        format!("error: release refused: build '{TOP0}' belongs to series 'top', not 'mid'")
    );
    edit(
        r,
        "images/chain.yml",
        "  - name: mid\n",
        "  - name: mid\n    tests: {post_bake: {files: [/etc/layer-mid]}}\n",
    );
    assert_eq!(
        refused(csis_at(r, T1, &["release", "mid", "--build", MID1])),
        format!(
            "error: release refused: build '{MID1}' has no post-bake test record while 'mid' declares tests.post_bake -- launch it (ephemeral) and verify first"
        )
    );
    edit(
        r,
        "cfg/_config.yml",
        "config:\n",
        "config:\n  require_mod_tests: true\n",
    );
    assert_eq!(
        refused(csis_at(r, T1, &["release", "top", "--build", TOP0])),
        format!(
            "error: release refused: modification 'marker' of build '{TOP0}' has no local mod-test result (config.require_mod_tests)"
        )
    );
}

#[test]
fn release_declared_releases_each_head() {
    let t = two_runs();
    let r = t.path();
    edit(
        r,
        "images/chain.yml",
        "  - name: base\n",
        "  - name: base\n    release: {model: golden}\n",
    );
    let out = ok(csis_at(r, T1, &["release", "--declared"]));
    assert!(
        out.contains("release: base-here-2026_12_02T15_53_24 of base released for model golden"),
        "{out}"
    );
    let again = ok(csis_at(r, T1, &["release", "--declared"]));
    assert!(
        again.contains(
            "release --declared: base@here: base-here-2026_12_02T15_53_24 is already released"
        ),
        "{again}"
    );
}

#[test]
fn dispose_refuses_blind_and_held_builds_and_retention_keeps_what_is_held() {
    let t = two_runs();
    let r = t.path();
    assert_eq!(
        refused(csis_at(r, T1, &["dispose", "image", "nope"])),
        "error: dispose: build 'nope' is not recorded in lineage; an unrecorded image is adopted with 'state import' or left to the orphan sweep, never deleted blind"
    );
    assert_eq!(
        refused(csis_at(r, T1, &["dispose", "image", TOP0])),
        format!(
            "error: dispose: instance(s) [box] are pinned to / launched from the build(s) [{TOP0}]; decommission them first"
        )
    );
    assert_eq!(
        refused(csis_at(r, T1, &["dispose", "image", "--all"])),
        "error: dispose: --all needs --runtime <name>"
    );
    assert_eq!(
        refused(csis_at(
            r,
            T1,
            &["dispose", "image", "--all", "--runtime", "nowhere"]
        )),
        "error: dispose: unknown runtime 'nowhere'"
    );
    // mid keeps one build; the older one is held by top's pin until top
    // moves on.
    edit(
        r,
        "images/chain.yml",
        "  - name: mid\n",
        "  - name: mid\n    retention: {keep: 1}\n",
    );
    let out = ok(csis_at(r, T1, &["dispose", "image", "--retention"]));
    assert!(
        out.contains(&format!("warning: retention debt: {MID0} (mid@here) would be disposed but an image is pinned to it (a child bakes from it)")),
        "{out}"
    );
    assert!(r.join(format!("store/images/{MID0}")).is_dir());
    ok(csis_at(r, T1, &["upgrade", "image", "top"]));
    let out = ok(csis_at(r, T1, &["dispose", "image", "--retention"]));
    assert!(
        out.contains(&format!("dispose: {MID0} (mid@here) disposed")),
        "{out}"
    );
    assert!(!r.join(format!("store/images/{MID0}")).exists());
    let lineage = std::fs::read_to_string(r.join("meta-state/lineage.yaml")).unwrap();
    assert!(!lineage.contains(&format!("build_id: {MID0}")), "{lineage}");
    assert_eq!(
        std::fs::read_to_string(r.join("store/heads/mid@here"))
            .unwrap()
            .trim(),
        MID1
    );
}

#[test]
fn restamp_records_the_fingerprints_computed_now() {
    let t = two_runs();
    let r = t.path();
    let path = r.join("meta-state/lineage.yaml");
    let lineage = std::fs::read_to_string(&path).unwrap();
    // As if the fingerprint's definition had moved: top's head reads DUE.
    let top_fp = lineage
        .split("build_id: top-here-2026_12_02T15_53_24")
        .nth(1)
        .and_then(|rest| rest.split("input_fingerprint: ").nth(1))
        .map(|s| s.trim_start_matches('"')[..64].to_string())
        .unwrap();
    std::fs::write(&path, lineage.replace(&top_fp, &"0".repeat(64))).unwrap();
    let plan = ok(csis_at(r, T1, &["plan"]));
    assert!(
        plan.contains("top@here: bake: inputs changed (fingerprint 0000000000000000 -> "),
        "{plan}"
    );
    let dry = ok(csis_at(r, T1, &["lineage", "restamp", "--runtime", "here"]));
    assert!(
        dry.contains(&format!(
            "lineage restamp: {TOP0} (top@here): 0000000000000000 -> {}",
            &top_fp[..16]
        )),
        "{dry}"
    );
    assert!(dry.contains("nothing written; pass --commit"), "{dry}");
    ok(csis_at(
        r,
        T1,
        &["lineage", "restamp", "--runtime", "here", "--commit"],
    ));
    assert!(ok(csis_at(r, T1, &["plan"])).contains("top@here: skip: current"));
    assert_eq!(
        refused(csis_at(
            r,
            T1,
            &["lineage", "restamp", "--runtime", "nowhere"]
        )),
        "error: lineage restamp: unknown runtime 'nowhere'"
    );
}

#[test]
fn require_released_builds_refuses_unreleased_pins_outside_the_grace() {
    let t = two_runs();
    let r = t.path();
    edit(
        r,
        "cfg/_config.yml",
        "config:\n",
        "config:\n  require_released_builds: true\n",
    );
    // box stands on the head of top: the grace, with a warning.
    let out = ok(csis_at(r, T1, &["--brief", "validate"]));
    assert!(out.contains(&format!("warning: instance 'box' stands on unreleased build {TOP0} of 'top' under the release grace")), "{out}");
    // A newer top makes box's pin no longer the head: refused.
    edit(
        r,
        "images/chain.yml",
        "echo \"{{ image.name }}\"",
        "echo \"{{ image.name }}!\"",
    );
    ok(csis_at(
        r,
        T1 + 60,
        &["run", "instance-image", "--no-dry-run", "--only", "top"],
    ));
    let out = csis_at(r, T1 + 60, &["--brief", "validate"]);
    assert_eq!(
        refused(out),
        format!(
            "instance 'box' is pinned to build {TOP0} of 'top', which is not a released build (config.require_released_builds; no grace: it is not the head of its series) -- release it, upgrade instance back, or forget instance for a record that outlived its instance\nvalidate: 1 error(s)"
        )
    );
    ok(csis_at(r, T1 + 60, &["release", "top", "--build", TOP0]));
    ok(csis_at(r, T1 + 60, &["validate"]));
}

#[test]
fn upgrade_with_nothing_recorded_says_to_build_first() {
    let t = tree("local-run");
    assert_eq!(
        refused(csis_at(t.path(), T0, &["upgrade", "image", "base"])),
        "error: upgrade: no build of series 'tiny' is recorded in lineage; build it first or pass --to <build id>"
    );
}

#[test]
fn release_refuses_failed_tests_and_unverified_builds() {
    let t = two_runs();
    let r = t.path();
    let lineage = std::fs::read_to_string(r.join("meta-state/lineage.yaml")).unwrap();
    let hash = lineage
        .split("build_id: top-here-2026_12_02T15_53_24")
        .nth(1)
        .and_then(|rest| rest.split("content_hash: ").nth(1))
        .map(|s| s.trim_start_matches('"')[..64].to_string())
        .unwrap();
    std::fs::write(
        r.join("meta-state/mod-tests.yaml"),
        format!("\"{hash}\": {{status: failed, idempotent: false}}\n"),
    )
    .unwrap();
    assert_eq!(
        refused(csis_at(r, T1, &["release", "top", "--build", TOP0])),
        format!(
            "error: release refused: modification 'marker' of build '{TOP0}' failed its local mod test (status=failed, idempotent=false)"
        )
    );
    std::fs::remove_file(r.join("meta-state/mod-tests.yaml")).unwrap();
    edit(
        r,
        "images/chain.yml",
        "  - name: top\n",
        "  - name: top\n    tests: {post_bake: {files: [/etc/layer-top]}}\n",
    );
    std::fs::write(
        r.join("meta-state/image-tests.yaml"),
        format!("{TOP0}: {{ok: false, run: r9, checks: [file /etc/layer-top missing]}}\n"),
    )
    .unwrap();
    assert_eq!(
        refused(csis_at(r, T1, &["release", "top", "--build", TOP0])),
        format!(
            "error: release refused: build '{TOP0}' failed its post-bake tests in run r9: [\"file /etc/layer-top missing\"]"
        )
    );
    let unverified = lineage.replacen("in_bake: true", "in_bake: false", 1);
    std::fs::write(r.join("meta-state/lineage.yaml"), unverified).unwrap();
    assert_eq!(
        refused(csis_at(
            r,
            T1,
            &[
                "release",
                "tiny",
                "--build",
                "tiny-here-2026_12_02T15_53_24"
            ]
        )),
        "error: release refused: build 'tiny-here-2026_12_02T15_53_24' carries no in-bake verification record; rebuild it with the verify provisioner"
    );
}

#[test]
fn retention_keeps_released_and_instance_held_builds_as_debt() {
    let t = two_runs();
    let r = t.path();
    // top: one build held by box; keep 0 would dispose it.
    edit(
        r,
        "images/chain.yml",
        "  - name: top\n",
        "  - name: top\n    retention: {keep: 0}\n",
    );
    let out = ok(csis_at(r, T1, &["dispose", "image", "--retention"]));
    assert!(out.contains(&format!("warning: retention debt: {TOP0} (top@here) would be disposed but an instance is pinned to it or was launched from it")), "{out}");
    // tiny: released, keep 0.
    ok(csis_at(
        r,
        T1,
        &[
            "release",
            "tiny",
            "--build",
            "tiny-here-2026_12_02T15_53_24",
        ],
    ));
    edit(
        r,
        "cfg/builders.yml",
        "store: store}",
        "store: store, retention_keep: 0}",
    );
    let out = ok(csis_at(r, T1, &["dispose", "image", "--retention"]));
    assert!(out.contains("warning: retention debt: tiny-here-2026_12_02T15_53_24 (tiny@here) would be disposed but it is a RELEASED build (kept by decision; dispose it explicitly)"), "{out}");
}

#[test]
fn disposing_a_parent_build_unpins_the_images_on_it() {
    let t = two_runs();
    let r = t.path();
    let out = ok(csis_at(r, T1, &["dispose", "image", MID0]));
    assert!(
        out.contains(&format!(
            "pins: top@here unpinned (its parent build {MID0} was disposed)"
        )),
        "{out}"
    );
    let pins = std::fs::read_to_string(r.join("meta-state/pins.yaml")).unwrap();
    assert!(!pins.contains("\"top@here\":"), "{pins}");
    assert!(pins.contains("op: dispose"), "{pins}");
    // top now bakes from its parent's head: its parent input moved.
    let plan = ok(csis_at(r, T1, &["plan"]));
    assert!(plan.contains("top@here: bake: inputs changed"), "{plan}");
}

#[test]
fn upgrade_on_an_image_of_two_runtimes() {
    let t = tree("config");
    let r = t.path();
    assert_eq!(
        refused(csis_at(r, T0, &["upgrade", "image", "alma-base"])),
        "error: upgrade: image 'alma-base' is baked on runtimes [local, dummy-cloud]; pass --runtime"
    );
    std::fs::create_dir_all(r.join("meta-state")).unwrap();
    std::fs::write(
        r.join("meta-state/lineage.yaml"),
        "builds:\n  - {build_id: alma10-dummy-cloud-r1, series: alma10, runtime: dummy-cloud}\n",
    )
    .unwrap();
    assert_eq!(
        refused(csis_at(
            r,
            T0,
            &[
                "upgrade",
                "image",
                "alma-base",
                "--runtime",
                "local",
                "--to",
                "alma10-dummy-cloud-r1"
            ]
        )),
        "error: upgrade: build 'alma10-dummy-cloud-r1' was baked on runtime 'dummy-cloud', not 'local'"
    );
}

/// `runtime empty` disposes every build of an ephemeral runtime under
/// retention's debt rules (what is pinned or launched from stays, said
/// as a warning), and refuses a durable runtime.
#[test]
fn runtime_empty_keeps_what_is_held_and_refuses_a_durable_runtime() {
    let t = tree("local-run");
    let r = t.path();
    let (code, out) = csis_text(r, 1_796_226_804, &["runtime", "empty", "here"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out.trim(),
        "error: runtime empty: runtime 'here' is not ephemeral; its builds are kept by decision -- dispose them with 'dispose image --all --runtime here' (or declare it ephemeral: true)"
    );
    crate::support::edit(
        r,
        "cfg/builders.yml",
        "default_machine_type: small, store: store}",
        "default_machine_type: small, store: store, ephemeral: true}",
    );
    let (code, out) = csis_text(r, 1_796_226_804, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = csis_text(r, 1_796_226_864, &["runtime", "empty", "here"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("warning: retention debt: top-here-2026_12_02T15_53_24 (top@here) would be disposed but an instance is pinned to it or was launched from it"),
        "{out}"
    );
    assert!(out.contains("dispose: nothing to dispose"), "{out}");
    let (_, described) = csis_text(r, 1_796_226_864, &["runtime", "describe", "here"]);
    assert!(
        described.starts_with(&format!(
            "runtime here (local, ephemeral)\n  store: {}/store\n  builds: 4 found with lineage tags (4 recorded in lineage, 0 not), 0 recorded but absent\n  instances: box\n  storages: data\n",
            r.display()
        )),
        "{described}"
    );
}
