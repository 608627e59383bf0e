//! `csis state query` (what every runtime holds against meta-state),
//! `csis state backup` (a workspace's terraform state kept before a state
//! rm) and `csis state-migration begin/finish` (a workspace's state moved
//! to a new location).

use std::path::Path;
use std::process::ExitCode;

use clap::Subcommand;
use csis_engine::db::system::OsSystem;
use csis_engine::workspace::Workspace;

use crate::outcome::print_outcome;
use crate::root::invocation_dir;

#[derive(Subcommand)]
pub enum StateCommand {
    /// Classify drift (missing, foreign, stale; hard drift refuses the
    /// next validation) and write generated/state-report.json.
    Query {
        /// Exit 1 on hard drift, on any class but stale, or when a runtime
        /// could not be asked.
        #[arg(long)]
        strict: bool,
    },
    /// Adopt builds a runtime has and lineage does not record (the
    /// foreign images of state query; those named, else every one) into
    /// lineage from their lineage tags; anything ambiguous refuses the
    /// whole import.
    Import {
        #[arg(value_name = "BUILD")]
        builds: Vec<String>,
        /// Ask only this runtime.
        #[arg(long)]
        runtime: Option<String>,
    },
    /// Keep the workspace's state (tofu state pull, run from the
    /// initialised root) in _private/state-backups/ before a state rm;
    /// exit 1 when there is nothing to keep.
    Backup {
        #[arg(long, value_name = "WORKSPACE")]
        workspace: String,
        #[arg(long, value_name = "BINARY", default_value = "tofu")]
        tofu: String,
    },
}

pub fn state_query(ws: &Workspace, strict: bool) -> ExitCode {
    use csis_engine::run::state_query::{query, write_report};
    let gen_dir = ws.root.join(ws.generation_dir_name());
    let report = match query(ws, &OsSystem)
        .and_then(|r| write_report(&OsSystem, &ws.root, &gen_dir, &r).map(|()| r))
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: state query: {e}");
            return ExitCode::from(1);
        }
    };
    let sessions = csis_engine::workspace::preflight::sessions(ws, &OsSystem);
    for line in sessions.lines() {
        csis_plugin_api::outln!("{line}");
    }
    for line in report.lines() {
        csis_plugin_api::outln!("{line}");
    }
    let counts = report.counts();
    let n = |k: &str| counts.get(k).copied().unwrap_or(0);
    csis_plugin_api::outln!(
        "state query: {} missing, {} foreign, {} changed, {} stale, {} hard, {} unavailable",
        n("missing"),
        n("foreign"),
        n("changed"),
        n("stale"),
        n("hard"),
        n("unavailable")
    );
    let strict_fail = n("hard") + n("missing") + n("foreign") + n("changed") + n("unavailable") > 0
        || !sessions.blocking().is_empty();
    if strict && strict_fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[derive(Subcommand)]
pub enum MigrationStep {
    /// Copy the state from its recorded location to the one
    /// --backend-config names (refusing a collision) and leave
    /// <workspace>.state-migration.json.
    Begin {
        #[arg(long, value_name = "WORKSPACE")]
        workspace: String,
        /// The new location's settings (the root's .tfbackend.hcl).
        #[arg(long, value_name = "FILE")]
        backend_config: Option<String>,
        #[arg(long, value_name = "BINARY", default_value = "tofu")]
        tofu: String,
    },
    /// Record the move begin made in meta-state/state-locations.yaml.
    Finish {
        #[arg(long, value_name = "WORKSPACE")]
        workspace: String,
        #[arg(long, value_name = "BINARY", default_value = "tofu")]
        tofu: String,
    },
}

pub fn state_migration(ws: &Workspace, step: &MigrationStep) -> ExitCode {
    use csis_engine::terraform::state_migration::{StateMigration, begin, finish};
    let cwd = invocation_dir();
    print_outcome(match step {
        MigrationStep::Begin {
            workspace,
            backend_config,
            tofu,
        } => begin(
            ws,
            &OsSystem,
            &StateMigration {
                cwd: &cwd,
                workspace,
                backend_config: backend_config.as_deref(),
                tofu,
            },
        ),
        MigrationStep::Finish { workspace, tofu } => finish(
            ws,
            &OsSystem,
            &StateMigration {
                cwd: &cwd,
                workspace,
                backend_config: None,
                tofu,
            },
        ),
    })
}

/// `state backup`, answered without loading the tree: the root only names
/// where backups live.
pub fn backup(root: &Path, workspace: &str, tofu: &str) -> ExitCode {
    use csis_engine::terraform::state_backup;
    let cwd = invocation_dir();
    print_outcome(state_backup::state_backup(
        &OsSystem,
        &state_backup::StateBackup {
            root,
            cwd: &cwd,
            workspace,
            tofu,
        },
    ))
}

pub fn state_import(ws: &Workspace, builds: &[String], runtime: Option<&str>) -> ExitCode {
    crate::outcome::outcome(super::operations::ops(ws).state_import(builds, runtime))
}
