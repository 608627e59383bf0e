//! The run's outcome, which every step fills in: generated/run-summary.json
//! ([`RunSummary`]), each lifecycle's generation outcome and `--explain`'s
//! causes. Plain data; the last step (summary.rs) writes it.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::Serialize;

use crate::db::stats::Stats;

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
    /// A real run's bakes, in the order they were planned: each one's
    /// outcome, start and end.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bakes: Vec<crate::run::bake_graph::BakeRecord>,
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
