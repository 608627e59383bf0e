//! `csis plan`: validate, then the bake plan alone (with `--explain` and
//! `--stats`), without generating anything.

use std::collections::BTreeMap;

use crate::db::run_input::RunOptions;
use crate::db::stats::{StageClock, Stats, peak_memory_kib};
use crate::db::system::System;
use crate::plan::bakes::{bake_plan, check_selection};
use crate::plan::fingerprint::{SeriesKey, input_fingerprint};
use crate::run::plan_summary::{PlanSummary, plan_summary};
use crate::workspace::Workspace;

/// `csis plan`: the bake plan alone, computed without generating anything.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlanReport {
    pub ok: bool,
    pub error: Option<String>,
    pub validation_errors: Vec<String>,
    pub plan: Vec<PlanEntry>,
    /// The closing summary (when the plan was computed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<PlanSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
}

/// What `csis plan` was asked besides the run options.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlanAsk {
    /// `--explain`: each bake's chain of causes.
    pub explain: bool,
    /// `--stats`: time and queries of validate and plan, peak memory.
    pub stats: bool,
}

/// One `<series>@<runtime>` of the plan.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlanEntry {
    pub series: String,
    pub runtime: String,
    /// `bake` or `skip`.
    pub decision: String,
    pub reason: String,
    /// The input fingerprint the bake would be recorded with.
    pub fingerprint: Option<String>,
    /// `--explain`: what caused the bake, one line per cause.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explain: Vec<String>,
}

pub fn plan_report(
    ws: &Workspace,
    system: &dyn System,
    options: RunOptions,
    ask: PlanAsk,
) -> PlanReport {
    let mut clock = StageClock::start(&ws.db);
    let mut stats = ask.stats.then(Stats::default);
    let mut report = PlanReport {
        ok: false,
        error: None,
        validation_errors: Vec::new(),
        plan: Vec::new(),
        summary: None,
        stats: None,
    };
    if let Err(e) = check_selection(&ws.db, ws.tree, &options) {
        report.error = Some(e);
        return report;
    }
    let run = ws.run_input(&options);
    let (_, _, errors) = crate::run::validation(ws, system, run);
    clock.mark(&ws.db, stats.as_mut(), "validate");
    if !errors.is_empty() {
        report.error = Some(format!("validation failed with {} error(s)", errors.len()));
        report.validation_errors = errors;
    } else {
        let mut explained: BTreeMap<String, Vec<String>> = if ask.explain {
            crate::run::explain::explain_bakes(ws, run)
                .into_iter()
                .collect()
        } else {
            BTreeMap::new()
        };
        report.ok = true;
        let keys = crate::plan::bakes::bake_keys(&ws.db, ws.tree);
        crate::workspace::prewarm::fingerprints(&ws.db, ws.tree, &keys);
        let decisions = &bake_plan(&ws.db, ws.tree, run).decisions;
        // The entries and the summary, each on a core: both only read
        // the decisions, and one after the other they were the plan's
        // last milliseconds on one core.
        let (db, summary_db, tree) = (ws.db.clone(), ws.db.clone(), ws.tree);
        let (plan, summary) = rayon::join(
            move || {
                decisions
                    .iter()
                    .map(|(series, runtime, d)| {
                        let key = SeriesKey::new(&db, series.clone(), runtime.clone());
                        PlanEntry {
                            series: series.clone(),
                            runtime: runtime.clone(),
                            decision: if d.bake { "bake" } else { "skip" }.into(),
                            reason: d.reason.clone(),
                            fingerprint: input_fingerprint(&db, tree, key)
                                .as_ref()
                                .map(|f| f.hex.clone()),
                            explain: if explained.is_empty() {
                                Vec::new()
                            } else {
                                explained
                                    .remove(&format!("{series}@{runtime}"))
                                    .unwrap_or_default()
                            },
                        }
                    })
                    .collect()
            },
            move || plan_summary(&summary_db, tree, run).clone(),
        );
        report.plan = plan;
        report.summary = Some(summary);
        clock.mark(&ws.db, stats.as_mut(), "plan");
    }
    if let Some(stats) = stats.as_mut() {
        stats.peak_memory_kib = peak_memory_kib(system);
    }
    report.stats = stats;
    report
}
