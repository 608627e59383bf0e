//! What a killed run leaves in the local store, and the next real run
//! cleaning it: a bake's partial directory, temporary files, a build that
//! was baked but never recorded.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{csis_at, edit, ok, spawn_real_run};
use csis_test_support::tree;

const NOW: i64 = 1796226804;

fn entries(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// SIGKILL every process whose working directory is inside `root`: the
/// steps a run started there, and nothing else on the machine.
fn kill_processes_working_in(root: &Path) {
    let root = root.canonicalize().unwrap();
    let me = std::process::id().to_string();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let pid = entry.file_name().to_string_lossy().to_string();
        if pid.is_empty() || !pid.chars().all(|c| c.is_ascii_digit()) || pid == me || pid == "1" {
            continue;
        }
        let inside =
            std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(&root));
        if inside {
            Command::new("kill").args(["-9", &pid]).status().unwrap();
        }
    }
}

#[test]
fn a_bake_killed_midway_leaves_debris_the_next_real_run_removes() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "images/chain.yml",
        "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"",
        "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"; sleep 30",
    );
    let mut run = spawn_real_run(r, NOW);
    let images = r.join("store/images");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !entries(&images)
        .iter()
        .any(|n| n.starts_with(".mid-") && n.ends_with(".partial"))
    {
        assert!(Instant::now() < deadline, "the bake of mid never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The run, then every process working in the tree (the bake step and
    // its script), as a crash of the machine would take them all.
    run.kill().unwrap();
    let _ = run.wait();
    kill_processes_working_in(r);
    let partial = ".mid-here-2026_12_02T15_53_24.partial";
    assert!(entries(&images).contains(&partial.to_string()));

    edit(r, "images/chain.yml", "; sleep 30", "");
    let query = ok(csis_at(r, NOW + 60, &["state", "query"]));
    assert!(
        query.contains(&format!("debris file {}/{partial} (here): a bake that never finished; the next real run removes it", images.display())),
        "{query}"
    );
    let next = ok(csis_at(r, NOW + 60, &["run", "all", "--no-dry-run"]));
    assert!(
        next.contains(&format!(
            "state: here: removed {}/{partial} (a bake that never finished)",
            images.display()
        )),
        "{next}"
    );
    assert!(
        entries(&images).iter().all(|n| !n.starts_with('.')),
        "{:?}",
        entries(&images)
    );
    let lineage = std::fs::read_to_string(r.join("meta-state/lineage.yaml")).unwrap();
    for id in entries(&images) {
        assert!(lineage.contains(&id), "{id} is not recorded: {lineage}");
    }
}

/// A build baked but never recorded (the run died between the bake and
/// `lineage record`) and a temporary file: listed by `state query`,
/// removed by the next real run, the series head put back on a recorded
/// build; a dry run touches nothing.
#[test]
fn an_unrecorded_build_and_a_temporary_file_are_removed() {
    let t = tree("local-run");
    let r = t.path();
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    let store = r.join("store");
    let recorded = "top-here-2026_12_02T15_53_24";
    let orphan = "top-here-2026_12_02T16_00_00";
    let from = store.join("images").join(recorded);
    let to = store.join("images").join(orphan);
    Command::new("cp")
        .arg("-r")
        .arg(&from)
        .arg(&to)
        .status()
        .unwrap();
    let manifest = std::fs::read_to_string(to.join("manifest.json")).unwrap();
    std::fs::write(to.join("manifest.json"), manifest.replace(recorded, orphan)).unwrap();
    std::fs::write(store.join("heads/top@here"), format!("{orphan}\n")).unwrap();
    std::fs::write(store.join("heads/.top@here.tmp"), "").unwrap();
    // And one of csis's own records, cut off before its rename.
    let record_tmp = r.join("meta-state/.pins.yaml.csis-tmp-4242-0");
    std::fs::write(&record_tmp, "pins: {").unwrap();

    let query = ok(csis_at(r, NOW + 60, &["state", "query"]));
    assert!(
        query.contains(&format!("foreign image {orphan} (here)")),
        "{query}"
    );
    assert!(query.contains("debris file"), "{query}");
    ok(csis_at(r, NOW + 60, &["run", "all"]));
    assert!(to.exists(), "a dry run removed a build");

    let next = ok(csis_at(r, NOW + 120, &["run", "all", "--no-dry-run"]));
    assert!(
        next.contains(&format!("state: here: removed build {orphan}, which lineage does not record (its run ended before recording it)")),
        "{next}"
    );
    assert!(!to.exists());
    assert!(!store.join("heads/.top@here.tmp").exists());
    assert!(
        next.contains(&format!(
            "state: removed {} (a write that never finished)",
            record_tmp.display()
        )),
        "{next}"
    );
    assert!(!record_tmp.exists());
    assert_eq!(
        std::fs::read_to_string(store.join("heads/top@here")).unwrap(),
        format!("{recorded}\n")
    );
}

/// `chattr +i` on a directory for as long as it lives: not even root may
/// create or rename files in it (a read-only root, as a test can make one).
struct Immutable(std::path::PathBuf);

impl Immutable {
    /// `None` (with a notice) where the file system or the user cannot.
    fn set(dir: &Path) -> Option<Immutable> {
        let done = Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !done {
            eprintln!("notice: chattr +i is not available here; the read-only check is skipped");
        }
        done.then(|| Immutable(dir.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// A command that cannot write what it promises fails and names the file:
/// a state query whose report changed, a run whose summary cannot be
/// written.
#[test]
fn a_report_or_summary_that_cannot_be_written_fails_the_command() {
    let t = tree("local-run");
    let r = t.path();
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    // Something new to report, so the report must be rewritten.
    std::fs::write(r.join("store/heads/.top@here.tmp"), "").unwrap();
    let generated = r.join("generated");
    let Some(_locked) = Immutable::set(&generated) else {
        return;
    };
    let query = csis_at(r, NOW + 60, &["state", "query"]);
    assert_eq!(query.status.code(), Some(1));
    let err = String::from_utf8_lossy(&query.stderr);
    assert!(
        err.starts_with(&format!(
            "error: state query: could not write the state report: {}/state-report.json: ",
            generated.display()
        )),
        "{err}"
    );
    let run = csis_at(r, NOW + 60, &["run", "identity", "--no-state-query"]);
    assert_eq!(run.status.code(), Some(1));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains(&format!(
            "error: could not write the run summary: {}/run-summary.json: ",
            generated.display()
        )),
        "{err}"
    );
}
