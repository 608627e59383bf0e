//! `csis runtime describe RUNTIME` and `csis runtime empty RUNTIME`
//! (docs/cli.md, "Runtimes").

use std::process::ExitCode;

use clap::Subcommand;
use csis_engine::workspace::Workspace;

use super::operations::ops;
use crate::outcome::outcome;

#[derive(Subcommand)]
pub enum RuntimeCommand {
    /// What the runtime answers: where it is (region, account, store),
    /// whether what it declares exists there (VPC, subnets), and what csis
    /// owns there (builds, instances, storages) against meta-state.
    Describe { runtime: String },
    /// Dispose every recorded build on an ephemeral runtime, keeping (as
    /// retention debt) what an instance or image is pinned to and what is
    /// released.
    Empty { runtime: String },
}

/// Whether the command writes meta-state (and so takes the tree's lock).
pub fn writes(command: &RuntimeCommand) -> bool {
    matches!(command, RuntimeCommand::Empty { .. })
}

pub fn runtime(ws: &Workspace, command: &RuntimeCommand) -> ExitCode {
    match command {
        RuntimeCommand::Describe { runtime } => outcome(ops(ws).runtime_describe(runtime)),
        RuntimeCommand::Empty { runtime } => outcome(ops(ws).runtime_empty(runtime)),
    }
}
