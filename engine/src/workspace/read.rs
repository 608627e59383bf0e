//! One file read under csis's limits on input, for a load: a refusal (a
//! FIFO, a device, a file over the size limit, not UTF-8, a symlink out of
//! the tree or to nothing) is a diagnostic naming the file, never an
//! error that stops the load.

use std::path::Path;
use std::sync::Arc;

use csis_model::Diagnostic;

use crate::db::system::System;

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
pub(super) enum Place<'a> {
    /// Inside the tree (its real path must stay below `root`).
    Tree { root: &'a Path },
    /// Named by a path in the configuration (a modification's
    /// `scripts:` entry), relative to `root`: the whole path, not only
    /// its last link, must resolve inside the root
    /// ([`csis_model::confine::confine`]), since a directory on the way
    /// may be the symlink that leads out.
    Named { root: &'a Path, rel: &'a str },
    /// Named on the command line or in the environment: anywhere.
    Given,
}

/// A file's text as a load read it, and its digest when the read took one
/// (`SourceRead::Text`): the file's `SourceFile` keeps it, so that
/// `db::files::text_digest` hashes nothing again. The text is shared as
/// the file will hold it, made so by the worker that read it: copied into
/// shape on one thread, the tree's texts were a twentieth of a plan after
/// an edit.
pub(super) struct ReadText {
    pub text: Arc<str>,
    pub digest: Option<[u8; 32]>,
}

/// A file read under the limits on input. A refusal (a FIFO, a device, a
/// file over the size limit, not UTF-8, a symlink out of the tree or to
/// nothing, an I/O error) is a diagnostic naming the file, and the file
/// is left out. `Ok(None)` also when the file does not exist.
pub(super) fn read_limited(
    system: &dyn System,
    path: &Path,
    shown: &str,
    place: Place<'_>,
    max_bytes: u64,
    diags: &mut Vec<Diagnostic>,
) -> Option<ReadText> {
    use crate::db::system::SourceRead;
    let refuse = |diags: &mut Vec<Diagnostic>, why: String| {
        diags.push(Diagnostic::error(format!("{shown}: {why}")));
        None
    };
    if let Place::Named { root, rel } = place {
        let canonicalize = |p: &Path| system.canonicalize(p);
        if let Err(why) = csis_model::confine::confine(root, "the file", rel, &canonicalize) {
            return refuse(diags, why);
        }
    }
    match system.read_source(path, max_bytes) {
        SourceRead::Text { text, link, digest } => {
            if let (true, Place::Tree { root }) = (link, &place) {
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
            Some(ReadText { text, digest })
        }
        SourceRead::Missing => None,
        SourceRead::Dangling { target } => {
            let why = format!(
                "a symlink to {}, which does not exist; csis skips it",
                target.display()
            );
            match place {
                Place::Tree { .. } | Place::Named { .. } => {
                    diags.push(Diagnostic::warning(format!("{shown}: {why}")));
                    None
                }
                Place::Given => refuse(
                    diags,
                    format!("a symlink to {}, which does not exist", target.display()),
                ),
            }
        }
        SourceRead::Failed(e) => refuse(diags, format!("cannot be read: {e}")),
        refused => match refusal(&refused, max_bytes) {
            Some(why) => refuse(diags, why),
            None => None,
        },
    }
}

/// Why a file is not read wherever it is named: a FIFO, a device or a
/// directory, a file over the limit, not UTF-8. One wording for the tree
/// load and for the commands that read a file they are given
/// ([`read_named`]), so a refusal reads the same everywhere.
fn refusal(read: &crate::db::system::SourceRead, max_bytes: u64) -> Option<String> {
    use crate::db::system::SourceRead;
    match read {
        SourceRead::NotRegular { kind } => Some(format!(
            "{kind}, not a regular file; csis reads only regular files"
        )),
        SourceRead::TooLarge { size } => Some(format!(
            "{} is over the limit of {} csis reads from one file; raise it with \
--max-file-size BYTES (or CSIS_MAX_FILE_SIZE)",
            human_bytes(*size),
            human_bytes(max_bytes)
        )),
        SourceRead::NotUtf8 { line, col } => Some(format!(
            "not UTF-8 text (the first invalid byte is at line {line}, column {col}); csis \
reads configuration files as UTF-8"
        )),
        _ => None,
    }
}

/// A file a command names itself, outside any tree (`csis cloud-config
/// check FILE`, `csis template validate FILE` and the template's `extends`
/// parents), read under the same limits as the tree: a FIFO or a device
/// is refused unopened (reading one would hang, or never end), a file
/// over `max_bytes` unread. A refusal is an error whose text is the tree
/// load's (without the file's name: the caller names it); a missing file
/// is `NotFound`.
pub fn read_named(system: &dyn System, path: &Path, max_bytes: u64) -> std::io::Result<String> {
    use crate::db::system::SourceRead;
    use std::io::{Error, ErrorKind};
    match system.read_source(path, max_bytes) {
        SourceRead::Text { text, .. } => Ok(text.to_string()),
        SourceRead::Missing => Err(Error::new(ErrorKind::NotFound, "No such file or directory")),
        SourceRead::Dangling { target } => Err(Error::new(
            ErrorKind::NotFound,
            format!("a symlink to {}, which does not exist", target.display()),
        )),
        SourceRead::Failed(e) => Err(e),
        refused => Err(Error::new(
            ErrorKind::InvalidData,
            refusal(&refused, max_bytes).unwrap_or_default(),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the tests set the disk up by hand
mod tests {
    use super::read_named;
    use crate::db::system::OsSystem;

    /// A named file is refused in the tree load's words, the file's name
    /// left to the caller; missing is `NotFound`.
    #[test]
    fn a_named_file_is_read_under_the_limits_in_the_tree_loads_words() {
        let dir = tempfile::tempdir().unwrap();
        let read = |name: &str, max: u64| match read_named(&OsSystem, &dir.path().join(name), max) {
            Ok(text) => format!("text {text:?}"),
            Err(e) => format!("{:?}: {e}", e.kind()),
        };
        std::fs::write(dir.path().join("a.yml"), "a: 1\n").unwrap();
        std::fs::write(dir.path().join("bad.yml"), b"a: 1\nb: \xff\n").unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert_eq!(read("a.yml", 5), "text \"a: 1\\n\"");
        assert_eq!(
            read("a.yml", 4),
            "InvalidData: 5 bytes is over the limit of 4 bytes csis reads from one file; raise \
             it with --max-file-size BYTES (or CSIS_MAX_FILE_SIZE)"
        );
        assert_eq!(
            read("bad.yml", 100),
            "InvalidData: not UTF-8 text (the first invalid byte is at line 2, column 4); csis \
             reads configuration files as UTF-8"
        );
        assert_eq!(
            read("d", 100),
            "InvalidData: a directory, not a regular file; csis reads only regular files"
        );
        assert_eq!(read("none.yml", 100), "NotFound: No such file or directory");
    }
}
