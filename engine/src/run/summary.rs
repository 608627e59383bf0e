//! The run's last step: the journal entry, the commit when asked
//! ([`crate::run::commit`]), generated/run-summary.json and the
//! on-summary hooks.

use serde_json::json;

use crate::db::Db;
use crate::run::steps::Runner;
use crate::run::{Level, RunSummary};
use crate::state::meta_state;

impl Runner<'_> {
    /// Record the run in the journal, commit when asked, write the summary,
    /// then call the on-summary hooks. A record or summary csis cannot
    /// write fails the run, naming the file.
    pub(super) fn finish(mut self, mut summary: RunSummary) -> RunSummary {
        // A shard records nothing, but its bakes' outcomes are the CI
        // job's to keep.
        if self.req.shard.is_some() {
            self.write_summary(&mut summary);
        }
        if !self.req.record {
            return summary;
        }
        let mut entry = json!({
            "run": summary.run_id,
            "requested": summary.requested,
            "dry_run": summary.dry_run,
            "ok": summary.ok,
            "apply": summary.apply,
            "error": summary.error,
        });
        if !summary.bakes.is_empty()
            && let Some(m) = entry.as_object_mut()
        {
            m.insert("bakes".into(), json!(summary.bakes));
        }
        if let Err(e) = meta_state::record_run(self.system, &self.ws.root, entry) {
            self.failed_to_write(&mut summary, format!("could not record the run: {e}"));
        }
        if self.req.commit && summary.ok {
            self.commit(&mut summary);
        }
        let json = self.write_summary(&mut summary);
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

    /// generated/run-summary.json; the JSON written.
    fn write_summary(&mut self, summary: &mut RunSummary) -> String {
        let path = self.gen_dir.join("run-summary.json");
        let json = serde_json::to_string_pretty(&summary).unwrap_or_else(|_| "{}".into());
        if let Err(e) = self
            .system
            .write_atomic(&path, format!("{json}\n").as_bytes(), false)
        {
            // The error names the file.
            self.failed_to_write(summary, format!("could not write the run summary: {e}"));
        }
        json
    }

    fn failed_to_write(&mut self, summary: &mut RunSummary, error: String) {
        self.log.line(Level::Error, error.clone());
        summary.ok = false;
        summary.error.get_or_insert(error);
    }
}
