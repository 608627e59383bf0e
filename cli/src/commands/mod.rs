//! One file per command family, each holding its clap arguments beside the
//! function that runs the command (cargo's `src/bin/cargo/commands/`
//! shape).

pub mod cloud_config;
pub mod completions;
pub mod config;
pub mod graph;
pub mod lineage;
pub mod operations;
pub mod plan;
pub mod plugin_step;
pub mod run;
pub mod selection;
pub mod template;
pub mod validate;
