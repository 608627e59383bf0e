//! Issue 37's measure of bakes run as a graph: a real run of
//! fixtures/clouds (its roots stop at their gate: apply_storage and
//! apply_instances off) through the test doubles of tests/e2e/doubles/,
//! the packer double's builds taking 0 s or 2 s (PACKER_DOUBLE_DELAY),
//! with the default --jobs and with --jobs 1. The 8 bakes' critical path
//! is 4 bakes (debian12 on both clouds at once, then base, app and web per
//! cloud), 8 s at 2 s a build: the delay's cost over the undelayed run is
//! compared with it. Medians of 3, each run on a fresh copy of the tree.
//!
//! `cargo build --release -p csis && cargo bench -p csis-benches --bench
//! parallel_bakes` (needs python3 with python-hcl2 for the doubles).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const DELAY: f64 = 2.0;
/// debian12, then base, app, web: the longest chain of bakes.
const CRITICAL_PATH_BAKES: f64 = 4.0;
const BAKES: f64 = 8.0;
const RUNS: usize = 3;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// One real run on a fresh copy: its wall time.
fn run(delay: f64, jobs: Option<&str>) -> Duration {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    copy_dir(&here.join("../fixtures/clouds"), &tree);
    let cfg = tree.join("cfg/_config.yml");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("  apply_storage: true", "  apply_storage: false")
        .replace("  apply_instances: true", "  apply_instances: false");
    std::fs::write(&cfg, text).unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["packer", "tofu", "gcloud"] {
        std::fs::copy(here.join("../tests/e2e/doubles").join(tool), bin.join(tool)).unwrap();
    }
    let mut args = vec!["run", "all", "--no-dry-run", "--no-state-query"];
    if let Some(j) = jobs {
        args.extend(["--jobs", j]);
    }
    let started = Instant::now();
    let out = Command::new(csis_benches::required_csis_binary())
        .arg("--root-dir")
        .arg(&tree)
        .args(&args)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("CSIS_DOUBLE_CLOUD", dir.path().join("cloud"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("PACKER_DOUBLE_DELAY", delay.to_string())
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64()
}

fn main() {
    // Interleaved, so the machine's noise falls on every configuration.
    let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..RUNS {
        t[0].push(run(0.0, None));
        t[1].push(run(DELAY, None));
        t[2].push(run(0.0, Some("1")));
        t[3].push(run(DELAY, Some("1")));
    }
    let [graph0, graph2, one0, one2] = t.map(median);
    let critical = CRITICAL_PATH_BAKES * DELAY;
    let all = BAKES * DELAY;
    println!("parallel_bakes: fixtures/clouds real run, medians of {RUNS}");
    println!(
        "  default --jobs: {graph0:.1} s undelayed, {graph2:.1} s at {DELAY} s a build: +{:.1} s = {:.2} x the critical path ({critical:.0} s)",
        graph2 - graph0,
        (graph2 - graph0) / critical
    );
    println!(
        "  --jobs 1:       {one0:.1} s undelayed, {one2:.1} s at {DELAY} s a build: +{:.1} s = {:.2} x the critical path (every bake in turn: {all:.0} s)",
        one2 - one0,
        (one2 - one0) / critical
    );
}
