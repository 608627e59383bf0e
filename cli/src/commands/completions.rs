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
    // Written whole through the one stdout writer: a closed pipe is no
    // failure.
    match crate::complete::registration(args.shell) {
        Ok(script) => {
            csis_plugin_api::stdout::write(&script);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: completions: {e}");
            ExitCode::from(1)
        }
    }
}

#[derive(Args)]
pub struct ManArgs {
    /// The command whose page to print (`run`, `lineage show`): the
    /// page csis-run(1), csis-lineage-show(1); without one, csis(1).
    command: Vec<String>,
    /// Write every page (csis.1 and one per command) into DIR instead,
    /// so that each page another names is there.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    dir: Option<std::path::PathBuf>,
}

pub fn man(args: &ManArgs) -> ExitCode {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &args.dir {
        return match std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(cmd, dir))
        {
            Ok(()) => {
                csis_plugin_api::outln!("man: wrote the pages into {}", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: man: writing the pages into {}: {e}", dir.display());
                ExitCode::from(1)
            }
        };
    }
    let mut page_of = cmd;
    for (i, name) in args.command.iter().enumerate() {
        let found = page_of
            .get_subcommands()
            .find(|s| !s.is_hide_set() && s.get_name() == name)
            .cloned();
        match found {
            Some(sub) => page_of = sub,
            None => {
                eprintln!(
                    "error: man: no page for 'csis {}'; `csis --help` lists the commands",
                    args.command[..=i].join(" ")
                );
                return ExitCode::from(1);
            }
        }
    }
    let mut page = Vec::new();
    match clap_mangen::Man::new(page_of).render(&mut page) {
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
