//! `csis template validate` and `csis template resolve`: ICT image
//! templates read by csis-template, on any file (no configuration tree
//! needed). docs/templates.md is the user's page.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use csis_engine::db::system::OsSystem;
use csis_engine::workspace::read_named;
use csis_template::{
    Chain, OsFs, Problem, Template, TemplateFs, Variables, defaults_path, load_chain, parse,
    resolve_full, to_json, to_yaml, validate_merged, validate_user, validate_user_located,
};

#[derive(Subcommand)]
pub enum TemplateCommand {
    /// Load each file's extends chain and validate it (each layer as a
    /// user template; with OS defaults, the merged template in full).
    /// Prints `FILE: ok` or the problems; exit 1 on any refusal.
    Validate {
        #[command(flatten)]
        opts: TemplateOpts,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the template as the build sees it: the extends chain folded
    /// (with --full, on top of the OS defaults), secrets redacted.
    Resolve {
        #[command(flatten)]
        opts: TemplateOpts,
        /// The full build-time view: OS defaults underneath the chain.
        #[arg(long)]
        full: bool,
        #[arg(long, value_enum, default_value_t = TemplateFormat::Yaml)]
        format: TemplateFormat,
        file: PathBuf,
    },
}

#[derive(Args)]
pub struct TemplateOpts {
    /// ICT's config/osv: holds <os>/<dist>/imageconfigs/defaultconfigs/
    /// [default: the first config/osv/ found from the template's
    /// directory up]
    #[arg(long, value_name = "DIR")]
    defaults_dir: Option<PathBuf>,
    /// A `${name}` value, NAME=VALUE (repeatable; wins over --vars-file).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    vars: Vec<String>,
    /// A YAML file of `${name}` values (a flat mapping).
    #[arg(long, value_name = "FILE")]
    vars_file: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum TemplateFormat {
    Yaml,
    Json,
}

/// `max_file_size`: `--max-file-size` (or CSIS_MAX_FILE_SIZE), the limit
/// the tree load reads under.
pub fn run(command: &TemplateCommand, max_file_size: u64) -> ExitCode {
    let fs = BoundedFs {
        max_bytes: max_file_size,
    };
    match command {
        TemplateCommand::Validate { opts, files } => validate(&fs, opts, files),
        TemplateCommand::Resolve {
            opts,
            full,
            format,
            file,
        } => resolve(&fs, opts, *full, *format, file),
    }
}

/// [`TemplateFs`] reading every file (the template, its `extends`
/// parents, the variables file, the OS defaults) under the tree's limits
/// on input: a FIFO or a device named anywhere in the chain is refused
/// unopened rather than hanging the command, a file over the limit
/// unread. csis-template stays free of the engine; the CLI hands it this.
pub(crate) struct BoundedFs {
    pub(crate) max_bytes: u64,
}

impl TemplateFs for BoundedFs {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        read_named(&OsSystem, path, self.max_bytes)
    }

    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        OsFs.canonicalize(path)
    }

    fn is_symlink(&self, path: &Path) -> bool {
        OsFs.is_symlink(path)
    }
}

fn variables(fs: &BoundedFs, opts: &TemplateOpts) -> Result<Variables, String> {
    let mut vars = match &opts.vars_file {
        Some(f) => {
            let text = fs
                .read(f)
                .map_err(|e| format!("{}: cannot read the variables file: {e}", f.display()))?;
            Variables::from_yaml(f, &text).map_err(|p| p.to_string())?
        }
        None => Variables::new(),
    };
    for kv in &opts.vars {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("--var {kv}: expected NAME=VALUE"));
        };
        vars.set(k, v);
    }
    Ok(vars)
}

/// Where the OS defaults are read from, and how csis knows the place.
struct DefaultsDir {
    dir: PathBuf,
    /// Found by walking up from the template, not given with
    /// --defaults-dir: a missing file for the target is then a warning
    /// (the found tree need not hold every target's defaults).
    found: bool,
}

/// `--defaults-dir`, else the first `config/osv` from the template's
/// directory up.
fn defaults_dir(opts: &TemplateOpts, file: &Path) -> Option<DefaultsDir> {
    if let Some(d) = &opts.defaults_dir {
        return Some(DefaultsDir {
            dir: d.clone(),
            found: false,
        });
    }
    let start = OsFs.canonicalize(file).ok()?;
    start
        .ancestors()
        .skip(1)
        .map(|a| a.join("config").join("osv"))
        .find(|c| c.is_dir())
        .map(|dir| DefaultsDir { dir, found: true })
}

/// What reading the OS defaults gave.
enum Defaults {
    /// Read (`None` in overlay mode, where they do not apply).
    Read(Option<Box<Template>>),
    /// A found directory has no file for the target: the path looked for.
    Missing(PathBuf),
}

/// The OS defaults of the chain's target, when they apply (not in
/// overlay mode).
fn defaults(
    fs: &BoundedFs,
    dd: &DefaultsDir,
    folded: &Template,
    vars: &Variables,
) -> Result<Defaults, Vec<Problem>> {
    if folded.is_overlay() {
        return Ok(Defaults::Read(None));
    }
    let path = defaults_path(&dd.dir, &folded.target);
    let text = match fs.read(&path) {
        Ok(t) => t,
        Err(e) if dd.found && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Defaults::Missing(path));
        }
        Err(e) => {
            return Err(vec![Problem::error(
                &path,
                0,
                0,
                format!("cannot read the OS defaults for {}: {e}", folded.target),
            )]);
        }
    };
    parse(&path, &text, vars).map(|t| Defaults::Read(Some(Box::new(t))))
}

fn no_defaults(folded: &Template, path: &Path) -> String {
    format!(
        "no OS defaults for {} at {}; the merged template is not checked",
        folded.target,
        path.display()
    )
}

fn print(problems: &[Problem]) {
    for p in problems {
        eprintln!("{p}");
    }
}

/// Add `new` to `all` unless the same message is already there.
fn add_new(all: &mut Vec<Problem>, new: Vec<Problem>) {
    for p in new {
        if !all.iter().any(|q| q.message == p.message) {
            all.push(p);
        }
    }
}

fn validate(fs: &BoundedFs, opts: &TemplateOpts, files: &[PathBuf]) -> ExitCode {
    let vars = match variables(fs, opts) {
        Ok(v) => v,
        Err(m) => {
            eprintln!("error: {m}");
            return ExitCode::from(1);
        }
    };
    let mut refused_any = false;
    for file in files {
        let problems = validate_one(fs, opts, file, &vars);
        print(&problems);
        if problems.iter().any(Problem::is_error) {
            refused_any = true;
        } else {
            csis_plugin_api::outln!("{}: ok", file.display());
        }
    }
    ExitCode::from(u8::from(refused_any))
}

fn validate_one(
    fs: &BoundedFs,
    opts: &TemplateOpts,
    file: &Path,
    vars: &Variables,
) -> Vec<Problem> {
    let chain = match load_chain(fs, file, vars) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let mut all = chain.warnings.clone();
    // Each layer as a user template, located in its own text.
    for (f, layer) in chain.files.iter().zip(&chain.layers) {
        let text = fs.read(f).unwrap_or_default();
        add_new(&mut all, validate_user_located(f, &text, layer));
    }
    if all.iter().any(Problem::is_error) {
        return all;
    }
    let folded = chain.fold();
    if chain.layers.len() > 1 {
        // What only the layers together break (an inherited overlay mode, say).
        add_new(&mut all, validate_user(file, &folded));
    }
    if let Some(dd) = defaults_dir(opts, file) {
        match defaults(fs, &dd, &folded, vars) {
            Ok(Defaults::Read(d)) => {
                let full = resolve_full(&chain, d.as_deref());
                add_new(&mut all, validate_merged(file, &full));
            }
            Ok(Defaults::Missing(path)) => {
                all.push(Problem::warning(file, 0, 0, no_defaults(&folded, &path)));
            }
            Err(e) => all.extend(e),
        }
    }
    all
}

fn resolve(
    fs: &BoundedFs,
    opts: &TemplateOpts,
    full: bool,
    format: TemplateFormat,
    file: &Path,
) -> ExitCode {
    let vars = match variables(fs, opts) {
        Ok(v) => v,
        Err(m) => {
            eprintln!("error: {m}");
            return ExitCode::from(1);
        }
    };
    let chain: Chain = match load_chain(fs, file, &vars) {
        Ok(c) => c,
        Err(e) => {
            print(&e);
            return ExitCode::from(1);
        }
    };
    print(&chain.warnings);
    eprintln!("{}", chain.describe());
    let t = if full {
        let Some(dd) = defaults_dir(opts, file) else {
            eprintln!(
                "error: --full needs the OS defaults: no config/osv/ found from {} up; pass --defaults-dir DIR",
                file.display()
            );
            return ExitCode::from(1);
        };
        let folded = chain.fold();
        match defaults(fs, &dd, &folded, &vars) {
            Ok(Defaults::Read(d)) => resolve_full(&chain, d.as_deref()),
            Ok(Defaults::Missing(path)) => {
                eprintln!(
                    "error: --full needs the OS defaults: no OS defaults for {} at {} (in the config/osv/ found from {} up); pass --defaults-dir DIR",
                    folded.target,
                    path.display(),
                    file.display()
                );
                return ExitCode::from(1);
            }
            Err(e) => {
                print(&e);
                return ExitCode::from(1);
            }
        }
    } else {
        chain.fold()
    };
    match format {
        TemplateFormat::Yaml => csis_plugin_api::out!("{}", to_yaml(&t, true)),
        TemplateFormat::Json => csis_plugin_api::out!("{}", to_json(&t, true)),
    }
    ExitCode::SUCCESS
}
