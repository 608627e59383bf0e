//! `--stats`: wall time, queries salsa executed and memoized results it
//! re-validated, per stage, and the process's peak memory.

use std::time::Instant;

use indexmap::IndexMap;
use serde::Serialize;

use crate::db::Database;
use crate::db::system::System;

/// Per stage in the order the stages ran, and the peak memory.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    pub stages: IndexMap<String, StageStats>,
    /// VmHWM of /proc/self/status, when the system has it.
    pub peak_memory_kib: Option<u64>,
    /// What generation did to the files of the generated directories
    /// (a run only): a file whose bytes did not change is not written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_files: Option<FileCounts>,
}

/// Generated files, over every requested lifecycle's directory.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct FileCounts {
    /// Written because new or changed.
    pub written: usize,
    /// Stale: no longer generated, removed.
    pub removed: usize,
    /// Generated with the bytes already on disk: not written.
    pub unchanged: usize,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct StageStats {
    pub ms: f64,
    /// Queries salsa executed in the stage.
    pub executed: u64,
    /// Memoized results salsa re-validated without executing.
    pub reused: u64,
}

/// Where the current stage started: its time and the query counts.
pub struct StageClock {
    start: (Instant, (u64, u64)),
}

impl StageClock {
    pub fn start(db: &Database) -> StageClock {
        StageClock {
            start: (Instant::now(), db.query_log().counts()),
        }
    }

    /// Close a stage: its time and counts since the last mark, into
    /// `stats` when stats were asked for.
    pub fn mark(&mut self, db: &Database, stats: Option<&mut Stats>, stage: &str) {
        let now = (Instant::now(), db.query_log().counts());
        let (t0, (e0, r0)) = std::mem::replace(&mut self.start, now);
        if let Some(stats) = stats {
            stats.stages.insert(
                stage.to_string(),
                StageStats {
                    ms: (now.0 - t0).as_secs_f64() * 1e3,
                    executed: now.1.0 - e0,
                    reused: now.1.1 - r0,
                },
            );
        }
    }
}

/// The process's peak resident memory (VmHWM), where /proc has it.
pub fn peak_memory_kib(system: &dyn System) -> Option<u64> {
    let status = system
        .read_to_string(std::path::Path::new("/proc/self/status"))
        .ok()??;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The lines `--stats` prints.
pub fn describe(stats: &Stats) -> Vec<String> {
    let mut out: Vec<String> = stats
        .stages
        .iter()
        .map(|(stage, st)| {
            format!(
                "stats: {stage}: {:.1} ms, {} queries executed, {} reused",
                st.ms, st.executed, st.reused
            )
        })
        .collect();
    if let Some(f) = stats.generated_files {
        out.push(format!(
            "stats: generated files: {} written, {} removed, {} unchanged",
            f.written, f.removed, f.unchanged
        ));
    }
    if let Some(kib) = stats.peak_memory_kib {
        out.push(format!("stats: peak memory {:.1} MiB", kib as f64 / 1024.0));
    }
    out
}
