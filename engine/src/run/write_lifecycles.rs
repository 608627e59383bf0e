//! The generation step: each requested lifecycle's emission (computed by
//! [`crate::run::generate`]) synced to `generated/<lifecycle>/` (with the
//! causes of each rewrite under `--explain`), its read-models, then its
//! run-now commands.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_plugin_api::LifecycleSpec;

use crate::db::emit::{SyncReport, sync_dir};
use crate::db::stats::FileCounts;
use crate::run::generate::Emission;
use crate::run::steps::Runner;
use crate::run::{Explained, Level, LifecycleOutcome, RunSummary};

/// Under a runtime scope, builder directories bound to other runtimes stay
/// as they are.
fn frozen(scope: Option<String>, em: &Emission) -> impl Fn(&str) -> bool + Sync + '_ {
    move |rel: &str| {
        let Some(scope) = &scope else { return false };
        let top = rel.split('/').next().unwrap_or_default();
        em.builder_runtimes.get(top).is_some_and(|rt| rt != scope)
    }
}

impl Runner<'_> {
    /// Every requested lifecycle's directory, computed in parallel and
    /// written in parallel (each lifecycle's directory is its own); then,
    /// in declared order, what each write reports, its read-models and its
    /// run-now commands.
    pub(super) fn generate(
        &mut self,
        requested: &[LifecycleSpec],
        summary: &mut RunSummary,
    ) -> BTreeMap<String, Emission> {
        let ws = self.ws;
        let names: Vec<&str> = requested.iter().map(|l| l.name).collect();
        let generated = crate::run::generate::emissions(&ws.db, ws.tree, self.run_input, &names);
        ws.db.generated_seen().new_pass();
        // `--explain` reads each file before it is rewritten.
        if let Some(explained) = summary.explain.as_mut() {
            for (spec, em) in requested.iter().zip(&generated) {
                if em.error.is_none() {
                    let frozen = self.frozen(em);
                    self.explain_rewrites(spec.name, em, &frozen, explained);
                }
            }
        }
        let written = self.write_lifecycles(requested, &generated);
        let mut counts = FileCounts::default();
        let mut emissions = BTreeMap::new();
        for ((spec, em), write) in requested.iter().zip(generated).zip(written) {
            let name = spec.name;
            let mut outcome = LifecycleOutcome {
                deferred_commands: em.deferred.len(),
                runner_script: em
                    .runner_script(name)
                    .map(|s| format!("{}/{name}/{s}", self.gen_dir_name)),
                status: "generated".into(),
                error: None,
            };
            let result = match (&em.error, write) {
                (Some(e), _) => {
                    summary
                        .error
                        .get_or_insert_with(|| format!("Generation failed for lifecycle {name}"));
                    Err(e.clone())
                }
                (None, None) => Err(format!("[{name}] not written")),
                (None, Some(Err(e))) => Err(e),
                (None, Some(Ok(r))) => {
                    self.info(format!(
                        "[{name}] generated: {} written, {} removed, {} unchanged",
                        r.written.len(),
                        r.removed.len(),
                        r.unchanged
                    ));
                    counts.written += r.written.len();
                    counts.removed += r.removed.len();
                    counts.unchanged += r.unchanged;
                    self.write_read_models(name)
                        .and_then(|()| self.run_build_commands(name, &em))
                }
            };
            if let Err(e) = result {
                self.log.line(Level::Error, e.clone());
                outcome.status = "failed".into();
                outcome.error = Some(e.clone());
                summary.ok = false;
                summary.error.get_or_insert(e);
            }
            summary.lifecycles.insert(name.to_string(), outcome);
            emissions.insert(name.to_string(), em);
        }
        if let Some(stats) = summary.stats.as_mut() {
            stats.generated_files = Some(counts);
        }
        emissions
    }

    fn frozen<'e>(&self, em: &'e Emission) -> impl Fn(&str) -> bool + Sync + 'e {
        frozen(self.req.options.only_runtime.clone(), em)
    }

    /// Sync every lifecycle's directory that generated, in parallel (each
    /// writes its own directory only); `None` for one that failed to
    /// generate. In requested order.
    fn write_lifecycles(
        &self,
        requested: &[LifecycleSpec],
        generated: &[Emission],
    ) -> Vec<Option<Result<SyncReport, String>>> {
        use rayon::prelude::*;
        // The generated tree is committed: the public-safe hard rules see
        // every file of a lifecycle before any of it is written (a template
        // that renders a secret, from the environment say, stops here).
        let gate = crate::state::meta_state::Gate::load(self.system, &self.ws.root);
        let config = crate::state::meta_state::Gate::config_text(self.system, &self.ws.root);
        let passed = self.ws.db.gate_passed();
        let seen = self.ws.db.generated_seen();
        let (system, gen_dir, gen_dir_name) = (self.system, &self.gen_dir, &self.gen_dir_name);
        let scope = &self.req.options.only_runtime;
        requested
            .par_iter()
            .zip(generated.par_iter())
            .map(|(spec, em)| {
                if em.error.is_some() {
                    return None;
                }
                let name = spec.name;
                let dir = gen_dir.join(name);
                let write = || -> Result<SyncReport, String> {
                    // What the gate passed with these very bytes in this
                    // process is not scanned again.
                    let paths: Vec<(String, &Arc<[u8]>)> = {
                        let mut passed = passed.lock().unwrap_or_else(|e| e.into_inner());
                        em.files
                            .iter()
                            .map(|(rel, bytes)| (format!("{gen_dir_name}/{name}/{rel}"), bytes))
                            .filter(|(path, bytes)| !passed.has(&config, path, bytes))
                            .collect()
                    };
                    for (path, bytes) in &paths {
                        gate.check(path, &String::from_utf8_lossy(bytes))?;
                    }
                    let mut passed = passed.lock().unwrap_or_else(|e| e.into_inner());
                    for (path, bytes) in paths {
                        passed.insert(path, bytes.clone());
                    }
                    drop(passed);
                    let frozen = frozen(scope.clone(), em);
                    sync_dir(system, &dir, &em.files, &em.executables, &frozen, seen)
                        .map_err(|e| format!("writing {}: {e}", dir.display()))
                };
                Some(write())
            })
            .collect()
    }

    /// Before the sync: why each file it will rewrite differs from the one
    /// on disk.
    fn explain_rewrites(
        &mut self,
        name: &str,
        em: &Emission,
        frozen: &dyn Fn(&str) -> bool,
        explained: &mut Explained,
    ) {
        let dir = self.gen_dir.join(name);
        let seen = self.ws.db.generated_seen();
        for (rel, bytes) in em.files.iter().filter(|(rel, _)| !frozen(rel)) {
            if seen.holds(self.system, &dir.join(rel), bytes) {
                continue;
            }
            let old = self.system.read_bytes(&dir.join(rel)).ok().flatten();
            if old.as_deref() == Some(&bytes[..]) {
                continue;
            }
            let path = format!("{}/{name}/{rel}", self.gen_dir_name);
            let lines = crate::run::explain::explain_rewrite(
                self.ws,
                self.run_input,
                rel,
                old.as_deref(),
                bytes,
            );
            self.info(format!("explain: rewrote {path}:"));
            for line in &lines {
                self.info(format!("    {line}"));
            }
            explained.rewritten.insert(path, lines);
        }
    }

    /// Run-now commands (formatters, validators), in hook order.
    fn run_build_commands(&mut self, lifecycle: &str, em: &Emission) -> Result<(), String> {
        let dir = self.gen_dir.join(lifecycle);
        for cmd in &em.build {
            let (line, out) = self.execute(lifecycle, cmd, &dir)?;
            if out.code != Some(0) {
                for l in out.stdout.lines().chain(out.stderr.lines()) {
                    self.log.line(Level::Warn, format!("[{lifecycle}] {l}"));
                }
                return Err(format!(
                    "[{lifecycle}] Command failed: {line} (Return code: {})",
                    out.code.map_or("signal".into(), |c| c.to_string())
                ));
            }
        }
        Ok(())
    }
}
