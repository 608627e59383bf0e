//! The persisted cache through the binary: plan after an edit from the
//! previous commit's cache prints what a plan without it prints, a
//! damaged cache is one notice and rebuilt, `--no-cache` writes nothing,
//! and git never sees the cache.

use std::path::Path;

use crate::support::{csis_at, git};

const NOW: i64 = 1_796_226_804;
const CACHE: &str = ".csis/cache";
const RECORD: &str = ".csis/cache/plan.record";

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

/// stderr of a plan that met the damaged cache file `path`, then printed
/// `then`.
fn damaged_notice(path: &Path, then: &str) -> String {
    format!(
        "note: ignoring the cache file {}: it is truncated or damaged (its checksum does not \
match); this run rebuilds it\n{then}",
        path.display()
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

    // A damaged cache: one notice, the same plan, and a cache rebuilt
    // (without the plan's record, which would answer without reading it).
    std::fs::remove_file(root.join(RECORD)).unwrap();
    let damaged = root.join(shard_of("images/chain.yml"));
    let mut bytes = std::fs::read(&damaged).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&damaged, &bytes).unwrap();
    let (out, err) = plan(root, &[]);
    assert_eq!(out, uncached.0);
    assert_eq!(err, damaged_notice(&damaged, &uncached.1));
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

/// The cache's shard files: a plan that loads the tree writes them.
fn shards(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(CACHE))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".cache"))
        .collect();
    names.sort();
    names
}

fn remove_shards(root: &Path) {
    for name in shards(root) {
        std::fs::remove_file(root.join(CACHE).join(name)).unwrap();
    }
}

#[test]
fn a_plan_whose_reads_are_unchanged_is_printed_from_its_record() {
    let t = csis_test_support::tree("local-run");
    let root = t.path();
    let uncached = plan(root, &["--no-cache"]);
    assert_eq!(plan(root, &[]), uncached);
    assert!(root.join(RECORD).is_file());
    // Answered from the record: the tree is not loaded, so the shards it
    // would write back stay gone.
    remove_shards(root);
    assert_eq!(plan(root, &[]), uncached);
    assert!(shards(root).is_empty());
    // Another request is another plan.
    let text = csis_at(root, NOW, &["plan"]);
    assert_eq!(text.status.code(), Some(0));
    assert!(!shards(root).is_empty());
    assert_eq!(plan(root, &[]), uncached);

    // A file added, edited or removed: planned again, as without a cache.
    for step in ["add", "edit", "remove"] {
        match step {
            "add" => std::fs::write(root.join("images/more.yml"), "images: []\n").unwrap(),
            "edit" => {
                crate::support::edit(root, "images/chain.yml", "echo mid >", "echo mid edited >")
            }
            _ => std::fs::remove_file(root.join("images/more.yml")).unwrap(),
        }
        let expected = plan(root, &["--no-cache"]);
        remove_shards(root);
        assert_eq!(plan(root, &[]), expected, "after the {step}");
        assert!(
            !shards(root).is_empty(),
            "after the {step}, the tree was loaded"
        );
    }
    // Only a comment in an item file: its text differs, so it is planned
    // again (the record keeps texts, not what they mean).
    let chain = root.join("images/chain.yml");
    let text = std::fs::read_to_string(&chain).unwrap();
    std::fs::write(&chain, format!("{text}# a comment\n")).unwrap();
    remove_shards(root);
    let expected = plan(root, &[]);
    assert!(!shards(root).is_empty());
    assert_eq!(expected, plan(root, &["--no-cache"]));
}

#[test]
fn a_damaged_record_is_one_notice_and_a_plan_as_without_it() {
    let t = csis_test_support::tree("local-run");
    let root = t.path();
    let uncached = plan(root, &["--no-cache"]);
    plan(root, &[]);
    let record = root.join(RECORD);
    let bytes = std::fs::read(&record).unwrap();
    for damage in ["truncated", "flipped"] {
        let mut damaged = bytes.clone();
        if damage == "truncated" {
            damaged.truncate(bytes.len() / 2);
        } else {
            let middle = bytes.len() / 2;
            damaged[middle] ^= 0x01;
        }
        std::fs::write(&record, &damaged).unwrap();
        let (out, err) = plan(root, &[]);
        assert_eq!(out, uncached.0, "{damage}");
        assert_eq!(err, damaged_notice(&record, &uncached.1), "{damage}");
        assert_eq!(
            std::fs::read(&record).unwrap(),
            bytes,
            "{damage}: rewritten"
        );
    }
    // --stats reports this process's own time: never from a record.
    let o = csis_at(root, NOW, &["plan", "--stats"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("peak"), "{o:?}");
}
