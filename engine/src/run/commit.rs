//! `csis public-safe` and `csis run --commit`: the public-safe gate over
//! files on disk and in git's index, and the meta-state commit.
//!
//! git is run as a process through the [`System`]; every file about to be
//! staged is scanned first, and one finding refuses the whole commit with
//! nothing staged.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::db::Db;
use crate::db::system::{Process, System};
use crate::run::steps::Runner;
use crate::run::{Level, RunSummary};
use crate::workspace::Workspace;
use csis_public_safe::{Allow, Finding, refusal, refused_name, scan_bytes};

fn git(system: &dyn System, root: &Path, args: &[&str]) -> Result<String, String> {
    let out = system
        .run(&Process {
            program: PathBuf::from("git"),
            args: args.iter().map(|s| s.to_string()).collect(),
            cwd: root.to_path_buf(),
            env: Vec::new(),
        })
        .map_err(|e| format!("git {}: {e}", args.join(" ")))?;
    if out.code != Some(0) {
        return Err(format!("git {}: {}", args.join(" "), out.stderr.trim()));
    }
    Ok(out.stdout)
}

/// Whether `root` is inside a git work tree.
pub fn in_git(system: &dyn System, root: &Path) -> bool {
    git(system, root, &["rev-parse", "--is-inside-work-tree"]).is_ok_and(|o| o.trim() == "true")
}

/// The allowances of the tree, read as text.
pub fn allowances(system: &dyn System, root: &Path) -> Allow {
    let text = system
        .read_to_string(&root.join("cfg/_config.yml"))
        .ok()
        .flatten()
        .unwrap_or_default();
    Allow::from_config_text(&text)
}

/// The files a tree scan covers: in a git work tree the tracked and
/// untracked files git does not ignore, else every file; never the private
/// mirror, nor the persisted cache under the root (`.csis/`, which csis
/// ignores in git: it holds the entries of files this scan reads
/// themselves, packed, where a rule's context is lost). A file named as
/// PATH is scanned itself, whatever git thinks of it; a PATH that does
/// not exist is an error, never an empty scan that passes (issue 32).
fn tree_files(system: &dyn System, root: &Path, under: &Path) -> Result<Vec<String>, String> {
    let rel_under = under
        .strip_prefix(root)
        .unwrap_or(under)
        .to_string_lossy()
        .replace('\\', "/");
    if !system.is_dir(under) {
        return match system.read_bytes(under) {
            Ok(Some(_)) => Ok(vec![rel_under]),
            Ok(None) => Err(format!(
                "public-safe: {}: no such file or directory; nothing was scanned",
                under.display()
            )),
            Err(e) => Err(format!(
                "public-safe: {}: {e}; nothing was scanned",
                under.display()
            )),
        };
    }
    let mut files: Vec<String> = if in_git(system, root) {
        let mut args = vec!["ls-files", "-co", "--exclude-standard", "-z"];
        if !rel_under.is_empty() {
            args.extend(["--", rel_under.as_str()]);
        }
        git(system, root, &args)?
            .split('\0')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    } else {
        system
            .list_files(under)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|p| {
                p.strip_prefix(root)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/")
            })
            .collect()
    };
    let lock = crate::state::meta_state::lock_rel();
    files.retain(|f| {
        !f.starts_with("_private/")
            && !f.starts_with(".git/")
            && !f.starts_with(".csis/")
            && *f != lock
    });
    files.sort();
    Ok(files)
}

/// Scan files in parallel; findings sorted by path.
fn scan_all(files: &[(String, Vec<u8>)], allow: &Allow) -> Vec<Finding> {
    let mut out: Vec<Finding> = files
        .par_iter()
        .flat_map_iter(|(p, b)| scan_bytes(p, b, allow))
        .collect();
    out.sort();
    out
}

/// `csis public-safe [PATH]`: every file of the tree (or below PATH).
pub fn scan_tree(
    system: &dyn System,
    root: &Path,
    under: &Path,
) -> Result<(usize, Vec<Finding>), String> {
    let allow = allowances(system, root);
    let files = tree_files(system, root, under)?;
    let loaded = read_all(system, root, &files)?;
    Ok((loaded.len(), scan_all(&loaded, &allow)))
}

/// The bytes of each file (relative to `root`), in order. A file gone from
/// disk (tracked, deleted) and a directory git lists (a submodule, its own
/// repository) hold nothing here; a file that exists and cannot be read is
/// an error, never a file skipped (issue 32: nothing passes unread).
fn read_all(system: &dyn System, root: &Path, files: &[String]) -> Result<Vec<Loaded>, String> {
    let read: Vec<Result<Option<Loaded>, String>> = files
        .par_iter()
        .map(|f| {
            let path = root.join(f);
            if system.is_dir(&path) {
                return Ok(None);
            }
            match system.read_bytes(&path) {
                Ok(bytes) => Ok(bytes.map(|b| (f.clone(), b))),
                Err(e) => Err(format!(
                    "public-safe: cannot read {f}: {e}; a file that cannot be read is not passed"
                )),
            }
        })
        .collect();
    read.into_iter().filter_map(Result::transpose).collect()
}

/// `csis public-safe --staged`: the blobs in git's index.
pub fn scan_staged(system: &dyn System, root: &Path) -> Result<(usize, Vec<Finding>), String> {
    let allow = allowances(system, root);
    let names = git(
        system,
        root,
        &[
            "diff",
            "--cached",
            "--name-only",
            "--diff-filter=ACMR",
            "-z",
        ],
    )?;
    let names: Vec<&str> = names.split('\0').filter(|s| !s.is_empty()).collect();
    let (loaded, unread) = staged_blobs(system, root, &names)?;
    let mut findings = scan_all(&loaded, &allow);
    findings.extend(unread.into_iter().filter(|f| !allow.accepts_path(&f.path)));
    findings.sort();
    Ok((names.len(), findings))
}

/// A file's path (relative to the root) and bytes.
type Loaded = (String, Vec<u8>);

/// The staged blobs, byte for byte. git's output reaches csis as text,
/// which a binary blob (a gzip, a zip) does not survive: a blob whose
/// object id is its working-tree file's (`git hash-object --no-filters`)
/// is read from that file. Any other blob that is not text cannot be read,
/// and is a finding rather than a pass (issue 32).
fn staged_blobs(
    system: &dyn System,
    root: &Path,
    names: &[&str],
) -> Result<(Vec<Loaded>, Vec<Finding>), String> {
    if names.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut args = vec!["ls-files", "-s", "-z", "--"];
    args.extend(names);
    let listed = git(system, root, &args)?;
    // `<mode> <object> <stage>\t<path>`
    let staged: std::collections::BTreeMap<&str, &str> = listed
        .split('\0')
        .filter_map(|l| {
            let (meta, path) = l.split_once('\t')?;
            Some((path, meta.split(' ').nth(1)?))
        })
        .collect();
    let on_disk: Vec<(&str, Vec<u8>)> = names
        .iter()
        .filter_map(|n| {
            let bytes = system.read_bytes(&root.join(n)).ok().flatten()?;
            Some((*n, bytes))
        })
        .collect();
    let mut same = std::collections::BTreeMap::new();
    if !on_disk.is_empty() {
        let mut args = vec!["hash-object", "--no-filters", "--"];
        args.extend(on_disk.iter().map(|(n, _)| *n));
        let ids = git(system, root, &args)?;
        for ((name, bytes), id) in on_disk.into_iter().zip(ids.lines()) {
            if staged.get(name) == Some(&id.trim()) {
                same.insert(name, bytes);
            }
        }
    }
    let (mut loaded, mut unread) = (Vec::new(), Vec::new());
    for name in names {
        if let Some(bytes) = same.remove(name) {
            loaded.push((name.to_string(), bytes));
            continue;
        }
        let blob = git(system, root, &["show", &format!(":{name}")])?;
        if blob.contains('\u{FFFD}') {
            unread.push(Finding {
                path: name.to_string(),
                rule: csis_public_safe::UNINSPECTABLE,
                excerpt: "staged content is not text and differs from the working tree (stage the file as it is on disk)".to_string(),
            });
        } else {
            loaded.push((name.to_string(), blob.into_bytes()));
        }
    }
    Ok((loaded, unread))
}

/// The pre-commit hook that runs the staged scan.
pub const HOOK: &str = "#!/bin/sh\n# Installed by csis: refuse a commit that would make secrets public.\nexec csis --root-dir \"$(git rev-parse --show-toplevel)\" public-safe --staged\n";

pub fn install_hook(system: &dyn System, root: &Path) -> Result<String, String> {
    let dir = git(system, root, &["rev-parse", "--git-path", "hooks"])?;
    let path = root.join(dir.trim()).join("pre-commit");
    system
        .write_atomic(&path, HOOK.as_bytes(), true)
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "public-safe: pre-commit hook installed at {}",
        path.display()
    ))
}

/// What `--commit` did.
pub enum CommitOutcome {
    Committed(String),
    NothingChanged,
    Skipped(String),
}

/// Stage and commit meta-state/ and the generated tree: refused names are
/// never staged, every other file is scanned, and every plaintext this run
/// decrypted is searched for; one finding refuses the whole commit and
/// nothing is staged.
pub fn commit_meta_state(
    system: &dyn System,
    root: &Path,
    generation_dir: &str,
    message: &str,
    plaintexts: &[String],
    warn: &mut dyn FnMut(String),
) -> Result<CommitOutcome, String> {
    if !in_git(system, root) {
        return Ok(CommitOutcome::Skipped(format!(
            "Config root {} is not inside a git repository; meta-state commit skipped",
            root.display()
        )));
    }
    let mut pathspecs = Vec::new();
    for p in [crate::state::meta_state::DIR, generation_dir] {
        if !system.is_dir(&root.join(p)) {
            continue;
        }
        // `git add` refuses an ignored path outright; a tree that keeps
        // one out of git on purpose commits the other.
        if git(system, root, &["check-ignore", "-q", "--", p]).is_ok() {
            warn(format!(
                "Meta-state commit: {p} is gitignored here; not committing it"
            ));
            continue;
        }
        pathspecs.push(p.to_string());
    }
    if pathspecs.is_empty() {
        return Ok(CommitOutcome::NothingChanged);
    }
    let mut args = vec!["add", "--dry-run", "--"];
    args.extend(pathspecs.iter().map(String::as_str));
    let listed = git(system, root, &args)?;
    let mut candidates: Vec<String> = listed
        .lines()
        .filter_map(|l| l.strip_prefix("add '").and_then(|r| r.strip_suffix('\'')))
        .map(str::to_string)
        .collect();
    // Tracked files that changed are staged too.
    let mut tracked = vec!["ls-files", "-m", "--"];
    tracked.extend(pathspecs.iter().map(String::as_str));
    candidates.extend(git(system, root, &tracked)?.lines().map(str::to_string));
    candidates.sort();
    candidates.dedup();
    // The tree's lock names the process holding it: never a record.
    let lock = crate::state::meta_state::lock_rel();
    candidates.retain(|f| *f != lock);
    let (refused, files): (Vec<String>, Vec<String>) =
        candidates.into_iter().partition(|f| refused_name(f));
    if !refused.is_empty() {
        warn(format!(
            "Meta-state commit: never staging {} (plans, state and key material carry decrypted values)",
            refused.join(", ")
        ));
    }
    let allow = allowances(system, root);
    let loaded = read_all(system, root, &files)?;
    let mut findings = scan_all(&loaded, &allow);
    for (path, bytes) in &loaded {
        let text = String::from_utf8_lossy(bytes);
        for p in plaintexts.iter().filter(|p| !p.is_empty()) {
            if text.contains(p.as_str()) {
                findings.push(Finding {
                    path: path.clone(),
                    rule: "decrypted-plaintext",
                    excerpt: p.chars().take(6).collect(),
                });
            }
        }
    }
    if !findings.is_empty() {
        return Err(refusal("the run's meta-state commit", &findings));
    }
    if files.is_empty() {
        return Ok(CommitOutcome::NothingChanged);
    }
    let mut add = vec!["add", "--"];
    add.extend(files.iter().map(String::as_str));
    git(system, root, &add)?;
    let mut staged_check = vec!["diff", "--cached", "--quiet", "--"];
    staged_check.extend(files.iter().map(String::as_str));
    if git(system, root, &staged_check).is_ok() {
        return Ok(CommitOutcome::NothingChanged);
    }
    let mut commit = vec!["commit", "-q", "-m", message, "--"];
    commit.extend(files.iter().map(String::as_str));
    git(system, root, &commit)?;
    Ok(CommitOutcome::Committed(
        git(system, root, &["rev-parse", "HEAD"])?
            .trim()
            .to_string(),
    ))
}

impl Runner<'_> {
    /// `--commit`: meta-state/ and the generated tree, after the gate.
    pub(super) fn commit(&mut self, summary: &mut RunSummary) {
        let message = format!(
            "csis run {}: {}",
            summary.run_id,
            summary.requested.join(", ")
        );
        let plaintexts = decrypted_plaintexts(self.ws);
        let log = &mut self.log;
        let outcome = crate::run::commit::commit_meta_state(
            self.system,
            &self.ws.root,
            &self.gen_dir_name,
            &message,
            &plaintexts,
            &mut |w| log.line(Level::Warn, w),
        );
        match outcome {
            Ok(crate::run::commit::CommitOutcome::Committed(sha)) => {
                self.log
                    .line(Level::Info, format!("meta-state commit: {sha}"));
                summary.meta_state_commit = Some(sha);
            }
            Ok(crate::run::commit::CommitOutcome::NothingChanged) => {
                self.log
                    .line(Level::Info, "meta-state commit: nothing changed".into());
            }
            Ok(crate::run::commit::CommitOutcome::Skipped(why)) => self.log.line(Level::Warn, why),
            Err(e) => {
                self.log.line(Level::Error, e.clone());
                summary.ok = false;
                summary.error = Some(e);
            }
        }
    }
}

/// Every plaintext the load decrypted, for the commit's search.
fn decrypted_plaintexts(ws: &Workspace) -> Vec<String> {
    let db = &ws.db;
    let mut out = Vec::new();
    for kind in db.registry().item_kinds() {
        for name in crate::load::items::item_index(db, ws.tree).names(kind) {
            let id = crate::load::items::ItemId::new(db, ws.tree, kind, name);
            let si = crate::load::items_model::structured_item(db, id);
            out.extend(si.secrets.iter().map(|s| s.plaintext.clone()));
        }
    }
    out.sort();
    out.dedup();
    out
}
