//! The persisted cache through the binary: plan after an edit from the
//! previous commit's cache prints what a plan without it prints, a
//! damaged cache is one notice and rebuilt, `--no-cache` writes nothing,
//! and git never sees the cache.

use std::path::Path;

use crate::support::{csis_at, git};

const NOW: i64 = 1_796_226_804;
const CACHE: &str = ".csis/cache";

/// The cache file that keeps `path`'s entries.
fn shard_of(path: &str) -> String {
    let shard = csis_engine::db::cache::shard_of(path);
    format!("{CACHE}/{}", csis_engine::db::cache::shard_file(shard))
}

/// stdout and stderr of `csis ARGS plan --format json`.
fn plan(root: &Path, args: &[&str]) -> (String, String) {
    let mut all = args.to_vec();
    all.extend(["plan", "--format", "json"]);
    let o = csis_at(root, NOW, &all);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

#[test]
fn a_plan_from_the_cache_prints_what_a_plan_without_it_prints() {
    let t = csis_test_support::tree("local-run");
    let root = t.path();
    git(root, &["init", "-q"]);
    let uncached = plan(root, &["--no-cache"]);
    assert!(!root.join(".csis").exists());
    // The first plan writes the cache, which ignores itself in git: the
    // root's own files are left as they were.
    let status = git(root, &["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(plan(root, &[]), uncached);
    assert!(root.join(shard_of("images/chain.yml")).is_file());
    assert_eq!(
        git(root, &["status", "--porcelain", "--untracked-files=all"]),
        status
    );
    assert!(!root.join(".gitignore").exists());
    assert_eq!(plan(root, &[]), uncached);
    // An edit: the cache of the previous state serves the other files.
    crate::support::edit(root, "images/chain.yml", "echo mid >", "echo mid edited >");
    let edited = plan(root, &["--no-cache"]);
    assert_ne!(edited, uncached);
    assert_eq!(plan(root, &[]), edited);
    let uncached = edited;

    // A damaged cache: one notice, the same plan, and a cache rebuilt.
    let damaged = root.join(shard_of("images/chain.yml"));
    let mut bytes = std::fs::read(&damaged).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&damaged, &bytes).unwrap();
    let (out, err) = plan(root, &[]);
    assert_eq!(out, uncached.0);
    assert_eq!(
        err,
        format!(
            "note: ignoring the cache file {}: it is truncated or damaged (its checksum does \
not match); this run rebuilds it\n{}",
            damaged.display(),
            uncached.1
        )
    );
    assert_eq!(plan(root, &[]), uncached);
}

#[test]
fn a_cache_directory_elsewhere_is_used_and_one_that_cannot_be_written_is_a_warning() {
    let t = csis_test_support::tree("local-run");
    let root = t.path();
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = elsewhere.path().join("c");
    let dir_arg = dir.to_string_lossy().to_string();
    let uncached = plan(root, &["--no-cache"]);
    assert_eq!(plan(root, &["--cache-dir", &dir_arg]), uncached);
    let shard = csis_engine::db::cache::shard_of("images/chain.yml");
    assert!(
        dir.join(csis_engine::db::cache::shard_file(shard))
            .is_file()
    );
    assert!(!root.join(".csis").exists());
    // A file where the directory would be: the plan is unchanged, and
    // says once that its cache was not written.
    let blocked = elsewhere.path().join("file");
    std::fs::write(&blocked, "not a directory").unwrap();
    let (out, err) = plan(root, &["--cache-dir", &blocked.to_string_lossy()]);
    assert_eq!(out, uncached.0);
    let warning = format!(
        "warning: the cache could not be written to {}: ",
        blocked.display()
    );
    assert!(err.starts_with(&uncached.1), "{err}");
    assert_eq!(err.matches(&warning).count(), 1, "{err}");
}

#[test]
fn public_safe_does_not_scan_the_cache_outside_git() {
    // The cache holds the tree's own entries packed, where a rule's
    // context is lost (a user's email in it was a finding).
    let t = csis_test_support::plain_tree("local-run");
    let root = t.path();
    assert!(!root.join(".git").exists());
    plan(root, &[]);
    assert!(root.join(CACHE).is_dir());
    let o = csis_at(root, NOW, &["public-safe"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
