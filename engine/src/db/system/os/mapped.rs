//! A file mapped into memory rather than read
//! ([`System::map_bytes`](crate::db::system::System::map_bytes)): the
//! persisted cache's shards, megabytes a fresh process would otherwise
//! copy into pages it must first fault in, only to keep most of them
//! untouched (a unit is taken as a range of its shard).
//!
//! Sound while the file is not truncated in place: csis replaces a shard
//! by a rename, and the mapping keeps the file it opened. A file cut
//! short by another program while a process holds it faults that process
//! (SIGBUS), which is why only files csis alone writes are mapped.

use std::io;
use std::path::Path;

use bytes::Bytes;

/// A read-only private mapping of a whole file, unmapped when the last
/// `Bytes` of it is dropped.
struct Mapping {
    at: std::ptr::NonNull<u8>,
    len: usize,
}

// The mapping is read-only and owned: nothing writes through it.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `at` maps `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping `mmap` made, unmapped once.
        unsafe { libc::munmap(self.at.as_ptr().cast(), self.len) };
    }
}

/// The file's bytes, mapped; `Ok(None)` when it does not exist. A file
/// that cannot be mapped (an empty one, or one on a file system that
/// refuses) is read instead.
#[allow(clippy::disallowed_methods)] // part of OsSystem
pub(super) fn map_file(path: &Path) -> io::Result<Option<Bytes>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let len = usize::try_from(meta.len()).map_err(io::Error::other)?;
    if let Some(mapped) = map(&file, len) {
        return Ok(Some(mapped));
    }
    let mut bytes = Vec::with_capacity(len);
    (&file).read_to_end(&mut bytes)?;
    Ok(Some(Bytes::from(bytes)))
}

/// `len` bytes of `file` mapped, when it can be.
fn map(file: &std::fs::File, len: usize) -> Option<Bytes> {
    use std::os::fd::AsRawFd;
    if len == 0 {
        return None;
    }
    // SAFETY: a fresh read-only private mapping of an open file; the
    // pointer is checked before use.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if at == libc::MAP_FAILED {
        return None;
    }
    let at = std::ptr::NonNull::new(at.cast::<u8>())?;
    Some(Bytes::from_owner(Mapping { at, len }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::{OsSystem, System};

    #[test]
    fn a_mapped_file_is_its_bytes_and_stays_them_when_the_file_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("shard");
        OsSystem
            .write_replace(&file, b"first bytes", false)
            .unwrap();
        let mapped = map_file(&file).unwrap().unwrap();
        assert_eq!(&mapped[..], b"first bytes");
        // A range outlives the whole, as a unit taken outlives its shard.
        let unit = mapped.slice(6..11);
        drop(mapped);
        // The cache replaces a shard by a rename: the mapping keeps the
        // file it opened.
        OsSystem
            .write_replace_streamed(&file, &mut |w| w.write_all(b"second"))
            .unwrap();
        assert_eq!(&unit[..], b"bytes");
        assert_eq!(&map_file(&file).unwrap().unwrap()[..], b"second");
    }

    #[test]
    fn an_empty_file_is_empty_bytes_and_a_missing_one_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let empty = tmp.path().join("empty");
        OsSystem.write_replace(&empty, b"", false).unwrap();
        assert_eq!(map_file(&empty).unwrap(), Some(Bytes::new()));
        assert_eq!(map_file(&tmp.path().join("missing")).unwrap(), None);
        assert!(
            map_file(tmp.path()).is_err(),
            "a directory cannot be mapped"
        );
    }
}
