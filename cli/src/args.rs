//! The command line: the global options (`Cli`) and the `Command` enum,
//! whose variant order and doc comments are the order and text of
//! `--help`, the completions and the man page. Each command's own
//! arguments live beside its body under commands/.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::{commands, report};

#[derive(Parser)]
#[command(
    name = "csis",
    version,
    about = "Plan and run machine-image builds from a declarative configuration tree",
    // Every subcommand's --help shows these apart from its own options.
    next_help_heading = "Global options",
    after_help = PLUMBING
)]
pub struct Cli {
    /// The configuration root (holds cfg/) [default: the nearest directory
    /// from here up that holds cfg/ with YAML in it, else .]
    #[arg(long, env = "CSIS_ROOT_DIR", global = true)]
    pub root_dir: Option<PathBuf>,
    /// An overlay file applied for this invocation only (repeatable). A
    /// run hands its overlays to the csis steps of its runner scripts in
    /// CSIS_OVERLAYS (one path per line).
    #[arg(long = "overlay", value_name = "FILE", global = true, env = OVERLAYS_ENV, value_delimiter = '\n')]
    pub overlays: Vec<PathBuf>,
    /// The most bytes csis reads from one file (a number, or with KiB,
    /// MiB or GiB); a larger file is refused unread [default: 16MiB]
    #[arg(long, env = "CSIS_MAX_FILE_SIZE", value_name = "BYTES", global = true, value_parser = parse_size)]
    pub max_file_size: Option<u64>,
    /// Remove an item for this invocation only: KIND:NAME (repeatable;
    /// handed to a run's csis steps in CSIS_UNDECLARE).
    #[arg(long = "undeclare", value_name = "KIND:NAME", global = true, env = UNDECLARE_ENV, value_delimiter = '\n')]
    pub undeclare: Vec<String>,
    /// Diagnostics as `file:line:col: message` lines instead of snippets.
    #[arg(long, global = true)]
    pub brief: bool,
    /// Colour in diagnostics: auto (on a terminal, unless NO_COLOR is
    /// set), always or never.
    #[arg(long, value_enum, default_value_t = report::ColorChoice::Auto, global = true)]
    pub color: report::ColorChoice,
    /// How long a command that writes the tree waits for another one
    /// holding the tree's lock before refusing (exit 1, nothing written);
    /// 0 refuses at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 0, global = true)]
    pub lock_timeout: u64,
    /// An unset `${env.NAME}` becomes `<missing env NAME>` with one
    /// warning per name, instead of an error (docs/interpolation.md).
    #[arg(long, global = true)]
    pub tolerate_missing_env: bool,
    /// Where `plan`, `validate` and `run` keep what a later process may
    /// reuse (each file's entries, by the digest of its text); a cache
    /// that does not fit is ignored with one notice and rewritten
    /// [default: .csis/cache under the root]
    #[arg(long, env = "CSIS_CACHE_DIR", value_name = "DIR", global = true)]
    pub cache_dir: Option<PathBuf>,
    /// Neither read nor write the cache
    #[arg(long, global = true, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// `--max-file-size`: bytes, or a number with K/KiB, M/MiB or G/GiB
/// (powers of 1024).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
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

/// The commands a run's runner scripts call, hidden from the list above
/// them: named here, each with its own --help.
const PLUMBING: &str = "\
Plumbing (the runner scripts call these; `csis <command> --help` describes each):
  gate-plan        The apply gate over a tofu plan
  apply-check      The last step before a root's apply
  state-migration  Move a workspace's terraform state
  unmount          Unmount a storage on an instance before its detach
  lineage record, lineage bind-instance
                   Record a bake, bind a launched instance";

/// The variables a run's csis steps read its overlays and `--undeclare`
/// flags from (main.rs `carried_env`).
pub const OVERLAYS_ENV: &str = "CSIS_OVERLAYS";
pub const UNDECLARE_ENV: &str = "CSIS_UNDECLARE";

#[derive(Subcommand)]
pub enum Command {
    /// Write a first tree that validates (and, on local, runs) into DIR.
    Init(commands::init::InitArgs),
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
        #[arg(value_name = "LIFECYCLE", add = crate::complete::lifecycle_names())]
        lifecycles: Vec<String>,
        /// Also regenerate generated/ for LIFECYCLE... after every change
        /// (a dry run's generation: nothing is executed or recorded).
        #[arg(long, requires = "lifecycles")]
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
    /// Test each instance image's modifications twice (apply, then again
    /// for idempotence) in a throwaway copy of its parent build; results in
    /// meta-state/mod-tests.yaml, which release reads
    TestMods(commands::operations::TestModsArgs),
    /// Encrypt, in place, every value under the named keys of each file to
    /// encryption.recipients (byte-preserving, block and flow style alike;
    /// markers, templates, empty values and mappings are left alone).
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
    /// Verify what was launched: an instance's machine and its image's
    /// post-bake tests (instance), or the last verdict (assert).
    Verify {
        #[command(subcommand)]
        command: commands::verify::VerifyCommand,
    },
    /// Lineage: the recorded builds.
    Lineage {
        #[command(subcommand)]
        command: commands::lineage::LineageCommand,
    },
    /// A runtime: what it answers (describe); dispose every build of an
    /// ephemeral one (empty).
    Runtime {
        #[command(subcommand)]
        command: commands::runtime::RuntimeCommand,
    },
    /// The credential sessions behind every declared runtime, read from
    /// the credential caches before the tree loads (never a credential
    /// value); with --strict, exit 1 on one that would not last the run.
    Preflight(commands::preflight::PreflightArgs),
    /// Ask every runtime what exists and compare it with meta-state
    /// (query); adopt foreign builds into lineage (import); keep a
    /// workspace's terraform state before a state rm (backup).
    State {
        #[command(subcommand)]
        command: commands::state::StateCommand,
    },
    /// The apply gate over a tofu plan, run from the OpenTofu root: every
    /// planned destroy whitelisted, the planfile fresher than every file
    /// of its root, (with --require-unmounted) every detach unmounted;
    /// exit 3 on a refusal, and on a plan it does not understand.
    #[command(name = "gate-plan", hide = true)]
    GatePlan(commands::terraform::GatePlanArgs),
    /// The last step before a root's apply: exit 3 unless the lifecycle's
    /// apply flag, read from the tree now, lets this root apply (and
    /// when the tree does not load whole).
    #[command(name = "apply-check", hide = true)]
    ApplyCheck(commands::terraform::ApplyCheckArgs),
    /// Move a workspace's terraform state (the runner steps of a real
    /// run's --migrate-state), run from the OpenTofu root.
    #[command(name = "state-migration", hide = true)]
    StateMigration {
        #[command(subcommand)]
        step: commands::state::MigrationStep,
    },
    /// Unmount a storage on an instance before its detach, leaving the
    /// receipt `gate-plan --require-unmounted` reads.
    #[command(hide = true)]
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
    /// powershell, elvish) on stdout: it completes lifecycles and the
    /// tree's image, instance and runtime names too.
    Completions(commands::completions::CompletionsArgs),
    /// Print csis's man page, or a command's (roff), on stdout; --dir
    /// writes them all.
    Man(commands::completions::ManArgs),
}
