//! Reading a source of the configuration under csis's limits on input
//! ([`System::read_source`](crate::db::system::System::read_source) of
//! the real machine): a regular file only, at most so many bytes, UTF-8,
//! a FIFO or a device never opened for a read that would wait.

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::db::system::SourceRead;

/// The kind of a file that is not a regular file, for messages.
fn kind_of(ty: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ty.is_fifo() {
            return "a FIFO";
        }
        if ty.is_char_device() {
            return "a character device";
        }
        if ty.is_block_device() {
            return "a block device";
        }
        if ty.is_socket() {
            return "a socket";
        }
    }
    if ty.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// A source that is not a symlink, in four system calls (open, fstat,
/// read, close) instead of six: a large tree is thousands of files, and
/// the calls were a twentieth of a cold plan. The open refuses a symlink
/// (`O_NOFOLLOW`) and does not wait on a FIFO (`O_NONBLOCK`). Nothing
/// when the open fails for any reason, a symlink among them: the caller
/// then looks before it opens.
#[cfg(unix)]
fn read_plain_file(path: &Path, max_bytes: u64) -> Option<SourceRead> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    Some(read_opened(file, max_bytes, false))
}

/// An opened source, its type checked on what was opened (a FIFO or a
/// device is refused unread), read whole when it holds at most
/// `max_bytes`: the size it had when opened, with no probe for more (a
/// file written while it is read is read as it was, never past the
/// limit). A file that says it is empty is read to its end, at most one
/// byte past the limit, as a few filesystems report no size for what
/// they hold.
fn read_opened(file: std::fs::File, max_bytes: u64, link: bool) -> SourceRead {
    use std::io::Read;
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return SourceRead::Failed(e),
    };
    if !meta.is_file() {
        return SourceRead::NotRegular {
            kind: kind_of(meta.file_type()),
        };
    }
    if meta.len() > max_bytes {
        return SourceRead::TooLarge { size: meta.len() };
    }
    if let Ok(len @ 1..) = usize::try_from(meta.len()) {
        return match read_sized(file, len) {
            Ok(bytes) => utf8(bytes, link),
            Err(e) => SourceRead::Failed(e),
        };
    }
    let mut bytes = Vec::new();
    if let Err(e) = file
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
    {
        return SourceRead::Failed(e);
    }
    if bytes.len() as u64 > max_bytes {
        return SourceRead::TooLarge {
            size: bytes.len() as u64,
        };
    }
    utf8(Arc::from(bytes), link)
}

/// At most `len` bytes of `file`, read into the allocation the text is
/// kept in: the load holds every text as an `Arc<str>`, and a text read
/// into a `String` was copied into one, a second allocation and a second
/// pass over every byte of the tree. A file that turns out shorter than
/// it said is cut to what it held.
fn read_sized(mut file: std::fs::File, len: usize) -> io::Result<Arc<[u8]>> {
    use std::io::Read;
    let mut bytes: Arc<[u8]> = std::iter::repeat_n(0, len).collect();
    let Some(buf) = Arc::get_mut(&mut bytes) else {
        return Err(io::Error::other("a fresh buffer is shared"));
    };
    let mut filled = 0;
    while filled < len {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(if filled < len {
        Arc::from(&bytes[..filled])
    } else {
        bytes
    })
}

/// Bytes as UTF-8 text, or where the first byte that is not.
fn utf8(bytes: Arc<[u8]>, link: bool) -> SourceRead {
    match std::str::from_utf8(&bytes) {
        Ok(_) => SourceRead::Text {
            // SAFETY: the bytes were just found to be UTF-8, and `str`
            // is laid out as `[u8]`.
            text: unsafe { Arc::from_raw(Arc::into_raw(bytes) as *const str) },
            link,
            digest: None,
        },
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = good.iter().filter(|b| **b == b'\n').count() + 1;
            let start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let col = String::from_utf8_lossy(&good[start..]).chars().count() + 1;
            SourceRead::NotUtf8 { line, col }
        }
    }
}

/// [`System::read_source`](crate::db::system::System::read_source) on
/// the real machine.
pub(super) fn read_source(path: &Path, max_bytes: u64) -> SourceRead {
    #[cfg(unix)]
    if let Some(read) = read_plain_file(path, max_bytes) {
        return read;
    }
    let own = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return SourceRead::Missing,
        Err(e) => return SourceRead::Failed(e),
    };
    // Followed (a link only: anything else is what it says), and looked
    // at before anything is opened: opening a FIFO for reading blocks
    // until a writer comes.
    let link = own.file_type().is_symlink();
    let meta = if !link {
        own
    } else {
        match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return SourceRead::Dangling {
                    target: std::fs::read_link(path).unwrap_or_default(),
                };
            }
            Err(e) => return SourceRead::Failed(e),
        }
    };
    if !meta.is_file() {
        return SourceRead::NotRegular {
            kind: kind_of(meta.file_type()),
        };
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Should the file have become a FIFO since, the open must not wait
    // for a writer; the type is checked again on what was opened.
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    match options.open(path) {
        Ok(file) => read_opened(file, max_bytes, link),
        Err(e) => SourceRead::Failed(e),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the tests set the disk up by hand
mod tests {
    use crate::db::system::{OsSystem, SourceRead, System};

    #[test]
    fn a_source_is_read_whole_under_the_limit_and_a_symlink_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let read = |name: &str, max: u64| match OsSystem.read_source(&dir.path().join(name), max) {
            SourceRead::Text { text, link, .. } => format!("text {link} {text:?}"),
            SourceRead::Missing => "missing".into(),
            SourceRead::Dangling { target } => format!("dangling {}", target.display()),
            SourceRead::NotRegular { kind } => format!("not regular: {kind}"),
            SourceRead::TooLarge { size } => format!("too large: {size}"),
            SourceRead::NotUtf8 { line, col } => format!("not utf-8 at {line}:{col}"),
            SourceRead::Failed(e) => format!("failed: {e}"),
        };
        std::fs::write(dir.path().join("a.yml"), "a: 1\n").unwrap();
        std::fs::write(dir.path().join("empty.yml"), "").unwrap();
        std::fs::write(dir.path().join("bad.yml"), b"a: 1\nb: \xff\n").unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert_eq!(read("a.yml", 5), "text false \"a: 1\\n\"");
        assert_eq!(read("a.yml", 4), "too large: 5");
        assert_eq!(read("empty.yml", 0), "text false \"\"");
        assert_eq!(read("bad.yml", 100), "not utf-8 at 2:4");
        assert_eq!(read("d", 100), "not regular: a directory");
        assert_eq!(read("none.yml", 100), "missing");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("a.yml", dir.path().join("link.yml")).unwrap();
            std::os::unix::fs::symlink("gone.yml", dir.path().join("dangling.yml")).unwrap();
            assert_eq!(read("link.yml", 5), "text true \"a: 1\\n\"");
            assert_eq!(read("link.yml", 4), "too large: 5");
            assert_eq!(read("dangling.yml", 5), "dangling gone.yml");
        }
    }
}
