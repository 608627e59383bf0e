//! The apply step: per lifecycle in run order, its deferred commands,
//! logged in a dry run; in a real run executed phase by phase from the
//! private mirror ([`crate::run::mirror`]), each phase between the
//! builders' finalize hooks ([`crate::run::finalize`]), then what the
//! lifecycle's apply leaves in meta-state/ ([`crate::run::records`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use csis_plugin_api::{Builder, LifecycleSpec};

use crate::db::Db;
use crate::load::builders::builders;
use crate::run::bake_graph::{BakeRecord, Segment, segments};
use crate::run::finalize::{builders_in_hook_order, finalize_hooks};
use crate::run::generate::Emission;
use crate::run::script::{self, by_phase};
use crate::run::steps::Runner;
use crate::run::{Level, Progress, RunSummary};

impl Runner<'_> {
    /// The apply step: per lifecycle in run order, its deferred commands
    /// (logged in a dry run, executed in a real one).
    pub(super) fn apply(
        &mut self,
        lifecycles: &[LifecycleSpec],
        requested: &[LifecycleSpec],
        emissions: &BTreeMap<String, Emission>,
        summary: &mut RunSummary,
    ) {
        let ws = self.ws;
        let b = builders(&ws.db, ws.tree);
        let builder_objs = builders_in_hook_order(ws);
        let mut failed = false;
        let mut steps = Progress {
            done: 0,
            total: if self.req.options.dry_run {
                0
            } else {
                lifecycles
                    .iter()
                    .filter_map(|l| emissions.get(l.name))
                    .map(|em| em.deferred.len())
                    .sum()
            },
            current: None,
        };
        for spec in lifecycles {
            let name = spec.name;
            let Some(em) = emissions.get(name) else {
                let script_path = self
                    .gen_dir
                    .join(name)
                    .join(script::runner_script_name(name));
                if requested.iter().all(|r| r.name != name)
                    && self
                        .system
                        .read_bytes(&script_path)
                        .ok()
                        .flatten()
                        .is_some()
                {
                    self.log.line(
                        Level::Warn,
                        format!(
                            "[{name}] stale-script-skipped: run-{name}.sh is from an earlier run of a lifecycle not requested now"
                        ),
                    );
                    summary
                        .apply
                        .insert(name.into(), "stale-script-skipped".into());
                }
                continue;
            };
            let generated = summary
                .lifecycles
                .get(name)
                .is_some_and(|o| o.status == "generated");
            let status = if failed || !generated {
                // A lifecycle that failed to generate stops the run's
                // applies as a failed apply does.
                failed = true;
                "not-attempted"
            } else if em.deferred.is_empty() {
                "no-script"
            } else if self.req.options.dry_run {
                if name == "instance-image"
                    && let Err(e) = self.draw_aliases(true)
                {
                    self.log.line(Level::Error, e);
                }
                for d in &em.deferred {
                    let line = script::command_line(&d.command, &b.executables).unwrap_or_default();
                    self.info(format!(
                        "[DRY RUN] {name}/{}: would execute {line}",
                        d.phase.as_str()
                    ));
                }
                "dry-run"
            } else {
                if name == "instance-image"
                    && self.req.record
                    && let Err(e) = self.draw_aliases(false)
                {
                    self.log.line(Level::Error, e);
                }
                match self.execute_lifecycle(
                    name,
                    em,
                    &builder_objs,
                    &mut steps,
                    &mut summary.bakes,
                ) {
                    Ok(()) => "executed",
                    Err(e) => {
                        self.log.line(Level::Error, e.clone());
                        self.log
                            .line(Level::Error, format!("Apply failed for lifecycle {name}"));
                        summary.ok = false;
                        summary.error.get_or_insert(e);
                        failed = true;
                        "failed"
                    }
                }
            };
            let recorded = match (name, status == "executed" && self.req.record) {
                ("storage", true) => self.record_storage_transitions(),
                ("instance-image", true) => self
                    .mark_launched()
                    .and_then(|()| self.confirm_generations())
                    .and_then(|()| self.forget_ephemerals()),
                _ => Ok(()),
            };
            if let Err(e) = recorded {
                self.log.line(Level::Error, e.clone());
                summary.ok = false;
                summary.error.get_or_insert(e);
            }
            summary.apply.insert(name.into(), status.into());
        }
        if steps.total > 0 {
            steps.current = None;
            self.log.progress(&steps);
        }
    }

    /// A real run's deferred commands, phase by phase, with every builder's
    /// pre/post_finalize_phase around each phase and the run hooks around
    /// the whole. Each command's output is logged as it comes, then its
    /// wall time; the bakes of a phase run as a graph
    /// ([`crate::run::apply_bakes`]), what became of each in `bakes`;
    /// `steps` counts the commands done for the progress.
    fn execute_lifecycle(
        &mut self,
        name: &str,
        em: &Emission,
        builder_objs: &[Box<dyn Builder>],
        steps: &mut Progress,
        bakes: &mut Vec<BakeRecord>,
    ) -> Result<(), String> {
        let hooks = self.ws.db.registry().run_hooks();
        for h in hooks {
            h.before_apply(name)
                .map_err(|e| format!("[{name}] before-apply hook {} failed: {e}", h.name()))?;
        }
        let mirror = self.materialize(name, em)?;
        for (phase, cmds) in by_phase(&em.deferred) {
            let at = format!("{name}/{}", phase.as_str());
            finalize_hooks(builder_objs, phase, true).map_err(|e| format!("[{at}] {e}"))?;
            for segment in segments(&cmds) {
                let cmd = match segment {
                    Segment::Single(cmd) => cmd,
                    Segment::Bakes(graph) => {
                        self.execute_bakes((name, &at), &graph, &mirror, steps, bakes)?;
                        continue;
                    }
                };
                let b = builders(&self.ws.db, self.ws.tree);
                let line = script::command_line(cmd, &b.executables)?;
                if self.req.shard.is_some() {
                    self.info(format!("[{at}] not executed in a shard: {line}"));
                    steps.done += 1;
                    continue;
                }
                steps.current = Some(format!("{at}: {line}"));
                self.log.progress(steps);
                self.info(format!("[{at}] executing {line}"));
                let started = Instant::now();
                let (line, out) = self
                    .execute_streaming(name, &at, cmd, &mirror)
                    .map_err(|e| format!("[{at}] {e}"))?;
                if out.code != Some(0) {
                    return Err(format!(
                        "[{at}] command returned {}: {line}",
                        out.code.map_or("a signal".into(), |c| c.to_string())
                    ));
                }
                self.info(format!(
                    "[{at}] done in {}: {line}",
                    wall_time(started.elapsed())
                ));
                steps.done += 1;
            }
            finalize_hooks(builder_objs, phase, false).map_err(|e| format!("[{at}] {e}"))?;
        }
        self.copy_back_lock_files(name, &mirror)?;
        for h in hooks {
            h.after_apply(name)
                .map_err(|e| format!("[{name}] after-apply hook {} failed: {e}", h.name()))?;
        }
        Ok(())
    }
}

/// A step's wall time as the `done in` line gives it: seconds with one
/// decimal (`0.3s`, `4.0s`), minutes and seconds from a minute on
/// (`2m05s`).
pub(super) fn wall_time(d: Duration) -> String {
    let tenths = d.as_millis() / 100;
    if tenths < 600 {
        format!("{}.{}s", tenths / 10, tenths % 10)
    } else {
        let secs = tenths / 10;
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_times_read_as_seconds_then_minutes() {
        let ms = Duration::from_millis;
        assert_eq!(wall_time(ms(0)), "0.0s");
        assert_eq!(wall_time(ms(349)), "0.3s");
        assert_eq!(wall_time(ms(4_012)), "4.0s");
        assert_eq!(wall_time(ms(59_999)), "59.9s");
        assert_eq!(wall_time(ms(60_000)), "1m00s");
        assert_eq!(wall_time(ms(125_400)), "2m05s");
        assert_eq!(wall_time(ms(7_325_000)), "122m05s");
    }
}
