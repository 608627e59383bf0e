//! Advisory locks on the real machine: a flock held through an open file.

use std::io;
use std::path::Path;

use crate::db::system::HeldLock;

/// [`System::try_lock`](crate::db::system::System::try_lock) on the real
/// machine.
pub(super) fn try_lock(path: &Path) -> io::Result<Option<Box<dyn HeldLock>>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => {
            inherited_by_children(&file)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            Ok(Some(Box::new(OsLock { file })))
        }
        Err(fs4::TryLockError::WouldBlock) => Ok(None),
        Err(fs4::TryLockError::Error(e)) => {
            Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
        }
    }
}

/// Let every process this one starts inherit the file handle, and with it
/// the flock: the lock is then released only when the holder and
/// everything it started have ended, so a child that outlives a killed
/// holder still keeps a second writer out.
fn inherited_by_children(file: &std::fs::File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl(2) on a descriptor this function borrows; it only
        // reads and sets the descriptor's flags.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// A flock held through an open file; closing the file releases it.
struct OsLock {
    file: std::fs::File,
}

impl HeldLock for OsLock {
    fn set_text(&mut self, text: &str) -> io::Result<()> {
        use std::io::{Seek, Write};
        self.file.set_len(0)?;
        self.file.seek(io::SeekFrom::Start(0))?;
        self.file.write_all(text.as_bytes())?;
        self.file.sync_data()
    }
}
