//! `csis verify instance NAME [--record-only]` and `csis verify assert`
//! (docs/verification.md, "Verifying an instance").

use std::process::ExitCode;

use clap::Subcommand;
use csis_engine::run::operations::verify::VerifyOutcome;
use csis_engine::workspace::Workspace;

use super::operations::ops;
use crate::outcome::outcome;

#[derive(Subcommand)]
pub enum VerifyCommand {
    /// Check an instance's machine (it runs its pinned build, its storages
    /// are mounted) and run its image's post-bake tests on it; the verdict
    /// goes to meta-state/verifications.yaml (and image-tests.yaml). Exit 1
    /// when a check fails, unless --record-only.
    Instance {
        #[arg(add = crate::complete::instance_names())]
        name: String,
        /// Record the verdict and exit 0 even when a check failed.
        #[arg(long)]
        record_only: bool,
    },
    /// Exit 1 unless the last recorded verdict is ok (a runner's last
    /// step).
    Assert,
}

pub fn verify(ws: &Workspace, command: &VerifyCommand) -> ExitCode {
    match command {
        VerifyCommand::Instance { name, record_only } => match ops(ws).verify_instance(name) {
            Ok(VerifyOutcome::Passed(line)) | Ok(VerifyOutcome::Skipped(line)) => {
                csis_plugin_api::outln!("{line}");
                ExitCode::SUCCESS
            }
            Ok(VerifyOutcome::Failed(why)) if *record_only => {
                eprintln!("warning: {why} (recorded; --record-only)");
                ExitCode::SUCCESS
            }
            Ok(VerifyOutcome::Failed(why)) => outcome(Err(why)),
            Ok(VerifyOutcome::TeardownDue(why, due)) => {
                eprintln!("warning: {why}; {due}");
                ExitCode::SUCCESS
            }
            Err(e) => outcome(Err(e)),
        },
        VerifyCommand::Assert => outcome(ops(ws).verify_assert()),
    }
}
