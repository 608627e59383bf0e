//! Path confinement: the one rule for every path and name that comes from
//! configuration or the command line and becomes a place on disk (a
//! modification's `scripts:` entry, `state backup --workspace`, the run
//! id a backup is named by, a storage or instance name that becomes a
//! directory of the local store). Such a value may not climb out of the
//! root it is relative to: an absolute path, a `..` component or a
//! symlink on the way that leads outside is refused with a message naming
//! the key it came from, before anything is read or written.
//!
//! csis-model does no I/O: where a symlink has to be followed, the caller
//! hands in its way of resolving a path (`System::canonicalize` in the
//! engine, `std::fs::canonicalize` in a runtime step), so the engine, the
//! plugins and the model ask one rule.

use std::io;
use std::path::{Component, Path, PathBuf};

/// How a caller resolves an existing path (symlinks followed).
pub type Canonicalize<'a> = &'a dyn Fn(&Path) -> io::Result<PathBuf>;

/// Why `path`, read from `key`, cannot name a place below the
/// configuration root: empty, absolute, holding a `..` component or a
/// control character. Checked on the text alone, so it can be asked at
/// validate time, where the value sits in a file.
pub fn relative_path_problem(key: &str, path: &str) -> Option<String> {
    if path.trim().is_empty() {
        return Some(format!(
            "{key} is empty; write a path relative to the configuration root, such as 'scripts/setup.sh'"
        ));
    }
    if let Some(problem) = crate::naming::control_char_problem(key, path) {
        return Some(problem);
    }
    if path.starts_with(['/', '\\']) || Path::new(path).is_absolute() {
        return Some(format!(
            "{key} '{path}' is an absolute path, and csis reads and writes only inside the configuration root; write a path relative to the root, such as 'scripts/setup.sh' (copy a file from elsewhere into the tree)"
        ));
    }
    if climbs(path) {
        return Some(format!(
            "{key} '{path}' holds '..', which climbs out of the directory it is relative to; write a path below the configuration root without '..'"
        ));
    }
    None
}

/// Whether `path` holds a `..` component (either separator).
pub fn climbs(path: &str) -> bool {
    path.split(['/', '\\']).any(|part| part == "..")
}

/// Why `name`, read from `key`, cannot be one entry of a directory (the
/// name of a file or directory csis makes from it): empty, `.` or `..`
/// (after the whitespace a name loses), holding `/` or `\`, or a control
/// character.
pub fn file_name_problem(key: &str, name: &str) -> Option<String> {
    if let Some(problem) = crate::naming::control_char_problem(key, name) {
        return Some(problem);
    }
    let bare: String = name.chars().filter(|c| !c.is_whitespace()).collect();
    let why = match bare.as_str() {
        "" => "is empty",
        "." | ".." => {
            "is a directory's own name ('.' or '..') and would name the directory it is in, or its parent"
        }
        _ if name.contains(['/', '\\']) => "holds '/' or '\\', which would make it a path",
        _ => return None,
    };
    Some(format!(
        "{key} '{name}' {why}; write one plain name such as 'data-01'"
    ))
}

/// Where `path` leads: symlinks resolved in the part that exists, `.` and
/// `..` folded in the part that does not exist yet.
pub fn resolved(path: &Path, canonicalize: Canonicalize<'_>) -> PathBuf {
    if let Ok(real) = canonicalize(path) {
        return real;
    }
    let mut rest = path.components();
    match rest.next_back() {
        Some(Component::Normal(name)) => resolved(rest.as_path(), canonicalize).join(name),
        Some(Component::CurDir) => resolved(rest.as_path(), canonicalize),
        Some(Component::ParentDir) => {
            let mut parent = resolved(rest.as_path(), canonicalize);
            parent.pop();
            parent
        }
        _ => path.to_path_buf(),
    }
}

/// `root/rel` when `rel`, read from `key`, stays below `root`: refused
/// by [`relative_path_problem`], and when the place it resolves to
/// (symlinks followed as far as the path exists) is outside `root`. The
/// path returned is the joined one, not the resolved one, so messages
/// show what was configured.
pub fn confine(
    root: &Path,
    key: &str,
    rel: &str,
    canonicalize: Canonicalize<'_>,
) -> Result<PathBuf, String> {
    if let Some(problem) = relative_path_problem(key, rel) {
        return Err(problem);
    }
    let path = root.join(rel);
    let real_root = resolved(root, canonicalize);
    let at = resolved(&path, canonicalize);
    if at.starts_with(&real_root) {
        return Ok(path);
    }
    Err(format!(
        "{key} '{rel}' resolves to {}, outside the configuration root {}: a symlink on the way leads out of it, and csis reads and writes only inside the root; make '{rel}' a file or directory inside the root, not a symlink out of it",
        at.display(),
        real_root.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file system of one symlink: `/r/out` leads to `/elsewhere`.
    fn canon(p: &Path) -> io::Result<PathBuf> {
        let s = p.to_string_lossy();
        match s.as_ref() {
            "/r" | "/r/scripts" | "/r/scripts/a.sh" | "/elsewhere" => Ok(p.to_path_buf()),
            "/r/out" => Ok(PathBuf::from("/elsewhere")),
            _ => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    #[test]
    fn a_path_below_the_root_is_kept_as_written() {
        for rel in ["scripts/a.sh", "scripts/new.sh", "./scripts/a.sh", "a..b/c"] {
            assert_eq!(
                confine(Path::new("/r"), "scripts[0]", rel, &canon),
                Ok(Path::new("/r").join(rel))
            );
        }
    }

    #[test]
    fn absolute_paths_dot_dot_and_symlinks_out_are_refused_naming_the_key() {
        let refused = |rel: &str| confine(Path::new("/r"), "scripts[0]", rel, &canon).unwrap_err();
        assert_eq!(
            refused("../../outside.sh"),
            "scripts[0] '../../outside.sh' holds '..', which climbs out of the directory it is relative to; write a path below the configuration root without '..'"
        );
        assert!(refused("scripts/../a.sh").contains("holds '..'"));
        assert!(refused("a\\..\\b").contains("holds '..'"));
        assert_eq!(
            refused("/etc/passwd"),
            "scripts[0] '/etc/passwd' is an absolute path, and csis reads and writes only inside the configuration root; write a path relative to the root, such as 'scripts/setup.sh' (copy a file from elsewhere into the tree)"
        );
        assert_eq!(
            refused("out/x.tfstate"),
            "scripts[0] 'out/x.tfstate' resolves to /elsewhere/x.tfstate, outside the configuration root /r: a symlink on the way leads out of it, and csis reads and writes only inside the root; make 'out/x.tfstate' a file or directory inside the root, not a symlink out of it"
        );
        assert!(refused("").starts_with("scripts[0] is empty"));
        assert!(refused("a\nb").contains("U+000A"));
    }

    #[test]
    fn a_file_name_is_one_plain_entry() {
        for fine in ["data", "vm.backup-R1", "a..b", "web 01"] {
            assert_eq!(file_name_problem("storage name", fine), None, "{fine}");
        }
        assert_eq!(
            file_name_problem("--workspace", "../../../x").as_deref(),
            Some(
                "--workspace '../../../x' holds '/' or '\\', which would make it a path; write one plain name such as 'data-01'"
            )
        );
        for bad in ["..", ".", " . . ", "", "a/b", "a\\b", "/x"] {
            assert!(file_name_problem("k", bad).is_some(), "{bad}");
        }
        assert!(
            file_name_problem("name", "..")
                .is_some_and(|p| p.contains("is a directory's own name"))
        );
    }

    #[test]
    fn paths_that_do_not_exist_yet_fold_their_dots() {
        assert_eq!(
            resolved(Path::new("/t/./store/../../../tmp/x"), &canon),
            PathBuf::from("/tmp/x")
        );
        assert_eq!(
            resolved(Path::new("/r/out/new/file"), &canon),
            PathBuf::from("/elsewhere/new/file")
        );
    }
}
