//! A real run's graph of bakes executed (`bake_graph::Segment::Bakes`):
//! each bake's steps in order on a thread of its own, a bake as soon as
//! the bakes it comes after are baked, at most `--jobs` at once (bakes on
//! the local runtime also at most this machine's cores). Every line a
//! bake prints is logged as `[<series>@<runtime>] line` the moment it
//! comes. A failed bake stops its descendants (not attempted, with the
//! reason) and lets the others finish; `--fail-fast` stops starting any.
//! A shard (`--shard DIR`) keeps each bake's manifest in DIR in place of
//! its `lineage record` step.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Sender, channel};
use std::time::{Duration, Instant};

use crate::db::system::{Process, System};
use crate::run::bake_graph::{Bake, BakeRecord};
use crate::run::steps::Runner;
use crate::run::{Level, Progress};

/// `--jobs` when not given: bakes on a cloud keep a remote machine busy,
/// not this one, so more than this machine's cores run well at once.
pub const DEFAULT_JOBS: usize = 4;

/// What a bake's thread tells the runner.
enum Event {
    /// A step starts: its shell line.
    Step(usize, String),
    /// A line the step printed.
    Line(usize, String),
    /// A step ended well, after so long.
    StepDone(usize, String, Duration),
    /// The bake ended: baked, or why not.
    Done(usize, Result<(), String>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Running,
    Baked,
    Failed,
    NotAttempted,
}

/// One step of a bake as this run takes it.
enum Work {
    /// Execute the command: its shell line, the process.
    Run(String, Process),
    /// A shard's stand-in for the `lineage record` step: copy the bake's
    /// manifest to where the shard keeps it.
    Keep { from: PathBuf, to: PathBuf },
}

/// Run one bake's steps in order; the first that fails ends it.
fn run_bake(system: &dyn System, i: usize, steps: &[Work], tx: &Sender<Event>) {
    let mut result = Ok(());
    for step in steps {
        let started = Instant::now();
        let (line, process) = match step {
            Work::Run(line, process) => (line, process),
            Work::Keep { from, to } => {
                match keep_manifest(system, from, to) {
                    Ok(()) => {
                        // A step of the bake like the one it stands in
                        // for: the progress counts it done.
                        let kept = format!("kept {} as {}", from.display(), to.display());
                        let _ = tx.send(Event::StepDone(i, kept, started.elapsed()));
                    }
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
                continue;
            }
        };
        let _ = tx.send(Event::Step(i, line.clone()));
        let out = system.run_streaming(process, &mut |_, l| {
            let _ = tx.send(Event::Line(i, l.to_string()));
        });
        match out {
            Err(e) => {
                result = Err(format!("command failed: {line}: {e}"));
                break;
            }
            Ok(out) if out.code != Some(0) => {
                result = Err(format!(
                    "command returned {}: {line}",
                    out.code.map_or("a signal".into(), |c| c.to_string())
                ));
                break;
            }
            Ok(_) => {
                let _ = tx.send(Event::StepDone(i, line.clone(), started.elapsed()));
            }
        }
    }
    let _ = tx.send(Event::Done(i, result));
}

/// A shard's copy of a bake's manifest, whole or not at all.
fn keep_manifest(system: &dyn System, from: &Path, to: &Path) -> Result<(), String> {
    let bytes = system
        .read_bytes(from)
        .map_err(|e| format!("reading the bake's manifest {}: {e}", from.display()))?
        .ok_or_else(|| {
            format!(
                "the bake wrote no manifest at {} (a shard keeps it for `csis lineage record`)",
                from.display()
            )
        })?;
    system
        .write_atomic(to, &bytes, false)
        .map_err(|e| format!("keeping the bake's manifest as {}: {e}", to.display()))
}

impl Runner<'_> {
    /// The bakes of one segment, from `dir` (the lifecycle's mirror); what
    /// became of each is appended to `records`. `Err` names every bake
    /// that failed (and the run fails), after every bake that could run
    /// has run.
    pub(super) fn execute_bakes(
        &mut self,
        (lifecycle, at): (&str, &str),
        bakes: &[Bake<'_>],
        dir: &Path,
        steps: &mut Progress,
        records: &mut Vec<BakeRecord>,
    ) -> Result<(), String> {
        let mut work = Vec::with_capacity(bakes.len());
        for b in bakes {
            let mut cmds = Vec::with_capacity(b.commands.len());
            for c in &b.commands {
                let (line, process) = self.process(lifecycle, c, dir)?;
                cmds.push(match (&self.req.shard, c.recorded_manifest()) {
                    (Some(keep), Some(_)) => Work::Keep {
                        // The step's own argument, expanded, from its
                        // own directory.
                        from: process
                            .cwd
                            .join(process.args.last().map_or("", String::as_str)),
                        to: keep.join(format!("{}.json", b.key)),
                    },
                    _ => Work::Run(line, process),
                });
            }
            work.push(cmds);
        }
        let jobs = match self.req.jobs {
            0 => DEFAULT_JOBS,
            n => n,
        };
        let local_jobs = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(jobs);
        let n = bakes.len();
        let mut state = vec![State::Pending; n];
        let mut reason: Vec<Option<String>> = vec![None; n];
        let mut times: Vec<(Option<i64>, Option<i64>)> = vec![(None, None); n];
        let system = self.system;
        let fail_fast = self.req.fail_fast;
        let (mut running, mut running_local) = (0usize, 0usize);
        std::thread::scope(|scope| {
            let (tx, rx) = channel();
            let mut stop = false;
            loop {
                for i in 0..n {
                    if state[i] != State::Pending {
                        continue;
                    }
                    let blocked = bakes[i]
                        .after
                        .iter()
                        .find(|&&j| matches!(state[j], State::Failed | State::NotAttempted));
                    let why = match (blocked, stop) {
                        (Some(&j), _) => format!("not attempted: {} did not bake", bakes[j].key),
                        (None, true) => {
                            "not attempted: the run stops at the first failure (--fail-fast)"
                                .to_string()
                        }
                        (None, false) => continue,
                    };
                    self.log
                        .line(Level::Warn, format!("[{}] {why}", bakes[i].key));
                    state[i] = State::NotAttempted;
                    reason[i] = Some(why);
                }
                for i in 0..n {
                    if running >= jobs {
                        break;
                    }
                    let ready = state[i] == State::Pending
                        && bakes[i].after.iter().all(|&j| state[j] == State::Baked)
                        && (!bakes[i].local || running_local < local_jobs);
                    if !ready {
                        continue;
                    }
                    state[i] = State::Running;
                    running += 1;
                    running_local += usize::from(bakes[i].local);
                    times[i].0 = Some(system.now_unix());
                    let (tx, steps) = (tx.clone(), &work[i]);
                    scope.spawn(move || run_bake(system, i, steps, &tx));
                }
                if running == 0 {
                    break;
                }
                let in_flight: Vec<&str> = (0..n)
                    .filter(|&i| state[i] == State::Running)
                    .map(|i| bakes[i].key)
                    .collect();
                steps.current = Some(format!("{at}: baking {}", in_flight.join(", ")));
                self.log.progress(steps);
                let Ok(event) = rx.recv() else {
                    break;
                };
                match event {
                    Event::Step(i, line) => {
                        self.info(format!("[{}] executing {line}", bakes[i].key));
                    }
                    Event::Line(i, line) => self.info(format!("[{}] {line}", bakes[i].key)),
                    Event::StepDone(i, line, took) => {
                        self.info(format!(
                            "[{}] done in {}: {line}",
                            bakes[i].key,
                            super::apply::wall_time(took)
                        ));
                        steps.done += 1;
                    }
                    Event::Done(i, result) => {
                        times[i].1 = Some(system.now_unix());
                        running -= 1;
                        running_local -= usize::from(bakes[i].local);
                        match result {
                            Ok(()) => state[i] = State::Baked,
                            Err(e) => {
                                self.log
                                    .line(Level::Error, format!("[{}] {e}", bakes[i].key));
                                state[i] = State::Failed;
                                reason[i] = Some(e);
                                stop |= fail_fast;
                            }
                        }
                    }
                }
            }
        });
        let iso = |t: Option<i64>| t.map(csis_string_stage::clock::iso_datetime);
        let mut failed = Vec::new();
        for (i, b) in bakes.iter().enumerate() {
            let outcome = match state[i] {
                State::Baked => "baked",
                State::Failed => {
                    failed.push((b.key, reason[i].as_deref().unwrap_or_default()));
                    "failed"
                }
                _ => "not-attempted",
            };
            records.push(BakeRecord {
                lifecycle: lifecycle.to_string(),
                bake: b.key.to_string(),
                outcome: outcome.into(),
                started: iso(times[i].0),
                ended: iso(times[i].1),
                reason: reason[i].clone(),
            });
        }
        match failed.as_slice() {
            [] => Ok(()),
            [(key, why)] => Err(format!("[{at}] bake {key} failed ({why})")),
            all => Err(format!(
                "[{at}] {} bakes failed: {}",
                all.len(),
                all.iter()
                    .map(|(key, why)| format!("{key} ({why})"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    }
}
