//! `csis test-mods` on the local runtime (docs/verification.md, "Modification
//! tests"): each instance image's modifications applied twice in a
//! throwaway copy of its parent build, inside the sandbox; a second run that
//! changes the root fails the test, the result is kept by content hash, and
//! `release` reads it.

use std::process::Output;

use crate::support::{csis_at, edit, ok, read};
use csis_test_support::tree;

const NOW: i64 = 1796226804;
const MID: &str = "mid-here-2026_12_02T15_53_24";
const TOP: &str = "top-here-2026_12_02T15_53_24";

fn failed(o: Output) -> (String, String) {
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

/// fixtures/local-run baked once, `top`'s modification appending to a file
/// (the same image twice over gives two lines).
fn baked_with_an_appending_top() -> tempfile::TempDir {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "images/chain.yml",
        "script: echo \"{{ image.name }}\" > \"$CSIS_IMAGE_ROOT/etc/layer-top\"",
        "script: 'echo top >> /etc/layer-top'",
    );
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    t
}

/// The record of `image` in mod-tests.yaml: its key's line and the
/// indented lines under it.
fn record(results: &str, image: &str) -> String {
    let mut entries: Vec<String> = Vec::new();
    for line in results.lines().filter(|l| !l.starts_with('#')) {
        match entries.last_mut() {
            Some(e) if line.starts_with(' ') => {
                e.push_str(line);
                e.push('\n');
            }
            _ => entries.push(format!("{line}\n")),
        }
    }
    entries
        .into_iter()
        .find(|e| e.contains(&format!("  image: {image}\n")))
        .unwrap_or_else(|| panic!("no record of {image}: {results}"))
}

#[test]
fn a_modification_that_changes_the_root_again_fails_its_test_and_release_refuses() {
    let t = baked_with_an_appending_top();
    let r = t.path();
    let (out, err) = failed(csis_at(r, NOW + 60, &["test-mods"]));
    assert_eq!(
        out,
        "image 'base' modification 'marker': passed\n\
         image 'mid' modification 'marker': passed\n\
         image 'top' modification 'marker': failed: the second run changed /etc/layer-top\n"
    );
    assert_eq!(
        err,
        "error: 1 modification(s) failed their local mod test; the results are in meta-state/mod-tests.yaml, and release refuses the builds that carry them\n"
    );
    let results = read(&r.join("meta-state/mod-tests.yaml"));
    let top = record(&results, "top");
    for line in [
        "  modification: marker\n",
        "  runtime: here\n",
        &format!("  parent_build: {MID}\n"),
        "  status: failed\n",
        "  idempotent: false\n",
        "  detail: the second run changed /etc/layer-top\n",
    ] {
        assert!(top.contains(line), "{line:?} in {results}");
    }
    // `mid` appends nothing twice: its `ensure` finds its file and the
    // second run skips it, as a re-bake would.
    assert!(
        record(&results, "mid").contains("  status: passed\n  idempotent: true\n"),
        "{results}"
    );
    // The throwaway copy is gone, and the builds were not touched.
    assert!(!r.join("store/mod-tests").exists());
    assert_eq!(
        read(&r.join(format!("store/images/{TOP}/root/etc/layer-top"))),
        "top\n"
    );
    // Its content is what was tested: a second call tests nothing again
    // and still says it failed.
    let (out, _) = failed(csis_at(r, NOW + 120, &["test-mods", "top"]));
    assert_eq!(
        out,
        "image 'top' modification 'marker': failed (tested before, content unchanged)\n"
    );
    let o = csis_at(r, NOW + 120, &["release", "top", "--build", TOP]);
    let (_, err) = failed(o);
    assert_eq!(
        err.trim(),
        format!(
            "error: release refused: modification 'marker' of build '{TOP}' failed its local mod test (status=failed, idempotent=false)"
        )
    );
}

#[test]
fn require_mod_tests_refuses_a_release_until_its_modifications_passed() {
    let t = tree("local-run");
    let r = t.path();
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    edit(
        r,
        "cfg/_config.yml",
        "config:\n",
        "config:\n  require_mod_tests: true\n",
    );
    let (_, err) = failed(csis_at(r, NOW + 60, &["release", "top", "--build", TOP]));
    assert_eq!(
        err.trim(),
        format!(
            "error: release refused: modification 'marker' of build '{TOP}' has no local mod-test result (config.require_mod_tests)"
        )
    );
    let out = ok(csis_at(r, NOW + 60, &["test-mods", "top"]));
    assert_eq!(out, "image 'top' modification 'marker': passed\n");
    let out = ok(csis_at(r, NOW + 60, &["release", "top", "--build", TOP]));
    assert_eq!(
        out.trim(),
        format!("release: {TOP} of top released for model default")
    );
}

#[test]
fn an_image_whose_parent_has_no_build_is_skipped_and_tried_again_later() {
    let t = tree("local-run");
    let r = t.path();
    let out = ok(csis_at(r, NOW, &["test-mods", "base"]));
    assert_eq!(
        out,
        "image 'base' modification 'marker': skipped: no build of its parent 'tiny' on runtime 'here': bake it first\n"
    );
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    let out = ok(csis_at(r, NOW + 60, &["test-mods", "base"]));
    assert_eq!(out, "image 'base' modification 'marker': passed\n");
    let (_, err) = failed(csis_at(r, NOW + 60, &["test-mods", "nope"]));
    assert_eq!(err.trim(), "error: test-mods: image 'nope' is not declared");
}
