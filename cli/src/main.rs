//! csis: plan and run the building of machine images and the machines made
//! from them, from a declarative configuration tree.
//!
//! Each command is a thin wrapper over one engine operation. The registry
//! is assembled here from the plugins this binary links.

/// mimalloc rather than glibc's malloc: a cold plan allocates on both
/// cores, where glibc spends its time growing per-thread arenas (see
/// docs/dependencies.md and docs/performance.md for the measurement).
#[global_allocator]
static GLOBAL: csis_alloc::Allocator = csis_alloc::Allocator;

mod commands;
mod lock;
mod outcome;
mod plugins;
mod progress;
mod report;
mod root;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use csis_engine::db::system::OsSystem;
use csis_engine::registry::Registry;
use csis_engine::workspace::{LoadOptions, Workspace};

use lock::{take_lock, writes_tree};
use outcome::outcome;
use plugins::plugins;
use root::find_root;

#[derive(Parser)]
#[command(
    name = "csis",
    version,
    about = "Plan and run machine-image builds from a declarative configuration tree"
)]
struct Cli {
    /// The configuration root (holds cfg/) [default: the nearest directory
    /// from here up that holds cfg/ with YAML in it, else .]
    #[arg(long, env = "CSIS_ROOT_DIR", global = true)]
    root_dir: Option<PathBuf>,
    /// An overlay file applied for this invocation only (repeatable).
    #[arg(long = "overlay", value_name = "FILE", global = true)]
    overlays: Vec<PathBuf>,
    /// The most bytes csis reads from one file (a number, or with KiB,
    /// MiB or GiB); a larger file is refused unread [default: 16MiB]
    #[arg(long, env = "CSIS_MAX_FILE_SIZE", value_name = "BYTES", global = true, value_parser = parse_size)]
    max_file_size: Option<u64>,
    /// Remove an item for this invocation only: KIND:NAME (repeatable).
    #[arg(long = "undeclare", value_name = "KIND:NAME", global = true)]
    undeclare: Vec<String>,
    /// Diagnostics as `file:line:col: message` lines instead of snippets.
    #[arg(long, global = true)]
    brief: bool,
    /// Colour in diagnostics: auto (on a terminal, unless NO_COLOR is
    /// set), always or never.
    #[arg(long, value_enum, default_value_t = report::ColorChoice::Auto, global = true)]
    color: report::ColorChoice,
    /// How long a command that writes the tree waits for another one
    /// holding the tree's lock before refusing (exit 1, nothing written);
    /// 0 refuses at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 0, global = true)]
    lock_timeout: u64,
    /// An unset `${env.NAME}` becomes `<missing env NAME>` with one
    /// warning per name, instead of an error (docs/interpolation.md).
    #[arg(long, global = true)]
    tolerate_missing_env: bool,
    #[command(subcommand)]
    command: Command,
}

/// `--max-file-size`: bytes, or a number with K/KiB, M/MiB or G/GiB
/// (powers of 1024).
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return Err(format!("'{text}': unit is none of B, KiB, MiB, GiB")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("'{text}' is not a positive number of bytes"))
}

#[derive(Subcommand)]
enum Command {
    /// Load the tree and print every refusal; exit 1 on any.
    Validate(commands::validate::ValidateArgs),
    /// Validate, plan, generate the tree under generated/, and apply it
    /// (a dry run unless --no-dry-run).
    Run(commands::run::RunArgs),
    /// The local runtime's own steps, as its runner scripts call them
    /// (`csis local bake --spec FILE`, `storage`, `launch`).
    #[command(hide = true)]
    Local(commands::plugin_step::StepArgs),
    /// The ict OS builder's deferred step (`csis ict materialize --spec
    /// FILE`): the merged image template, unredacted, under _private/.
    #[command(hide = true)]
    Ict(commands::plugin_step::StepArgs),
    /// The dummy plugin's deferred step (`csis dummy apply --spec FILE`).
    #[command(hide = true)]
    Dummy(commands::plugin_step::StepArgs),
    /// User-data documents as instance-setup reads them (cloud-config).
    #[command(name = "cloud-config")]
    CloudConfig {
        #[command(subcommand)]
        command: commands::cloud_config::CloudConfigCommand,
    },
    /// ICT image templates: validate, and resolve the extends chain and
    /// the OS defaults (any file; no configuration tree needed).
    Template {
        #[command(subcommand)]
        command: commands::template::TemplateCommand,
    },
    /// Load once, then re-plan on every change under the root, printing
    /// what changed; --generate also keeps generated/ current.
    Watch {
        /// Lifecycles --generate keeps current.
        lifecycles: Vec<String>,
        #[arg(long)]
        generate: bool,
        #[command(flatten)]
        selection: commands::selection::Selection,
    },
    /// The bake plan alone: one decision per <series>@<runtime> with its
    /// reason, computed without generating anything (what CI runs).
    Plan(commands::plan::PlanArgs),
    /// Move a pin: an image to its parent's newest build, an instance to
    /// its image's (or to --to BUILD).
    Upgrade(commands::operations::UpgradeArgs),
    /// Drop the record of an instance that is no longer declared.
    Forget(commands::operations::ForgetArgs),
    /// Release a build for a model (or, with --declared, every image's
    /// head for the model its `release:` names).
    Release(commands::operations::ReleaseArgs),
    /// Dispose of recorded builds: named ones, all on a runtime, or those
    /// the declared retention no longer keeps.
    Dispose(commands::operations::DisposeArgs),
    /// Encrypt, in place, every value under the named keys of each file to
    /// encryption.recipients (byte-preserving; markers, templates, empty
    /// values and nested blocks are left alone).
    Encrypt(commands::secrets::EncryptArgs),
    /// Re-encrypt every marker in the tree to the current recipients; the
    /// first marker no identity opens stops it, changing nothing.
    Reencrypt,
    /// List every marker in the tree and whether CSIS_CONFIG_IDENTITY
    /// opens it; exit 1 when one does not open.
    DecryptCheck,
    /// Scan the tree (or PATH, or git's index with --staged) for material
    /// that must not be public; exit 3 on a finding.
    PublicSafe(commands::public_safe::PublicSafeArgs),
    /// Lineage: the recorded builds.
    Lineage {
        #[command(subcommand)]
        command: commands::lineage::LineageCommand,
    },
    /// Ask every runtime what exists and compare it with meta-state
    /// (query); keep a workspace's terraform state before a state rm
    /// (backup).
    State {
        #[command(subcommand)]
        command: commands::state::StateCommand,
    },
    /// The apply gate over a tofu plan, run from the OpenTofu root: every
    /// planned destroy whitelisted, the planfile fresher than every .tf,
    /// (with --require-unmounted) every detach unmounted; exit 3 on a
    /// refusal.
    #[command(name = "gate-plan")]
    GatePlan(commands::terraform::GatePlanArgs),
    /// The last step before a root's apply: exit 3 unless the lifecycle's
    /// apply flag, read from the tree now, lets this root apply.
    #[command(name = "apply-check")]
    ApplyCheck(commands::terraform::ApplyCheckArgs),
    /// Move a workspace's terraform state (the runner steps of a real
    /// run's --migrate-state), run from the OpenTofu root.
    #[command(name = "state-migration")]
    StateMigration {
        #[command(subcommand)]
        step: commands::state::MigrationStep,
    },
    /// Unmount a storage on an instance before its detach, leaving the
    /// receipt `gate-plan --require-unmounted` reads.
    Unmount(commands::terraform::UnmountArgs),
    /// Show the configuration as csis sees it.
    Config {
        #[command(subcommand)]
        command: commands::config::ConfigCommand,
    },
    /// The image chains, instances, storages and groups as a graph (with
    /// --lineage, the recorded builds and pins) on stdout.
    Graph(commands::graph::GraphArgs),
    /// Print a shell completion script for csis (bash, zsh, fish,
    /// powershell, elvish) on stdout.
    Completions(commands::completions::CompletionsArgs),
    /// Print csis's man page (roff) on stdout.
    Man,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Local(step) => return commands::plugin_step::local(step, cli.lock_timeout),
        Command::Dummy(step) => return commands::plugin_step::dummy(step),
        Command::Ict(step) => return commands::plugin_step::ict(step),
        Command::CloudConfig { command } => return commands::cloud_config::cloud_config(command),
        Command::Template { command } => return commands::template::run(command),
        Command::PublicSafe(args) => {
            if let Some(code) = commands::public_safe::without_tree(args) {
                return code;
            }
        }
        Command::Completions(args) => return commands::completions::completions(args),
        Command::Man => return commands::completions::man(),
        _ => {}
    }
    let registry = match Registry::build(&plugins()) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let root_dir = cli.root_dir.clone().unwrap_or_else(find_root);
    let options = LoadOptions {
        overlays: cli.overlays.clone(),
        undeclare: cli.undeclare.clone(),
        display_root: Some(root_dir.to_string_lossy().to_string()),
        max_file_size: cli
            .max_file_size
            .unwrap_or(csis_engine::workspace::DEFAULT_MAX_FILE_SIZE),
        tolerate_missing_env: cli.tolerate_missing_env,
        // Salsa's event per query costs a cold plan 7-10%: only what
        // reports query counts asks for it.
        query_log: matches!(&cli.command, Command::Watch { .. })
            || matches!(&cli.command, Command::Plan(args) if args.stats)
            || matches!(&cli.command, Command::Run(args) if args.stats),
    };
    // Deferred steps run from generated/<lifecycle>/ with CSIS_ROOT set:
    // an absolute root keeps them pointing at the tree.
    let root = std::path::absolute(&root_dir).unwrap_or_else(|_| root_dir.clone());
    if let Command::Watch {
        lifecycles,
        generate,
        selection,
    } = &cli.command
    {
        return watch::watch(watch::WatchArgs {
            root,
            options,
            registry,
            lifecycles: lifecycles.clone(),
            generate: *generate,
            selection: selection.options(true),
            lock_timeout: cli.lock_timeout,
        });
    }
    // A writer holds the tree's lock from before it reads the tree (its
    // records among it) until it exits.
    let lock = if writes_tree(&cli.command) {
        match take_lock(&root, cli.lock_timeout) {
            Ok(lock) => lock,
            Err(code) => return code,
        }
    } else {
        None
    };
    let lock_token = lock.as_ref().map(|l| l.token().to_string());
    // The terraform steps that need no tree: the root only names where
    // receipts and backups live.
    if let Some(code) = commands::terraform_step(&cli.command, &root) {
        return code;
    }
    // Never dropped: freeing every memoized query of a large tree takes a
    // tenth of a plan's time, and the process is about to exit.
    let ws = match Workspace::load(&OsSystem, registry, &root, &options) {
        Ok(ws) => std::mem::ManuallyDrop::new(ws),
        Err(e) => {
            eprintln!("error: reading {}: {e}", root_dir.display());
            return ExitCode::from(1);
        }
    };
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let style = report::Style::new(cli.brief, cli.color, no_color);
    match &cli.command {
        Command::Run(args) => commands::run::run(&ws, args, lock_token),
        Command::Plan(args) => commands::plan::plan(&ws, args),
        Command::Lineage { command } => commands::lineage::lineage(&ws, command),
        Command::State {
            command: commands::state::StateCommand::Query { strict },
        } => commands::state::state_query(&ws, *strict),
        Command::ApplyCheck(args) => commands::terraform::apply_check(&ws, args),
        Command::StateMigration { step } => commands::state::state_migration(&ws, step),
        Command::Unmount(args) => commands::terraform::unmount(&ws, args),
        // Answered before the tree is loaded.
        Command::GatePlan(_)
        | Command::State {
            command: commands::state::StateCommand::Backup { .. },
        } => ExitCode::from(2),
        Command::Encrypt(args) => outcome(commands::secrets::encrypt(&ws, args)),
        Command::Reencrypt => outcome(commands::secrets::reencrypt(&ws)),
        Command::PublicSafe(args) => commands::public_safe::exec(&ws, args),
        Command::DecryptCheck => outcome(commands::secrets::decrypt_check(&ws)),
        Command::Upgrade(args) => commands::operations::upgrade(&ws, args),
        Command::Forget(args) => commands::operations::forget(&ws, args),
        Command::Release(args) => commands::operations::release(&ws, args),
        Command::Dispose(args) => commands::operations::dispose(&ws, args),
        Command::Validate(args) => commands::validate::validate(&ws, style, args),
        Command::Graph(args) => commands::graph::graph(&ws, args),
        Command::Config { command } => commands::config::config(&ws, style, command),
        // Answered before the tree is loaded.
        Command::Local(_)
        | Command::Ict(_)
        | Command::Dummy(_)
        | Command::Watch { .. }
        | Command::CloudConfig { .. }
        | Command::Template { .. }
        | Command::Completions(_)
        | Command::Man => ExitCode::from(2),
    }
}
