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

use clap::{Parser, Subcommand, ValueEnum};
use csis_engine::db::system::{OsSystem, System};
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
    Encrypt {
        /// Comma-separated keys, e.g. name,first_name,last_name,email.
        #[arg(long, value_delimiter = ',', required = true)]
        fields: Vec<String>,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Re-encrypt every marker in the tree to the current recipients; the
    /// first marker no identity opens stops it, changing nothing.
    Reencrypt,
    /// List every marker in the tree and whether CSIS_CONFIG_IDENTITY
    /// opens it; exit 1 when one does not open.
    DecryptCheck,
    /// Scan the tree (or PATH, or git's index with --staged) for material
    /// that must not be public; exit 3 on a finding.
    PublicSafe {
        path: Option<PathBuf>,
        #[arg(long)]
        staged: bool,
        /// Install a git pre-commit hook that runs `public-safe --staged`.
        #[arg(long)]
        install_hook: bool,
        /// The findings as text (stderr), JSON or SARIF 2.1.0 (stdout; what
        /// code-scanning UIs read).
        #[arg(long, value_enum, default_value = "text")]
        format: PublicSafeFormat,
        /// Print what RULE refuses and what it lets through; with PATH, also
        /// why each of its findings there matched (never the value).
        #[arg(long, value_name = "RULE")]
        explain: Option<String>,
    },
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

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PublicSafeFormat {
    Text,
    Json,
    Sarif,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Local(step) => return commands::plugin_step::local(step, cli.lock_timeout),
        Command::Dummy(step) => return commands::plugin_step::dummy(step),
        Command::Ict(step) => return commands::plugin_step::ict(step),
        Command::CloudConfig { command } => return commands::cloud_config::cloud_config(command),
        Command::Template { command } => return commands::template::run(command),
        Command::PublicSafe {
            explain: Some(rule),
            path: None,
            ..
        } => return public_safe_explain(rule),
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
        Command::Encrypt { fields, files } => outcome(encrypt(&ws, fields, files)),
        Command::Reencrypt => outcome(reencrypt(&ws)),
        Command::PublicSafe {
            path,
            staged,
            install_hook,
            format,
            explain,
        } => public_safe(
            &ws,
            path.as_deref(),
            *staged,
            *install_hook,
            *format,
            explain.as_deref(),
        ),
        Command::DecryptCheck => outcome(decrypt_check(&ws)),
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

fn recipients(ws: &Workspace) -> Result<Vec<String>, String> {
    let path = ws.root.join("cfg/_config.yml");
    let text = csis_engine::db::system::System::read_to_string(&OsSystem, &path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .ok_or_else(|| format!("{} does not exist", path.display()))?;
    csis_secrets::recipients_from_config(&text)
}

fn encrypt(ws: &Workspace, fields: &[String], files: &[PathBuf]) -> Result<String, String> {
    use csis_engine::db::system::System;
    let recipients = recipients(ws)?;
    let mut out = Vec::new();
    for file in files {
        let text = OsSystem
            .read_to_string(file)
            .map_err(|e| format!("{}: {e}", file.display()))?
            .ok_or_else(|| format!("{} does not exist", file.display()))?;
        let (new, n) = csis_secrets::encrypt_fields_in_text(&text, fields, &mut |p| {
            csis_secrets::encrypt(p, &recipients)
        })?;
        if n > 0 {
            OsSystem
                .write_atomic(file, new.as_bytes(), false)
                .map_err(|e| e.to_string())?;
        }
        out.push(format!(
            "encrypt: {}: {n} value(s) encrypted",
            file.display()
        ));
    }
    Ok(out.join("\n"))
}

fn reencrypt(ws: &Workspace) -> Result<String, String> {
    use csis_engine::db::system::System;
    let recipients = recipients(ws)?;
    let identities = ws.tree.identities(&ws.db);
    // Every file first; nothing is written unless every marker opened.
    let mut changed = Vec::new();
    let mut total = 0;
    for (path, text) in ws.config_files() {
        let (new, n) = csis_secrets::rotate_text(&text, identities, &recipients)
            .map_err(|e| format!("reencrypt: {path}: {e}; nothing was changed"))?;
        if n > 0 {
            total += n;
            changed.push((path, new));
        }
    }
    for (path, new) in &changed {
        OsSystem
            .write_atomic(&ws.root.join(path), new.as_bytes(), false)
            .map_err(|e| e.to_string())?;
    }
    Ok(format!(
        "reencrypt: {total} marker(s) in {} file(s) now encrypted to {} recipient(s)",
        changed.len(),
        recipients.len()
    ))
}

fn decrypt_check(ws: &Workspace) -> Result<String, String> {
    let identities = ws.tree.identities(&ws.db);
    let mut lines = Vec::new();
    let mut closed = 0;
    for (path, text) in ws.config_files() {
        for (line, marker) in csis_secrets::markers_in(&text) {
            match csis_secrets::decrypt(&marker, identities) {
                Ok(_) => lines.push(format!("{path}:{line}: opens")),
                Err(e) => {
                    closed += 1;
                    lines.push(format!("{path}:{line}: cannot open: {e}"));
                }
            }
        }
    }
    if closed > 0 {
        return Err(format!(
            "{}\ndecrypt-check: {closed} marker(s) do not open",
            lines.join("\n")
        ));
    }
    lines.push(format!(
        "decrypt-check: every marker opens ({})",
        lines.len()
    ));
    Ok(lines.join("\n"))
}

/// `csis public-safe --explain RULE`: the rule's description, layer,
/// pattern and what it lets through. Exit 2 for an unknown rule.
fn public_safe_explain(rule: &str) -> ExitCode {
    match csis_public_safe::explain(rule) {
        Some(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        None => {
            let ids: Vec<&str> = csis_public_safe::all_rules().iter().map(|r| r.id).collect();
            eprintln!(
                "error: no public-safe rule {rule:?} (rules: {})",
                ids.join(", ")
            );
            ExitCode::from(2)
        }
    }
}

/// The findings as JSON: `{"scanned": n, "findings": [{path, rule,
/// excerpt}]}`.
fn public_safe_json(scanned: usize, findings: &[csis_public_safe::Finding]) -> serde_json::Value {
    serde_json::json!({
        "scanned": scanned,
        "findings": findings
            .iter()
            .map(|f| serde_json::json!({"path": f.path, "rule": f.rule, "excerpt": f.excerpt}))
            .collect::<Vec<_>>(),
    })
}

/// The findings as SARIF 2.1.0: one run of the tool `csis public-safe`,
/// every rule with its description, one error-level result per finding at
/// its file (an archive member at the archive).
fn public_safe_sarif(findings: &[csis_public_safe::Finding]) -> serde_json::Value {
    let rules: Vec<serde_json::Value> = csis_public_safe::all_rules()
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "shortDescription": {"text": r.id},
                "fullDescription": {"text": r.description},
                "defaultConfiguration": {"level": "error"},
                "properties": {"layer": match r.layer {
                    csis_public_safe::Layer::Hard => "hard",
                    csis_public_safe::Layer::Soft => "soft",
                }},
            })
        })
        .collect();
    let results: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            let file = f.path.split('!').next().unwrap_or(&f.path);
            serde_json::json!({
                "ruleId": f.rule,
                "level": "error",
                "message": {"text": format!("{}: {} (public-safe by construction; allow a value by decision in cfg/_config.yml public_safe.allow)", f.rule, f.excerpt)},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": file}}}],
                "partialFingerprints": {"csis/v1": format!("{}:{}:{}", f.path, f.rule, f.excerpt)},
            })
        })
        .collect();
    serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "csis public-safe",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

fn public_safe(
    ws: &Workspace,
    path: Option<&std::path::Path>,
    staged: bool,
    install: bool,
    format: PublicSafeFormat,
    explain: Option<&str>,
) -> ExitCode {
    use csis_engine::run::commit;
    if install {
        return outcome(commit::install_hook(&OsSystem, &ws.root));
    }
    if let Some(rule) = explain
        && csis_public_safe::describe(rule).is_none()
    {
        return public_safe_explain(rule);
    }
    let scanned = if staged {
        commit::scan_staged(&OsSystem, &ws.root)
    } else {
        let under = path.map_or_else(|| ws.root.clone(), |p| ws.root.join(p));
        commit::scan_tree(&OsSystem, &ws.root, &under)
    };
    let (n, findings) = match scanned {
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
        Ok(s) => s,
    };
    if let Some(rule) = explain {
        // The rule, then why each of its findings matched, file by file.
        print!("{}", csis_public_safe::explain(rule).unwrap_or_default());
        let read = |p: &std::path::Path| {
            OsSystem
                .read_bytes(p)
                .ok()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        };
        let allow =
            csis_public_safe::Allow::from_config_text(&read(&ws.root.join("cfg/_config.yml")));
        let mut files: Vec<&str> = findings
            .iter()
            .filter(|f| f.rule == rule && !f.path.contains('!'))
            .map(|f| f.path.as_str())
            .collect();
        files.dedup();
        for file in files {
            let text = read(&ws.root.join(file));
            for why in csis_public_safe::reasons(file, &text, &allow, rule) {
                println!("{file}: {why}");
            }
        }
        return if findings.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(3)
        };
    }
    let code = if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    };
    match format {
        PublicSafeFormat::Json => {
            println!("{:#}", public_safe_json(n, &findings));
            return code;
        }
        PublicSafeFormat::Sarif => {
            println!("{:#}", public_safe_sarif(&findings));
            return code;
        }
        PublicSafeFormat::Text => {}
    }
    if findings.is_empty() {
        println!("public-safe: {n} file(s) scanned, no findings");
        return code;
    }
    for f in &findings {
        eprintln!("{f}");
    }
    let what = if staged {
        "the staged files"
    } else {
        "the tree"
    };
    eprintln!("error: {}", csis_public_safe::refusal(what, &findings));
    code
}
