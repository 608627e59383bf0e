//! `csis graph`: the image chains, instances, storages and groups (with
//! `--lineage`, the recorded builds and pins) as Graphviz or Mermaid.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use csis_engine::workspace::Workspace;

#[derive(Args)]
pub struct GraphArgs {
    /// dot (Graphviz) or mermaid (renders in a GitHub README).
    #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
    format: GraphFormat,
    /// Add the recorded builds, their parents and the pins.
    #[arg(long)]
    lineage: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}

pub fn graph(ws: &Workspace, args: &GraphArgs) -> ExitCode {
    let g = csis_engine::plan::graph::graph(&ws.db, ws.tree, args.lineage);
    csis_plugin_api::out!(
        "{}",
        match args.format {
            GraphFormat::Dot => g.dot(),
            GraphFormat::Mermaid => g.mermaid(),
        }
    );
    ExitCode::SUCCESS
}
