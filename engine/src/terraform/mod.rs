//! The system CLI's steps between a terraform plan and its apply, as the
//! runner scripts call them from the OpenTofu root they entered (inside
//! the private mirror): `gate-plan` (the plan's destroys whitelisted, the
//! planfile fresh, every detach unmounted), `apply-check` (the apply flag
//! still on now), `state backup` (before any state rm), `state-migration
//! begin|finish` (a `--migrate-state` move) and `unmount storage` (the
//! receipt the gate reads).
//!
//! Each command takes the directory the process was started in (`cwd`):
//! the planfile, the .tf files and the initialised root are relative to
//! it, never to the configuration root (spec history 2026-09-23 10:15).
//! Every file and process goes through [`System`]; each command returns an
//! [`Outcome`] (the lines to print and the exit code) and prints nothing.

pub mod apply_check;
pub mod freshness;
pub mod gate_plan;
pub mod plan_json;
pub mod state_backup;
pub mod state_migration;
pub mod unmount;

use std::path::{Path, PathBuf};

use serde_json::Value as J;

use crate::db::system::{Process, ProcessOutput, System};

/// The exit code of a refusal (gate-plan, apply-check).
pub const REFUSED: u8 = 3;
/// The exit code of an error (a missing binary, a document that is not a
/// plan, a step that failed).
pub const FAILED: u8 = 1;

/// What a command prints and how it exits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub code: u8,
    /// Lines for stdout (what was done, what passed).
    pub out: Vec<String>,
    /// Lines for stderr (refusals, errors).
    pub err: Vec<String>,
}

impl Outcome {
    pub fn ok(out: Vec<String>) -> Outcome {
        Outcome {
            code: 0,
            out,
            err: Vec::new(),
        }
    }

    pub fn failed(code: u8, message: impl Into<String>) -> Outcome {
        Outcome {
            code,
            out: Vec::new(),
            err: vec![message.into()],
        }
    }
}

/// The tofu binary a step runs, in the directory it runs in.
#[derive(Clone)]
pub struct Tofu<'a> {
    pub system: &'a dyn System,
    pub binary: &'a str,
    pub cwd: &'a Path,
}

impl Tofu<'_> {
    /// `<tofu> ARGS` in the root: its stdout, or what went wrong as
    /// `'<tofu> ARGS' ...` (could not start, or the exit code and the tail
    /// of what it printed).
    pub fn run(&self, args: &[&str]) -> Result<String, String> {
        let out = self
            .system
            .run(&self.process(args))
            .map_err(|e| self.not_started(args, e))?;
        self.answer(args, out)
    }

    /// `<tofu> ARGS` in the root under `limits` (see
    /// [`System::run_limited`]); an error when it could not start.
    pub fn run_limited(
        &self,
        args: &[&str],
        limits: crate::db::system::RunLimits,
    ) -> Result<crate::db::system::LimitedRun, String> {
        self.system
            .run_limited(&self.process(args), limits)
            .map_err(|e| self.not_started(args, e))
    }

    /// What a finished `<tofu> ARGS` answered: its stdout when it exited
    /// 0, else the exit and the tail of what it printed.
    pub fn answer(&self, args: &[&str], out: ProcessOutput) -> Result<String, String> {
        match out.code {
            Some(0) => Ok(out.stdout),
            code => Err(format!(
                "'{}' {}: {}",
                self.line(args),
                code.map_or_else(
                    || "was ended by a signal".to_string(),
                    |c| format!("exited {c}")
                ),
                tail(&out.stderr, &out.stdout)
            )),
        }
    }

    fn line(&self, args: &[&str]) -> String {
        std::iter::once(self.binary)
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn process(&self, args: &[&str]) -> Process {
        Process {
            program: PathBuf::from(self.binary),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: self.cwd.to_path_buf(),
            env: Vec::new(),
        }
    }

    fn not_started(&self, args: &[&str], e: std::io::Error) -> String {
        format!(
            "'{}' could not start: {e} -- install OpenTofu, or pass --tofu <binary>",
            self.line(args)
        )
    }
}

/// The last lines of what a process said (stderr first), for a message.
pub fn tail(stderr: &str, stdout: &str) -> String {
    let text = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines.len().saturating_sub(5);
    match lines[start..].join(" / ") {
        t if t.is_empty() => "(it printed nothing)".to_string(),
        t => t,
    }
}

/// What `tofu state pull` printed, read: nothing (no state at the
/// location), or a state's lineage, serial and resource count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PulledState {
    pub lineage: String,
    pub serial: u64,
    pub resources: usize,
    /// The state as pulled, to keep.
    pub text: String,
}

/// `None` for an empty pull; an error for output that is no state.
pub fn read_pulled(text: &str) -> Result<Option<PulledState>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let doc: J = serde_json::from_str(text)
        .map_err(|e| format!("'state pull' printed no state document: {e}"))?;
    let Some(obj) = doc.as_object() else {
        return Err("'state pull' printed no state document: not an object".into());
    };
    Ok(Some(PulledState {
        lineage: obj
            .get("lineage")
            .and_then(J::as_str)
            .unwrap_or_default()
            .to_string(),
        serial: obj.get("serial").and_then(J::as_u64).unwrap_or(0),
        resources: obj
            .get("resources")
            .and_then(J::as_array)
            .map_or(0, Vec::len),
        text: text.to_string(),
    }))
}

/// The run a step belongs to: `CSIS_RUN_ID` (a runner script sets it),
/// else an id of its own from the clock.
pub fn run_id(system: &dyn System) -> String {
    system
        .env()
        .get("CSIS_RUN_ID")
        .filter(|r| !r.trim().is_empty())
        .cloned()
        .unwrap_or_else(|| crate::state::lineage::run_id(system.now_unix()))
}

/// [`run_id`] as the part of a file name it becomes (a backup's): a run id
/// that would make the name a path (`/../`, `..`) is refused naming
/// `CSIS_RUN_ID`, by the one confinement rule
/// ([`csis_model::confine::file_name_problem`]).
pub(crate) fn run_id_in_file_name(system: &dyn System) -> Result<String, String> {
    let run = run_id(system);
    match csis_model::confine::file_name_problem("CSIS_RUN_ID", &run) {
        Some(problem) => Err(problem),
        None => Ok(run),
    }
}

/// `root/rel`, a directory csis writes into, when it resolves inside the
/// root: a symlink on the way that leads out is refused
/// ([`csis_model::confine::confine`]), so that nothing is written
/// outside the tree.
pub(crate) fn confined_dir(
    system: &dyn System,
    root: &Path,
    key: &str,
    rel: &str,
) -> Result<PathBuf, String> {
    csis_model::confine::confine(root, key, rel, &|p: &Path| system.canonicalize(p))
}

/// `path` relative to `base` when it is below it, for messages.
pub(crate) fn shown(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The private tree under the configuration root (never committed).
pub(crate) fn private_dir(root: &Path) -> PathBuf {
    root.join("_private")
}

/// Write `bytes` to `dir/<stem><ext>`, or `<stem>-2<ext>`, `-3`, ... when
/// one is there already: an earlier file is never overwritten. The path
/// written.
pub(crate) fn write_new(
    system: &dyn System,
    dir: &Path,
    stem: &str,
    ext: &str,
    bytes: &[u8],
) -> Result<PathBuf, String> {
    let mut n = 1;
    loop {
        let name = if n == 1 {
            format!("{stem}{ext}")
        } else {
            format!("{stem}-{n}{ext}")
        };
        let path = dir.join(name);
        let exists = system
            .read_bytes(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .is_some();
        if !exists {
            system
                .write_atomic(&path, bytes, false)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            return Ok(path);
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_is_empty_or_a_state() {
        assert_eq!(read_pulled("  \n").unwrap(), None);
        let s = read_pulled(r#"{"version":4,"serial":36,"lineage":"l-1","resources":[{},{}]}"#)
            .unwrap()
            .unwrap();
        assert_eq!((s.lineage.as_str(), s.serial, s.resources), ("l-1", 36, 2));
        assert_eq!(
            read_pulled("Error: no").unwrap_err(),
            "'state pull' printed no state document: expected value at line 1 column 1"
        );
    }

    #[test]
    fn a_tail_is_the_last_lines_of_stderr_else_stdout() {
        assert_eq!(tail("", "a\n\nb\n"), "a / b");
        assert_eq!(tail("1\n2\n3\n4\n5\n6\n", "x"), "2 / 3 / 4 / 5 / 6");
        assert_eq!(tail(" ", ""), "(it printed nothing)");
    }
}
