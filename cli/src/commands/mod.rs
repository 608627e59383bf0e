//! One file per command family, each holding its clap arguments beside the
//! function that runs the command (cargo's `src/bin/cargo/commands/`
//! shape). The dispatch lives here too, in three of the four places main
//! reaches a command: before anything is read, after the lock (the
//! terraform steps that need no tree), and with the loaded tree; `watch`,
//! which loads and reloads the tree itself, main hands to watch.rs.

use std::path::Path;
use std::process::ExitCode;

use csis_engine::workspace::Workspace;

use crate::args::{Cli, Command};
use crate::outcome::outcome;
use crate::report;

pub mod cloud_config;
pub mod completions;
pub mod config;
pub mod graph;
pub mod init;
pub mod lineage;
pub mod operations;
pub mod plan;
pub mod plugin_step;
pub mod preflight;
pub mod public_safe;
pub mod run;
pub mod runtime;
pub mod secrets;
pub mod selection;
pub mod state;
pub mod template;
pub mod terraform;
pub mod validate;
pub mod verify;

/// The commands answered without the configuration tree (the plugins'
/// steps, cloud-config, template, `public-safe --explain RULE`,
/// completions, man); `None` for every other command.
pub fn without_tree(cli: &Cli) -> Option<ExitCode> {
    match &cli.command {
        Command::Local(step) => Some(plugin_step::local(step, cli.lock_timeout)),
        Command::Dummy(step) => Some(plugin_step::dummy(step)),
        Command::Ict(step) => Some(plugin_step::ict(step, max_file_size(cli))),
        Command::CloudConfig { command } => {
            Some(cloud_config::cloud_config(command, max_file_size(cli)))
        }
        Command::Template { command } => Some(template::run(command, max_file_size(cli))),
        Command::PublicSafe(args) => public_safe::without_tree(args),
        Command::Completions(args) => Some(completions::completions(args)),
        Command::Man(args) => Some(completions::man(args)),
        Command::Init(args) => Some(init::init(args)),
        _ => None,
    }
}

/// The limit on one file's size every command reads under:
/// `--max-file-size`, else CSIS_MAX_FILE_SIZE, else 16 MiB.
pub fn max_file_size(cli: &Cli) -> u64 {
    cli.max_file_size
        .unwrap_or(csis_engine::workspace::DEFAULT_MAX_FILE_SIZE)
}

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

/// Every command that reads the loaded tree.
pub fn with_tree(
    ws: &Workspace,
    command: &Command,
    style: report::Style,
    lock_token: Option<String>,
    carried_env: Vec<(String, String)>,
) -> ExitCode {
    match command {
        Command::Run(args) => run::run(ws, args, lock_token, carried_env),
        Command::Plan(args) => plan::plan(ws, args),
        Command::Lineage { command } => lineage::lineage(ws, command),
        Command::Verify { command } => verify::verify(ws, command),
        Command::Runtime { command } => runtime::runtime(ws, command),
        Command::State {
            command: state::StateCommand::Query { strict },
        } => state::state_query(ws, *strict),
        Command::State {
            command: state::StateCommand::Import { builds, runtime },
        } => state::state_import(ws, builds, runtime.as_deref()),
        Command::ApplyCheck(args) => terraform::apply_check(ws, args),
        Command::StateMigration { step } => state::state_migration(ws, step),
        Command::Unmount(args) => terraform::unmount(ws, args),
        // Answered before the tree is loaded.
        Command::GatePlan(_)
        | Command::State {
            command: state::StateCommand::Backup { .. },
        } => ExitCode::from(2),
        Command::Encrypt(args) => outcome(secrets::encrypt(ws, args)),
        Command::Reencrypt => outcome(secrets::reencrypt(ws)),
        Command::PublicSafe(args) => public_safe::exec(ws, args),
        Command::DecryptCheck => outcome(secrets::decrypt_check(ws)),
        Command::Upgrade(args) => operations::upgrade(ws, args),
        Command::Forget(args) => operations::forget(ws, args),
        Command::Release(args) => operations::release(ws, args),
        Command::TestMods(args) => operations::test_mods(ws, args),
        Command::Dispose(args) => operations::dispose(ws, args),
        Command::Validate(args) => validate::validate(ws, style, args),
        Command::Graph(args) => graph::graph(ws, args),
        Command::Config { command } => config::config(ws, style, command),
        // Answered before the tree is loaded.
        Command::Local(_)
        | Command::Ict(_)
        | Command::Dummy(_)
        | Command::Watch { .. }
        | Command::CloudConfig { .. }
        | Command::Template { .. }
        | Command::Completions(_)
        | Command::Preflight(_)
        | Command::Man(_)
        | Command::Init(_) => ExitCode::from(2),
    }
}
