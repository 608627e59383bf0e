//! The plugins' deferred steps as runner scripts call them (`csis local
//! bake --spec FILE`, `csis ict materialize`, `csis dummy apply`): hidden
//! commands whose arguments go to the plugin unparsed.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use csis_engine::db::system::{OsSystem, System};

use crate::lock::take_lock;

#[derive(Args)]
pub struct StepArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// `csis local ...`: the local runtime's bake, storage and launch steps.
pub fn local(step: &StepArgs, lock_timeout: u64) -> ExitCode {
    // The local store is the tree's: a step a run executes goes on
    // under the run's lock, a standalone one takes it.
    let root = OsSystem.env().get("CSIS_ROOT").map(PathBuf::from);
    let _lock = match root.map(|r| take_lock(&r, lock_timeout)).transpose() {
        Ok(lock) => lock.flatten(),
        Err(code) => return code,
    };
    ExitCode::from(csis_plugin_local::exec::main(&step.args))
}

/// `csis ict materialize`: its files read under the tree's limits on
/// input, `max_file_size` the `--max-file-size` in force.
pub fn ict(step: &StepArgs, max_file_size: u64) -> ExitCode {
    let files = super::template::BoundedFs {
        max_bytes: max_file_size,
    };
    ExitCode::from(csis_plugin_ict::exec::main(&step.args, &files))
}

pub fn dummy(step: &StepArgs) -> ExitCode {
    ExitCode::from(csis_plugin_dummy::exec::main(&step.args))
}
