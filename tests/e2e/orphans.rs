//! A killed run's children: the steps it started die with it, and what
//! a step's script left running still holds the tree's lock, so the next
//! writer is refused instead of writing the store beside it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{csis_at, edit, ok};
use csis_test_support::tree;

const NOW: i64 = 1796226804;
const STARTED: &str = "2026-12-02T15:53:24Z";

/// Whether `pid` runs; a zombie has ended.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, state)| !state.starts_with('Z'))
    })
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pids(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// The mid layer's script records its shell's pid, its parent's (the
/// `csis local bake` step) and a background `sleep`'s, then `tail`.
fn record_pids(root: &Path, dir: &Path, tail: &str) {
    edit(
        root,
        "images/chain.yml",
        "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"",
        &format!(
            "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"; echo $$ $PPID > {d}/steps; sleep 300 > /dev/null 2>&1 & echo $! > {d}/sleep; {tail}",
            d = dir.display()
        ),
    );
}

#[test]
fn a_killed_run_takes_its_steps_with_it_and_what_outlives_it_keeps_the_tree_locked() {
    let t = tree("local-run");
    let r = t.path();
    let dir = tempfile::tempdir().unwrap();
    record_pids(r, dir.path(), "wait");
    let mut run = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(r)
        .args(["run", "all", "--no-dry-run"])
        .env("CSIS_NOW", NOW.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the mid layer's script never started", || {
        pids(&dir.path().join("steps")).len() == 2 && pids(&dir.path().join("sleep")).len() == 1
    });
    let steps = pids(&dir.path().join("steps"));
    let sleep = pids(&dir.path().join("sleep"))[0];
    run.kill().unwrap();
    let _ = run.wait();
    // The bake step and its script's shell end with the run, nobody
    // killing them by hand.
    wait_until("a step outlived the killed run", || {
        steps.iter().all(|p| !running(*p))
    });
    assert!(running(sleep), "the background sleep should still run");

    let runs_before = std::fs::read(r.join("meta-state/runs.yaml")).ok();
    let refused = csis_at(r, NOW + 60, &["run", "all", "--no-dry-run"]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        format!(
            "error: the tree is locked by processes that pid {} (csis --root-dir {root} run all --no-dry-run, started {STARTED} on host {}) started and that outlived it (`fuser -v {root}/meta-state/.csis.lock` names them); nothing was written (--lock-timeout SECONDS waits for it)\n",
            run.id(),
            host(),
            root = r.display(),
        )
    );
    assert_eq!(
        std::fs::read(r.join("meta-state/runs.yaml")).ok(),
        runs_before
    );

    Command::new("kill")
        .args(["-9", &sleep.to_string()])
        .status()
        .unwrap();
    wait_until("the sleep was not killed", || !running(sleep));
    edit(r, "images/chain.yml", " sleep 300", " true");
    let next = ok(csis_at(r, NOW + 60, &["run", "all", "--no-dry-run"]));
    assert!(
        next.contains(&format!(
            "notice: taking over the lock of pid {} (csis --root-dir {} run all --no-dry-run, started {STARTED} on host {}), which is no longer running",
            run.id(),
            r.display(),
            host()
        )),
        "{next}"
    );
}

#[test]
fn a_finished_run_whose_script_left_a_process_running_keeps_the_tree_locked() {
    let t = tree("local-run");
    let r = t.path();
    let dir = tempfile::tempdir().unwrap();
    record_pids(r, dir.path(), "true");
    let first = csis_at(r, NOW, &["run", "all", "--no-dry-run"]);
    ok(first);
    let sleep = pids(&dir.path().join("sleep"))[0];
    assert!(running(sleep));
    let refused = csis_at(r, NOW + 60, &["run", "all"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(
        err.starts_with("error: the tree is locked by processes that pid ")
            && err.contains(&format!(
                "(csis --root-dir {} run all --no-dry-run, started {STARTED} on host {}) started and that outlived it",
                r.display(),
                host()
            )),
        "{err}"
    );
    Command::new("kill")
        .args(["-9", &sleep.to_string()])
        .status()
        .unwrap();
    wait_until("the sleep was not killed", || !running(sleep));
    // A released lock is taken without a notice.
    let next = ok(csis_at(r, NOW + 60, &["run", "all"]));
    assert!(!next.contains("notice: taking over"), "{next}");
}
