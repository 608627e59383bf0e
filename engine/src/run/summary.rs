//! The run's outcome and its last step: the journal entry, the commit
//! when asked ([`crate::run::commit`]), generated/run-summary.json and the
//! on-summary hooks.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::json;

use crate::db::Db;
use crate::db::stats::Stats;
use crate::run::Level;
use crate::run::steps::Runner;
use crate::state::meta_state;

/// One lifecycle's generation outcome.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LifecycleOutcome {
    /// generated, failed, or not-requested... only requested ones appear.
    pub status: String,
    pub runner_script: Option<String>,
    pub deferred_commands: usize,
    pub error: Option<String>,
}

/// generated/run-summary.json.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    pub requested: Vec<String>,
    pub dry_run: bool,
    pub ok: bool,
    pub validation_errors: Vec<String>,
    /// In run order.
    pub lifecycles: IndexMap<String, LifecycleOutcome>,
    /// Per lifecycle, in run order: executed, dry-run, no-script,
    /// stale-script-skipped, failed, not-attempted.
    pub apply: IndexMap<String, String>,
    pub meta_state_commit: Option<String>,
    pub error: Option<String>,
    /// Drift counts of the state query, per class, `hard` and
    /// `unavailable`.
    pub state: BTreeMap<String, u64>,
    pub overlays: Vec<String>,
    pub undeclared: Vec<String>,
    pub bake_plan: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explained>,
    /// Refused before its first step (no configuration, an unknown
    /// lifecycle, a bad selection): nothing was written, not even the
    /// journal entry or this summary.
    #[serde(skip)]
    pub not_started: bool,
}

/// `--explain`: the causes of each bake (`<series>@<runtime>`) and of each
/// rewritten generated file (its path under the generated directory).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Explained {
    pub bakes: BTreeMap<String, Vec<String>>,
    pub rewritten: BTreeMap<String, Vec<String>>,
}

impl Runner<'_> {
    /// Record the run in the journal, commit when asked, write the summary,
    /// then call the on-summary hooks. A record or summary csis cannot
    /// write fails the run, naming the file.
    pub(super) fn finish(mut self, mut summary: RunSummary) -> RunSummary {
        if !self.req.record {
            return summary;
        }
        let entry = json!({
            "run": summary.run_id,
            "requested": summary.requested,
            "dry_run": summary.dry_run,
            "ok": summary.ok,
            "apply": summary.apply,
            "error": summary.error,
        });
        if let Err(e) = meta_state::record_run(self.system, &self.ws.root, entry) {
            self.failed_to_write(&mut summary, format!("could not record the run: {e}"));
        }
        if self.req.commit && summary.ok {
            self.commit(&mut summary);
        }
        let path = self.gen_dir.join("run-summary.json");
        let json = serde_json::to_string_pretty(&summary).unwrap_or_else(|_| "{}".into());
        if let Err(e) = self
            .system
            .write_atomic(&path, format!("{json}\n").as_bytes(), false)
        {
            // The error names the file.
            self.failed_to_write(
                &mut summary,
                format!("could not write the run summary: {e}"),
            );
        }
        for h in self.ws.db.registry().run_hooks() {
            if let Err(e) = h.on_summary(&json) {
                self.log.line(
                    Level::Warn,
                    format!("on-summary hook {} failed: {e}", h.name()),
                );
            }
        }
        summary
    }

    fn failed_to_write(&mut self, summary: &mut RunSummary, error: String) {
        self.log.line(Level::Error, error.clone());
        summary.ok = false;
        summary.error.get_or_insert(error);
    }
}
