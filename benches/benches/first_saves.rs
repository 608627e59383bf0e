//! Issue 20's measure: a warm workspace (as `csis watch` keeps it), then
//! the first save of each of several distinct files, each followed by a
//! re-plan: time and queries executed / re-validated per save.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use csis_benches::harness::{self, Fixture};

fn main() {
    let fx = Fixture::from_env();
    println!("{}", fx.describe());
    let (sys, mut ws) = fx.warmed();
    let mut times = Vec::new();
    for mut edit in harness::first_saves(&fx) {
        let before = ws.db.query_log().counts();
        let t = Instant::now();
        edit.apply(&mut ws);
        harness::plan(&ws, &sys);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let after = ws.db.query_log().counts();
        println!(
            "{:>8.1} ms  {:>7} executed {:>8} re-validated  {}",
            ms,
            after.0 - before.0,
            after.1 - before.1,
            edit.path
        );
        times.push(ms);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "first saves: median {:.1} ms, worst {:.1} ms",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}
