//! divan benchmarks of the engine on a synthetic tree held in a
//! `MemorySystem`: cold validate, plan and dry run with generation (each
//! from a fresh system and a fresh load), then warm re-plans on one loaded
//! workspace after no edit and after each kind of edit, alternating between
//! two texts so every iteration is a real change.
//!
//! `cargo bench -p csis-benches --bench engine` runs the reference tree;
//! `CSIS_BENCH_SIZE=small` a small one. Under `cargo test` (no `--bench`)
//! each benchmark runs once, on the small tree unless `CSIS_BENCH_SIZE` says
//! otherwise. Slow benchmarks stop at `max_time` (40 s cold, 30 s warm)
//! with fewer samples. The ratios of warm to cold are printed by the
//! `summary` bench.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::sync::LazyLock;

use csis_benches::harness::{self, EditKind, Fixture};
use divan::Bencher;

/// The allocator of the `csis` binary, so the benches time what it runs.
#[global_allocator]
static GLOBAL: csis_alloc::Allocator = csis_alloc::Allocator;

static FIXTURE: LazyLock<Fixture> = LazyLock::new(Fixture::from_env);

fn main() {
    eprintln!("{}", FIXTURE.describe());
    divan::main();
}

/// Each sample is one cold operation from a fresh memory system; the
/// workspace is dropped outside the timing.
mod cold {
    use super::*;

    #[divan::bench(sample_count = 5, sample_size = 1, max_time = 40)]
    fn validate(b: Bencher) {
        let fx = &*FIXTURE;
        b.with_inputs(|| fx.system()).bench_local_values(|sys| {
            let ws = fx.load(&sys);
            harness::validate(&ws, &sys);
            (ws, sys)
        });
    }

    #[divan::bench(sample_count = 5, sample_size = 1, max_time = 40)]
    fn plan(b: Bencher) {
        let fx = &*FIXTURE;
        b.with_inputs(|| fx.system()).bench_local_values(|sys| {
            let ws = fx.load(&sys);
            let report = harness::plan(&ws, &sys);
            (report, ws, sys)
        });
    }

    #[divan::bench(sample_count = 5, sample_size = 1, max_time = 40)]
    fn dry_run(b: Bencher) {
        let fx = &*FIXTURE;
        b.with_inputs(|| fx.system()).bench_local_values(|sys| {
            let ws = fx.load(&sys);
            let summary = harness::dry_run(&ws, &sys, false);
            (summary, ws, sys)
        });
    }
}

/// One workspace, loaded and planned once before timing; each sample is
/// one re-plan (after one edit, for the edits).
mod warm {
    use super::*;

    fn edit_then_plan(b: Bencher, kind: EditKind) {
        let (sys, mut ws) = FIXTURE.warmed();
        let mut edit = kind.edit(&FIXTURE);
        b.bench_local(|| {
            edit.apply(&mut ws);
            harness::plan(&ws, &sys)
        });
    }

    #[divan::bench(sample_count = 20, sample_size = 1, max_time = 30)]
    fn noop(b: Bencher) {
        let (sys, ws) = FIXTURE.warmed();
        b.bench_local(|| harness::plan(&ws, &sys));
    }

    #[divan::bench(sample_count = 20, sample_size = 1, max_time = 30)]
    fn image_description(b: Bencher) {
        edit_then_plan(b, EditKind::ImageDescription);
    }

    #[divan::bench(sample_count = 20, sample_size = 1, max_time = 30)]
    fn image_modification(b: Bencher) {
        edit_then_plan(b, EditKind::ImageModification);
    }

    #[divan::bench(sample_count = 20, sample_size = 1, max_time = 30)]
    fn user(b: Bencher) {
        edit_then_plan(b, EditKind::User);
    }

    #[divan::bench(sample_count = 20, sample_size = 1, max_time = 30)]
    fn comment(b: Bencher) {
        edit_then_plan(b, EditKind::Comment);
    }

    #[divan::bench(sample_count = 5, sample_size = 1, max_time = 40)]
    fn cfg(b: Bencher) {
        edit_then_plan(b, EditKind::Cfg);
    }
}
