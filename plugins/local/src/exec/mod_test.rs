//! `csis test-mods` on the local runtime: an image's modifications applied
//! in a throwaway copy of its parent build, in the sandbox as a bake
//! applies them, each one under test twice. The second run must exit 0
//! and leave the root as the first left it (every path's kind, mode,
//! owner, content and link target): a modification that appends to a
//! file, or fails once its work is done, is not idempotent, and a re-bake
//! over a build that already has it would not give the same image.
//!
//! The copy lives in `<store>/mod-tests/.<image>-<pid>` and is removed
//! when the test ends, whatever its outcome; nothing is recorded in the
//! store.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use csis_plugin_api::ModTestOutcome;
use serde_json::Value as J;

use super::Env;
use super::layer::remove_bake_dir;
use super::modification::apply_mod;
use super::sandbox::Sandbox;
use super::store::{copy_tree, io_err};

/// What the local runtime knows of one image's modifications for a test.
pub struct ModTestRequest<'a> {
    pub root: &'a Path,
    pub store: &'a Path,
    pub network: bool,
    pub image: &'a str,
    pub parent_build: &'a str,
    /// The modifications as a bake spec carries them, in order.
    pub mods: &'a [J],
    pub variables: &'a serde_json::Map<String, J>,
    /// The names to test twice; the others are applied once, so that a
    /// later modification runs on what the earlier ones left.
    pub test: &'a [String],
}

pub fn test_mods(req: &ModTestRequest) -> Result<Vec<ModTestOutcome>, String> {
    let parent = req.store.join("images").join(req.parent_build).join("root");
    if !parent.is_dir() {
        return Err(format!(
            "parent build {} of image '{}' is not in the store {}",
            req.parent_build,
            req.image,
            req.store.display()
        ));
    }
    let scratch =
        req.store
            .join("mod-tests")
            .join(format!(".{}-{}", req.image, std::process::id()));
    remove_bake_dir(&scratch)?;
    let outcome = (|| {
        let root = scratch.join("root");
        copy_tree(&parent, &root)?;
        let sandbox = Sandbox::new(&root).network(req.network);
        let env = Env {
            root: req.root.to_path_buf(),
            run_id: String::new(),
        };
        let mut out = Vec::new();
        for m in req.mods {
            let name = m.get("name").and_then(J::as_str).unwrap_or("?").to_string();
            let first = apply_mod(&env, req.image, &sandbox, req.variables, m);
            if !req.test.contains(&name) {
                if let Err(e) = first {
                    // The ones after it would run on a root it left half
                    // done: they are not tested.
                    return Err(format!("{e} (it precedes the modifications under test)"));
                }
                continue;
            }
            let outcome = match first {
                Err(e) => ModTestOutcome {
                    name,
                    status: "failed".into(),
                    idempotent: None,
                    detail: format!("the first run failed: {e}"),
                },
                Ok(_) => {
                    let before = snapshot(&root)?;
                    match apply_mod(&env, req.image, &sandbox, req.variables, m) {
                        Err(e) => ModTestOutcome {
                            name,
                            status: "failed".into(),
                            idempotent: Some(false),
                            detail: format!("the second run failed: {e}"),
                        },
                        Ok(_) => {
                            let changed = changes(&before, &snapshot(&root)?);
                            if changed.is_empty() {
                                ModTestOutcome {
                                    name,
                                    status: "passed".into(),
                                    idempotent: Some(true),
                                    detail: String::new(),
                                }
                            } else {
                                ModTestOutcome {
                                    name,
                                    status: "failed".into(),
                                    idempotent: Some(false),
                                    detail: format!("the second run changed {}", changed),
                                }
                            }
                        }
                    }
                }
            };
            let failed = outcome.status != "passed";
            out.push(outcome);
            if failed {
                break;
            }
        }
        Ok(out)
    })();
    remove_bake_dir(&scratch)?;
    let _ = fs::remove_dir(req.store.join("mod-tests"));
    outcome
}

/// Every path under `root` (relative, sorted) with what a change to it
/// would change: kind, mode, owner, content or link target. Timestamps
/// are not compared: writing a file with the same bytes changes nothing.
fn snapshot(root: &Path) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).map_err(io_err(&dir))? {
            let e = e.map_err(io_err(&dir))?;
            let path = e.path();
            let m = fs::symlink_metadata(&path).map_err(io_err(&path))?;
            let what = if m.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else if m.file_type().is_symlink() {
                let target = fs::read_link(&path).map_err(io_err(&path))?;
                format!("link {}", target.display())
            } else if m.is_file() {
                // Streamed: a root's largest files need not sit in memory.
                let file = fs::File::open(&path).map_err(io_err(&path))?;
                let mut hasher = blake3::Hasher::new();
                hasher.update_reader(file).map_err(io_err(&path))?;
                format!("file {}", hasher.finalize().to_hex())
            } else {
                "special".to_string()
            };
            let rel = path.strip_prefix(root).map_or_else(
                |_| path.display().to_string(),
                |r| format!("/{}", r.display()),
            );
            out.insert(
                rel,
                format!("{what} {:o} {}:{}", m.mode(), m.uid(), m.gid()),
            );
        }
    }
    Ok(out)
}

/// The paths that differ, the first five named: `/etc/motd, /etc/x`.
fn changes(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> String {
    let mut changed: Vec<&String> = before
        .iter()
        .filter(|(p, v)| after.get(*p) != Some(v))
        .map(|(p, _)| p)
        .chain(after.keys().filter(|p| !before.contains_key(*p)))
        .collect();
    changed.sort();
    changed.dedup();
    let mut text: Vec<String> = changed.iter().take(5).map(|p| p.to_string()).collect();
    if changed.len() > 5 {
        text.push(format!("and {} more", changed.len() - 5));
    }
    text.join(", ")
}
