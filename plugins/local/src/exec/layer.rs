//! Layers that cost little: a child bake's root shares every file it does
//! not change with its parent build.
//!
//! The bake's scripts run on an overlay whose lower layer is the parent
//! build's root (never written) and whose upper layer is empty at the
//! start (`sandbox.rs` mounts it). The child's root is then a hard-link
//! farm of the parent's (`store::link_tree`) with the upper layer applied
//! over it: a file the scripts wrote
//! replaces its link, a whiteout (a 0/0 character device) deletes, an
//! opaque directory (`user.overlay.opaque`) loses what the parent had in
//! it. A build is whole and immutable once recorded, so sharing inodes
//! between builds is safe: nothing writes a recorded build in place (an
//! instance boots from a copy).

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use super::store::io_err;

/// The overlay's working directories for one bake, under its `.partial`.
pub(super) struct Layer {
    pub upper: std::path::PathBuf,
    pub work: std::path::PathBuf,
    pub merged: std::path::PathBuf,
}

impl Layer {
    /// Fresh, empty directories under `dir`.
    pub(super) fn new(dir: &Path) -> Result<Layer, String> {
        let layer = Layer {
            upper: dir.join("upper"),
            work: dir.join("work"),
            merged: dir.join("merged"),
        };
        for d in [&layer.upper, &layer.work, &layer.merged] {
            fs::create_dir_all(d).map_err(io_err(d))?;
        }
        Ok(layer)
    }

    /// Remove the overlay's directories.
    pub(super) fn remove(&self) -> Result<(), String> {
        match self.upper.parent() {
            Some(dir) => remove_bake_dir(dir),
            None => Ok(()),
        }
    }
}

/// Remove a bake's directory (its `.partial`, or its layer): the kernel
/// leaves an overlay's inner work directory unreadable to its owner, so
/// it is opened up first.
pub(super) fn remove_bake_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    for inner in [dir.join("work/work"), dir.join("layer/work/work")] {
        if fs::symlink_metadata(&inner).is_ok_and(|m| m.is_dir()) {
            fs::set_permissions(&inner, fs::Permissions::from_mode(0o700))
                .map_err(io_err(&inner))?;
        }
    }
    match fs::symlink_metadata(dir) {
        Err(_) => Ok(()),
        Ok(_) => fs::remove_dir_all(dir).map_err(io_err(dir)),
    }
}

/// Apply the overlay's upper layer `upper` over the farm `root`.
pub(super) fn apply_upper(upper: &Path, root: &Path) -> Result<(), String> {
    for entry in fs::read_dir(upper).map_err(io_err(upper))? {
        let entry = entry.map_err(io_err(upper))?;
        let from = entry.path();
        let meta = fs::symlink_metadata(&from).map_err(io_err(&from))?;
        let to = root.join(entry.file_name());
        let ty = meta.file_type();
        if ty.is_char_device() && meta.rdev() == 0 {
            remove(&to)?;
        } else if ty.is_dir() {
            let existing = fs::symlink_metadata(&to).ok();
            if existing.as_ref().is_some_and(|m| !m.is_dir()) || is_opaque(&from) {
                remove(&to)?;
            }
            fs::create_dir_all(&to).map_err(io_err(&to))?;
            super::store::keep_owner_and_mode(&meta, &to)?;
            apply_upper(&from, &to)?;
        } else if ty.is_file() || ty.is_symlink() {
            remove(&to)?;
            // The upper layer is this bake's own: its files move in.
            fs::rename(&from, &to).map_err(io_err(&to))?;
        }
    }
    Ok(())
}

/// Remove whatever is at `path` (nothing there is fine), never following
/// a symlink.
fn remove(path: &Path) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).map_err(io_err(path)),
        Ok(_) => fs::remove_file(path).map_err(io_err(path)),
    }
}

/// Whether the overlay marked `dir` opaque (the scripts removed the
/// parent's directory and made a new one there).
fn is_opaque(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut value = [0u8; 1];
    // SAFETY: lgetxattr(2) reads at most `value.len()` bytes into a buffer
    // this function owns; both strings are NUL-terminated.
    let n = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            c"user.overlay.opaque".as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    n == 1 && value[0] == b'y'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_farm_shares_the_parents_inodes_and_the_upper_layer_replaces_deletes_and_empties() {
        let d = tempfile::tempdir().unwrap();
        let parent = d.path().join("parent");
        fs::create_dir_all(parent.join("etc")).unwrap();
        fs::create_dir_all(parent.join("opt/old")).unwrap();
        fs::write(parent.join("etc/passwd"), "root\n").unwrap();
        fs::write(parent.join("etc/group"), "root\n").unwrap();
        fs::write(parent.join("opt/old/a"), "a\n").unwrap();
        fs::write(parent.join("kept"), "kept\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", parent.join("link")).unwrap();
        // An upper layer as the overlay leaves it: a changed file, a new
        // one, a whiteout, an opaque directory.
        let upper = d.path().join("upper");
        fs::create_dir_all(upper.join("etc")).unwrap();
        fs::create_dir_all(upper.join("opt/old")).unwrap();
        fs::write(upper.join("etc/passwd"), "root\nann\n").unwrap();
        fs::write(upper.join("etc/new"), "new\n").unwrap();
        fs::write(upper.join("opt/old/b"), "b\n").unwrap();
        let mknod = std::process::Command::new("mknod")
            .arg(upper.join("etc/group"))
            .args(["c", "0", "0"])
            .status()
            .unwrap();
        assert!(mknod.success());
        use std::os::unix::ffi::OsStrExt;
        let dir = std::ffi::CString::new(upper.join("opt/old").as_os_str().as_bytes()).unwrap();
        // SAFETY: lsetxattr(2) on a path and a one-byte value this test owns.
        let set = unsafe {
            libc::lsetxattr(
                dir.as_ptr(),
                c"user.overlay.opaque".as_ptr(),
                b"y".as_ptr().cast(),
                1,
                0,
            )
        };
        assert_eq!(set, 0, "user xattrs on the test's file system");
        let child = d.path().join("child");
        super::super::store::link_tree(&parent, &child).unwrap();
        apply_upper(&upper, &child).unwrap();
        let read = |p: &Path| fs::read_to_string(p).unwrap();
        assert_eq!(read(&child.join("etc/passwd")), "root\nann\n");
        assert_eq!(
            read(&parent.join("etc/passwd")),
            "root\n",
            "the parent was written"
        );
        assert_eq!(read(&child.join("etc/new")), "new\n");
        assert!(!child.join("etc/group").exists());
        assert!(parent.join("etc/group").exists());
        let ino = |p: &Path| fs::metadata(p).unwrap().ino();
        assert_eq!(ino(&child.join("kept")), ino(&parent.join("kept")));
        assert_eq!(
            fs::read_link(child.join("link")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert_eq!(read(&child.join("opt/old/b")), "b\n");
        assert!(
            !child.join("opt/old/a").exists(),
            "an opaque directory keeps nothing of the parent's"
        );
    }
}
