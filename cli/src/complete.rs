//! Shell completion that knows the tree: the script `csis completions
//! SHELL` prints calls the binary back on every TAB
//! (`CSIS_COMPLETE=SHELL csis -- WORDS...`), which answers from the clap
//! definition and, for lifecycle, image, instance and runtime values,
//! from the registry and the tree the words name.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::Shells;
use csis_engine::db::system::OsSystem;
use csis_engine::registry::Registry;
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_model::{ItemKind, Vct};

use crate::args::Cli;

/// The variable the registration script sets to the shell's name when it
/// asks for completions.
const VAR: &str = "CSIS_COMPLETE";

/// The registration script for `shell`: what `csis completions SHELL`
/// prints, to be sourced by the shell's startup file.
pub fn registration(shell: clap_complete::Shell) -> Result<Vec<u8>, String> {
    let name = shell.to_string();
    let shells = Shells::builtins();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| format!("no completion for the shell {name}"))?;
    let mut script = Vec::new();
    completer
        .write_registration(VAR, "csis", "csis", &completer_path(), &mut script)
        .map_err(|e| e.to_string())?;
    Ok(script)
}

/// How the script calls csis back: as it was called here, made absolute
/// when it was a path (`./target/debug/csis`), else by name from PATH.
fn completer_path() -> String {
    let arg0 = PathBuf::from(std::env::args_os().next().unwrap_or_else(|| "csis".into()));
    let path = if arg0.components().count() > 1 {
        std::path::absolute(&arg0).unwrap_or(arg0)
    } else {
        arg0
    };
    path.to_string_lossy().into_owned()
}

/// Answers a completion request when the environment holds one; `None`
/// for an ordinary invocation. Nothing is written to stderr: a message
/// would land in the middle of the user's command line.
pub fn answer_if_asked() -> Option<ExitCode> {
    let shell = std::env::var_os(VAR).filter(|s| !s.is_empty())?;
    let shell = shell.to_string_lossy();
    // SAFETY: the process is single-threaded here (before any command
    // starts a thread), and a csis the completion itself starts must not
    // answer as a completer.
    unsafe { std::env::remove_var(VAR) };
    let shells = Shells::builtins();
    let completer = shells.completer(&shell)?;
    let mut words: Vec<OsString> = std::env::args_os().collect();
    let after = words
        .iter()
        .position(|w| w == "--")
        .map_or(words.len(), |i| i + 1);
    words.drain(..after);
    let mut cmd = Cli::command();
    cmd.build();
    let here = std::env::current_dir().ok();
    let mut answer = Vec::new();
    if completer
        .write_complete(&mut cmd, words, here.as_deref(), &mut answer)
        .is_err()
    {
        return Some(ExitCode::from(1));
    }
    csis_plugin_api::stdout::write(&answer);
    Some(ExitCode::SUCCESS)
}

/// The value of `--root-dir` among the words being completed, else
/// CSIS_ROOT_DIR, else the root csis would find from here.
fn root_from_words() -> PathBuf {
    let words: Vec<String> = std::env::args_os()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let given = words.iter().enumerate().find_map(|(i, w)| {
        w.strip_prefix("--root-dir=")
            .map(str::to_string)
            .or_else(|| {
                (w == "--root-dir")
                    .then(|| words.get(i + 1).cloned())
                    .flatten()
            })
    });
    given
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("CSIS_ROOT_DIR").map(PathBuf::from))
        .unwrap_or_else(crate::root::find_root)
}

/// What the tree declares, read as shell completion needs it (its own
/// files, nothing they name); `None` when there is no tree to read.
fn declared_tree() -> Option<Workspace> {
    let registry = Registry::build(&crate::plugins::plugins()).ok()?;
    let options = LoadOptions {
        declarations_only: true,
        ..LoadOptions::default()
    };
    Workspace::load(&OsSystem, registry.into(), &root_from_words(), &options).ok()
}

fn candidates(mut names: Vec<String>) -> Vec<CompletionCandidate> {
    names.sort();
    names.dedup();
    names.into_iter().map(CompletionCandidate::new).collect()
}

fn item_names(ws: &Workspace, kind: ItemKind) -> Vec<String> {
    csis_engine::load::items::item_index(&ws.db, ws.tree)
        .names(kind)
        .map(String::from)
        .collect()
}

/// `all` and the lifecycles the linked plugins register, in run order,
/// each with what it covers.
fn lifecycles() -> Vec<CompletionCandidate> {
    let Ok(registry) = Registry::build(&crate::plugins::plugins()) else {
        return Vec::new();
    };
    std::iter::once(CompletionCandidate::new("all").help(Some("every lifecycle, in order".into())))
        .chain(
            registry.lifecycles().iter().map(|l| {
                CompletionCandidate::new(l.name).help(Some(l.description.to_string().into()))
            }),
        )
        .collect()
}

/// What `--only` and `--force-bake` accept: the images and the OS
/// builders (whose base images bake).
fn images() -> Vec<CompletionCandidate> {
    let Some(ws) = declared_tree() else {
        return Vec::new();
    };
    let mut names = item_names(&ws, ItemKind::IMAGES);
    let builders = csis_engine::load::builders::builders(&ws.db, ws.tree);
    names.extend(
        builders
            .names(Vct::OsBuilderModel)
            .into_iter()
            .map(str::to_string),
    );
    candidates(names)
}

fn instances() -> Vec<CompletionCandidate> {
    declared_tree().map_or_else(Vec::new, |ws| {
        candidates(item_names(&ws, ItemKind::INSTANCES))
    })
}

fn runtimes() -> Vec<CompletionCandidate> {
    declared_tree().map_or_else(Vec::new, |ws| {
        let builders = csis_engine::load::builders::builders(&ws.db, ws.tree);
        candidates(
            builders
                .names(Vct::RuntimeBuilderModel)
                .into_iter()
                .map(str::to_string)
                .collect(),
        )
    })
}

/// `csis upgrade KIND NAME`: the names of the kind the words name.
fn images_or_instances() -> Vec<CompletionCandidate> {
    if std::env::args_os().any(|w| w == "instance") {
        instances()
    } else {
        images()
    }
}

/// The completers the arguments name with `add = ...`.
pub fn lifecycle_names() -> ArgValueCandidates {
    ArgValueCandidates::new(lifecycles)
}

pub fn image_names() -> ArgValueCandidates {
    ArgValueCandidates::new(images)
}

pub fn instance_names() -> ArgValueCandidates {
    ArgValueCandidates::new(instances)
}

pub fn runtime_names() -> ArgValueCandidates {
    ArgValueCandidates::new(runtimes)
}

pub fn upgrade_names() -> ArgValueCandidates {
    ArgValueCandidates::new(images_or_instances)
}
