//! The warm dry run with generation after a one-image edit, alone: what
//! `csis watch --generate` pays per save. One workspace loaded, planned and
//! generated once, then N times: the modification-script edit of
//! `harness::IMAGE_FILE` and a dry run of every lifecycle, as `csis watch
//! --generate` makes it (no records; `CSIS_WARM_RECORD=1` for `run all
//! --no-apply`'s, which leaves them).
//! Prints per run the wall time, the generate stage, the queries executed
//! and the files the run wrote (from its log lines).
//!
//! `CSIS_BENCH_SIZE=reference cargo run --release -p csis-benches --example
//! warm_dry -- 5`
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::path::PathBuf;
use std::time::Instant;

use csis_benches::harness::{self, EditKind, Fixture};
use csis_engine::db::Db as _;
use csis_engine::run::{Level, RunRequest};

#[global_allocator]
static GLOBAL: csis_alloc::Allocator = csis_alloc::Allocator;

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map_or(5, |a| a.parse().expect("a number of runs"));
    let fx = Fixture::from_env();
    eprintln!("{}", fx.describe());
    let (sys, mut ws) = fx.warmed();
    let req = RunRequest {
        shard: None,
        lifecycles: harness::lifecycles(ws.db.registry()),
        options: harness::dry_run_options(),
        no_apply: true,
        csis: PathBuf::from("csis"),
        commit: false,
        // As `csis watch --generate` (no records), unless CSIS_WARM_RECORD=1:
        // then as `csis run all --no-apply`, which leaves its records.
        record: std::env::var("CSIS_WARM_RECORD").is_ok_and(|v| v == "1"),
        stats: true,
        explain: false,
        no_state_query: true,
        jobs: 0,
        fail_fast: false,
        lock_token: None,
        carried_env: Vec::new(),
    };
    let written = std::cell::Cell::new(0usize);
    let mut log = |_: Level, line: String| {
        if let Some(rest) = line.split("generated: ").nth(1)
            && let Some(n) = rest.split(' ').next().and_then(|n| n.parse::<usize>().ok())
        {
            written.set(written.get() + n);
        }
    };
    let t = Instant::now();
    let s = csis_engine::run::run(&ws, &sys, &req, &mut log);
    assert!(s.ok, "{:?}", s.error);
    println!("cold generation: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let mut edit = EditKind::ImageModification.edit(&fx);
    let mut times = Vec::new();
    for _ in 0..runs {
        written.set(0);
        let before = ws.db.query_log().counts();
        let t = Instant::now();
        edit.apply(&mut ws);
        let s = csis_engine::run::run(&ws, &sys, &req, &mut log);
        let wall = t.elapsed().as_secs_f64() * 1e3;
        assert!(s.ok, "{:?}", s.error);
        let after = ws.db.query_log().counts();
        let generate = s
            .stats
            .as_ref()
            .and_then(|st| st.stages.get("generate"))
            .map_or(0.0, |g| g.ms);
        println!(
            "warm dry run: {wall:.1} ms (generate {generate:.1} ms), {} executed / {} re-validated, {} files written",
            after.0 - before.0,
            after.1 - before.1,
            written.get()
        );
        times.push(wall);
    }
    times.sort_by(f64::total_cmp);
    println!("median {:.1} ms", times[times.len() / 2]);
}
