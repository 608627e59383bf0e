//! How a step writes into the store: a file whole or not at all, a tree
//! copied with its links, and where a series' head is kept. Shared by
//! every step and by the upkeep hooks.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub(super) fn io_err(path: &Path) -> impl Fn(io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// Write a file whole: a temporary beside it, then a rename.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no parent", path.display()))?;
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    // Unique per process and per write: two writers never share one.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{n}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("f"),
        std::process::id()
    ));
    fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io_err(path)(e)
    })
}

/// Copy an image's tree: directories (with their modes), regular files
/// and symlinks as symlinks (never followed: an image's absolute link
/// names its own file, not the host's). Device nodes, FIFOs and sockets
/// are not copied: reading one would hang or never end, and every script
/// gets a fresh /dev and /tmp in the sandbox.
pub(super) fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    replicate(from, to, false)
}

/// An image's tree as [`copy_tree`] makes it, its regular files hard
/// links to `from`'s (a child layer's farm, `layer.rs`).
pub(super) fn link_tree(from: &Path, to: &Path) -> Result<(), String> {
    replicate(from, to, true)
}

/// `link`: regular files are hard links, which share their owner and
/// mode with `from`'s already; copies are given them.
fn replicate(from: &Path, to: &Path, link: bool) -> Result<(), String> {
    fs::create_dir_all(to).map_err(io_err(to))?;
    keep_owner_and_mode(&fs::metadata(from).map_err(io_err(from))?, to)?;
    for entry in fs::read_dir(from).map_err(io_err(from))? {
        let entry = entry.map_err(io_err(from))?;
        let ty = entry.file_type().map_err(io_err(&entry.path()))?;
        let dest = to.join(entry.file_name());
        if ty.is_dir() {
            replicate(&entry.path(), &dest, link)?;
        } else if ty.is_symlink() {
            let target = fs::read_link(entry.path()).map_err(io_err(&entry.path()))?;
            std::os::unix::fs::symlink(target, &dest).map_err(io_err(&dest))?;
            keep_owner(&entry.metadata().map_err(io_err(&entry.path()))?, &dest)?;
        } else if ty.is_file() && link {
            fs::hard_link(entry.path(), &dest).map_err(io_err(&dest))?;
        } else if ty.is_file() {
            fs::copy(entry.path(), &dest).map_err(io_err(&dest))?;
            keep_owner_and_mode(&entry.metadata().map_err(io_err(&entry.path()))?, &dest)?;
        }
    }
    Ok(())
}

/// Give `to` the owner and group of `like` (a file of the image it
/// copies), never following a symlink: a package's files keep their
/// system users (the sandbox maps them, `sandbox.rs`). Nothing to do when
/// they already match, as always when csis does not run as root.
pub(super) fn keep_owner(like: &fs::Metadata, to: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let now = fs::symlink_metadata(to).map_err(io_err(to))?;
    if (now.uid(), now.gid()) != (like.uid(), like.gid()) {
        std::os::unix::fs::lchown(to, Some(like.uid()), Some(like.gid())).map_err(io_err(to))?;
    }
    Ok(())
}

/// [`keep_owner`], then `like`'s mode (a change of owner clears the
/// set-user-id and set-group-id bits).
pub(super) fn keep_owner_and_mode(like: &fs::Metadata, to: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    keep_owner(like, to)?;
    if fs::metadata(to).map_err(io_err(to))?.mode() != like.mode() {
        fs::set_permissions(to, like.permissions()).map_err(io_err(to))?;
    }
    Ok(())
}

/// A template build's root archives (`*.tar` artifacts at the top of a
/// base's root) unpacked in place, each then removed: image-composer-tool
/// can leave a root file system as an archive, and the local runtime runs
/// a child's modifications inside it. Disk images stay files. An entry
/// that would land outside the root (`..`, an absolute path, a path
/// through a symlink) is refused by the unpacker.
pub(super) fn unpack_root_archives(root: &Path) -> Result<(), String> {
    let mut archives: Vec<PathBuf> = fs::read_dir(root)
        .map_err(io_err(root))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "tar"))
        .collect();
    archives.sort();
    for archive in archives {
        unpack_root(&archive, root)?;
        fs::remove_file(&archive).map_err(io_err(&archive))?;
    }
    Ok(())
}

/// Unpack a root tarball into `root` with its owners and modes, as
/// [`copy_tree`] copies a tree: device nodes and FIFOs stay out (the
/// sandbox gives every script a fresh /dev), and an entry that would land
/// outside `root` (`..`, an absolute path, a path through a symlink) is
/// refused by the unpacker.
pub(super) fn unpack_root(archive: &Path, root: &Path) -> Result<(), String> {
    let failed = |e: io::Error| format!("unpacking {}: {e}", archive.display());
    let file = fs::File::open(archive).map_err(io_err(archive))?;
    let mut tar = tar::Archive::new(file);
    tar.set_preserve_permissions(true);
    tar.set_preserve_ownerships(true);
    tar.set_overwrite(true);
    fs::create_dir_all(root).map_err(io_err(root))?;
    for entry in tar.entries().map_err(failed)? {
        let mut entry = entry.map_err(failed)?;
        let kind = entry.header().entry_type();
        if kind.is_character_special() || kind.is_block_special() || kind.is_fifo() {
            continue;
        }
        let path = entry.path().map_err(failed)?.into_owned();
        entry
            .unpack_in(root)
            .map_err(|e| format!("unpacking {} ({}): {e}", archive.display(), path.display()))?;
    }
    Ok(())
}

pub(super) fn head_path(store: &Path, series: &str, runtime: &str) -> PathBuf {
    store.join("heads").join(format!("{series}@{runtime}"))
}

/// `<store>/<kind>/<name>`, the entry of a storage or an instance, named
/// by the spec: a name that is not one plain file name (`..`, `.`, one
/// holding `/`) is refused by the one confinement rule
/// ([`csis_model::confine::file_name_problem`]): `storages/..` would be
/// the store itself, and a destroyed storage would remove it.
pub(super) fn entry(store: &Path, kind: &str, what: &str, name: &str) -> Result<PathBuf, String> {
    match csis_model::confine::file_name_problem(what, name) {
        Some(problem) => Err(problem),
        None => Ok(store.join(kind).join(name)),
    }
}

/// `dir/rel` for a path that comes from configuration (a script file,
/// a mount point under an instance's `mounts/`): refused unless it stays
/// inside `dir`, lexically and through the symlinks that exist
/// ([`csis_model::confine::confine`]).
pub(super) fn confined(dir: &Path, key: &str, rel: &str) -> Result<PathBuf, String> {
    csis_model::confine::confine(dir, key, rel, &|p: &Path| fs::canonicalize(p))
}

/// `dir/rel` where a link is made or removed (a storage's mount link
/// under an instance's `mounts/`): the link itself leads out by design,
/// so the rule holds its place, not its target: `rel` without `..` or a
/// leading `/`, and the directory it sits in inside `dir`.
pub(super) fn confined_link(dir: &Path, key: &str, rel: &str) -> Result<PathBuf, String> {
    if let Some(problem) = csis_model::confine::relative_path_problem(key, rel) {
        return Err(problem);
    }
    match Path::new(rel).parent().and_then(Path::to_str) {
        Some(parent) if !parent.is_empty() => {
            Ok(confined(dir, key, parent)?.join(Path::new(rel).file_name().unwrap_or_default()))
        }
        _ => Ok(dir.join(rel)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_tree_is_copied_with_its_links_and_without_its_special_files() {
        let d = tempfile::tempdir().unwrap();
        let from = d.path().join("from");
        fs::create_dir_all(from.join("etc")).unwrap();
        fs::write(from.join("etc/os-release"), "ID=debian\n").unwrap();
        std::os::unix::fs::symlink("/etc/os-release", from.join("os-release")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", from.join("zero")).unwrap();
        let fifo = from.join("etc/initctl");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let to = d.path().join("to");
        // A FIFO copied by reading it would block here for ever.
        copy_tree(&from, &to).unwrap();
        assert_eq!(
            fs::read_to_string(to.join("etc/os-release")).unwrap(),
            "ID=debian\n"
        );
        assert_eq!(
            fs::read_link(to.join("os-release")).unwrap(),
            Path::new("/etc/os-release")
        );
        assert_eq!(
            fs::read_link(to.join("zero")).unwrap(),
            Path::new("/dev/zero")
        );
        assert!(fs::symlink_metadata(to.join("etc/initctl")).is_err());
    }
}
