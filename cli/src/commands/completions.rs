//! `csis completions SHELL` and `csis man`: the shell completion script
//! and the man page, both generated from the clap definition of `Cli`.

use std::process::ExitCode;

use clap::{Args, CommandFactory};

use crate::args::Cli;

#[derive(Args)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub fn completions(args: &CompletionsArgs) -> ExitCode {
    // Written whole through the one stdout writer: clap_complete panics
    // on a write error, a closed pipe included.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "csis", &mut script);
    csis_plugin_api::stdout::write(&script);
    ExitCode::SUCCESS
}

pub fn man() -> ExitCode {
    let mut page = Vec::new();
    match clap_mangen::Man::new(Cli::command()).render(&mut page) {
        Ok(()) => {
            csis_plugin_api::stdout::write(&page);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: writing the man page: {e}");
            ExitCode::from(1)
        }
    }
}
