//! Issue 20's measure, as people edit: a warm workspace (as `csis watch`
//! keeps it), then the first save of each of several distinct files, each
//! followed by a re-plan (time, queries executed and re-validated); then,
//! in the same workspace and run, the alternating one-image edit of the
//! summary bench, for a same-run comparison.
//!
//! `cargo bench -p csis-benches --bench first_saves` (the reference tree;
//! `CSIS_BENCH_SIZE=small` for a quick run).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::time::Instant;

use csis_benches::harness::{self, EditKind, Fixture};
use csis_engine::workspace::Workspace;

/// Apply `edit` and re-plan: wall time in ms, and (executed, re-validated).
fn save(
    ws: &mut Workspace,
    sys: &csis_engine::db::system::MemorySystem,
    edit: &mut harness::Edit,
) -> (f64, (u64, u64)) {
    let before = ws.db.query_log().counts();
    let t = Instant::now();
    edit.apply(ws);
    harness::plan(ws, sys);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let after = ws.db.query_log().counts();
    (ms, (after.0 - before.0, after.1 - before.1))
}

fn median_and_worst(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[times.len() - 1])
}

fn main() {
    let fx = Fixture::from_env();
    println!("{}", fx.describe());
    let (sys, mut ws) = fx.warmed();
    let mut first = Vec::new();
    for mut edit in harness::first_saves(&fx) {
        let (ms, (executed, revalidated)) = save(&mut ws, &sys, &mut edit);
        println!(
            "first save {:>8.1} ms  {executed:>6} executed {revalidated:>7} re-validated  {}",
            ms, edit.path
        );
        first.push(ms);
    }
    let mut alternating = Vec::new();
    let mut edit = EditKind::ImageModification.edit(&fx);
    for _ in 0..12 {
        let (ms, (executed, revalidated)) = save(&mut ws, &sys, &mut edit);
        println!(
            "alternating {:>7.1} ms  {executed:>6} executed {revalidated:>7} re-validated  {}",
            ms, edit.path
        );
        alternating.push(ms);
    }
    let (fm, fw) = median_and_worst(first);
    let (am, aw) = median_and_worst(alternating);
    println!("first saves: median {fm:.1} ms, worst {fw:.1} ms");
    println!("alternating one-image edit: median {am:.1} ms, worst {aw:.1} ms");
    println!("first / alternating (medians): {:.2}", fm / am);
}
