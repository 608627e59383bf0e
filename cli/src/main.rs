//! csis: plan and run the building of machine images and the machines made
//! from them, from a declarative configuration tree.
//!
//! Each command is a thin wrapper over one engine operation. The registry
//! is assembled here from the plugins this binary links.

mod report;
mod yaml_out;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use csis_engine::registry::Registry;
use csis_engine::render::{raw_tree, resolved_tree};
use csis_engine::system::OsSystem;
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_plugin_api::Plugin;

#[derive(Parser)]
#[command(
    name = "csis",
    version,
    about = "Plan and run machine-image builds from a declarative configuration tree"
)]
struct Cli {
    /// The configuration root (holds cfg/).
    #[arg(long, env = "CSIS_ROOT_DIR", default_value = ".", global = true)]
    root_dir: PathBuf,
    /// An overlay file applied for this invocation only (repeatable).
    #[arg(long = "overlay", value_name = "FILE", global = true)]
    overlays: Vec<PathBuf>,
    /// Remove an item for this invocation only: KIND:NAME (repeatable).
    #[arg(long = "undeclare", value_name = "KIND:NAME", global = true)]
    undeclare: Vec<String>,
    /// Diagnostics as `file:line:col: message` lines instead of snippets.
    #[arg(long, global = true)]
    brief: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load the tree and print every refusal; exit 1 on any.
    Validate,
    /// Show the configuration as csis sees it.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
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
enum Format {
    Yaml,
    Json,
}

/// The plugins this binary links, in registration order.
fn plugins() -> Vec<&'static dyn Plugin> {
    vec![
        &csis_plugin_dummy::DummyPlugin,
        &csis_plugin_local::LocalPlugin,
    ]
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let registry = match Registry::build(&plugins()) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let options = LoadOptions {
        overlays: cli.overlays.clone(),
        undeclare: cli.undeclare.clone(),
    };
    let ws = match Workspace::load(&OsSystem, registry, &cli.root_dir, &options) {
        Ok(ws) => ws,
        Err(e) => {
            eprintln!("error: reading {}: {e}", cli.root_dir.display());
            return ExitCode::from(1);
        }
    };
    let diags = ws.load_diagnostics();
    let errors = diags.iter().filter(|d| d.is_error()).count();
    for d in &diags {
        if cli.brief {
            eprintln!("{}", report::one_line(&ws, d));
        } else {
            eprint!("{}", report::render(&ws, d));
        }
    }
    match cli.command {
        Command::Validate => {
            if errors > 0 {
                eprintln!("validate: {errors} error(s)");
                ExitCode::from(1)
            } else {
                eprintln!("validate: ok");
                ExitCode::SUCCESS
            }
        }
        Command::Config {
            command: ConfigCommand::Render { raw, format },
        } => {
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
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&tree).unwrap_or_default()
                    );
                }
                Format::Yaml => print!("{}", yaml_out::to_yaml(&tree)),
            }
            ExitCode::SUCCESS
        }
    }
}
