//! The one writer of the `csis` process's standard output, for the cli's
//! commands and the plugins' deferred steps alike (`print!`/`println!`
//! are refused by clippy.toml). A reader that goes away (`csis man | head
//! -1`) is no error: the rest of the output is dropped and the command
//! finishes its work and ends as it would have. Any other failure to
//! write (a full disk under `> file`) is kept for [`failure`], which the
//! cli turns into an error and exit 1.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// Set once stdout failed: nothing more is written.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// The first failure that was not a closed pipe.
static FAILED: OnceLock<String> = OnceLock::new();

/// What was written since [`capture`], while a capture is on.
static CAPTURED: Mutex<Option<Vec<u8>>> = Mutex::new(None);

/// Keep a copy of everything written from now on, for [`captured`]: what
/// a command printed, as a plan record keeps it.
pub fn capture() {
    *CAPTURED.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
}

/// Everything written since [`capture`], which ends; None without one.
pub fn captured() -> Option<Vec<u8>> {
    CAPTURED.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Write `bytes` to stdout whole, flushed.
pub fn write(bytes: &[u8]) {
    if let Some(copy) = CAPTURED.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        copy.extend_from_slice(bytes);
    }
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            let _ = FAILED.set(e.to_string());
        }
    }
}

/// An `io::Write` over [`write`], for output made as it is written (a
/// large JSON report is then never held whole): the bytes pass through a
/// buffer of [`Stdout::CHUNK`] bytes. Flushed when dropped.
#[derive(Default)]
pub struct Stdout {
    buf: Vec<u8>,
}

impl Stdout {
    pub const CHUNK: usize = 64 * 1024;
}

impl Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= Self::CHUNK {
            self.flush()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            write(&self.buf);
            self.buf.clear();
        }
        Ok(())
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Why stdout could not be written, unless it was only closed by its
/// reader.
pub fn failure() -> Option<&'static str> {
    FAILED.get().map(String::as_str)
}

/// `print!` through [`write`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write(::std::format!($($arg)*).as_bytes())
    };
}

/// `println!` through [`write`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::stdout::write(b"\n")
    };
    ($($arg:tt)*) => {{
        let mut line = ::std::format!($($arg)*);
        line.push('\n');
        $crate::stdout::write(line.as_bytes())
    }};
}
