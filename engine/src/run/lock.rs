//! The tree's lock: every command that writes generated/, the private
//! mirror, meta-state/ or a local store holds it for its whole life, so two
//! writers never interleave and no record's read-modify-write is lost. The
//! mechanics (flock, the holder's name, waiting, stale locks, a child
//! proceeding under its parent's lock) are `db::lock`'s; this file puts the
//! lock at `meta-state/.csis.lock` and keeps it out of git.

use std::path::Path;

use crate::db::lock::{Lock, Request, acquire};
use crate::db::system::System;
use crate::state::meta_state;

/// Take the tree's lock for `req.command`, waiting up to `req.timeout`;
/// notices go to `notice`. The error is the refusal, to print as it is.
/// `None` when `root` holds no tree (no cfg/): there is nothing to guard,
/// the command refuses such a root itself, and no lock file is left there.
pub fn lock_tree(
    system: &dyn System,
    root: &Path,
    req: &Request,
    notice: &mut dyn FnMut(String),
) -> Result<Option<Lock>, String> {
    if !system.is_dir(&root.join("cfg")) {
        return Ok(None);
    }
    let lock = acquire(
        system,
        &meta_state::path(root, meta_state::LOCK_FILE),
        req,
        notice,
    )?;
    if lock.is_held() {
        ignore_in_git(system, root, &meta_state::lock_rel())?;
    }
    Ok(Some(lock))
}

/// The records lock (`meta-state/.csis-records.lock`): held around one
/// read-modify-write of lineage.yaml and pins.yaml, so that concurrent
/// bakes' `lineage record`s, which all run under their parent's tree
/// lock, never lose each other's writes. Waits as long as it takes a
/// record to write (at most two minutes), then refuses.
pub fn lock_records(
    system: &dyn System,
    root: &Path,
) -> Result<Box<dyn crate::db::system::HeldLock>, String> {
    let path = meta_state::path(root, meta_state::RECORDS_LOCK_FILE);
    ignore_in_git(
        system,
        root,
        &format!("{}/{}", meta_state::DIR, meta_state::RECORDS_LOCK_FILE),
    )?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if let Some(held) = system
            .try_lock(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
        {
            return Ok(held);
        }
        if std::time::Instant::now() >= deadline {
            return Err(format!(
                "{}: another record of this run held it for two minutes; nothing was recorded -- record again (csis lineage record is idempotent)",
                path.display()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// In a git repository, `line` is appended to the root's .gitignore unless
/// a line of it already says so.
pub(crate) fn ignore_in_git(system: &dyn System, root: &Path, line: &str) -> Result<(), String> {
    if !system.is_dir(&root.join(".git")) {
        return Ok(());
    }
    let ignore = root.join(".gitignore");
    let current = system
        .read_to_string(&ignore)
        .ok()
        .flatten()
        .unwrap_or_default();
    if current.lines().any(|l| l.trim() == line) {
        return Ok(());
    }
    let sep = if current.is_empty() || current.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    system
        .write_atomic(&ignore, format!("{current}{sep}{line}\n").as_bytes(), false)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::MemorySystem;
    use std::time::Duration;

    #[test]
    fn in_a_git_repository_the_lock_file_is_ignored_once() {
        let sys = MemorySystem::new();
        let root = Path::new("/r");
        sys.write(&root.join(".git/HEAD"), "ref: refs/heads/main\n");
        sys.write(&root.join(".gitignore"), "_private/");
        sys.write(&root.join("cfg/_config.yml"), "id: x\n");
        let req = Request {
            command: "csis run all",
            timeout: Duration::ZERO,
        };
        drop(lock_tree(&sys, root, &req, &mut |_| {}).unwrap().unwrap());
        drop(lock_tree(&sys, root, &req, &mut |_| {}).unwrap().unwrap());
        assert_eq!(
            sys.read(&root.join(".gitignore")),
            "_private/\nmeta-state/.csis.lock\n"
        );
    }

    #[test]
    fn a_root_without_a_tree_is_not_locked_and_left_as_it_was() {
        let sys = MemorySystem::new();
        let req = Request {
            command: "csis run all",
            timeout: Duration::ZERO,
        };
        assert!(
            lock_tree(&sys, Path::new("/nothing"), &req, &mut |_| {})
                .unwrap()
                .is_none()
        );
        assert!(sys.list_files(Path::new("/nothing")).unwrap().is_empty());
    }
}
