//! The operations on meta-state a person runs: `upgrade` (move a pin),
//! `forget` (drop an undeclared instance's record), `release` and
//! `dispose` (of builds), `test-mods`, and the `Ops` they (and `lineage`)
//! run on.

use std::process::ExitCode;

use clap::Args;
use csis_engine::db::system::OsSystem;
use csis_engine::workspace::Workspace;

use crate::outcome::outcome;

#[derive(Args)]
pub struct UpgradeArgs {
    #[arg(value_parser = ["image", "instance"])]
    kind: String,
    #[arg(add = crate::complete::upgrade_names())]
    name: String,
    #[arg(long, value_name = "RUNTIME", add = crate::complete::runtime_names())]
    runtime: Option<String>,
    #[arg(long, value_name = "BUILD")]
    to: Option<String>,
}

pub fn upgrade(ws: &Workspace, args: &UpgradeArgs) -> ExitCode {
    let UpgradeArgs {
        kind,
        name,
        runtime,
        to,
    } = args;
    outcome(ops(ws).upgrade(kind, name, runtime.as_deref(), to.as_deref()))
}

#[derive(Args)]
pub struct ForgetArgs {
    #[arg(value_parser = ["instance"])]
    kind: String,
    #[arg(add = crate::complete::instance_names())]
    name: String,
}

pub fn forget(ws: &Workspace, args: &ForgetArgs) -> ExitCode {
    outcome(ops(ws).forget_instance(&args.name))
}

#[derive(Args)]
pub struct ReleaseArgs {
    #[arg(required_unless_present_any = ["declared", "tag_runtime"], add = crate::complete::image_names())]
    image: Option<String>,
    #[arg(long, value_name = "BUILD", required_unless_present_any = ["declared", "tag_runtime"])]
    build: Option<String>,
    #[arg(long, default_value = "default")]
    model: String,
    #[arg(long)]
    note: Option<String>,
    #[arg(long, conflicts_with = "tag_runtime")]
    declared: bool,
    /// Mark the current releases on RUNTIME's builds with
    /// `csis_release_<model>` tags (and take them off builds no longer
    /// released): the release runner's step under config.apply_release.
    #[arg(long, value_name = "RUNTIME", conflicts_with_all = ["image", "build"], add = crate::complete::runtime_names())]
    tag_runtime: Option<String>,
}

pub fn release(ws: &Workspace, args: &ReleaseArgs) -> ExitCode {
    let ReleaseArgs {
        image,
        build,
        model,
        note,
        declared,
        tag_runtime,
    } = args;
    if let Some(rt) = tag_runtime {
        return outcome(ops(ws).release_tags(rt));
    }
    outcome(if *declared {
        ops(ws).release_declared()
    } else {
        ops(ws).release(
            image.as_deref().unwrap_or_default(),
            build.as_deref().unwrap_or_default(),
            model,
            note.as_deref(),
        )
    })
}

#[derive(Args)]
pub struct TestModsArgs {
    /// The images whose modifications to test (default: every instance
    /// image).
    #[arg(value_name = "IMAGE", add = crate::complete::image_names())]
    images: Vec<String>,
}

/// A line per modification; exit 1 when one failed (its result is
/// recorded all the same).
pub fn test_mods(ws: &Workspace, args: &TestModsArgs) -> ExitCode {
    match ops(ws).test_mods(&args.images) {
        Ok(report) => {
            for line in &report.lines {
                csis_plugin_api::outln!("{line}");
            }
            if report.failed == 0 {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "error: {} modification(s) failed their local mod test; the results are in meta-state/mod-tests.yaml, and release refuses the builds that carry them",
                    report.failed
                );
                ExitCode::from(1)
            }
        }
        Err(e) => outcome(Err(e)),
    }
}

#[derive(Args)]
pub struct DisposeArgs {
    #[arg(value_parser = ["image"])]
    kind: String,
    builds: Vec<String>,
    #[arg(long)]
    all: bool,
    #[arg(long, value_name = "RUNTIME", add = crate::complete::runtime_names())]
    runtime: Option<String>,
    #[arg(long)]
    retention: bool,
}

pub fn dispose(ws: &Workspace, args: &DisposeArgs) -> ExitCode {
    let DisposeArgs {
        builds,
        all,
        runtime,
        retention,
        ..
    } = args;
    outcome(ops(ws).dispose(builds, *all, runtime.as_deref(), *retention))
}

/// An operation on meta-state, for the run named by `CSIS_RUN_ID` (set
/// when a runner script calls it) or a run of its own.
pub fn ops(ws: &Workspace) -> csis_engine::run::operations::Ops<'_> {
    let run = ws
        .tree
        .env(&ws.db)
        .get("CSIS_RUN_ID")
        .cloned()
        .unwrap_or_else(|| csis_engine::state::lineage::run_id(ws.tree.start_unix(&ws.db)));
    csis_engine::run::operations::Ops {
        ws,
        system: &OsSystem,
        run,
    }
}
