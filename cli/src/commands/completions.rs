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
    clap_complete::generate(
        args.shell,
        &mut Cli::command(),
        "csis",
        &mut std::io::stdout(),
    );
    ExitCode::SUCCESS
}

pub fn man() -> ExitCode {
    match clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: writing the man page: {e}");
            ExitCode::from(1)
        }
    }
}
