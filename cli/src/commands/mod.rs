//! One file per command family, each holding its clap arguments beside the
//! function that runs the command (cargo's `src/bin/cargo/commands/`
//! shape). The dispatch that needs no tree lives here too.

use std::path::Path;
use std::process::ExitCode;

use crate::Command;

pub mod cloud_config;
pub mod completions;
pub mod config;
pub mod graph;
pub mod lineage;
pub mod operations;
pub mod plan;
pub mod plugin_step;
pub mod public_safe;
pub mod run;
pub mod secrets;
pub mod selection;
pub mod state;
pub mod template;
pub mod terraform;
pub mod validate;

/// `gate-plan` and `state backup`, answered without loading the tree;
/// `None` for every other command.
pub fn terraform_step(command: &Command, root: &Path) -> Option<ExitCode> {
    match command {
        Command::GatePlan(args) => Some(terraform::gate_plan(root, args)),
        Command::State {
            command: state::StateCommand::Backup { workspace, tofu },
        } => Some(state::backup(root, workspace, tofu)),
        _ => None,
    }
}
