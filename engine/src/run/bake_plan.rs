//! The bake plan step: one decision per `<series>@<runtime>`, logged and
//! in the summary, with each bake's causes under `--explain`.

use crate::plan::bakes::bake_plan;
use crate::run::RunSummary;
use crate::run::steps::Runner;

impl Runner<'_> {
    /// One decision per `<series>@<runtime>`, logged and journaled.
    pub(super) fn plan(&mut self, summary: &mut RunSummary) {
        let ws = self.ws;
        for (series, rt, d) in &bake_plan(&ws.db, ws.tree, self.run_input).decisions {
            self.info(format!("bake plan: {series}@{rt}: {}", d.reason));
            summary
                .bake_plan
                .insert(format!("{series}@{rt}"), d.reason.clone());
        }
        if let Some(explained) = summary.explain.as_mut() {
            for (key, lines) in crate::run::explain::explain_bakes(ws, self.run_input) {
                self.info(format!("explain: bake {key}:"));
                for line in &lines {
                    self.info(format!("    {line}"));
                }
                explained.bakes.insert(key, lines);
            }
        }
    }
}
