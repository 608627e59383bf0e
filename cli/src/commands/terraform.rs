//! The gates around an OpenTofu root's apply, as its runner steps call
//! them: `gate-plan` (the plan's destroys, freshness and unmounts),
//! `apply-check` (the lifecycle's apply flag) and `unmount` (the receipt
//! gate-plan reads).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use csis_engine::db::system::OsSystem;
use csis_engine::workspace::Workspace;

use crate::outcome::print_outcome;
use crate::root::invocation_dir;

#[derive(Args)]
pub struct GatePlanArgs {
    /// The planfile, relative to the working directory.
    #[arg(long, value_name = "FILE")]
    planfile: String,
    /// The OpenTofu binary that reads the plan (`show -json`).
    #[arg(long, value_name = "BINARY", default_value = "tofu")]
    tofu: String,
    /// An address (or a prefix of one, before `[` or `.`) whose destroy
    /// is allowed. Repeatable.
    #[arg(long, value_name = "ADDRESS")]
    whitelist: Vec<String>,
    /// Refuse a planned detach of a storage that has no ok unmount
    /// receipt (`csis unmount storage`).
    #[arg(long)]
    require_unmounted: bool,
}

/// `gate-plan`, answered without loading the tree: the root only names
/// where receipts live.
pub fn gate_plan(root: &Path, args: &GatePlanArgs) -> ExitCode {
    use csis_engine::terraform::gate_plan;
    let cwd = invocation_dir();
    print_outcome(gate_plan::gate_plan(
        &OsSystem,
        &gate_plan::GatePlan {
            root,
            cwd: &cwd,
            planfile: &args.planfile,
            tofu: &args.tofu,
            whitelist: &args.whitelist,
            require_unmounted: args.require_unmounted,
        },
    ))
}

#[derive(Args)]
pub struct ApplyCheckArgs {
    #[arg(long, value_name = "LIFECYCLE")]
    lifecycle: String,
    #[arg(long, value_name = "BUILDER")]
    builder: String,
    #[arg(long, value_name = "RUNTIME")]
    runtime: Option<String>,
}

pub fn apply_check(ws: &Workspace, args: &ApplyCheckArgs) -> ExitCode {
    print_outcome(csis_engine::terraform::apply_check::apply_check(
        ws,
        &csis_engine::terraform::apply_check::ApplyCheck {
            lifecycle: &args.lifecycle,
            builder: &args.builder,
            runtime: args.runtime.as_deref(),
        },
    ))
}

#[derive(Args)]
pub struct UnmountArgs {
    #[arg(value_parser = ["storage"])]
    kind: String,
    storage: String,
    #[arg(long, value_name = "NAME")]
    instance: String,
    /// It was unmounted by hand: record that (the operator is $USER).
    #[arg(long)]
    confirm: bool,
}

pub fn unmount(ws: &Workspace, args: &UnmountArgs) -> ExitCode {
    print_outcome(csis_engine::terraform::unmount::unmount(
        ws,
        &OsSystem,
        &csis_engine::terraform::unmount::Unmount {
            storage: &args.storage,
            instance: &args.instance,
            confirm: args.confirm,
        },
    ))
}
