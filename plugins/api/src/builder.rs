//! Builder hooks. Every builder wraps one builder model; the runner calls
//! these hooks per phase. The generation issue fills the bodies; the
//! signatures are the contract.

use csis_model::{Diagnostic, Map};

use crate::phase::ExecutionLifecyclePhase;

/// One generated file: a path relative to the current generation directory
/// and its content. The runner writes assets; hooks never write files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asset {
    pub path: String,
    pub content: Vec<u8>,
}

pub type AssetSet = Vec<Asset>;

/// Commands a hook asks for: run now during generation, or deferred to
/// finalization (rendered into the runner script).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CfExecutables {
    pub build_executables: Vec<Command>,
    pub finalize_executables: Vec<Command>,
}

/// A command line: an executable entry's name and its arguments, with a
/// working directory relative to the lifecycle directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub executable: String,
    pub args: Vec<String>,
    pub working_directory: Option<String>,
}

/// What a hook returns besides its value: problems to report.
pub type HookResult<T> = Result<T, Vec<Diagnostic>>;

/// What a hook may read of the run. The engine implements it.
pub trait HookContext {
    fn dry_run(&self) -> bool;
    fn run_id(&self) -> &str;
    /// The tree's `config:` map.
    fn config(&self) -> &Map;
}

/// The hooks of "Builder base classes and hooks". Every default does
/// nothing, so a builder implements only what it generates.
pub trait Builder: Send + Sync {
    fn generate_items_before(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<AssetSet> {
        Ok(Vec::new())
    }
    fn get_commands_to_run_before(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        Ok(CfExecutables::default())
    }
    fn generate_items_during(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<AssetSet> {
        Ok(Vec::new())
    }
    fn get_commands_to_run_during(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        Ok(CfExecutables::default())
    }
    fn generate_items_after(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<AssetSet> {
        Ok(Vec::new())
    }
    fn get_commands_to_run_after(
        &self,
        _phase: ExecutionLifecyclePhase,
        _ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        Ok(CfExecutables::default())
    }
    /// Around each phase's deferred commands in a real run; never in a dry
    /// run.
    fn pre_finalize_phase(&self, _phase: ExecutionLifecyclePhase) -> HookResult<()> {
        Ok(())
    }
    fn post_finalize_phase(&self, _phase: ExecutionLifecyclePhase) -> HookResult<()> {
        Ok(())
    }
    /// Once, after the builder is constructed: where a plugin checks its
    /// model against its provider.
    fn finalize(&self) -> HookResult<()> {
        Ok(())
    }

    /// Group builders: the identity type the builder provides.
    fn identity_type(&self) -> Option<&str> {
        None
    }
    /// Storage builders: the capability type, and whether many instances
    /// may attach one storage.
    fn capability_type(&self) -> Option<&str> {
        None
    }
    fn multi_attach(&self) -> bool {
        false
    }
    fn is_posix(&self) -> bool {
        false
    }
    /// Runtime builders: the session mechanism, when there is one.
    fn session_mechanism(&self) -> Option<&str> {
        None
    }
}
