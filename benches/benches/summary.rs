//! The table of docs/performance.md, in one process: every measure of the
//! `engine` bench timed several times (best and median), each with its
//! ratio to the cold plan measured in the same run, the queries the engine
//! executed and re-validated in its last run, and the process's peak
//! memory (VmHWM) after the first cold dry run. A markdown table on stdout.
//! Last, the `csis` binary from disk (`target/release/csis`, or
//! `CSIS_BENCH_BIN`), on the tree written to a temporary directory: `csis
//! plan`, `csis run all --no-apply` on a fresh copy each run and again on
//! a tree it ran on, `csis plan` there, and `csis plan` on the tree 4 and
//! 10 times as large, with the peak memory of each (from one more run
//! with `--stats`); skipped when the binary is not built, and under
//! `cargo test`.
//!
//! `cargo bench -p csis-benches --bench summary` (reference tree): cold
//! measures 3 to 5 runs, warm ones 3 to 20, fewer when slow (see
//! `Budget`); `CSIS_BENCH_SIZE=small` for a quick run; `CSIS_BENCH_RUNS=N`
//! for exactly N runs of each. Under `cargo test` (no `--bench`) each
//! measure runs once, on the small tree unless `CSIS_BENCH_SIZE` says
//! otherwise.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::time::{Duration, Instant};

use csis_benches::harness::{self, EditKind, Fixture, bench_mode};
use csis_engine::db::system::MemorySystem;
use csis_engine::run::RunSummary;
use csis_engine::workspace::Workspace;

/// The allocator of the `csis` binary, so the benches time what it runs.
#[global_allocator]
static GLOBAL: csis_alloc::Allocator = csis_alloc::Allocator;

/// One measure's runs.
struct Measure {
    name: &'static str,
    times: Vec<Duration>,
    /// CPU time of every thread of the process, per run.
    cpu: Vec<Duration>,
    /// (executed, re-validated) queries of the last run.
    queries: (u64, u64),
}

impl Measure {
    fn new(name: &'static str) -> Measure {
        Measure {
            name,
            times: Vec::new(),
            cpu: Vec::new(),
            queries: (0, 0),
        }
    }

    fn best(&self) -> Duration {
        *self.times.iter().min().unwrap()
    }

    fn cpu(&self) -> Option<Duration> {
        self.cpu.iter().min().copied()
    }

    fn median(&self) -> Duration {
        let mut t = self.times.clone();
        t.sort();
        t[t.len() / 2]
    }
}

/// How many times a measure runs: up to `max` runs, stopping early once
/// `min` runs have taken `time` (slow measures on a big tree).
#[derive(Clone, Copy)]
struct Budget {
    min: usize,
    max: usize,
    time: Duration,
}

impl Budget {
    fn more(&self, done: &[Duration]) -> bool {
        done.len() < self.min
            || (done.len() < self.max && done.iter().sum::<Duration>() < self.time)
    }

    fn describe(&self) -> String {
        if self.min == self.max {
            format!("{} runs", self.max)
        } else {
            format!(
                "{} to {} runs (no more once they took {} s)",
                self.min,
                self.max,
                self.time.as_secs()
            )
        }
    }
}

fn counts(ws: &Workspace) -> (u64, u64) {
    ws.db.query_log().counts()
}

fn delta(after: (u64, u64), before: (u64, u64)) -> (u64, u64) {
    (after.0 - before.0, after.1 - before.1)
}

/// CPU time so far of every thread of the process (Linux schedstat:
/// nanoseconds on a CPU), or nothing where /proc has no schedstat. On a
/// shared machine this moves less than wall time: time spent waiting for a
/// core is not in it.
fn cpu_time() -> Option<Duration> {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(ns))
}

/// schedstat is brought up to date at scheduler ticks (4 ms at 250 Hz):
/// CPU time is shown for measures that take longer than this only.
const CPU_SHOWN_FROM: Duration = Duration::from_millis(100);

/// Wall and CPU time around `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (Duration, Option<Duration>, T) {
    let cpu0 = cpu_time();
    let t = Instant::now();
    let out = f();
    let wall = t.elapsed();
    let cpu = cpu0.zip(cpu_time()).map(|(a, b)| b.saturating_sub(a));
    (wall, cpu, out)
}

/// VmHWM of /proc/self/status, in KiB.
fn peak_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Cold operations, each on a fresh memory system and a fresh load;
/// the workspace is dropped outside the timing. Returns the measure and
/// what the last run returned.
fn cold<T>(
    fx: &Fixture,
    name: &'static str,
    budget: Budget,
    mut op: impl FnMut(&Workspace, &MemorySystem) -> T,
    mut after_first: impl FnMut(),
) -> (Measure, Option<T>) {
    let mut m = Measure::new(name);
    while budget.more(&m.times) {
        let first = m.times.is_empty();
        let sys = fx.system();
        let (wall, cpu, (ws, out)) = timed(|| {
            let ws = fx.load(&sys);
            let out = op(&ws, &sys);
            (ws, out)
        });
        m.times.push(wall);
        m.cpu.extend(cpu);
        drop(std::hint::black_box(ws));
        drop(std::hint::black_box(out));
        if first {
            after_first();
        }
    }
    // The timed runs load as `csis` without `--stats` (no query log); one
    // more, untimed, with the log counts the queries.
    let sys = fx.system();
    let ws = fx.load_with(&sys, true);
    let last = op(&ws, &sys);
    m.queries = counts(&ws);
    drop(ws);
    (m, Some(last))
}

/// Re-plans of one warm workspace, each after `edit` (if any).
fn warm(fx: &Fixture, name: &'static str, budget: Budget, kind: Option<EditKind>) -> Measure {
    let (sys, mut ws) = fx.warmed();
    let mut edit = kind.map(|k| k.edit(fx));
    let mut m = Measure::new(name);
    while budget.more(&m.times) {
        let before = counts(&ws);
        let (wall, cpu, report) = timed(|| {
            if let Some(e) = edit.as_mut() {
                e.apply(&mut ws);
            }
            harness::plan(&ws, &sys)
        });
        m.times.push(wall);
        m.cpu.extend(cpu);
        m.queries = delta(counts(&ws), before);
        drop(std::hint::black_box(report));
    }
    m
}

/// Run `csis --root-dir ROOT ARGS` to completion: its wall time and its
/// CPU time (user and system, wait4's rusage). Not its peak memory:
/// wait4's maxrss counts the pages the child had between fork and exec,
/// which are this process's (600 MiB and more here).
#[allow(clippy::zombie_processes)] // reaped by wait4, which std cannot do
fn run_binary(
    bin: &std::path::Path,
    root: &std::path::Path,
    args: &[&str],
) -> (Duration, Duration) {
    let t = Instant::now();
    let child = std::process::Command::new(bin)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("csis starts");
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid value; wait4 writes both out
    // parameters, and waits for our own child, which std never reaps
    // (the Child is not waited on through std).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let wall = t.elapsed();
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "csis {args:?} failed: status {status}"
    );
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    (wall, cpu)
}

/// The peak memory (KiB) `csis ARGS --stats` reports of itself (VmHWM at
/// its end; the query log `--stats` turns on costs no memory to speak of).
fn peak_from_stats(bin: &std::path::Path, root: &std::path::Path, args: &[&str]) -> Option<u64> {
    let out = std::process::Command::new(bin)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .arg("--stats")
        .output()
        .expect("csis starts");
    assert!(out.status.success(), "csis {args:?} --stats failed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mib: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("stats: peak memory "))?
        .trim_end_matches("MiB")
        .trim()
        .parse()
        .ok()?;
    Some((mib * 1024.0) as u64)
}

/// The binary from disk, each measure with its peak memory (KiB, from one
/// more run with `--stats`):
/// - `csis plan` on the tree as the generator writes it (no meta-state);
/// - `csis run all --no-apply` on a fresh copy each run (no generated/ or
///   meta-state/ yet). Every copy is written, and the file system synced,
///   before the first run: on ext4 without a journal (this machine's root)
///   the inode allocator skips inodes freed in the last seconds
///   (`recently_deleted`), and 18,000 creations right after deleting the
///   previous round's copy took 3 to 5 times as long in the kernel;
/// - the same command again on a tree it already ran on (generated/ and
///   meta-state/ present: a repository that commits them);
/// - `csis plan` on that tree (meta-state/ of a run present);
/// - `csis plan` on the tree with its modifications' scripts in files;
/// - `csis plan` on the tree 4 and 10 times as large (`TreeSize::times`),
///   written once each (issue 40's targets: 4x within 256 MiB, 10x within
///   11 times the 1x time), and on the 10x tree again with a build of
///   every series recorded.
fn from_disk(fx: &Fixture, bin: &std::path::Path, budget: Budget) -> Vec<(Measure, Option<u64>)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write_tree = |root: &std::path::Path| {
        for (rel, text) in &fx.files {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    };
    let measure =
        |name: &'static str, roots: &mut dyn Iterator<Item = std::path::PathBuf>, args: &[&str]| {
            let mut m = Measure::new(name);
            while budget.more(&m.times) {
                let root = roots.next().expect("a copy of the tree per run");
                let (wall, cpu) = run_binary(bin, &root, args);
                m.times.push(wall);
                m.cpu.push(cpu);
            }
            let peak = peak_from_stats(bin, &roots.next().expect("a copy for --stats"), args);
            (m, peak)
        };
    // Cold: no persisted cache read or written (the default would make
    // every run after the first a cached one).
    let plan = ["plan", "--no-cache"];
    let run = ["run", "all", "--no-apply", "--no-cache"];

    let tree = dir.path().join("tree");
    write_tree(&tree);
    let mut out = vec![measure(
        "cold `csis plan` from disk (the binary)",
        &mut std::iter::repeat(tree.clone()),
        &plan,
    )];

    let copies: Vec<_> = (0..=budget.max)
        .map(|i| {
            let root = dir.path().join(format!("copy-{i}"));
            write_tree(&root);
            root
        })
        .collect();
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    out.push(measure(
        "cold `csis run all --no-apply` from disk, a fresh copy (the binary)",
        &mut copies.iter().cloned(),
        &run,
    ));
    out.push(cached_after_an_edit(fx, bin, budget, dir.path()));
    let ran = &copies[0];
    out.push(measure(
        "cold `csis run all --no-apply` from disk, again (generated/ and meta-state/ present)",
        &mut std::iter::repeat(ran.clone()),
        &run,
    ));
    out.push(measure(
        "cold `csis plan` from disk after a run (meta-state/ present)",
        &mut std::iter::repeat(ran.clone()),
        &plan,
    ));
    // The same tree with each modification's script in a file: every
    // fingerprint then reads files found by their paths (once quadratic).
    let scripted = dir.path().join("script-files");
    let with_files = csis_benches::TreeSize {
        script_files: true,
        ..fx.size.clone()
    };
    write_synced(&scripted, &with_files);
    out.push(measure(
        "cold `csis plan` from disk, the tree with its modifications' scripts in files (the binary)",
        &mut std::iter::repeat(scripted.clone()),
        &plan,
    ));
    std::fs::remove_dir_all(&scripted).unwrap();
    // The same tree scaled: how time and memory grow with a repository.
    for (k, name) in [
        (4, "cold `csis plan` from disk, 4x the tree (the binary)"),
        (10, "cold `csis plan` from disk, 10x the tree (the binary)"),
    ] {
        let root = dir.path().join(format!("times-{k}"));
        write_synced(&root, &fx.size.times(k));
        out.push(measure(name, &mut std::iter::repeat(root.clone()), &plan));
        if k == 10 {
            // As a repository whose every image was baked: a plan then
            // looks up a build per series (once quadratic in the builds).
            record_a_build_per_series(bin, &root);
            // SAFETY: sync(2) takes no arguments and cannot fail.
            unsafe { libc::sync() };
            out.push(measure(
                "cold `csis plan` from disk, 10x the tree with a build recorded per series (the binary)",
                &mut std::iter::repeat(root.clone()),
                &plan,
            ));
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
    out
}

/// `csis plan` in a fresh process after a one-file edit, from the cache
/// the state before the edit left (issue 40: at most a quarter of the
/// cold plan): each run restores that cache, gives the first instance of
/// one instances file a new description (a value the plan reads, so that
/// file's items are structured and checked anew), and plans.
fn cached_after_an_edit(
    fx: &Fixture,
    bin: &std::path::Path,
    budget: Budget,
    dir: &std::path::Path,
) -> (Measure, Option<u64>) {
    let root = dir.join("cached");
    for (rel, text) in &fx.files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let kept = dir.join("cache-before");
    let cache = dir.join("cache");
    let kept_arg = kept.to_string_lossy().to_string();
    run_binary(bin, &root, &["plan", "--cache-dir", &kept_arg]);
    let edited = fx
        .files
        .iter()
        .find(|(rel, _)| rel.starts_with("instances/"))
        .expect("the tree has an instances file");
    let (edited, original) = (&edited.0, edited.1.as_str());
    let mut round = 0;
    let mut before_each = || {
        let _ = std::fs::remove_dir_all(&cache);
        std::fs::create_dir_all(&cache).unwrap();
        for entry in std::fs::read_dir(&kept).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), cache.join(entry.file_name())).unwrap();
        }
        let path = root.join(edited);
        std::fs::write(&path, described(original, round)).unwrap();
        round += 1;
    };
    let cache_arg = cache.to_string_lossy().to_string();
    let args = ["plan", "--cache-dir", cache_arg.as_str()];
    let mut m = Measure::new(
        "`csis plan` from disk after a one-file edit, from the cache before it (the binary)",
    );
    while budget.more(&m.times) {
        before_each();
        let (wall, cpu) = run_binary(bin, &root, &args);
        m.times.push(wall);
        m.cpu.push(cpu);
    }
    before_each();
    let peak = peak_from_stats(bin, &root, &args);
    (m, peak)
}

/// `text` (an instances file) with its first instance described as edit
/// `round`: the line after the first item's name, shifting every place
/// below it.
fn described(text: &str, round: u32) -> String {
    let first = text
        .find("\n  - name:")
        .expect("an instances file lists items")
        + 1;
    let line_end = first + text[first..].find('\n').expect("a name line ends");
    format!(
        "{}\n    description: edit {round}{}",
        &text[..line_end],
        &text[line_end..]
    )
}

/// Writes a generated tree of `size` under `root`, then writes it back to
/// disk before the first run: 135 MB of dirty pages at 10x otherwise share
/// the cores with it.
fn write_synced(root: &std::path::Path, size: &csis_benches::TreeSize) {
    for (rel, text) in csis_benches::generate(size) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// Writes meta-state/lineage.yaml with one build of every `(series,
/// runtime)` the tree's plan decides, at the input fingerprint it has
/// now: each then plans `skip: current`.
fn record_a_build_per_series(bin: &std::path::Path, root: &std::path::Path) {
    let out = std::process::Command::new(bin)
        .arg("--root-dir")
        .arg(root)
        .args(["plan", "--format", "json"])
        .output()
        .expect("csis plan runs");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON plan");
    let mut yaml = String::from("builds:\n");
    for entry in report["plan"].as_array().expect("the plan's entries") {
        let (series, runtime) = (&entry["series"], &entry["runtime"]);
        let (Some(series), Some(runtime), Some(fingerprint)) = (
            series.as_str(),
            runtime.as_str(),
            entry["fingerprint"].as_str(),
        ) else {
            panic!("a plan entry without series, runtime or fingerprint: {entry}");
        };
        yaml.push_str(&format!(
            "- build_id: {series}-{runtime}-20261206T000000\n  series: {series}\n  runtime: {runtime}\n  name: {series}\n  parent: vendor\n  input_fingerprint: {fingerprint}\n  run: 2026_12_06T00_00_00\n  chain: [{series}]\n"
        ));
    }
    std::fs::create_dir_all(root.join("meta-state")).unwrap();
    std::fs::write(root.join("meta-state/lineage.yaml"), yaml).unwrap();
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

fn stages(label: &str, summary: &RunSummary) {
    if let Some(stats) = &summary.stats {
        let parts: Vec<String> = stats
            .stages
            .iter()
            .map(|(stage, s)| {
                format!(
                    "{stage} {:.1} ms ({} executed, {} re-validated)",
                    s.ms, s.executed, s.reused
                )
            })
            .collect();
        println!("- {label}: {}", parts.join("; "));
    }
}

#[allow(clippy::disallowed_methods)]
fn runs_from_env() -> Option<usize> {
    std::env::var("CSIS_BENCH_RUNS")
        .ok()
        .map(|v| v.parse().expect("CSIS_BENCH_RUNS is a number"))
}

fn main() {
    let fx = Fixture::from_env();
    let exactly = |n: usize| Budget {
        min: n,
        max: n,
        time: Duration::ZERO,
    };
    let (cold_runs, warm_runs) = match runs_from_env() {
        Some(n) => (exactly(n.max(1)), exactly(n.max(1))),
        None if bench_mode() => (
            Budget {
                min: 3,
                max: 5,
                time: Duration::from_secs(40),
            },
            Budget {
                min: 3,
                max: 20,
                time: Duration::from_secs(30),
            },
        ),
        None => (exactly(1), exactly(1)),
    };
    eprintln!("{}", fx.describe());

    // The cold dry run first, so VmHWM after its first run is what one
    // cold `csis run all --no-apply` needs (with the fixture's own copy of
    // the tree and the generated files in the memory system).
    let mut peak_after_dry_run = None;
    let (dry_run, last_dry) = cold(
        &fx,
        "cold dry run with generation (`run all --no-apply`)",
        cold_runs,
        |ws, sys| harness::dry_run(ws, sys, true),
        || peak_after_dry_run = peak_kib(),
    );
    let (validate, _) = cold(
        &fx,
        "cold load + validate",
        cold_runs,
        harness::validate,
        || {},
    );
    let (plan, _) = cold(
        &fx,
        "cold load + plan",
        cold_runs,
        |ws, sys| harness::plan(ws, sys).plan.len(),
        || {},
    );
    let warm_measures = [
        warm(&fx, "warm no-op re-plan", warm_runs, None),
        warm(
            &fx,
            "warm one-image edit re-plan (description)",
            warm_runs,
            Some(EditKind::ImageDescription),
        ),
        warm(
            &fx,
            "warm one-image edit re-plan (modification script)",
            warm_runs,
            Some(EditKind::ImageModification),
        ),
        warm(
            &fx,
            "warm one-user edit re-plan",
            warm_runs,
            Some(EditKind::User),
        ),
        warm(
            &fx,
            "warm comment-only edit re-plan",
            warm_runs,
            Some(EditKind::Comment),
        ),
        warm(
            &fx,
            "warm cfg/ edit re-plan (reaches everything)",
            warm_runs,
            Some(EditKind::Cfg),
        ),
    ];

    // Where a warm edit's time goes when it generates too: a warm dry run
    // after a one-image edit, as `csis watch --generate` runs it (no
    // records), then as `csis run all --no-apply` (its records too).
    let (sys, mut ws) = fx.warmed();
    harness::dry_run(&ws, &sys, false);
    let mut edit = EditKind::ImageModification.edit(&fx);
    let mut warm_dry_measures = Vec::new();
    let mut warm_dry_summary = None;
    for (name, record) in [
        (
            "warm one-image edit dry run with generation (as `watch --generate`)",
            false,
        ),
        (
            "warm one-image edit dry run with generation and records (`run all --no-apply`)",
            true,
        ),
    ] {
        let mut m = Measure::new(name);
        while cold_runs.more(&m.times) {
            let before = counts(&ws);
            let (wall, cpu, s) = timed(|| {
                edit.apply(&mut ws);
                if record {
                    harness::dry_run(&ws, &sys, true)
                } else {
                    harness::watch_generate(&ws, &sys)
                }
            });
            m.times.push(wall);
            m.cpu.extend(cpu);
            m.queries = delta(counts(&ws), before);
            if !record {
                warm_dry_summary = Some(s);
            }
        }
        warm_dry_measures.push(m);
    }
    drop(ws);

    // Last, the binary from disk (when it is built): what `csis plan` and
    // `csis run all --no-apply` cost a user, with their peak memory.
    let binary = csis_benches::csis_binary();
    let disk = match (&binary, bench_mode() || runs_from_env().is_some()) {
        (Some(bin), true) => from_disk(&fx, bin, cold_runs),
        _ => Vec::new(),
    };

    let base = plan.best();
    println!();
    println!("{}", fx.describe());
    println!(
        "wall time, best and median of: cold and warm dry run {}; warm re-plans {}; CPU: the least CPU time of all threads in one run (over {} ms only); ratio = best / best cold plan",
        cold_runs.describe(),
        warm_runs.describe(),
        CPU_SHOWN_FROM.as_millis()
    );
    println!();
    println!(
        "| measure | best | median | CPU (least) | ratio to cold plan | queries executed / re-validated |"
    );
    println!("|---|---|---|---|---|---|");
    let rows = [&validate, &plan, &dry_run]
        .into_iter()
        .chain(warm_measures.iter())
        .chain(warm_dry_measures.iter())
        .chain(disk.iter().map(|(m, _)| m));
    for m in rows {
        println!(
            "| {} | {} | {} | {} | {:.4} | {} |",
            m.name,
            ms(m.best()),
            ms(m.median()),
            m.cpu()
                .filter(|_| m.best() >= CPU_SHOWN_FROM)
                .map_or("-".into(), ms),
            m.best().as_secs_f64() / base.as_secs_f64(),
            if m.name.contains("from disk") {
                "- / -".to_string()
            } else {
                format!("{} / {}", m.queries.0, m.queries.1)
            }
        );
    }
    println!();
    match peak_after_dry_run {
        Some(kib) => println!(
            "peak memory (VmHWM) after the first cold dry run: {:.0} MiB",
            kib as f64 / 1024.0
        ),
        None => println!("peak memory: /proc/self/status has no VmHWM here"),
    }
    for (m, kib) in &disk {
        match kib {
            Some(kib) => println!(
                "peak memory (VmHWM, its `--stats` in one more run) of {}: {:.0} MiB",
                m.name,
                *kib as f64 / 1024.0
            ),
            None => println!("peak memory of {}: `--stats` did not say", m.name),
        }
    }
    if disk.is_empty() {
        println!(
            "the binary from disk: not measured ({}; only under `cargo bench` or CSIS_BENCH_RUNS)",
            binary.map_or(
                "no csis binary: `cargo build --release -p csis` or CSIS_BENCH_BIN".into(),
                |b| format!("{}", b.display())
            )
        );
    }
    println!();
    println!("generated files (`--stats`), in the measure's last run:");
    for (label, s) in [
        ("cold dry run", &last_dry),
        (
            "warm dry run after a one-image edit (as `watch --generate`)",
            &warm_dry_summary,
        ),
    ] {
        if let Some(f) = s.as_ref().and_then(|s| s.stats.as_ref()?.generated_files) {
            println!(
                "- {label}: {} written, {} removed, {} unchanged",
                f.written, f.removed, f.unchanged
            );
        }
    }
    println!();
    println!("stages (`--stats`):");
    if let Some(s) = &last_dry {
        stages("cold dry run", s);
    }
    if let Some(s) = &warm_dry_summary {
        stages(
            "warm dry run after a one-image edit (as `watch --generate`)",
            s,
        );
    }
}
