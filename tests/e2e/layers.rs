//! A child bake costs the files it changes: its root shares every other
//! file (the same inode) with its parent build, and its scripts, run on an
//! overlay of the parent, never write the parent (docs/local-runtime.md,
//! "Bakes").

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::support::{csis_at, edit, ok, read};
use csis_test_support::tree;

const NOW: i64 = 1796226804;

fn build(root: &Path, series: &str) -> std::path::PathBuf {
    root.join(format!(
        "store/images/{series}-here-2026_12_02T15_53_24/root"
    ))
}

/// Every regular file below `dir`: its path, inode and size.
fn files(dir: &Path) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                out.insert(rel, (m.ino(), m.len()));
            }
        }
    }
    out
}

#[test]
fn each_layer_of_a_chain_stores_only_what_its_scripts_changed() {
    let t = tree("local-run");
    let r = t.path();
    // mid edits a file in place and deletes one of its parent's.
    edit(
        r,
        "images/chain.yml",
        "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"",
        "script: 'echo mid > /etc/layer-mid; echo ann:x:1000:1000::/home/ann:/bin/sh >> /etc/passwd; rm /etc/os-release'",
    );
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    for (parent, child) in [("tiny", "base"), ("base", "mid"), ("mid", "top")] {
        let p = files(&build(r, parent));
        let c = files(&build(r, child));
        let total: u64 = p.values().map(|(_, size)| size).sum();
        let own: u64 = c
            .iter()
            .filter(|(path, (ino, _))| p.get(*path).is_none_or(|(pi, _)| pi != ino))
            .map(|(_, (_, size))| size)
            .sum();
        assert!(
            own * 10 <= total,
            "{child} stores {own} bytes of its own over {parent}'s {total}"
        );
        assert_eq!(
            c.get("bin/busybox").map(|f| f.0),
            p.get("bin/busybox").map(|f| f.0),
            "{child} shares {parent}'s busybox"
        );
    }
    let base = build(r, "base");
    let mid = build(r, "mid");
    // The parent as it was baked: its passwd unchanged, its os-release
    // still there, no layer of its children.
    assert_eq!(
        read(&base.join("etc/passwd")),
        "root:x:0:0:root:/root:/bin/sh\n"
    );
    assert!(base.join("etc/os-release").is_file());
    assert!(!base.join("etc/layer-mid").exists());
    assert_eq!(
        read(&mid.join("etc/passwd")),
        "root:x:0:0:root:/root:/bin/sh\nann:x:1000:1000::/home/ann:/bin/sh\n"
    );
    assert!(!mid.join("etc/os-release").exists());
    // The child of the child sees its parent's changes.
    let top = build(r, "top");
    assert!(!top.join("etc/os-release").exists());
    assert_eq!(read(&top.join("etc/layer-mid")), "mid\n");
    assert_eq!(read(&top.join("etc/layer-top")), "top\n");
    // Nothing of the overlay is left in the store.
    for series in ["base", "mid", "top"] {
        let dir = build(r, series);
        let build_dir = dir.parent().unwrap();
        let mut names: Vec<String> = std::fs::read_dir(build_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["manifest.json", "root"], "{series}");
    }
}
