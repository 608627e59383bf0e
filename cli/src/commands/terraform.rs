//! The gates around an OpenTofu root's apply, as its runner steps call
//! them: `gate-plan` (the plan's destroys, freshness and unmounts),
//! `apply-check` (the lifecycle's apply flag) and `unmount` (the receipt
//! gate-plan reads).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use csis_engine::db::system::OsSystem;
use csis_engine::terraform::gate_plan;
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
    /// How long `tofu show -json` may run before it is stopped and the
    /// plan is not judged (exit 1).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = gate_plan::DEFAULT_SHOW_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    show_timeout: u64,
    /// The most bytes of plan JSON read (a number, or with KiB, MiB or
    /// GiB); a larger plan is refused unread (exit 3) [default: 256MiB]
    #[arg(long, value_name = "BYTES", value_parser = crate::args::parse_size)]
    max_plan_size: Option<u64>,
}

/// `gate-plan`, answered without loading the tree: the root only names
/// where receipts live.
pub fn gate_plan(root: &Path, args: &GatePlanArgs) -> ExitCode {
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
            show_timeout: std::time::Duration::from_secs(args.show_timeout),
            max_plan_bytes: args
                .max_plan_size
                .unwrap_or(gate_plan::DEFAULT_MAX_PLAN_BYTES),
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
