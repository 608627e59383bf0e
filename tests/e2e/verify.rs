//! `csis verify instance` and `csis verify assert` on the local runtime
//! (docs/verification.md, "Verifying an instance"): the machine's checks and
//! the image's post-bake tests run on the instance's own root, the verdicts
//! are recorded, and `release` reads the post-bake record.

use std::process::Output;

use crate::support::{csis_at, csis_text, edit, ok, read};
use csis_test_support::tree;

const NOW: i64 = 1796226804;
const RUN: &str = "2026_12_02T15_53_24";
const TOP: &str = "top-here-2026_12_02T15_53_24";

fn failed(o: Output) -> String {
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

/// fixtures/local-run with `top` declaring `post_bake`, baked and launched
/// by a real run (which verifies `box` after its launch): the run's exit
/// code and log.
fn launched_with_post_bake(post_bake: &str) -> (tempfile::TempDir, Option<i32>, String) {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "images/chain.yml",
        "  - name: top\n    source_image: mid\n",
        &format!("  - name: top\n    source_image: mid\n    tests: {{post_bake: {post_bake}}}\n"),
    );
    let (code, log) = real_run(r);
    (t, code, log)
}

#[test]
fn a_passing_post_bake_verification_is_recorded_and_the_build_released() {
    // /srv/data is the instance's storage, bound at its mount point.
    let (t, code, log) = launched_with_post_bake(
        "{files: [/etc/layer-top], commands: ['test -d /srv/data'], mounts: [/srv/data]}",
    );
    let r = t.path();
    assert_eq!(code, Some(0), "{log}");
    // The real run verified it after its launch.
    assert!(
        log.contains(&format!("verify box: ok (5 checks on {TOP})")),
        "{log}"
    );
    let out = ok(csis_at(r, NOW + 60, &["verify", "instance", "box"]));
    assert_eq!(out.trim(), format!("verify box: ok (5 checks on {TOP})"));
    let verdicts = read(&r.join("meta-state/verifications.yaml"));
    for line in [
        "  - instance: box\n",
        "    runtime: here\n",
        &format!("    build: {TOP}\n"),
        "    ok: true\n",
        "      - check: boot image\n        ok: true\n",
        &format!("        detail: runs {TOP}\n"),
        "      - check: mount /srv/data\n        ok: true\n        detail: storage data\n",
        "      - check: post-bake file /etc/layer-top\n        ok: true\n",
        "      - check: post-bake command test -d /srv/data\n        ok: true\n",
    ] {
        assert!(verdicts.contains(line), "{line:?} in {verdicts}");
    }
    assert_eq!(
        verdicts.matches("  - instance: box\n").count(),
        2,
        "{verdicts}"
    );
    let tests = read(&r.join("meta-state/image-tests.yaml"));
    assert!(
        tests.contains(&format!("{TOP}:\n  ok: true\n"))
            && tests.contains("  instance: box\n  runtime: here\n"),
        "{tests}"
    );
    let out = ok(csis_at(r, NOW + 60, &["verify", "assert"]));
    assert!(
        out.starts_with("verify assert: the last verification passed (instance box, run "),
        "{out}"
    );
    let out = ok(csis_at(r, NOW + 60, &["release", "top", "--build", TOP]));
    assert_eq!(
        out.trim(),
        format!("release: {TOP} of top released for model default")
    );
}

#[test]
fn a_failing_post_bake_test_fails_verification_and_release_refuses() {
    let (t, code, log) = launched_with_post_bake("{files: [/etc/layer-top, /etc/no-such-file]}");
    let r = t.path();
    // The real run stops at the verdict.
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains("error: instance box failed verification: post-bake file /etc/no-such-file: file /etc/no-such-file is missing"),
        "{log}"
    );
    let err = failed(csis_at(r, NOW + 60, &["verify", "instance", "box"]));
    assert_eq!(
        err,
        "error: instance box failed verification: post-bake file /etc/no-such-file: file /etc/no-such-file is missing"
    );
    let tests = read(&r.join("meta-state/image-tests.yaml"));
    assert!(tests.contains(&format!("{TOP}:\n  ok: false\n")), "{tests}");
    let err = failed(csis_at(r, NOW + 60, &["release", "top", "--build", TOP]));
    assert!(
        err.starts_with(&format!(
            "error: release refused: build '{TOP}' failed its post-bake tests in run "
        )),
        "{err}"
    );
    assert!(
        err.ends_with(
            ": [\"post-bake file /etc/no-such-file: file /etc/no-such-file is missing\"]"
        ),
        "{err}"
    );
    assert!(
        failed(csis_at(r, NOW + 60, &["verify", "assert"]))
            .starts_with("error: verify assert: the last verification failed: instance box failed verification: post-bake file /etc/no-such-file"),
    );
    // --record-only records and does not fail.
    let o = csis_at(
        r,
        NOW + 120,
        &["verify", "instance", "box", "--record-only"],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("warning: instance box failed verification: post-bake file /etc/no-such-file: file /etc/no-such-file is missing (recorded; --record-only)")
    );
    let verdicts = read(&r.join("meta-state/verifications.yaml"));
    assert_eq!(
        verdicts.matches("  - instance: box\n").count(),
        3,
        "{verdicts}"
    );
}

#[test]
fn a_stopped_machine_is_a_skip_that_records_nothing_and_a_moved_pin_fails() {
    let (t, code, log) = launched_with_post_bake("{files: [/etc/layer-top]}");
    let r = t.path();
    assert_eq!(code, Some(0), "{log}");
    let before = read(&r.join("meta-state/verifications.yaml"));
    let power = r.join("store/instances/box/power");
    std::fs::write(&power, "stopped\n").unwrap();
    let out = ok(csis_at(r, NOW + 60, &["verify", "instance", "box"]));
    assert_eq!(
        out.trim(),
        "verify box: SKIPPED -- the machine is STOPPED (switched off; not drift) and verification needs it running. Nothing is recorded (not a failure; start the machine or accept the skip)."
    );
    assert_eq!(read(&r.join("meta-state/verifications.yaml")), before);
    std::fs::remove_file(&power).unwrap();
    // The machine runs another build than its pin names.
    edit(
        r,
        "meta-state/pins.yaml",
        &format!("box: {TOP}"),
        &format!("box: mid-here-{RUN}"),
    );
    let err = failed(csis_at(r, NOW + 60, &["verify", "instance", "box"]));
    assert_eq!(
        err,
        format!(
            "error: instance box failed verification: boot image: runs {TOP}, but it is pinned to mid-here-{RUN}"
        )
    );
    assert_eq!(
        failed(csis_at(r, NOW + 60, &["verify", "instance", "nope"])),
        "error: verify: instance 'nope' is not declared"
    );
}

#[test]
fn verify_assert_says_when_nothing_is_recorded() {
    let t = tree("local-run");
    assert_eq!(
        failed(csis_at(t.path(), NOW, &["verify", "assert"])),
        "error: verify assert: no verification is recorded"
    );
}

/// fixtures/local-run with `box` ephemeral (with `extra` under it) and
/// `top` declaring `post_bake`.
fn ephemeral_with_post_bake(post_bake: &str, extra: &str) -> tempfile::TempDir {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "instances/box.yml",
        "    image: top\n",
        &format!("    image: top\n    ephemeral: true\n{extra}"),
    );
    edit(
        r,
        "images/chain.yml",
        "  - name: top\n    source_image: mid\n",
        &format!("  - name: top\n    source_image: mid\n    tests: {{post_bake: {post_bake}}}\n"),
    );
    t
}

fn real_run(r: &std::path::Path) -> (Option<i32>, String) {
    csis_text(r, NOW, &["run", "all", "--no-dry-run"])
}

#[test]
fn an_ephemeral_instance_is_launched_verified_torn_down_and_forgotten_in_one_real_run() {
    let t = ephemeral_with_post_bake("{files: [/etc/layer-top]}", "");
    let r = t.path();
    let (code, log) = real_run(r);
    assert_eq!(code, Some(0), "{log}");
    let verified = log
        .find(&format!("verify box: ok (4 checks on {TOP})"))
        .expect(&log);
    let torn = log
        .find("teardown: ephemeral instance box removed")
        .expect(&log);
    let forgotten = log.find("forget: ephemeral instance box").expect(&log);
    assert!(verified < torn && torn < forgotten, "{log}");
    assert!(!r.join("store/instances/box").exists());
    assert!(
        read(&r.join("meta-state/image-tests.yaml")).contains(&format!("{TOP}:\n  ok: true\n"))
    );
    // What the ephemeral proved releases its build.
    let out = ok(csis_at(r, NOW + 60, &["release", "top", "--build", TOP]));
    assert_eq!(
        out.trim(),
        format!("release: {TOP} of top released for model default")
    );
}

#[test]
fn a_failed_ephemeral_is_kept_standing_or_torn_down_by_its_on_failure() {
    // keep (the default): the runner stops at the verdict, the machine
    // stays to be looked at, the run fails.
    let t = ephemeral_with_post_bake("{files: [/etc/no-such-file]}", "");
    let r = t.path();
    let (code, log) = real_run(r);
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains("instance box failed verification: post-bake file /etc/no-such-file: file /etc/no-such-file is missing"),
        "{log}"
    );
    assert!(
        !log.contains("teardown: ephemeral instance box removed"),
        "{log}"
    );
    assert!(r.join("store/instances/box/root").is_dir());
    // teardown: the verdict is recorded, the machine goes, its records
    // are forgotten, and then the run fails.
    let t = ephemeral_with_post_bake("{files: [/etc/no-such-file]}", "    on_failure: teardown\n");
    let r = t.path();
    let (code, log) = real_run(r);
    assert_eq!(code, Some(1), "{log}");
    let torn = log
        .find("teardown: ephemeral instance box removed")
        .expect(&log);
    let forgotten = log.find("forget: ephemeral instance box").expect(&log);
    let failed = log
        .rfind("instance box failed verification: post-bake file /etc/no-such-file: file /etc/no-such-file is missing")
        .expect(&log);
    assert!(torn < forgotten && forgotten < failed, "{log}");
    assert!(!r.join("store/instances/box").exists());
    let pins = read(&r.join("meta-state/pins.yaml"));
    assert!(!pins.contains("box: "), "{pins}");
    assert!(
        read(&r.join("meta-state/image-tests.yaml")).contains(&format!("{TOP}:\n  ok: false\n"))
    );
}

/// The runner's csis steps load the tree the run loaded: an instance an
/// overlay declares (the overlay named relative to where csis started) is
/// verified after its launch like a declared one.
#[test]
fn an_instance_an_overlay_declares_is_verified_by_the_runner() {
    let t = tree("local-run");
    let r = t.path();
    std::fs::create_dir_all(r.join("overlays")).unwrap();
    std::fs::write(
        r.join("overlays/extra.yml"),
        "instances:\n  - name: extra\n    image: top\n",
    )
    .unwrap();
    // csis_at starts csis in the root: the path is relative to it.
    let (code, log) = csis_text(
        r,
        NOW,
        &[
            "--overlay",
            "overlays/extra.yml",
            "run",
            "all",
            "--no-dry-run",
        ],
    );
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains(&format!("verify extra: ok (2 checks on {TOP})")),
        "{log}"
    );
    assert!(
        log.contains(&format!("verify box: ok (3 checks on {TOP})")),
        "{log}"
    );
}

/// `on_failure: keep` with `teardown_after`: a failed machine stays to be
/// looked at, until a run finds it has failed for longer than the
/// duration; that run records the verdict only, tears it down, forgets it
/// and fails.
#[test]
fn a_kept_ephemeral_is_torn_down_by_the_first_run_past_its_teardown_after() {
    let t = ephemeral_with_post_bake("{files: [/etc/no-such-file]}", "    teardown_after: 2h\n");
    let r = t.path();
    let verdict = "instance box failed verification: post-bake file /etc/no-such-file: file /etc/no-such-file is missing";
    for hours in [0, 1] {
        let (code, log) = csis_text(r, NOW + hours * 3600, &["run", "all", "--no-dry-run"]);
        assert_eq!(code, Some(1), "{log}");
        assert!(log.contains(&format!("error: {verdict}")), "{log}");
        assert!(
            !log.contains("teardown: ephemeral instance box removed"),
            "{log}"
        );
        assert!(r.join("store/instances/box/root").is_dir());
    }
    let (code, log) = csis_text(r, NOW + 3 * 3600, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(1), "{log}");
    let due = log
        .find(&format!(
            "warning: {verdict}; it has failed verification since 10800 s ago, longer than its teardown_after (2h): recorded only, so this run tears it down"
        ))
        .expect(&log);
    let torn = log
        .find("teardown: ephemeral instance box removed")
        .expect(&log);
    let forgotten = log.find("forget: ephemeral instance box").expect(&log);
    let failed = log.rfind(verdict).expect(&log);
    assert!(
        due < torn && torn < forgotten && forgotten < failed,
        "{log}"
    );
    assert!(!r.join("store/instances/box").exists());
}
