//! The remote state objects (s3, gcs) interpolation reads, each fetched
//! once at load, by its command or by its plugin through the provider's
//! API; a read that fails is a load error that says what to do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use csis_model::Diagnostic;

use crate::db::system::System;
use crate::workspace::read::human_bytes;

/// The remote state objects interpolation reads, each once: (location,
/// text). A read that cannot start or fails is a load error naming the
/// source, the backend, the command line or request and what to do; the
/// object is then left out (the entries reading it say so too).
pub(super) fn read_remote(
    system: &dyn System,
    root: &Path,
    max: u64,
    reads: &[crate::load::interp::RemoteRead],
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Arc<str>, Arc<str>)> {
    use csis_plugin_api::state_object::StateRead;
    let mut out = Vec::new();
    // A program not on PATH is said once, and not tried again.
    let mut missing: Vec<&str> = Vec::new();
    for r in reads {
        let whose = format!(
            "interpolation source '{}' (state backend '{}', {}): {}",
            r.source, r.backend, r.backend_type, r.location
        );
        let (how, text) = match &r.read {
            StateRead::Command(c) if missing.contains(&c.program.as_str()) => continue,
            StateRead::Command(c) => {
                let got = run_command(system, root, c);
                if matches!(&got, Err(Missing)) {
                    missing.push(&c.program);
                }
                (format!("`{}`", c.line()), got)
            }
            StateRead::Fetch(f) => (
                f.request.clone(),
                (f.fetch)(&f.fields)
                    .map_err(|e| Failed(format!("{} failed: {e} -- {}", f.request, f.help))),
            ),
            StateRead::File(_) => continue,
        };
        match text {
            Err(Missing) => {
                if let StateRead::Command(c) = &r.read {
                    diags.push(Diagnostic::error(format!(
                        "{whose}: cannot run {how}: '{}' is not on PATH; csis runs {} for this source -- install it, or put it on PATH",
                        c.program, c.what
                    )));
                }
            }
            Err(Failed(why)) => diags.push(Diagnostic::error(format!("{whose}: {why}"))),
            Ok(bytes) if bytes.len() as u64 > max => diags.push(Diagnostic::error(format!(
                "{whose}: {how} printed {}, over the limit of {} csis reads from one file; raise it with --max-file-size BYTES (or CSIS_MAX_FILE_SIZE)",
                human_bytes(bytes.len() as u64),
                human_bytes(max)
            ))),
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => out.push((Arc::from(r.location.as_str()), Arc::from(text))),
                Err(_) => diags.push(Diagnostic::error(format!(
                    "{whose}: {how} gave bytes that are not UTF-8 text; a state object is JSON"
                ))),
            },
        }
    }
    out
}

/// Why a remote read gave no text.
enum Unread {
    /// The command's program is not on PATH.
    Missing,
    /// Anything else, said whole.
    Failed(String),
}
use Unread::{Failed, Missing};

/// A state command's stdout, or why not.
fn run_command(
    system: &dyn System,
    root: &Path,
    c: &csis_plugin_api::state_object::StateCommand,
) -> Result<Vec<u8>, Unread> {
    use crate::db::system::Process;
    let line = c.line();
    let process = Process {
        program: PathBuf::from(&c.program),
        args: c.args.clone(),
        cwd: root.to_path_buf(),
        env: Vec::new(),
    };
    match system.run(&process) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Missing),
        Err(e) => Err(Failed(format!("cannot run `{line}`: {e}"))),
        Ok(o) if o.code != Some(0) => {
            let status = o.code.map_or_else(
                || "was killed by a signal".to_string(),
                |c| format!("exited {c}"),
            );
            let stderr: Vec<&str> = o
                .stderr
                .lines()
                .map(str::trim_end)
                .filter(|l| !l.is_empty())
                .take(STDERR_LINES)
                .collect();
            let said = if stderr.is_empty() {
                " and printed nothing on stderr".to_string()
            } else {
                format!(": {}", stderr.join(" | "))
            };
            Err(Failed(format!("`{line}` {status}{said} -- {}", c.help)))
        }
        Ok(o) => Ok(o.stdout.into_bytes()),
    }
}

/// How many lines of a failed state command's stderr a load error quotes.
const STDERR_LINES: usize = 3;
