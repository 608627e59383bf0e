//! The edge between the world and the query graph: reads a tree through a
//! [`System`] into salsa inputs, applies changes, and maps diagnostics back
//! to file positions. The only place inputs change after a load.
//!
//! May not: plan, generate or write; the commands in run/ and `csis watch`
//! hold a workspace.

pub mod prewarm;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use csis_model::{Diagnostic, ItemKind, Origin};
use salsa::{Durability, Setter};

use crate::check::report::load_diagnostics;
use crate::db::files::parse_file;
use crate::db::run_input::{RunInput, RunOptions};
use crate::db::system::System;
use crate::db::{Database, ItemFile, PathFact, SourceFile, Tree};
use crate::load::items::item_file_names;
use crate::registry::Registry;
use csis_yaml::Span;

/// What a load is asked to read besides the root.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub overlays: Vec<PathBuf>,
    pub undeclare: Vec<String>,
    /// How messages name the root, when not as the path given to `load`
    /// (the cli loads an absolute root but names it as the user wrote it).
    pub display_root: Option<String>,
    /// The most bytes read from one file (`--max-file-size`); a larger
    /// file is refused unread.
    pub max_file_size: u64,
    /// `--tolerate-missing-env`: an unset `${env.NAME}` is a marked
    /// placeholder and a warning (set in the environment snapshot as
    /// CSIS_TOLERATE_MISSING_ENV=1).
    pub tolerate_missing_env: bool,
    /// Count and log the queries salsa executes (`--stats`, `watch`,
    /// tests of incrementality); off, salsa builds no event per query.
    pub query_log: bool,
}

/// The most rounds of reading an image template chain's files at load:
/// each round reads one more level of every chain, and the resolver asks
/// for no file past the one that makes a chain deeper than its MAX_DEPTH
/// (the test of this bound is engine/tests/image_templates.rs).
const TEMPLATE_ROUNDS: usize = csis_template::MAX_DEPTH + 2;

/// 16 MiB: far above any hand-written configuration file, far below what
/// would exhaust memory once parsed.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 16 * 1024 * 1024;

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            overlays: Vec::new(),
            undeclare: Vec::new(),
            display_root: None,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            tolerate_missing_env: false,
            query_log: false,
        }
    }
}

/// A byte count as people write it: `16 MiB`, `512 KiB`, `100 bytes`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size && n.is_multiple_of(size) {
            return format!("{} {unit}", n / size);
        }
        if n >= size {
            return format!("{:.1} {unit}", n as f64 / size as f64);
        }
    }
    format!("{n} bytes")
}

/// Where a file is read from, for the refusals of [`read_limited`].
enum Place<'a> {
    /// Inside the tree (its real path must stay below `root`).
    Tree { root: &'a Path },
    /// Named on the command line or in the environment: anywhere.
    Given,
}

/// A file read under the limits on input. A refusal (a FIFO, a device, a
/// file over the size limit, not UTF-8, a symlink out of the tree or to
/// nothing, an I/O error) is a diagnostic naming the file, and the file
/// is left out. `Ok(None)` also when the file does not exist.
fn read_limited(
    system: &dyn System,
    path: &Path,
    shown: &str,
    place: Place<'_>,
    max_bytes: u64,
    diags: &mut Vec<Diagnostic>,
) -> Option<String> {
    use crate::db::system::SourceRead;
    let refuse = |diags: &mut Vec<Diagnostic>, why: String| {
        diags.push(Diagnostic::error(format!("{shown}: {why}")));
        None
    };
    match system.read_source(path, max_bytes) {
        SourceRead::Text { text, link } => {
            if let (true, Place::Tree { root }) = (link, place) {
                match system.resolve(path) {
                    Ok(real) if real.starts_with(root) => {}
                    Ok(real) => {
                        return refuse(
                            diags,
                            format!(
                                "a symlink to {}, outside the configuration root; csis reads only \
files inside the tree (copy the file in, or give it with --overlay)",
                                real.display()
                            ),
                        );
                    }
                    Err(e) => return refuse(diags, format!("cannot be read: {e}")),
                }
            }
            Some(text)
        }
        SourceRead::Missing => None,
        SourceRead::Dangling { target } => {
            let why = format!(
                "a symlink to {}, which does not exist; csis skips it",
                target.display()
            );
            match place {
                Place::Tree { .. } => {
                    diags.push(Diagnostic::warning(format!("{shown}: {why}")));
                    None
                }
                Place::Given => refuse(
                    diags,
                    format!("a symlink to {}, which does not exist", target.display()),
                ),
            }
        }
        SourceRead::NotRegular { kind } => refuse(
            diags,
            format!("{kind}, not a regular file; csis reads only regular files"),
        ),
        SourceRead::TooLarge { size } => refuse(
            diags,
            format!(
                "{} is over the limit of {} csis reads from one file; raise it with \
--max-file-size BYTES (or CSIS_MAX_FILE_SIZE)",
                human_bytes(size),
                human_bytes(max_bytes)
            ),
        ),
        SourceRead::NotUtf8 { line, col } => refuse(
            diags,
            format!(
                "not UTF-8 text (the first invalid byte is at line {line}, column {col}); csis \
reads configuration files as UTF-8"
            ),
        ),
        SourceRead::Failed(e) => refuse(diags, format!("cannot be read: {e}")),
    }
}

/// A loaded tree: the database, its inputs, and the files by path.
pub struct Workspace {
    pub db: Database,
    pub tree: Tree,
    pub root: PathBuf,
    files: BTreeMap<String, SourceFile>,
    /// Refusals found while reading the tree (a missing overlay).
    pub read_diags: Vec<Diagnostic>,
    /// One run input per distinct run options: a re-plan with the same
    /// options reuses every query keyed by the run.
    run_inputs: std::sync::Mutex<Vec<(RunOptions, RunInput)>>,
    /// Whether the first load's queries ran on every core already; later
    /// re-plans recompute little and stay on one.
    prewarmed: std::sync::atomic::AtomicBool,
    /// The remote state objects the load ran a command for (read or
    /// failed): an edit that makes an entry read another one wants a
    /// reload (`wants_reload`).
    remote_tried: Vec<String>,
}

/// The identities CSIS_CONFIG_IDENTITY names: an AGE-SECRET-KEY-1 string,
/// an identity file, or a directory of *.age-identity files.
fn identities(
    system: &dyn System,
    max_bytes: u64,
) -> std::io::Result<csis_secrets::IdentitySource> {
    use csis_secrets::{IdentitySource, keys_in};
    let Some(v) = system.env().get("CSIS_CONFIG_IDENTITY").cloned() else {
        return Ok(IdentitySource::Unset);
    };
    let v = v.trim().to_string();
    if v.starts_with("AGE-SECRET-KEY-1") {
        return Ok(IdentitySource::Keys(keys_in(&v)));
    }
    let path = Path::new(&v);
    if system.is_dir(path) {
        let mut keys = Vec::new();
        for p in system.list_files(path)? {
            if p.parent() == Some(path) && p.extension().is_some_and(|e| e == "age-identity") {
                let mut refused = Vec::new();
                let shown = p.to_string_lossy().to_string();
                let text = read_limited(system, &p, &shown, Place::Given, max_bytes, &mut refused);
                if let Some(d) = refused.first() {
                    return Ok(IdentitySource::Invalid(format!(
                        "CSIS_CONFIG_IDENTITY={v}: {}",
                        d.message
                    )));
                }
                keys.extend(keys_in(&text.unwrap_or_default()));
            }
        }
        return Ok(if keys.is_empty() {
            IdentitySource::Invalid(format!(
                "CSIS_CONFIG_IDENTITY={v}: no *.age-identity files in that directory"
            ))
        } else {
            IdentitySource::Keys(keys)
        });
    }
    let mut refused = Vec::new();
    let text = read_limited(system, path, &v, Place::Given, max_bytes, &mut refused);
    if let Some(d) = refused.first() {
        return Ok(IdentitySource::Invalid(format!(
            "CSIS_CONFIG_IDENTITY={}",
            d.message
        )));
    }
    Ok(match text {
        Some(text) if !keys_in(&text).is_empty() => IdentitySource::Keys(keys_in(&text)),
        _ => IdentitySource::Invalid(format!(
            "CSIS_CONFIG_IDENTITY={v}: not an AGE-SECRET-KEY-1 string, an identity file or a directory"
        )),
    })
}

/// The environment snapshot of a load, with `--tolerate-missing-env`.
fn load_env(system: &dyn System, options: &LoadOptions) -> BTreeMap<String, String> {
    let mut env = system.env();
    if options.tolerate_missing_env {
        env.insert(
            crate::load::interp::TOLERATE_ENV.to_string(),
            "1".to_string(),
        );
    }
    env
}

/// The files interpolation reads, each read once: (path, text).
fn read_aux(
    system: &dyn System,
    root: &Path,
    real_root: &Path,
    max: u64,
    paths: &[String],
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Arc<str>, Arc<str>)> {
    paths
        .iter()
        .filter_map(|p| {
            let place = Place::Tree { root: real_root };
            read_limited(system, &root.join(p), p, place, max, diags)
                .map(|t| (Arc::from(p.as_str()), Arc::from(t)))
        })
        .collect()
}

/// The remote state objects interpolation reads, each by its command, run
/// once: (location, stdout). A command that cannot start or fails is a
/// load error naming the source, the backend, the command line and what to
/// do; the object is then left out (the entries reading it say so too).
fn read_remote(
    system: &dyn System,
    root: &Path,
    max: u64,
    reads: &[crate::load::interp::RemoteRead],
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Arc<str>, Arc<str>)> {
    use crate::db::system::Process;
    let mut out = Vec::new();
    // A program not on PATH is said once, and not tried again.
    let mut missing: Vec<&str> = Vec::new();
    for r in reads {
        let c = &r.command;
        if missing.contains(&c.program.as_str()) {
            continue;
        }
        let line = c.line();
        let whose = format!(
            "interpolation source '{}' (state backend '{}', {}): {}",
            r.source, r.backend, r.backend_type, r.location
        );
        let process = Process {
            program: PathBuf::from(&c.program),
            args: c.args.clone(),
            cwd: root.to_path_buf(),
            env: Vec::new(),
        };
        match system.run(&process) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing.push(&c.program);
                diags.push(Diagnostic::error(format!(
                    "{whose}: cannot run `{line}`: '{}' is not on PATH; csis runs {} for this source -- install it, or put it on PATH",
                    c.program, c.what
                )));
            }
            Err(e) => diags.push(Diagnostic::error(format!(
                "{whose}: cannot run `{line}`: {e}"
            ))),
            Ok(o) if o.code != Some(0) => {
                let status = o
                    .code
                    .map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited {c}"));
                let stderr: Vec<&str> = o
                    .stderr
                    .lines()
                    .map(str::trim_end)
                    .filter(|l| !l.is_empty())
                    .take(STDERR_LINES)
                    .collect();
                let said = if stderr.is_empty() {
                    " and printed nothing on stderr".to_string()
                } else {
                    format!(": {}", stderr.join(" | "))
                };
                diags.push(Diagnostic::error(format!(
                    "{whose}: `{line}` {status}{said} -- {}",
                    c.help
                )));
            }
            Ok(o) if o.stdout.len() as u64 > max => diags.push(Diagnostic::error(format!(
                "{whose}: `{line}` printed {}, over the limit of {} csis reads from one file; raise it with --max-file-size BYTES (or CSIS_MAX_FILE_SIZE)",
                human_bytes(o.stdout.len() as u64),
                human_bytes(max)
            ))),
            Ok(o) => out.push((Arc::from(r.location.as_str()), Arc::from(o.stdout))),
        }
    }
    out
}

/// How many lines of a failed state command's stderr a load error quotes.
const STDERR_LINES: usize = 3;

/// A diagnostic located in its file.
pub struct Located {
    pub file: String,
    pub text: Arc<str>,
    pub span: Span,
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

fn is_yaml(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("yml") | Some("yaml")
    )
}

impl Workspace {
    pub fn load(
        system: &dyn System,
        registry: Arc<Registry>,
        root: &Path,
        options: &LoadOptions,
    ) -> std::io::Result<Workspace> {
        let dirs = registry.item_dirs();
        let db = if options.query_log {
            Database::with_query_log(registry)
        } else {
            Database::new(registry)
        };
        let mut files = BTreeMap::new();
        let mut read_diags = Vec::new();
        let make = |path: String, text: String, files: &mut BTreeMap<String, SourceFile>| {
            let f = SourceFile::builder(Arc::from(path.as_str()), Arc::from(text))
                .durability(durability_for(&path))
                .new(&db);
            files.insert(path, f);
            f
        };
        let max = options.max_file_size;
        // Symlinks inside the tree may point anywhere inside it.
        let real_root = system.resolve(root).unwrap_or_else(|_| root.to_path_buf());
        // A directory of the tree that is itself a symlink out of it is
        // refused whole, with where it points.
        let listed =
            |dir: &str, read_diags: &mut Vec<Diagnostic>| -> std::io::Result<Vec<PathBuf>> {
                let path = root.join(dir);
                if let Ok(real) = system.resolve(&path)
                    && !real.starts_with(&real_root)
                {
                    read_diags.push(Diagnostic::error(format!(
                        "{dir}/: a symlink to {}, outside the configuration root; csis reads only \
files inside the tree",
                        real.display()
                    )));
                    return Ok(Vec::new());
                }
                system.list_files(&path)
            };
        let read = |p: &Path, read_diags: &mut Vec<Diagnostic>| {
            let shown = rel(root, p);
            let place = Place::Tree { root: &real_root };
            read_limited(system, p, &shown, place, max, read_diags).map(|text| (shown, text))
        };
        let cfg_dir = root.join("cfg");
        let mut cfg_files = Vec::new();
        for p in listed("cfg", &mut read_diags)? {
            // cfg/ is not recursive.
            if p.parent() != Some(cfg_dir.as_path()) || !is_yaml(&p) {
                continue;
            }
            if let Some((shown, text)) = read(&p, &mut read_diags) {
                cfg_files.push(make(shown, text, &mut files));
            }
        }
        let mut item_paths = Vec::new();
        for dir in dirs {
            for p in listed(dir, &mut read_diags)? {
                if is_yaml(&p) {
                    item_paths.push((dir, p));
                }
            }
        }
        // Read on every core: a large tree is thousands of files, and
        // opening them one after the other kept the other cores idle for
        // a tenth of a cold plan. Texts and refusals keep the listing's
        // order.
        use rayon::prelude::*;
        let texts: Vec<_> = item_paths
            .par_iter()
            .map(|(_, p)| {
                let mut diags = Vec::new();
                (read(p, &mut diags), diags)
            })
            .collect();
        let mut item_files = Vec::new();
        for ((dir, _), (text, diags)) in item_paths.into_iter().zip(texts) {
            read_diags.extend(diags);
            if let Some((shown, text)) = text {
                let file = make(shown, text, &mut files);
                item_files.push(ItemFile { dir, file });
            }
        }
        let mut meta_files = Vec::new();
        let meta_dir = root.join(crate::state::meta_state::DIR);
        for p in listed(crate::state::meta_state::DIR, &mut read_diags)? {
            // The alias pool is the one meta-state file that is not YAML.
            let pool = p
                .file_name()
                .is_some_and(|n| n == crate::state::alias_pool::FILE);
            if p.parent() == Some(meta_dir.as_path())
                && (is_yaml(&p) || pool)
                && let Some((shown, text)) = read(&p, &mut read_diags)
            {
                meta_files.push(make(shown, text, &mut files));
            }
        }
        let mut overlays = Vec::new();
        for p in &options.overlays {
            let shown = p.to_string_lossy().to_string();
            let before = read_diags.len();
            match read_limited(system, p, &shown, Place::Given, max, &mut read_diags) {
                Some(text) => overlays.push(make(shown, text, &mut files)),
                None if read_diags.len() == before => {
                    read_diags.push(Diagnostic::error(format!("Overlay {shown} does not exist")))
                }
                None => {}
            }
        }
        let tree = Tree::builder(
            Arc::from(
                options
                    .display_root
                    .clone()
                    .unwrap_or_else(|| root.to_string_lossy().to_string())
                    .as_str(),
            ),
            cfg_files,
            item_files,
            overlays,
            options.undeclare.clone(),
            Arc::new(load_env(system, options)),
            system.now_unix(),
            meta_files,
            Vec::new(),
            Arc::new(BTreeMap::new()),
            identities(system, max)?,
            Default::default(),
        )
        // What a workspace never changes is HIGH, and what changes only
        // on a reload or a rename MEDIUM; the files carry their own (see
        // `durability_for`). A query's durability is the lowest of what it
        // read, so one LOW field read by every item would make every item
        // re-verified after any edit, cfg/-only ones included.
        .root_display_durability(Durability::HIGH)
        .cfg_files_durability(Durability::HIGH)
        .item_files_durability(Durability::MEDIUM)
        .overlays_durability(Durability::HIGH)
        .undeclare_durability(Durability::HIGH)
        .env_durability(Durability::HIGH)
        .start_unix_durability(Durability::HIGH)
        .meta_files_durability(Durability::MEDIUM)
        .identities_durability(Durability::HIGH)
        .path_facts_durability(Durability::MEDIUM)
        .new(&db);
        let mut db = db;
        crate::workspace::prewarm::parse_files(&db, tree);
        let index = crate::load::items::compute_index(&db, tree);
        tree.set_index(&mut db)
            .with_durability(Durability::MEDIUM)
            .to(index);
        // The files the configuration names (modification scripts) are
        // known only once it is read: read them now, absent ones stay out.
        let mut aux = Vec::new();
        // Interpolation's state files and env_files first: the scripts are
        // found by structuring, which reads them.
        let reads = crate::load::interp::interpolation_files(&db, tree);
        let remote_tried: Vec<String> = reads.remote.iter().map(|r| r.location.clone()).collect();
        let mut referenced = reads.files;
        referenced.retain(|p| !p.starts_with('/') && !p.split('/').any(|s| s == ".."));
        if !referenced.is_empty() || !reads.remote.is_empty() {
            let mut interp = read_aux(system, root, &real_root, max, &referenced, &mut read_diags);
            interp.extend(read_remote(
                system,
                root,
                max,
                &reads.remote,
                &mut read_diags,
            ));
            for f in &interp {
                let f = SourceFile::builder(f.0.clone(), f.1.clone())
                    .durability(durability_for(&f.0))
                    .new(&db);
                files.insert(f.path(&db).to_string(), f);
                aux.push(f);
            }
            tree.set_aux_files(&mut db)
                .with_durability(Durability::MEDIUM)
                .to(aux.clone());
        }
        crate::workspace::prewarm::structure_images(&db, tree);
        for path in crate::plan::fingerprint::referenced_files(&db, tree).clone() {
            if files.contains_key(&path) {
                continue;
            }
            let place = Place::Tree { root: &real_root };
            if let Some(text) = read_limited(
                system,
                &root.join(&path),
                &path,
                place,
                max,
                &mut read_diags,
            ) {
                let f = SourceFile::builder(Arc::from(path.as_str()), Arc::from(text))
                    .durability(durability_for(&path))
                    .new(&db);
                files.insert(path, f);
                aux.push(f);
            }
        }
        tree.set_aux_files(&mut db)
            .with_durability(Durability::MEDIUM)
            .to(aux.clone());
        // Image templates: a chain is known only as its files are read
        // (each names its parent), so read what the chains want, then ask
        // again, until they want nothing new.
        let mut facts: BTreeMap<String, PathFact> = BTreeMap::new();
        facts.insert(
            String::new(),
            PathFact {
                canonical: Some(real_root.clone()),
                symlink: false,
            },
        );
        tree.set_path_facts(&mut db)
            .with_durability(Durability::MEDIUM)
            .to(Arc::new(facts.clone()));
        for _ in 0..TEMPLATE_ROUNDS {
            // Every chain wants at least its leaf, then each level's parent.
            let wanted: Vec<String> = crate::load::templates::wanted_paths(&db, tree)
                .into_iter()
                .filter(|p| !facts.contains_key(p))
                .collect();
            if wanted.is_empty() {
                break;
            }
            for path in wanted {
                let abs = root.join(&path);
                let fact = PathFact {
                    canonical: system.canonicalize(&abs).ok(),
                    symlink: system.is_symlink(&abs),
                };
                // Only a file inside the tree is read (a chain leaving it
                // is refused by the resolver with its own message).
                let inside = fact
                    .canonical
                    .as_ref()
                    .is_some_and(|c| c.starts_with(&real_root));
                if inside && !fact.symlink && !system.is_dir(&abs) && !files.contains_key(&path) {
                    let place = Place::Tree { root: &real_root };
                    if let Some(text) =
                        read_limited(system, &abs, &path, place, max, &mut read_diags)
                    {
                        let f = SourceFile::builder(Arc::from(path.as_str()), Arc::from(text))
                            .durability(durability_for(&path))
                            .new(&db);
                        files.insert(path.clone(), f);
                        aux.push(f);
                    }
                }
                facts.insert(path, fact);
            }
            tree.set_aux_files(&mut db)
                .with_durability(Durability::MEDIUM)
                .to(aux.clone());
            tree.set_path_facts(&mut db)
                .with_durability(Durability::MEDIUM)
                .to(Arc::new(facts.clone()));
        }
        Ok(Workspace {
            db,
            tree,
            root: root.to_path_buf(),
            files,
            read_diags,
            run_inputs: Default::default(),
            prewarmed: Default::default(),
            remote_tried,
        })
    }

    /// The run input for `options`: the same one every time they are
    /// equal, so queries keyed by the run are memoized across re-plans.
    pub fn run_input(&self, options: &RunOptions) -> RunInput {
        let mut known = self
            .run_inputs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, input)) = known.iter().find(|(o, _)| o == options) {
            return *input;
        }
        let input = RunInput::new(&self.db, options.clone());
        known.push((options.clone(), input));
        input
    }

    /// Every load-time refusal and warning.
    pub fn load_diagnostics(&self) -> Vec<Diagnostic> {
        if !self
            .prewarmed
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            crate::workspace::prewarm::structure_items(&self.db, self.tree);
        }
        let mut out = self.read_diags.clone();
        out.extend(load_diagnostics(&self.db, self.tree).iter().cloned());
        out
    }

    /// Whether the tree must be loaded again to follow an edit: an image
    /// template chain now names a file (an `extends` changed, or a
    /// `template:`) the load did not read, or an entry now reads a remote
    /// state object (s3, gcs) the load did not.
    pub fn wants_reload(&self) -> bool {
        !crate::load::templates::wanted_paths(&self.db, self.tree).is_empty()
            || (!crate::load::interp::declared(&self.db, self.tree)
                .remote
                .is_empty()
                && crate::load::interp::interpolation_files(&self.db, self.tree)
                    .remote
                    .iter()
                    .any(|r| !self.remote_tried.contains(&r.location)))
    }

    /// Replace one file's text (an edit). Returns false for a file the tree
    /// does not hold.
    pub fn set_file_text(&mut self, path: &str, text: &str) -> bool {
        let Some(f) = self.files.get(path).copied() else {
            return false;
        };
        if f.text(&self.db).as_ref() == text {
            return true;
        }
        // The durability the file was loaded with: lowering it would stop
        // salsa from backdating anything downstream (see `durability_for`).
        let durability = durability_for(path);
        // Item names come from the item files (rendered with cfg/): the
        // index is rebuilt only when the edit may have renamed something.
        let tree = self.tree;
        let item_file = tree.item_files(&self.db).iter().any(|i| i.file == f);
        let names_before = item_file.then(|| item_file_names(&self.db, tree, f));
        f.set_text(&mut self.db)
            .with_durability(durability)
            .to(Arc::from(text));
        let renamed = match names_before {
            Some(before) => before != item_file_names(&self.db, tree, f),
            // cfg/ and overlays may rename; records and scripts cannot.
            None => {
                !tree.meta_files(&self.db).contains(&f) && !tree.aux_files(&self.db).contains(&f)
            }
        };
        if renamed {
            let index = crate::load::items::compute_index(&self.db, tree);
            if &index != tree.index(&self.db) {
                tree.set_index(&mut self.db)
                    .with_durability(Durability::MEDIUM)
                    .to(index);
            }
        }
        true
    }

    /// The configuration's own YAML files (cfg/ and the item
    /// directories), by path relative to the root, with their text.
    pub fn config_files(&self) -> Vec<(String, Arc<str>)> {
        let tree = self.tree;
        let mut out: Vec<(String, Arc<str>)> = tree
            .cfg_files(&self.db)
            .iter()
            .chain(tree.item_files(&self.db).iter().map(|f| &f.file))
            .map(|f| (f.path(&self.db).to_string(), f.text(&self.db).clone()))
            .collect();
        out.sort();
        out
    }

    /// `config.generation_directory` (default `generated`), relative to
    /// the root.
    pub fn generation_dir_name(&self) -> String {
        crate::load::builders::builders(&self.db, self.tree)
            .config
            .as_ref()
            .map_or_else(|| "generated".into(), |c| c.generation_directory.clone())
    }

    pub fn file(&self, path: &str) -> Option<SourceFile> {
        self.files.get(path).copied()
    }

    /// `file:line:col: message` (a warning says so), for logs and
    /// `--brief`: one line, whatever the file's name or the message holds
    /// (control characters are escaped).
    pub fn describe(&self, d: &Diagnostic) -> String {
        let level = match d.severity {
            csis_model::Severity::Error => "",
            csis_model::Severity::Warning => "warning: ",
        };
        let line = match self.locate(d) {
            Some(loc) => format!(
                "{}:{}:{}: {level}{}",
                loc.file, loc.span.line, loc.span.col, d.message
            ),
            None => format!("{level}{}", d.message),
        };
        csis_model::escape_controls(&line).into_owned()
    }

    /// The file, text and span a diagnostic points at.
    pub fn locate(&self, d: &Diagnostic) -> Option<Located> {
        self.locate_origin(d.origin.as_ref()?, d.anchor == csis_model::Anchor::Key)
    }

    /// `file:line:col` of a node (its key when `key`), or of its nearest
    /// ancestor the file has.
    pub fn position(&self, origin: &Origin, key: bool) -> Option<String> {
        self.locate_origin(origin, key).map(|l| {
            let file = csis_model::escape_controls(&l.file);
            format!("{file}:{}:{}", l.span.line, l.span.col)
        })
    }

    fn locate_origin(&self, origin: &Origin, key: bool) -> Option<Located> {
        let Origin { file, path } = origin;
        let sf = self.files.get(file.as_ref())?;
        let parsed = parse_file(&self.db, *sf);
        let span = if path.is_root() && parsed.error_span.is_some() {
            parsed.error_span?
        } else {
            parsed.positions.nearest(path, key).unwrap_or(Span {
                offset: 0,
                len: 0,
                line: 1,
                col: 1,
            })
        };
        Some(Located {
            file: file.to_string(),
            text: sf.text(&self.db).clone(),
            span,
        })
    }
}

/// Durability of a file, from its load on: it never changes with an
/// edit. cfg/ declarations are rarely edited (HIGH); meta-state records
/// change only when a run records, and users and groups when people join
/// or leave (MEDIUM); what people edit while they work (images,
/// instances, storages, their scripts and templates, state files an entry
/// reads) is LOW from the start.
///
/// Why never lowered: salsa backdates a re-computed value only if its
/// durability did not fall, so a file that went from MEDIUM to LOW on its
/// first save re-executed every query downstream of it, tree-wide reports
/// included. Why users and groups apart: a save re-verifies every memo of
/// its durability and below, and the 20,000 users of a large tree are
/// most of the memos; kept MEDIUM, an image or instance save does not
/// walk them (docs/performance.md, "First saves").
fn durability_for(path: &str) -> Durability {
    if path.starts_with("cfg/") {
        Durability::HIGH
    } else if [
        crate::state::meta_state::DIR,
        ItemKind::USERS.dir(),
        ItemKind::GROUPS.dir(),
    ]
    .iter()
    .any(|dir| {
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    }) {
        Durability::MEDIUM
    } else {
        Durability::LOW
    }
}
