//! In-bake tests on the local runtime (spec: image_tests; docs/verification.md,
//! "In-bake tests"): the declared `tests:` run as the bake's last step inside
//! the build's root, in the sandbox. A failing assertion fails the bake and
//! nothing is recorded; the record lists what ran.

use std::path::Path;

use crate::support::{csis_text, edit, read};
use csis_test_support::tree;

const NOW: i64 = 1796226804;
const RUN: &str = "2026_12_02T15_53_24";

/// The `top` image of fixtures/local-run with `tests` declared.
fn top_tests(root: &Path, tests: &str) {
    edit(
        root,
        "images/chain.yml",
        "  - name: top\n    source_image: mid\n",
        &format!("  - name: top\n    source_image: mid\n    tests: {tests}\n"),
    );
}

fn real_run(root: &Path) -> (Option<i32>, String) {
    csis_text(root, NOW, &["run", "all", "--no-dry-run"])
}

#[test]
fn a_failing_in_bake_test_fails_the_bake_and_records_nothing() {
    let t = tree("local-run");
    let r = t.path();
    // Before, a test of a file that does not exist "passed": the record
    // said `in_bake: true, assertions: 1` and nothing had run.
    top_tests(
        r,
        "{files: [/etc/layer-top, /etc/no-such-file], commands: ['test -s /etc/layer-mid']}",
    );
    let (code, out) = real_run(r);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("in-bake test failed: file /etc/no-such-file is missing"),
        "{out}"
    );
    assert!(
        out.contains("csis local: in-bake verification of image 'top' failed (exit 1); nothing was recorded for this build"),
        "{out}"
    );
    assert!(!r.join(format!("store/images/top-here-{RUN}")).exists());
    assert!(
        !r.join(format!("store/images/.top-here-{RUN}.partial"))
            .exists(),
        "the partial bake was left behind"
    );
    let lineage = read(&r.join("meta-state/lineage.yaml"));
    assert!(lineage.contains(&format!("mid-here-{RUN}")), "{lineage}");
    assert!(!lineage.contains(&format!("top-here-{RUN}")), "{lineage}");
}

#[test]
fn passing_in_bake_tests_run_inside_the_build_and_the_record_lists_them() {
    let t = tree("local-run");
    let r = t.path();
    // Paths of the image, not of the host: /etc/layer-top exists only in
    // the build's root.
    top_tests(
        r,
        "{files: [/etc/layer-top], commands: ['grep -qx top /etc/layer-top'], users: [root]}",
    );
    let (code, out) = real_run(r);
    assert_eq!(code, Some(0), "{out}");
    let lineage = read(&r.join("meta-state/lineage.yaml"));
    let top = lineage
        .split("- build_id: ")
        .find(|b| b.starts_with(&format!("top-here-{RUN}")))
        .unwrap_or_else(|| panic!("{lineage}"));
    assert!(
        top.contains("    tests:\n      in_bake: true\n      assertions: 4\n      checks:\n        - file /etc/layer-top\n        - command grep -qx top /etc/layer-top\n        - user root\n        - csis first-boot unit installed\n"),
        "{top}"
    );
    // An image without declared tests still checks what its runtime
    // contributes.
    let mid = lineage
        .split("- build_id: ")
        .find(|b| b.starts_with(&format!("mid-here-{RUN}")))
        .unwrap();
    assert!(
        mid.contains(
            "      assertions: 1\n      checks:\n        - csis first-boot unit installed\n"
        ),
        "{mid}"
    );
}
