//! The local store stays inside the configuration root unless the runtime
//! says `allow_store_outside_root: true`.

use crate::support::{csis_at, edit, ok, validate_refuses};
use csis_test_support::tree;

const NOW: i64 = 1796226804;

#[test]
fn a_store_that_climbs_out_of_the_root_is_refused_and_nothing_is_written_there() {
    let t = tree("local-run");
    let r = t.path();
    let outside = tempfile::tempdir().unwrap();
    let escape = format!(
        "{}/{}",
        "../".repeat(r.components().count()),
        outside.path().join("x").display()
    );
    edit(
        r,
        "cfg/builders.yml",
        "store: store}",
        &format!("store: \"{escape}\"}}"),
    );
    let real_outside = outside.path().canonicalize().unwrap().join("x");
    let root = r.canonicalize().unwrap();
    assert_eq!(
        validate_refuses(r),
        format!(
            "cfg/builders.yml:2:85: runtime builder 'here': store '{escape}' resolves to {}, outside the configuration root {}
  help: keep the store under the root (a relative path that stays inside it), or set allow_store_outside_root: true on runtime builder 'here' to keep it elsewhere
validate: 1 error(s)
",
            real_outside.display(),
            root.display()
        )
    );
    let run = csis_at(r, NOW, &["run", "all", "--no-dry-run"]);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        !real_outside.exists(),
        "the refused run wrote outside the root"
    );
}

#[test]
fn a_symlink_inside_the_root_that_leads_out_is_followed() {
    let t = tree("local-run");
    let r = t.path();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("store")).unwrap();
    let out = validate_refuses(r);
    assert!(
        out.contains(&format!(
            "runtime builder 'here': store 'store' resolves to {}, outside the configuration root",
            outside.path().canonicalize().unwrap().display()
        )),
        "{out}"
    );
}

/// Opted out, an absolute store outside the root takes the builds, and
/// lineage records them from there.
#[test]
fn an_absolute_store_outside_the_root_works_when_allowed() {
    let t = tree("local-run");
    let r = t.path();
    let outside = tempfile::tempdir().unwrap();
    let store = outside.path().join("store");
    edit(
        r,
        "cfg/builders.yml",
        "store: store}",
        &format!(
            "store: \"{}\", allow_store_outside_root: true}}",
            store.display()
        ),
    );
    ok(csis_at(r, NOW, &["validate"]));
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    let lineage = std::fs::read_to_string(r.join("meta-state/lineage.yaml")).unwrap();
    assert!(
        lineage.contains("top-here-2026_12_02T15_53_24"),
        "{lineage}"
    );
    assert!(
        store
            .join("images/top-here-2026_12_02T15_53_24/manifest.json")
            .exists()
    );
    assert!(!r.join("store").exists());
}
