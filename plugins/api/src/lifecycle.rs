//! Lifecycles and run hooks: what a plugin adds to a run beyond builders.

use csis_model::Vct;

use crate::builder::{AssetSet, Deferred, HookContext, HookResult};
use crate::phase::ExecutionLifecyclePhase;

/// A lifecycle: its generation phases, the builder classification whose
/// during-hooks each phase fires, and where it runs in the fixed order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LifecycleSpec {
    pub name: &'static str,
    /// Other names `csis run` accepts for it.
    pub aliases: &'static [&'static str],
    /// Each generation phase with the classification whose builders'
    /// during-hooks fire in it.
    pub phases: Vec<(ExecutionLifecyclePhase, Vct)>,
    /// The lifecycle it runs after (a plugin's must name one).
    pub after: Option<&'static str>,
    pub description: &'static str,
}

/// What a lifecycle's after-generate hook adds: assets in its directory and
/// deferred commands for its runner script.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contribution {
    pub assets: AssetSet,
    pub deferred: Vec<Deferred>,
}

/// Run hooks (the HookSet of "Other extension seams").
pub trait RunHooks: Send + Sync {
    fn name(&self) -> &'static str;
    /// Extra validation; any error string aborts the run before generation.
    fn validators(&self, _ctx: &dyn HookContext) -> Vec<String> {
        Vec::new()
    }
    /// After a lifecycle's phases generated.
    fn after_generate(&self, _ctx: &dyn HookContext) -> HookResult<Contribution> {
        Ok(Contribution::default())
    }
    /// Before a lifecycle's deferred commands execute (real runs).
    fn before_apply(&self, _lifecycle: &str) -> Result<(), String> {
        Ok(())
    }
    /// After a lifecycle's deferred commands executed (real runs only).
    fn after_apply(&self, _lifecycle: &str) -> Result<(), String> {
        Ok(())
    }
    /// With the run summary as JSON, after it is written. A failure is
    /// logged; the run's outcome is unchanged.
    fn on_summary(&self, _summary_json: &str) -> Result<(), String> {
        Ok(())
    }
    /// Lifecycles this plugin registers.
    fn lifecycles(&self) -> Vec<LifecycleSpec> {
        Vec::new()
    }
}
