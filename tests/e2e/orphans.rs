//! A killed run's children: the steps it started die with it (and a local
//! bake's sandbox with its step), and what an engine left running still
//! holds the tree's lock, so the next writer is refused instead of writing
//! beside it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{
    csis_at, doubles, edit, hcl2_available, here, ok, read, real_run, spawn_real_run,
};
use csis_test_support::{temp_tree, tree};

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

/// The processes whose command line is exactly `argv`.
fn processes(argv: &[&str]) -> Vec<u32> {
    let want = argv.join("\0") + "\0";
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want.as_bytes())
                && running(*pid)
        })
        .collect()
}

/// The processes working inside `root` (a run's steps), as /proc shows
/// their working directories.
fn working_in(root: &Path) -> Vec<u32> {
    let root = root.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&root))
                && running(*pid)
        })
        .collect()
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_killed_run_takes_its_bake_step_and_the_script_in_its_sandbox_with_it() {
    let t = tree("local-run");
    let r = t.path();
    // A sleep of a length nothing else on the machine uses, to find it by.
    edit(
        r,
        "images/chain.yml",
        "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"",
        "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"; sleep 4243 & sleep 4242",
    );
    let mut run = spawn_real_run(r, NOW);
    wait_until("the mid layer's script never started", || {
        !processes(&["sleep", "4242"]).is_empty() && !processes(&["sleep", "4243"]).is_empty()
    });
    let steps = working_in(r);
    assert!(!steps.is_empty(), "the bake step works in the tree");
    run.kill().unwrap();
    let _ = run.wait();
    // The bake step, its sandbox and everything in it (the background
    // sleep too) end with the run, nobody killing them by hand.
    wait_until("a step or its script outlived the killed run", || {
        steps.iter().all(|p| !running(*p))
            && processes(&["sleep", "4242"]).is_empty()
            && processes(&["sleep", "4243"]).is_empty()
    });
    edit(r, "images/chain.yml", "; sleep 4243 & sleep 4242", "");
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

/// The packer test double leaves a process running after its build, as a
/// plugin daemon would: it holds the lock the run handed down.
#[test]
fn a_process_an_engine_left_running_keeps_the_tree_locked_after_its_run() {
    if !hcl2_available() {
        return;
    }
    let t = temp_tree([
        ("cfg/_config.yml", read(&here("packer/config.yml"))),
        ("images/web.yml", read(&here("packer/web.yml"))),
        ("scripts/tools.sh", "echo tools\n".to_string()),
    ]);
    let r = t.path();
    let d = doubles(&["packer"]);
    let pidfile = d.path().join("linger.pid");
    let linger = pidfile.to_string_lossy().to_string();
    ok(real_run(
        r,
        d.path(),
        NOW,
        &[("PACKER_DOUBLE_LINGER", &linger)],
    ));
    let sleeps: Vec<u32> = read(&pidfile)
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(sleeps.len(), 4, "one per bake");
    assert!(sleeps.iter().all(|p| running(*p)));
    let runs_before = std::fs::read(r.join("meta-state/runs.yaml")).unwrap();
    let refused = csis_at(r, NOW + 60, &["run", "all"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr).to_string();
    let holder = format!(
        "(csis --root-dir {} run all --no-dry-run, started {STARTED} on host {})",
        r.display(),
        host()
    );
    assert!(
        err.starts_with("error: the tree is locked by processes that pid ")
            && err.ends_with(&format!(
                "{holder} started and that outlived it (`fuser -v {}/meta-state/.csis.lock` names them); nothing was written (--lock-timeout SECONDS waits for it)\n",
                r.display()
            )),
        "{err}"
    );
    assert_eq!(
        std::fs::read(r.join("meta-state/runs.yaml")).unwrap(),
        runs_before
    );
    for sleep in &sleeps {
        Command::new("kill")
            .args(["-9", &sleep.to_string()])
            .status()
            .unwrap();
    }
    wait_until("a sleep was not killed", || {
        sleeps.iter().all(|p| !running(*p))
    });
    // A released lock is taken without a notice.
    let next = ok(csis_at(r, NOW + 60, &["run", "all"]));
    assert!(!next.contains("notice: taking over"), "{next}");
}
