//! `csis preflight [--strict] [--offline]` (docs/cli.md, "Preflight"):
//! the credential sessions behind every declared runtime, read before the
//! tree loads.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use csis_engine::db::system::OsSystem;
use csis_engine::registry::Registry;
use csis_engine::workspace::preflight::{preflight as check, session_env};

#[derive(Args)]
pub struct PreflightArgs {
    /// Exit 1 when a session is expired, absent or expires within
    /// config.preflight.expected_run_minutes, when a runtime's provider
    /// does not say who its credentials are, or when a credential variable
    /// is set but empty.
    #[arg(long)]
    pub strict: bool,
    /// Read the caches only: do not ask any provider who the credentials
    /// are.
    #[arg(long)]
    pub offline: bool,
}

pub fn preflight(
    registry: &Registry,
    root: &Path,
    overlays: &[PathBuf],
    max_bytes: u64,
    args: &PreflightArgs,
) -> ExitCode {
    let found = check(
        &OsSystem,
        registry,
        root,
        overlays,
        &session_env(&OsSystem),
        args.offline,
        max_bytes,
    );
    for line in found.lines() {
        csis_plugin_api::outln!("{line}");
    }
    let blocking = found.blocking();
    csis_plugin_api::outln!(
        "preflight: {} session{}, {} blocking (expected run: {} minutes)",
        found.sessions.len(),
        if found.sessions.len() == 1 { "" } else { "s" },
        blocking.len(),
        found.window
    );
    if args.strict && !blocking.is_empty() {
        eprintln!("error: preflight --strict: {}", blocking.join("; "));
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
