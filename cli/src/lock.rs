//! The lock policy: which commands write the tree and so hold its lock,
//! and how the lock is taken for this invocation.

use std::process::ExitCode;

use csis_engine::db::system::OsSystem;

use crate::args::Command;
use crate::commands::lineage::LineageCommand;

/// Whether a command writes the tree -- generated/, the private mirror,
/// meta-state/, a local store, or its configuration files -- and so holds
/// the tree's lock (docs/reliability.md lists the decisions).
pub fn writes_tree(command: &Command) -> bool {
    match command {
        Command::Run(_)
        | Command::Upgrade(_)
        | Command::Forget(_)
        | Command::Release(_)
        | Command::Dispose(_)
        // Writes meta-state/mod-tests.yaml and a throwaway copy in a store.
        | Command::TestMods(_)
        | Command::Encrypt(_)
        | Command::Reencrypt
        // Writes the unmount receipt under _private/.
        | Command::Unmount(_)
        // begin writes a backup under _private/, finish meta-state/.
        | Command::StateMigration { .. }
        // query writes generated/state-report.json, backup under _private/.
        | Command::State { .. } => true,
        // instance writes verifications.yaml (and image-tests.yaml).
        Command::Runtime { command } => crate::commands::runtime::writes(command),
        Command::Verify { command } => {
            matches!(command, crate::commands::verify::VerifyCommand::Instance { .. })
        }
        Command::Lineage { command } => match command {
            LineageCommand::Show => false,
            LineageCommand::Restamp { commit, .. } | LineageCommand::Relabel { commit, .. } => {
                *commit
            }
            LineageCommand::Record { .. } | LineageCommand::BindInstance { .. } => true,
        },
        Command::Validate(_)
        | Command::Plan(_)
        | Command::DecryptCheck
        // The hook install writes under .git/ only.
        | Command::PublicSafe(_)
        | Command::Config { .. }
        // The gate and the check read; they write nothing.
        | Command::GatePlan(_)
        | Command::ApplyCheck(_)
        // Reads credential caches, before the load.
        | Command::Preflight(_)
        | Command::Graph(_) => false,
        // Answered before the tree is loaded: local and watch lock for
        // themselves; the others write no tree.
        Command::Local(_)
        | Command::Ict(_)
        | Command::Dummy(_)
        | Command::Watch { .. }
        | Command::CloudConfig { .. }
        | Command::Template { .. }
        | Command::Completions(_)
        | Command::Man(_)
        // Writes a new tree only: no tree to lock yet.
        | Command::Init(_) => false,
    }
}

/// The tree's lock for this invocation, waiting up to `timeout` seconds
/// (none for a root that holds no tree); a refusal is printed and is the
/// exit code (1).
pub fn take_lock(
    root: &std::path::Path,
    timeout: u64,
) -> Result<Option<csis_engine::db::lock::Lock>, ExitCode> {
    let command = command_line();
    let req = csis_engine::db::lock::Request {
        command: &command,
        timeout: std::time::Duration::from_secs(timeout),
    };
    csis_engine::run::lock::lock_tree(&OsSystem, root, &req, &mut |n| eprintln!("{n}")).map_err(
        |e| {
            eprintln!("error: {e}");
            ExitCode::from(1)
        },
    )
}

/// This invocation as the lock file names it: `csis run all`.
pub fn command_line() -> String {
    let mut args = std::env::args();
    let program = args
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
        })
        .unwrap_or_else(|| "csis".into());
    std::iter::once(program)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}
