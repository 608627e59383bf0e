//! What keying each item file's findings by the inputs it read costs, and
//! how far an edit reaches: the measure the persisted cache (issue 40) is
//! designed from. A planned workspace, then every item file's findings'
//! inputs collected (`file_findings_inputs`, salsa's accumulated reads),
//! timed against the cold load and plan of the same run; then, per kind
//! of file, how many findings units an edit of one such file reaches.
//!
//! `cargo bench -p csis-benches --bench cache_keys` (the reference tree;
//! `CSIS_BENCH_SIZE=small` for a quick run).
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::collections::BTreeMap;
use std::time::Instant;

use csis_benches::harness::{self, Fixture};
use csis_engine::check::item_checks::file_findings_inputs;

fn main() {
    let fx = Fixture::from_env();
    println!("{}", fx.describe());
    let sys = fx.system();
    let t = Instant::now();
    let ws = fx.load(&sys);
    harness::plan(&ws, &sys);
    let cold = t.elapsed().as_secs_f64() * 1e3;
    let files: Vec<_> = csis_engine::db::reads::item_files(&ws.db, ws.tree).clone();
    let t = Instant::now();
    let units: Vec<(String, Vec<String>)> = files
        .iter()
        .map(|f| {
            (
                f.file.path(&ws.db).to_string(),
                file_findings_inputs(&ws.db, f.file),
            )
        })
        .collect();
    let collect = t.elapsed().as_secs_f64() * 1e3;
    // The same again on every core, from a fresh plan: what a cold run
    // that writes the cache would pay.
    let ws2 = fx.load(&sys);
    harness::plan(&ws2, &sys);
    let t = Instant::now();
    let parallel: usize = {
        use rayon::prelude::*;
        let tree = ws2.tree;
        let files2: Vec<_> = csis_engine::db::reads::item_files(&ws2.db, tree)
            .iter()
            .map(|f| f.file)
            .collect();
        files2
            .par_iter()
            .map_with(ws2.db.clone(), |db, file| {
                file_findings_inputs(db, *file).len()
            })
            .sum()
    };
    let collect_par = t.elapsed().as_secs_f64() * 1e3;
    let inputs: usize = units.iter().map(|(_, i)| i.len()).sum();
    let widest = units.iter().map(|(_, i)| i.len()).max().unwrap_or(0);
    println!("cold load and plan {cold:.1} ms");
    assert_eq!(parallel, units.iter().map(|(_, i)| i.len()).sum::<usize>());
    println!(
        "on every core: {collect_par:.1} ms ({:.0}% of the cold plan)",
        100.0 * collect_par / cold
    );
    println!(
        "every unit's inputs collected in {collect:.1} ms ({:.0}% of the cold plan): {} units, {:.1} inputs each on average, {widest} at most",
        100.0 * collect / cold,
        units.len(),
        inputs as f64 / units.len().max(1) as f64
    );
    // For each text, the units that read it; then per directory, the mean
    // and most units one file of it reaches.
    let mut readers: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, inputs) in &units {
        for i in inputs {
            if let Some(path) = i.strip_prefix("text ") {
                *readers.entry(path).or_default() += 1;
            }
        }
    }
    let mut by_dir: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (path, n) in &readers {
        let dir = path.split('/').next().unwrap_or(path);
        by_dir.entry(dir).or_default().push(*n);
    }
    for (dir, counts) in &by_dir {
        let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
        let max = counts.iter().max().unwrap_or(&0);
        println!(
            "an edit of a {dir}/ file reaches {mean:.1} units on average, {max} at most ({} files)",
            counts.len()
        );
    }
    for field in ["field Index", "field ItemFiles", "clock", "env *"] {
        let n = units
            .iter()
            .filter(|(_, i)| i.iter().any(|x| x == field))
            .count();
        println!("units that read {field}: {n}");
    }
}
