//! `csis watch`: load once, then re-plan on every change under the root and
//! print what changed, in one block per re-plan.
//!
//! An edit to a file the tree holds becomes one input change in the same
//! database, so salsa re-executes only what the edit reached. A file that
//! appears or disappears changes the tree's listing: the tree is loaded
//! afresh. The generated tree, meta-state, the private mirror, stores and
//! dot-directories are csis's own writes and are ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use csis_engine::db::run_input::RunOptions;
use csis_engine::db::system::{OsSystem, SourceRead, System};
use csis_engine::plan::bakes::bake_plan;
use csis_engine::registry::Registry;
use csis_engine::run::explain::explain_bakes;
use csis_engine::run::{Level, RunRequest};
use csis_engine::workspace::{LoadOptions, Workspace};
use notify::{RecursiveMode, Watcher};

/// What a re-plan is compared on.
struct Snapshot {
    plan: BTreeMap<String, String>,
    errors: BTreeSet<String>,
}

fn snapshot(ws: &Workspace, options: &RunOptions) -> Snapshot {
    let errors = ws
        .load_diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| ws.describe(d))
        .collect();
    let run = ws.run_input(options);
    let plan = bake_plan(&ws.db, ws.tree, run)
        .decisions
        .iter()
        .map(|(s, rt, d)| (format!("{s}@{rt}"), d.reason.clone()))
        .collect();
    Snapshot { plan, errors }
}

/// The top-level directories csis writes itself: the generated tree,
/// meta-state, the private mirror, and the local runtimes' stores.
fn own_dirs(ws: &Workspace) -> Vec<String> {
    let b = csis_engine::load::builders::builders(&ws.db, ws.tree);
    let mut dirs = vec!["meta-state".to_string(), "_private".to_string()];
    dirs.push(
        b.config
            .as_ref()
            .map_or("generated".into(), |c| c.generation_directory.clone()),
    );
    for d in b.by_class.values().flat_map(|m| m.values()) {
        if let Some(store) = d.extra.get("store").and_then(csis_model::Value::as_str) {
            dirs.extend(store.split('/').next().map(str::to_string));
        }
    }
    dirs
}

/// Paths csis writes itself, or hidden ones (editors' swap files, .git).
fn ignored(rel: &Path, own: &[String]) -> bool {
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .unwrap_or_default();
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    first.starts_with('.') || name.starts_with('.') || name.ends_with('~') || own.contains(&first)
}

pub struct WatchArgs {
    pub root: PathBuf,
    pub options: LoadOptions,
    pub registry: Arc<Registry>,
    pub lifecycles: Vec<String>,
    pub generate: bool,
    pub selection: RunOptions,
    /// The global lock timeout: how long a generation waits for the lock.
    pub lock_timeout: u64,
}

pub fn watch(args: WatchArgs) -> ExitCode {
    let load = || Workspace::load(&OsSystem, args.registry.clone(), &args.root, &args.options);
    let mut ws = match load() {
        Ok(ws) => ws,
        Err(e) => {
            eprintln!("error: reading {}: {e}", args.root.display());
            return ExitCode::from(1);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)) {
        eprintln!("warning: Ctrl-C will not stop the watch cleanly: {e}");
    }
    let (tx, rx) = mpsc::channel();
    let mut watcher =
        match notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            // Reads (csis's own, and everyone's) are not changes.
            if let Ok(event) = res
                && matches!(
                    event.kind,
                    notify::EventKind::Create(_)
                        | notify::EventKind::Remove(_)
                        | notify::EventKind::Modify(
                            notify::event::ModifyKind::Data(_)
                                | notify::event::ModifyKind::Name(_)
                                | notify::event::ModifyKind::Any
                        )
                )
            {
                let _ = tx.send(event.paths);
            }
        }) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("error: cannot watch {}: {e}", args.root.display());
                return ExitCode::from(1);
            }
        };
    if let Err(e) = watcher.watch(&args.root, RecursiveMode::Recursive) {
        eprintln!("error: cannot watch {}: {e}", args.root.display());
        return ExitCode::from(1);
    }
    let started = Instant::now();
    let mut last = snapshot(&ws, &args.selection);
    eprintln!(
        "watch: {} loaded in {} ms; {} error(s); {} bake(s) planned. Watching for changes (Ctrl-C stops).",
        args.root.display(),
        started.elapsed().as_millis(),
        last.errors.len(),
        last.plan
            .values()
            .filter(|r| r.starts_with("bake:"))
            .count()
    );
    for e in &last.errors {
        eprintln!("  error: {e}");
    }
    generate(&ws, &args, false);
    while !stop.load(Ordering::SeqCst) {
        let Ok(first) = rx.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        // Debounce: an editor's save is several events (write, rename).
        let mut paths = first;
        let quiet = Instant::now() + Duration::from_millis(100);
        while let Ok(more) = rx.recv_timeout(quiet.saturating_duration_since(Instant::now())) {
            paths.extend(more);
        }
        let own = own_dirs(&ws);
        let mut changed: BTreeSet<String> = BTreeSet::new();
        for p in paths {
            let rel = p.strip_prefix(&args.root).unwrap_or(&p).to_path_buf();
            let rel = rel.to_string_lossy().replace('\\', "/");
            // A file gone again before we look, and never part of the tree,
            // is an editor's or tool's temporary file.
            let transient = !p.exists() && ws.file(&rel).is_none();
            if !ignored(Path::new(&rel), &own) && !OsSystem.is_dir(&p) && !transient {
                changed.insert(rel);
            }
        }
        if changed.is_empty() {
            continue;
        }
        let t = Instant::now();
        ws.db.query_log().start();
        let mut reload = false;
        for rel in &changed {
            // Under the load's limits: a FIFO or an oversized file is left
            // to the reload, which refuses it by name.
            let max = args.options.max_file_size;
            match OsSystem.read_source(&args.root.join(rel), max) {
                SourceRead::Text {
                    text, link: false, ..
                } if ws.set_file_text(rel, &text) => {}
                // A new or removed file changes the listing.
                _ => {
                    reload |= rel.ends_with(".yml")
                        || rel.ends_with(".yaml")
                        || ws.file(rel).is_some()
                        || ws.digested(rel)
                }
            }
        }
        // An image template's chain that now names a file the load did
        // not read (an `extends` changed) is re-discovered by a load.
        reload = reload || ws.wants_reload();
        if reload {
            match load() {
                Ok(fresh) => ws = fresh,
                Err(e) => {
                    eprintln!("error: reading {}: {e}", args.root.display());
                    continue;
                }
            }
        }
        let now = snapshot(&ws, &args.selection);
        let executed = ws.db.query_log().take().len();
        eprintln!(
            "watch: {} changed; re-planned in {:.1} ms ({})",
            changed.iter().cloned().collect::<Vec<_>>().join(", "),
            t.elapsed().as_secs_f64() * 1e3,
            if reload {
                "tree reloaded".to_string()
            } else {
                format!("{executed} queries executed")
            }
        );
        let mut explained: Option<BTreeMap<String, Vec<String>>> = None;
        for (key, reason) in &now.plan {
            match last.plan.get(key) {
                Some(before) if before != reason => eprintln!("  {key}: {before} -> {reason}"),
                None => eprintln!("  {key}: {reason} (new)"),
                _ => continue,
            }
            if reason.starts_with("bake:") {
                let causes = explained.get_or_insert_with(|| {
                    let run = ws.run_input(&args.selection);
                    explain_bakes(&ws, run).into_iter().collect()
                });
                for line in causes.get(key).into_iter().flatten() {
                    eprintln!("      {line}");
                }
            }
        }
        for key in last.plan.keys().filter(|k| !now.plan.contains_key(*k)) {
            eprintln!("  {key}: gone");
        }
        for e in now.errors.difference(&last.errors) {
            eprintln!("  error: {e}");
        }
        for e in last.errors.difference(&now.errors) {
            eprintln!("  cleared: {e}");
        }
        if now.errors.is_empty() && !last.errors.is_empty() {
            eprintln!("  the tree loads cleanly again");
        }
        // A tree with errors generates nothing (a run would refuse it); the
        // generated tree stays as the last good one left it.
        if now.errors.is_empty() {
            generate(&ws, &args, true);
        }
        last = now;
    }
    eprintln!("watch: stopped");
    ExitCode::SUCCESS
}

/// `--generate`: keep generated/ current (changed files only), no apply, no
/// records; with `explain`, each rewritten file and why.
fn generate(ws: &Workspace, args: &WatchArgs, explain: bool) {
    if !args.generate || args.lifecycles.is_empty() {
        return;
    }
    // The lock is held while generated/ is written, not while watching.
    let command = crate::lock::command_line();
    let lock_req = csis_engine::db::lock::Request {
        command: &command,
        timeout: Duration::from_secs(args.lock_timeout),
    };
    let _lock =
        match csis_engine::run::lock::lock_tree(&OsSystem, &args.root, &lock_req, &mut |n| {
            eprintln!("{n}")
        }) {
            Ok(lock) => lock,
            Err(e) => {
                eprintln!("  generated/ not refreshed: {e}");
                return;
            }
        };
    let req = RunRequest {
        lifecycles: args.lifecycles.clone(),
        options: args.selection.clone(),
        no_apply: true,
        csis: PathBuf::from("csis"),
        commit: false,
        shard: None,
        record: false,
        stats: false,
        no_state_query: true,
        jobs: 0,
        fail_fast: false,
        lock_token: None,
        carried_env: Vec::new(),
        explain,
    };
    let started = std::time::Instant::now();
    // Each rewritten file with its causes; bake explanations were printed
    // with the plan.
    let mut in_rewrite = false;
    let summary = csis_engine::run::run(ws, &OsSystem, &req, &mut |level: Level, line: String| {
        if let Some(path) = line
            .strip_prefix("explain: rewrote ")
            .and_then(|p| p.strip_suffix(':'))
        {
            in_rewrite = true;
            eprintln!("  rewrote {path}");
        } else if let Some(cause) = line.strip_prefix("    ").filter(|_| in_rewrite) {
            eprintln!("      {cause}");
        } else {
            in_rewrite = false;
            if level == Level::Error {
                eprintln!("  error: {line}");
            } else if line.contains("] generated: ") && !line.contains(" 0 written, 0 removed") {
                eprintln!("  {line}");
            }
        }
    });
    if summary.not_started
        && let Some(e) = &summary.error
    {
        eprintln!("  error: {e}");
    } else {
        let ms = started.elapsed().as_secs_f64() * 1e3;
        eprintln!("  generated/ refreshed in {ms:.1} ms");
    }
}
