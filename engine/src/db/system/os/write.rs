//! Writing files whole or not at all on the real machine: a temporary
//! beside the target, then a rename over it (durable or not), and the one
//! sync at the end of a run that makes the undurable ones durable.

use std::io;
use std::path::Path;

use crate::db::system::TEMP_MARK;

/// [`System::write_replace`](crate::db::system::System::write_replace)
/// writes of this process not yet synced.
static UNSYNCED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How [`os_replace`] leaves the new file.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    /// The temporary fsync'd before the rename and the directory after it.
    Durable,
    /// Renamed over the old file, synced at the end of a run.
    Replaced,
    /// The old file removed, then the temporary renamed: a reader may find
    /// no file for a moment. For a file that may be lost (the persisted
    /// cache), because ext4 writes a file renamed over another to disk
    /// before the rename returns (`auto_da_alloc`), which was most of the
    /// time of writing the cache.
    Disposable,
}

/// A temporary file beside `path`, filled by `fill`, then a rename over
/// it, as `keep` says.
pub(super) fn os_replace(
    path: &Path,
    fill: &mut dyn FnMut(&mut dyn io::Write) -> io::Result<()>,
    executable: bool,
    keep: Keep,
) -> io::Result<()> {
    let durable = keep == Keep::Durable;
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no parent", path.display())))?;
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    // Unique per process and per write, so two writers (processes, or
    // threads of one) never share a temporary.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}{TEMP_MARK}{}-{n}", std::process::id()));
    let result = (|| {
        let mut f = io::BufWriter::new(std::fs::File::create(&tmp)?);
        fill(&mut f)?;
        let f = f.into_inner().map_err(io::IntoInnerError::into_error)?;
        if durable {
            f.sync_all()?;
        }
        #[cfg(unix)]
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
        }
        if keep == Keep::Disposable {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let result = result.and_then(|()| {
        // The rename itself reaches the disk with the directory.
        #[cfg(unix)]
        if durable {
            std::fs::File::open(dir)?.sync_all()?;
        }
        if !durable {
            UNSYNCED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    });
    result.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// [`System::sync_tree`](crate::db::system::System::sync_tree) on the real
/// machine.
pub(super) fn sync_tree(dir: &Path) -> io::Result<()> {
    // Nothing written since the last sync: nothing to wait for.
    if UNSYNCED.swap(0, std::sync::atomic::Ordering::Relaxed) == 0 || !dir.is_dir() {
        return Ok(());
    }
    let d = std::fs::File::open(dir)?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: syncfs only reads the descriptor, which `d` keeps
        // open for the call.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display())));
        }
    }
    #[cfg(not(target_os = "linux"))]
    d.sync_all()?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the tests set the disk up by hand
mod tests {
    use crate::db::system::{OsSystem, System};

    #[test]
    fn a_failed_rename_leaves_the_target_as_it_was_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty directory: the rename must fail.
        let target = dir.path().join("lineage.yaml");
        std::fs::create_dir_all(target.join("keep")).unwrap();
        let err = OsSystem
            .write_atomic(&target, b"builds: []\n", false)
            .unwrap_err();
        assert!(err.to_string().contains("lineage.yaml"), "{err}");
        assert!(target.join("keep").is_dir());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(leftovers, ["lineage.yaml"]);
    }

    #[test]
    fn a_replacing_write_leaves_the_new_file_whole_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("gen/base-image/main.sh");
        OsSystem.write_replace(&target, b"old\n", false).unwrap();
        OsSystem.write_replace(&target, b"new\n", true).unwrap();
        OsSystem.sync_tree(dir.path()).unwrap();
        OsSystem.sync_tree(&dir.path().join("missing")).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o755);
        }
        let names: Vec<_> = std::fs::read_dir(target.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(names, ["main.sh"]);
    }

    #[test]
    fn a_writer_killed_before_its_rename_leaves_the_old_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("pins.yaml");
        OsSystem
            .write_atomic(&target, b"images: {}\n", false)
            .unwrap();
        // What a writer killed between write and rename leaves behind.
        std::fs::write(
            dir.path().join(".pins.yaml.csis-tmp-99999"),
            b"images: {a: half",
        )
        .unwrap();
        assert_eq!(
            OsSystem.read_to_string(&target).unwrap().unwrap(),
            "images: {}\n"
        );
        OsSystem
            .write_atomic(&target, b"images: {a: b}\n", false)
            .unwrap();
        assert_eq!(
            OsSystem.read_to_string(&target).unwrap().unwrap(),
            "images: {a: b}\n"
        );
    }
}
