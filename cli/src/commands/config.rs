//! `csis config render`: the tree as csis sees it after the string stage
//! and template resolution, or as written (`--raw`).

use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};
use csis_engine::load::render::{raw_tree, resolved_tree};
use csis_engine::workspace::Workspace;

use crate::report::{self, print_load_diagnostics};

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// The tree after the string stage and template resolution (or as
    /// written, with --raw).
    Render {
        /// The tree as written (overlays applied), before any rendering.
        #[arg(long)]
        raw: bool,
        #[arg(long, value_enum, default_value_t = Format::Yaml)]
        format: Format,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Yaml,
    Json,
}

pub fn config(ws: &Workspace, style: report::Style, command: &ConfigCommand) -> ExitCode {
    match command {
        ConfigCommand::Render { raw, format } => render(ws, style, *raw, *format),
    }
}

fn render(ws: &Workspace, style: report::Style, raw: bool, format: Format) -> ExitCode {
    let errors = print_load_diagnostics(ws, style);
    if errors > 0 && !raw {
        eprintln!("config render: {errors} error(s); fix them or use --raw");
        return ExitCode::from(1);
    }
    let tree = if raw {
        raw_tree(&ws.db, ws.tree)
    } else {
        resolved_tree(&ws.db, ws.tree)
    };
    match format {
        Format::Json => {
            csis_plugin_api::outln!(
                "{}",
                serde_json::to_string_pretty(&tree).unwrap_or_default()
            );
        }
        Format::Yaml => csis_plugin_api::out!("{}", csis_yaml::emit::to_yaml(&tree)),
    }
    ExitCode::SUCCESS
}
