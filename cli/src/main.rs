//! csis: plan and run the building of machine images and the machines made
//! from them, from a declarative configuration tree.
//!
//! Each command is a thin wrapper over one engine operation (commands/,
//! one file per family). This file is the entry: parse, answer what needs
//! no tree, assemble the registry from the plugins this binary links, take
//! the lock when the command writes the tree, load it, dispatch.

/// mimalloc rather than glibc's malloc: a cold plan allocates on both
/// cores, where glibc spends its time growing per-thread arenas (see
/// docs/dependencies.md and docs/performance.md for the measurement).
#[global_allocator]
static GLOBAL: csis_alloc::Allocator = csis_alloc::Allocator;

mod args;
mod commands;
mod complete;
mod lock;
mod outcome;
mod plugins;
mod progress;
mod report;
mod root;
mod watch;

use std::process::ExitCode;

use crate::args::{OVERLAYS_ENV, UNDECLARE_ENV};
use std::sync::Arc;

use clap::Parser;
use csis_engine::db::Db;
use csis_engine::db::system::{OsSystem, Recording, System};
use csis_engine::registry::Registry;
use csis_engine::run::plan_record;
use csis_engine::workspace::{LoadOptions, Workspace};

use args::{Cli, Command};
use lock::{take_lock, writes_tree};
use plugins::plugins;
use root::find_root;

fn main() -> ExitCode {
    let code = run();
    // A closed pipe is no failure (stdout.rs); anything else that kept
    // the output from its reader is.
    match csis_plugin_api::stdout::failure() {
        Some(e) => {
            eprintln!("error: writing to standard output: {e}");
            ExitCode::from(1)
        }
        None => code,
    }
}

fn run() -> ExitCode {
    if let Some(code) = complete::answer_if_asked() {
        return code;
    }
    let cli = Cli::parse();
    if let Some(code) = commands::without_tree(&cli) {
        return code;
    }
    let registry = match Registry::build(&plugins()) {
        Ok(r) => Arc::new(r.with_plugin_sources(env!("CSIS_PLUGIN_SOURCES"))),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    if let Command::Run(args) = &cli.command
        && let Some(code) = commands::run::without_lifecycles(args, &registry)
    {
        return code;
    }
    let root_dir = cli.root_dir.clone().unwrap_or_else(find_root);
    // Deferred steps run from generated/<lifecycle>/ with CSIS_ROOT set:
    // an absolute root keeps them pointing at the tree.
    let root = std::path::absolute(&root_dir).unwrap_or_else(|_| root_dir.clone());
    let uses_cache = !cli.no_cache
        && matches!(
            &cli.command,
            Command::Plan(_) | Command::Validate(_) | Command::Run(_)
        );
    let options = LoadOptions {
        overlays: cli.overlays.clone(),
        undeclare: cli.undeclare.clone(),
        display_root: Some(root_dir.to_string_lossy().to_string()),
        max_file_size: commands::max_file_size(&cli),
        tolerate_missing_env: cli.tolerate_missing_env,
        // Salsa's event per query costs a cold plan 7-10%: only what
        // reports query counts asks for it.
        query_log: matches!(&cli.command, Command::Watch { .. })
            || matches!(&cli.command, Command::Plan(args) if args.stats)
            || matches!(&cli.command, Command::Run(args) if args.stats),
        declarations_only: false,
        cache_dir: uses_cache.then(|| {
            cli.cache_dir
                .clone()
                .unwrap_or_else(|| root.join(csis_engine::db::cache::DEFAULT_DIR))
        }),
    };
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
    // Before the load: a load asks the clouds, and an expired session
    // would stop it before preflight could say so.
    if let Command::Preflight(args) = &cli.command {
        return commands::preflight::preflight(
            &registry,
            &root,
            &cli.overlays,
            commands::max_file_size(&cli),
            args,
        );
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
    // A plan another process made from the same reads is printed again
    // (run/plan_record.rs); else this one's reads are recorded to keep it.
    let record = PlanRecord::asked(&cli, &options, &registry, &root);
    let recording = record
        .as_ref()
        .map(|r| Recording::new(&OsSystem).unnoted_below(&r.dir));
    if let (Some(r), Some(recording)) = (&record, &recording) {
        match plan_record::find(recording, &r.env, &r.dir, &r.key, &r.request) {
            plan_record::Found::Same(printed) => {
                csis_plugin_api::stdout::write(&printed.stdout);
                let _ = std::io::Write::write_all(&mut std::io::stderr(), &printed.stderr);
                return ExitCode::from(printed.code);
            }
            plan_record::Found::Ignored(notice) => eprintln!("{notice}"),
            plan_record::Found::Changed => {}
        }
    }
    let system: &dyn System = match &recording {
        Some(r) => r,
        None => &OsSystem,
    };
    // Never dropped: freeing every memoized query of a large tree takes a
    // tenth of a plan's time, and the process is about to exit.
    let ws = match Workspace::load(system, registry, &root, &options) {
        Ok(ws) => std::mem::ManuallyDrop::new(ws),
        Err(e) => {
            eprintln!("error: reading {}: {e}", root_dir.display());
            return ExitCode::from(1);
        }
    };
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let style = report::Style::new(cli.brief, cli.color, no_color);
    if let Some(notice) = ws.db.cache().and_then(|c| c.notice()) {
        eprintln!("{notice}");
    }
    // A plan that keeps its record is printed, and its record written,
    // while the cache is: none reads what another writes, and one after
    // the other they were a tenth of an edit's plan.
    let mut to_print = None;
    let code = match (&cli.command, &recording, &record) {
        (Command::Plan(args), Some(recording), Some(r)) => {
            let planned = commands::plan::planned(&ws, args, recording);
            to_print = Some((planned, r.to_keep(&ws, recording)));
            ExitCode::SUCCESS
        }
        _ => commands::with_tree(&ws, &cli.command, style, lock_token, carried_env(&cli)),
    };
    let (saved, printed) = std::thread::scope(|s| {
        let printing = to_print.map(|(planned, keep)| {
            s.spawn(move || {
                csis_plugin_api::stdout::capture();
                let (code, stderr) = planned.print();
                let printed = plan_record::Printed {
                    stdout: csis_plugin_api::stdout::captured().unwrap_or_default(),
                    stderr: stderr.into_bytes(),
                    code,
                };
                (code, keep.and_then(|keep| keep.write(printed)))
            })
        });
        let saved = csis_engine::run::persist_cache::save_cache(&ws, &OsSystem);
        (saved, printing.map(|h| h.join()))
    });
    let (code, record_failed) = match printed {
        None => (code, None),
        Some(Ok((printed_code, failed))) => (ExitCode::from(printed_code), failed),
        Some(Err(_)) => (ExitCode::from(1), None),
    };
    // One warning when the cache directory cannot be written.
    match saved {
        Err(warning) => eprintln!("{warning}"),
        Ok(()) => {
            if let Some(warning) = record_failed {
                eprintln!("{warning}");
            }
        }
    }
    code
}

/// A `csis plan` that keeps its record: where (the cache directory), and
/// what the record answers.
struct PlanRecord {
    dir: std::path::PathBuf,
    env: std::collections::BTreeMap<String, String>,
    key: String,
    request: String,
}

impl PlanRecord {
    /// The record of this command, when it is a plan with a cache that
    /// neither reports its own time (`--stats`) nor may decrypt (an
    /// identity is set: nothing a secret made is kept).
    fn asked(
        cli: &Cli,
        options: &LoadOptions,
        registry: &Registry,
        root: &std::path::Path,
    ) -> Option<PlanRecord> {
        let Command::Plan(args) = &cli.command else {
            return None;
        };
        if args.stats || std::env::var_os("CSIS_CONFIG_IDENTITY").is_some() {
            return None;
        }
        let dir = options.cache_dir.clone()?;
        let env = OsSystem.env();
        let request = plan_record::request(&std::env::args().collect::<Vec<_>>(), root, &env);
        Some(PlanRecord {
            dir,
            env,
            key: csis_engine::db::cache::key(registry),
            request,
        })
    }

    /// The record to keep of what the plan prints, when everything it
    /// depended on can be asked again.
    fn to_keep<'r>(
        &'r self,
        ws: &Workspace,
        recording: &'r Recording<'r>,
    ) -> Option<KeptRecord<'r>> {
        let reads = ws.db.cache().map(|c| c.env_reads())?;
        let vars = reads.vars()?;
        if reads.read_clock() || ws.read_remote_state() {
            return None;
        }
        Some(KeptRecord {
            record: self,
            recording,
            vars,
        })
    }
}

/// A plan's record, ready to be written.
struct KeptRecord<'r> {
    record: &'r PlanRecord,
    /// Its probes are taken (sorted) by the thread that writes it.
    recording: &'r Recording<'r>,
    vars: Vec<String>,
}

impl KeptRecord<'_> {
    /// Write the record of `printed`; the warning to print when it could
    /// not be written (a record lost is only a slower next plan).
    fn write(self, printed: plan_record::Printed) -> Option<String> {
        let probes = self.recording.take_probes().ok()?;
        let PlanRecord {
            dir,
            env,
            key,
            request,
        } = self.record;
        plan_record::keep(
            &OsSystem, env, dir, key, request, &probes, &self.vars, &printed,
        )
        .err()
        .map(|e| csis_engine::db::cache::not_written(dir, &e))
    }
}

/// What a run hands the csis steps of its runner scripts so that they load
/// the tree it loaded: its overlays (absolute: the steps run from the
/// lifecycle directories) and its `--undeclare` flags, one per line, read
/// back by those steps' `--overlay` and `--undeclare` (args.rs).
fn carried_env(cli: &Cli) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if !cli.overlays.is_empty() {
        let paths: Vec<String> = cli
            .overlays
            .iter()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
            .map(|p| p.to_string_lossy().to_string())
            .collect();
        env.push((OVERLAYS_ENV.to_string(), paths.join("\n")));
    }
    if !cli.undeclare.is_empty() {
        env.push((UNDECLARE_ENV.to_string(), cli.undeclare.join("\n")));
    }
    env
}
