//! The tree's lock: concurrent writers of one tree are refused or wait,
//! and never lose each other's records; readers go on; a dead holder's
//! lock is taken over.

use crate::support::{csis_at, edit, git, ok};
use csis_test_support::tree;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const T0: i64 = 1_796_226_804; // 2026-12-02T15:53:24Z

fn command(root: &Path, now: i64, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_csis"));
    c.current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("CSIS_NOW", now.to_string())
        .env_remove("CSIS_RUN_ID")
        .env_remove("CSIS_LOCK_HELD")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn spawn(root: &Path, now: i64, args: &[&str]) -> Child {
    command(root, now, args).spawn().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn lock_file(root: &Path) -> PathBuf {
    root.join("meta-state/.csis.lock")
}

/// Until the lock file names `pid` (the holder has taken it).
fn wait_for_holder(root: &Path, pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(lock_file(root)).unwrap_or_default();
        if text.contains(&format!("pid: {pid}\n")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("pid {pid} never took the lock");
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn runs(root: &Path) -> usize {
    std::fs::read_to_string(root.join("meta-state/runs.yaml"))
        .unwrap_or_default()
        .matches("\n  - run: ")
        .count()
}

/// fixtures/local-run with a bake step that takes two seconds, so a real
/// run holds the lock long enough to be overlapped.
fn slow_tree() -> tempfile::TempDir {
    let t = tree("local-run");
    edit(
        t.path(),
        "images/chain.yml",
        "script: echo base >",
        "script: sleep 2; echo base >",
    );
    t
}

#[test]
fn a_second_real_run_is_refused_while_one_holds_the_tree_and_waits_with_a_timeout() {
    let t = slow_tree();
    let r = t.path();
    let first = spawn(r, T0, &["run", "all", "--no-dry-run"]);
    let pid = first.id();
    wait_for_holder(r, pid);
    let second = csis_at(r, T0 + 10, &["run", "all", "--no-dry-run"]);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    assert_eq!(
        stderr(&second),
        format!(
            "error: the tree is locked by pid {pid} (csis --root-dir {} run all --no-dry-run, started 2026-12-02T15:53:24Z on host {}); nothing was written (--lock-timeout SECONDS waits for it)\n",
            r.display(),
            host()
        )
    );
    assert!(second.stdout.is_empty());
    // Readers do not take the lock.
    ok(csis_at(r, T0 + 10, &["plan"]));
    ok(csis_at(r, T0 + 10, &["validate"]));
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(runs(r), 1, "the refused run recorded nothing");
    let summary = std::fs::read_to_string(r.join("generated/run-summary.json")).unwrap();
    assert!(summary.contains("2026_12_02T15_53_24"), "{summary}");
    assert!(
        std::fs::read_to_string(lock_file(r))
            .unwrap()
            .ends_with("\nended: yes\n"),
        "a released lock is marked ended"
    );

    // With --lock-timeout the second writer waits for the first, then runs.
    let first = spawn(
        r,
        T0 + 60,
        &["run", "all", "--no-dry-run", "--force-bake", "base"],
    );
    let pid = first.id();
    wait_for_holder(r, pid);
    let started = Instant::now();
    let second = csis_at(
        r,
        T0 + 120,
        &["--lock-timeout", "60", "run", "all", "--no-dry-run"],
    );
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(0), "{err}");
    assert!(
        err.starts_with(&format!(
            "notice: the tree is locked by pid {pid} (csis --root-dir {} run all --no-dry-run --force-bake base, started 2026-12-02T15:54:24Z on host {}); waiting up to 60s for it\n",
            r.display(),
            host()
        )),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(runs(r), 3);
    let runs_yaml = std::fs::read_to_string(r.join("meta-state/runs.yaml")).unwrap();
    let order: Vec<&str> = runs_yaml
        .lines()
        .filter_map(|l| l.strip_prefix("  - run: "))
        .collect();
    assert_eq!(
        order,
        [
            "\"2026_12_02T15_53_24\"",
            "\"2026_12_02T15_54_24\"",
            "\"2026_12_02T15_55_24\""
        ]
    );
}

#[test]
fn eight_concurrent_lineage_records_keep_every_build() {
    let t = tree("local-run");
    let r = t.path();
    // Eight builds of the same inputs (a record refuses a fingerprint
    // that is not the plan's).
    let fingerprint = crate::support::planned_fingerprint(r, T0, "tiny", "here");
    let manifests = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..8)
        .map(|i| {
            let p = manifests.path().join(format!("m{i}.json"));
            let m = serde_json::json!({
                "build_id": format!("tiny-here-b{i}"),
                "series": "tiny",
                "runtime": "here",
                "parent": "vendor",
                "run": format!("r{i}"),
                "input_fingerprint": fingerprint,
            });
            std::fs::write(&p, m.to_string()).unwrap();
            p
        })
        .collect();
    let children: Vec<Child> = paths
        .iter()
        .map(|p| {
            spawn(
                r,
                T0,
                &[
                    "--lock-timeout",
                    "120",
                    "lineage",
                    "record",
                    "--manifest",
                    p.to_str().unwrap(),
                ],
            )
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let lineage = std::fs::read_to_string(r.join("meta-state/lineage.yaml")).unwrap();
    for i in 0..8 {
        assert!(
            lineage.contains(&format!("build_id: tiny-here-b{i}\n")),
            "b{i} lost:\n{lineage}"
        );
    }
    assert_eq!(lineage.matches("build_id: ").count(), 8);
}

#[test]
fn forty_concurrent_dry_runs_leave_forty_journal_entries() {
    let t = tree("local-run");
    let r = t.path();
    let children: Vec<Child> = (0..40)
        .map(|i| spawn(r, T0 + i, &["--lock-timeout", "300", "run", "all"]))
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(runs(r), 40);
    // Every temporary was renamed into place.
    let stray: Vec<String> = std::fs::read_dir(r.join("meta-state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

#[test]
fn a_dead_holders_lock_is_taken_over_with_a_notice() {
    let t = tree("local-run");
    let r = t.path();
    std::fs::create_dir_all(r.join("meta-state")).unwrap();
    std::fs::write(
        lock_file(r),
        "pid: 2999999\nhost: gone\ncommand: csis run all --no-dry-run\nstarted: 2026-12-01T08:00:00Z\ntoken: 2999999-1\n",
    )
    .unwrap();
    let out = csis_at(r, T0, &["run", "storage"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.starts_with("notice: taking over the lock of pid 2999999 (csis run all --no-dry-run, started 2026-12-01T08:00:00Z on host gone), which is no longer running\n"),
        "{err}"
    );
    assert_eq!(runs(r), 1);
    assert!(
        std::fs::read_to_string(lock_file(r))
            .unwrap()
            .ends_with("\nended: yes\n"),
        "a released lock is marked ended"
    );
    // A released lock is taken without a notice.
    let again = csis_at(r, T0 + 1, &["run", "storage"]);
    assert!(!stderr(&again).contains("notice:"), "{}", stderr(&again));
}

#[test]
fn a_stale_token_in_the_environment_is_no_pass() {
    let t = slow_tree();
    let r = t.path();
    let first = spawn(r, T0, &["run", "all", "--no-dry-run"]);
    wait_for_holder(r, first.id());
    let out = command(r, T0, &["lineage", "bind-instance", "--instance", "box"])
        .args(["--launched", "store/instances/box/instance.json"])
        .env("CSIS_LOCK_HELD", "1-2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("error: the tree is locked by pid "),
        "{}",
        stderr(&out)
    );
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
}

#[test]
fn the_lock_file_is_never_committed_nor_flagged() {
    let t = tree("local-run");
    let r = t.path();
    git(r, &["init", "-q", "-b", "main"]);
    git(r, &["add", "-A"]);
    git(r, &["commit", "-q", "-m", "the tree"]);
    let out = crate::support::with_git_identity(&mut command(r, T0, &["run", "all", "--commit"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(lock_file(r).exists());
    let files = git(r, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.contains("meta-state/runs.yaml"), "{files}");
    assert!(!files.contains(".csis.lock"), "{files}");
    let ignore = std::fs::read_to_string(r.join(".gitignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l == "meta-state/.csis.lock"),
        "{ignore}"
    );
    let status = git(r, &["status", "--porcelain"]);
    assert!(!status.contains(".csis.lock"), "{status}");
    // A lock file that names a holder is not a finding.
    std::fs::write(
        lock_file(r),
        "pid: 1\nhost: h\ncommand: csis run all\nstarted: 2026-12-01T08:00:00Z\ntoken: 1-1\n",
    )
    .unwrap();
    ok(csis_at(r, T0, &["public-safe"]));
}
