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
        Ok(()) => Ok(Some(Box::new(OsLock { file }))),
        Err(fs4::TryLockError::WouldBlock) => Ok(None),
        Err(fs4::TryLockError::Error(e)) => {
            Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
        }
    }
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
