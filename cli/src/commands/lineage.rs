//! `csis lineage`: show the recorded builds, record a bake, restamp the
//! heads' fingerprints, relabel a renamed series' builds, bind a launched
//! instance to its build.

use std::path::PathBuf;
use std::process::ExitCode;

use csis_engine::db::system::OsSystem;
use csis_engine::workspace::Workspace;

use super::operations::ops;
use crate::outcome::outcome;

#[derive(clap::Subcommand)]
pub enum LineageCommand {
    /// Every recorded build as a tree of parent links, per runtime.
    Show,
    /// Record baked builds from their manifests (runner scripts call this
    /// after each bake; a CI job after the shards, over all of theirs)
    /// and bind each image's pin: parents first, a build already recorded
    /// left as it is, nothing recorded when a manifest's input
    /// fingerprint is not this tree's plan.
    #[command(hide = true)]
    Record {
        #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
        manifest: Vec<PathBuf>,
    },
    /// Set each head's recorded fingerprint on a runtime to the one
    /// computed now (after the fingerprint's definition moved).
    Restamp {
        #[arg(long, value_name = "RUNTIME", add = crate::complete::runtime_names())]
        runtime: String,
        /// Write the change (without it, only say what would change).
        #[arg(long)]
        commit: bool,
    },
    /// After an image (or OS builder) is renamed in the tree: retag the
    /// recorded builds of FROM on their runtimes and record them as TO.
    Relabel {
        from: String,
        to: String,
        /// Retag and write (without it, only say what would change).
        #[arg(long)]
        commit: bool,
    },
    /// Bind a launched instance to the build it runs (runner scripts call
    /// this after each launch).
    #[command(hide = true)]
    BindInstance {
        #[arg(long)]
        instance: String,
        /// The launch record a local launch wrote.
        #[arg(
            long,
            value_name = "FILE",
            required_unless_present = "tofu_outputs",
            conflicts_with = "tofu_outputs"
        )]
        launched: Option<PathBuf>,
        /// An OpenTofu instance root after its apply: its `instances`
        /// output names the build each instance booted.
        #[arg(long, value_name = "DIR")]
        tofu_outputs: Option<PathBuf>,
        /// The tofu binary that reads the outputs.
        #[arg(
            long,
            value_name = "BINARY",
            default_value = "tofu",
            requires = "tofu_outputs"
        )]
        tofu: String,
    },
}

pub fn lineage(ws: &Workspace, command: &LineageCommand) -> ExitCode {
    match command {
        LineageCommand::Show => {
            let record = csis_engine::state::lineage::lineage(&ws.db, ws.tree);
            for d in &record.diags {
                eprintln!("error: {}", ws.describe(d));
            }
            csis_plugin_api::out!("{}", csis_engine::state::lineage::show(&record.value));
            if record.diags.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        LineageCommand::Record { manifest } => outcome(
            csis_engine::run::record_build::record_builds(ws, &OsSystem, manifest),
        ),
        LineageCommand::Restamp { runtime, commit } => outcome(ops(ws).restamp(runtime, *commit)),
        LineageCommand::Relabel { from, to, commit } => outcome(ops(ws).relabel(from, to, *commit)),
        LineageCommand::BindInstance {
            instance,
            launched,
            tofu_outputs,
            tofu,
        } => outcome(match (launched, tofu_outputs) {
            (Some(file), _) => ops(ws).bind_instance(instance, file),
            (None, Some(dir)) => ops(ws).bind_instance_from_tofu(instance, dir, tofu),
            (None, None) => Err("lineage bind-instance: pass --launched or --tofu-outputs".into()),
        }),
    }
}
