//! The remote state objects (s3, gcs) interpolation reads, each fetched
//! once by its command at load; a command that fails is a load error that
//! says what to do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use csis_model::Diagnostic;

use crate::db::system::System;
use crate::workspace::read::human_bytes;

/// The remote state objects interpolation reads, each by its command, run
/// once: (location, stdout). A command that cannot start or fails is a
/// load error naming the source, the backend, the command line and what to
/// do; the object is then left out (the entries reading it say so too).
pub(super) fn read_remote(
    system: &dyn System,
    root: &Path,
    max: u64,
    reads: &[crate::load::interp::RemoteRead],
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Arc<str>, Arc<str>)> {
    use crate::db::system::Process;
    let mut out = Vec::new();
    // A program not on PATH is said once, and not tried again.
    let mut missing: Vec<&str> = Vec::new();
    for r in reads {
        let c = &r.command;
        if missing.contains(&c.program.as_str()) {
            continue;
        }
        let line = c.line();
        let whose = format!(
            "interpolation source '{}' (state backend '{}', {}): {}",
            r.source, r.backend, r.backend_type, r.location
        );
        let process = Process {
            program: PathBuf::from(&c.program),
            args: c.args.clone(),
            cwd: root.to_path_buf(),
            env: Vec::new(),
        };
        match system.run(&process) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing.push(&c.program);
                diags.push(Diagnostic::error(format!(
                    "{whose}: cannot run `{line}`: '{}' is not on PATH; csis runs {} for this source -- install it, or put it on PATH",
                    c.program, c.what
                )));
            }
            Err(e) => diags.push(Diagnostic::error(format!(
                "{whose}: cannot run `{line}`: {e}"
            ))),
            Ok(o) if o.code != Some(0) => {
                let status = o
                    .code
                    .map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited {c}"));
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
                diags.push(Diagnostic::error(format!(
                    "{whose}: `{line}` {status}{said} -- {}",
                    c.help
                )));
            }
            Ok(o) if o.stdout.len() as u64 > max => diags.push(Diagnostic::error(format!(
                "{whose}: `{line}` printed {}, over the limit of {} csis reads from one file; raise it with --max-file-size BYTES (or CSIS_MAX_FILE_SIZE)",
                human_bytes(o.stdout.len() as u64),
                human_bytes(max)
            ))),
            Ok(o) => out.push((Arc::from(r.location.as_str()), Arc::from(o.stdout))),
        }
    }
    out
}

/// How many lines of a failed state command's stderr a load error quotes.
const STDERR_LINES: usize = 3;
