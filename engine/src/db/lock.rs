//! The advisory lock a writer of the tree holds: an flock on one file
//! (through [`System::try_lock`]), the file naming its holder.
//!
//! - The holder writes its pid, host, command line, start time and a token
//!   into the file after taking the flock, and marks it `ended` on release.
//! - Every process the holder starts inherits the flock's file handle
//!   ([`System::try_lock`]), so the lock stays held while anything the
//!   holder started still runs, after the holder itself has ended: a
//!   second writer is refused naming the holder whose processes outlived
//!   it ([`refusal`]).
//! - A second writer waits up to its timeout, then is refused with the
//!   holder's name ([`refusal`]).
//! - The OS releases an flock when its holder dies, so a free flock on a
//!   file that still names a holder is a stale lock: it is taken over with
//!   a notice.
//! - A process the holder started (a runner script's `"$CSIS" lineage
//!   record ...`) is handed the token in [`HELD_ENV`]; it proceeds under
//!   its parent's lock while the file names that token and the flock is
//!   held and the parent still runs, instead of waiting for a lock its
//!   parent will not release.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::db::system::{HeldLock, System};

/// The variable a lock holder hands the processes it runs: its token.
pub const HELD_ENV: &str = "CSIS_LOCK_HELD";

/// Who holds the lock, as its file says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    pub command: String,
    /// ISO 8601, UTC.
    pub started: String,
    /// Unique to one acquisition: what [`HELD_ENV`] carries.
    pub token: String,
    /// Released by the holder: whoever holds the flock now is something
    /// it started.
    pub ended: bool,
}

impl Holder {
    /// The file's text.
    pub fn text(&self) -> String {
        let line = |s: &str| s.replace(['\n', '\r'], " ");
        format!(
            "# csis: this tree's lock, held while the process below writes the tree.\npid: {}\nhost: {}\ncommand: {}\nstarted: {}\ntoken: {}\n",
            self.pid,
            line(&self.host),
            line(&self.command),
            line(&self.started),
            line(&self.token)
        ) + if self.ended { "ended: yes\n" } else { "" }
    }

    /// The holder a lock file names; `None` for an empty (released) file or
    /// one without a pid.
    pub fn parse(text: &str) -> Option<Holder> {
        let mut h = Holder::default();
        let mut pid = None;
        for line in text.lines() {
            let Some((key, value)) = line.split_once(": ") else {
                continue;
            };
            let value = value.trim().to_string();
            match key.trim() {
                "pid" => pid = value.parse().ok(),
                "host" => h.host = value,
                "command" => h.command = value,
                "started" => h.started = value,
                "token" => h.token = value,
                "ended" => h.ended = value == "yes",
                _ => {}
            }
        }
        h.pid = pid?;
        Some(h)
    }

    /// `pid 4242 (csis run all, started 2026-12-03T14:00:00Z on host h)`.
    pub fn describe(&self) -> String {
        format!(
            "pid {} ({}, started {} on host {})",
            self.pid, self.command, self.started, self.host
        )
    }
}

/// The tree's lock, held (released when dropped) or inherited from the
/// process that started this one.
pub struct Lock {
    held: Option<Box<dyn HeldLock>>,
    token: String,
    /// The holder as its file names it, for the release.
    holder: Holder,
}

impl Lock {
    /// What to hand the processes run under this lock in [`HELD_ENV`].
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Whether this process holds the flock itself (not its parent).
    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }
}

impl Drop for Lock {
    /// A file marked `ended` is a released lock: the next holder takes it
    /// over without a notice. The flock goes with the last handle: this
    /// process's, or one a process it started still holds.
    fn drop(&mut self) {
        if let Some(held) = &mut self.held {
            let ended = Holder {
                ended: true,
                ..self.holder.clone()
            };
            let _ = held.set_text(&ended.text());
        }
    }
}

/// How long a writer waits for the processes of a holder that has ended
/// to die with it, before it says they outlived it.
const ORPHANS_DYING: Duration = Duration::from_secs(2);

/// What a writer asks for.
pub struct Request<'a> {
    /// The holder's command line, as the file and a refusal show it.
    pub command: &'a str,
    /// How long to wait for a holder to finish; zero refuses at once.
    pub timeout: Duration,
}

/// The refusal of a writer that did not get the lock. `outlived`: the
/// holder has ended and what it started holds the flock.
pub fn refusal(holder: Option<&Holder>, outlived: bool, path: &Path, timeout: Duration) -> String {
    let who = match holder {
        Some(h) if outlived => format!(
            "the tree is locked by processes that {} started and that outlived it (`fuser -v {}` names them)",
            h.describe(),
            path.display()
        ),
        Some(h) => format!("the tree is locked by {}", h.describe()),
        None => format!(
            "the tree is locked by another process ({} names no holder yet)",
            path.display()
        ),
    };
    if timeout.is_zero() {
        format!("{who}; nothing was written (--lock-timeout SECONDS waits for it)")
    } else {
        format!(
            "{who}; nothing was written after waiting {}s",
            timeout.as_secs()
        )
    }
}

/// Take the lock on `path`, waiting up to `req.timeout`; notices (a stale
/// lock taken over, a wait begun) go to `notice`. An error is the refusal
/// (or an I/O failure), and nothing was written.
pub fn acquire(
    system: &dyn System,
    path: &Path,
    req: &Request,
    notice: &mut dyn FnMut(String),
) -> Result<Lock, String> {
    let started = Instant::now();
    let deadline = started + req.timeout;
    let inherited = system
        .env()
        .get(HELD_ENV)
        .cloned()
        .filter(|t| !t.is_empty());
    let mut waiting = false;
    loop {
        if let Some(mut held) = system.try_lock(path).map_err(|e| e.to_string())? {
            let previous = system
                .read_to_string(path)
                .ok()
                .flatten()
                .and_then(|t| Holder::parse(&t));
            if let Some(p) = previous.filter(|p| !p.ended) {
                notice(format!(
                    "notice: taking over the lock of {}, which is no longer running",
                    p.describe()
                ));
            }
            let me = holder(system, req.command);
            held.set_text(&me.text())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            return Ok(Lock {
                held: Some(held),
                token: me.token.clone(),
                holder: me,
            });
        }
        let holder = read_holder(system, path);
        let outlived = holder.as_ref().is_some_and(|h| has_ended(system, h));
        if let (Some(token), Some(h)) = (&inherited, &holder)
            && h.token == *token
            && !outlived
        {
            return Ok(Lock {
                held: None,
                token: token.clone(),
                holder: h.clone(),
            });
        }
        let now = Instant::now();
        // A killed holder's children die with it (PR_SET_PDEATHSIG), each
        // level of their chain a moment after the one above: a writer
        // started right after the kill gives them that moment.
        let deadline = if outlived {
            deadline.max(started + ORPHANS_DYING)
        } else {
            deadline
        };
        if now >= deadline {
            return Err(refusal(holder.as_ref(), outlived, path, req.timeout));
        }
        if !waiting && !req.timeout.is_zero() {
            waiting = true;
            let who = holder.as_ref().map_or_else(
                || "another process".to_string(),
                |h| h.describe().to_string(),
            );
            notice(format!(
                "notice: the tree is locked by {who}; waiting up to {}s for it",
                req.timeout.as_secs()
            ));
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}

/// The holder a locked file names. A holder that has just taken the flock
/// may not have written its name yet (the file is empty, or still names
/// the ended holder before it): a few short retries.
fn read_holder(system: &dyn System, path: &Path) -> Option<Holder> {
    let mut named = None;
    for _ in 0..20 {
        named = system
            .read_to_string(path)
            .ok()
            .flatten()
            .and_then(|t| Holder::parse(&t));
        if named.as_ref().is_some_and(|h| !h.ended) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    named
}

/// Whether the holder a locked file names has ended: it said so on
/// release, or it ran on this host and its process is gone (a kill -9
/// leaves no word). A holder on another host, or where this system shows
/// no processes, is taken to run.
fn has_ended(system: &dyn System, h: &Holder) -> bool {
    if h.ended {
        return true;
    }
    if h.host != hostname(system) {
        return false;
    }
    let stat = |pid: &str| {
        system
            .read_to_string(Path::new(&format!("/proc/{pid}/stat")))
            .ok()
            .flatten()
    };
    match stat(&h.pid.to_string()) {
        // After the command's name in parentheses, the state: Z is a
        // process that has ended and waits to be reaped.
        Some(s) => s
            .rsplit_once(") ")
            .is_some_and(|(_, state)| state.starts_with('Z')),
        None => stat("self").is_some(),
    }
}

/// This process as a holder.
fn holder(system: &dyn System, command: &str) -> Holder {
    let pid = std::process::id();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    Holder {
        pid,
        host: hostname(system),
        command: command.to_string(),
        started: csis_string_stage::clock::strftime(system.now_unix(), "%Y-%m-%dT%H:%M:%SZ"),
        token: format!("{pid}-{nanos}"),
        ended: false,
    }
}

fn hostname(system: &dyn System) -> String {
    system
        .read_to_string(Path::new("/proc/sys/kernel/hostname"))
        .ok()
        .flatten()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| system.env().get("HOSTNAME").cloned())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::MemorySystem;

    fn req(timeout_ms: u64) -> Request<'static> {
        Request {
            command: "csis run all",
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[test]
    fn a_second_writer_is_refused_with_the_holders_name_and_gets_it_once_released() {
        let sys = MemorySystem::new().with_env("HOSTNAME", "h1");
        let path = Path::new("/r/meta-state/.csis.lock");
        let first = acquire(&sys, path, &req(0), &mut |n| panic!("{n}")).unwrap();
        assert!(first.is_held());
        let pid = std::process::id();
        let err = acquire(&sys, path, &req(0), &mut |_| {}).err().unwrap();
        assert_eq!(
            err,
            format!(
                "the tree is locked by pid {pid} (csis run all, started 2026-01-01T00:00:00Z on host h1); nothing was written (--lock-timeout SECONDS waits for it)"
            )
        );
        let mut notices = Vec::new();
        let err = acquire(&sys, path, &req(120), &mut |n| notices.push(n))
            .err()
            .unwrap();
        assert!(
            err.ends_with("nothing was written after waiting 0s"),
            "{err}"
        );
        assert_eq!(notices.len(), 1, "{notices:?}");
        let named = Holder::parse(&sys.read(path)).unwrap();
        drop(first);
        assert_eq!(
            Holder::parse(&sys.read(path)),
            Some(Holder {
                ended: true,
                ..named
            }),
            "a released lock names its holder as ended"
        );
        let again = acquire(&sys, path, &req(0), &mut |n| panic!("{n}")).unwrap();
        assert!(again.is_held());
    }

    #[test]
    fn a_child_handed_the_token_proceeds_under_its_parents_lock() {
        let sys = MemorySystem::new();
        let path = Path::new("/r/meta-state/.csis.lock");
        let parent = acquire(&sys, path, &req(0), &mut |_| {}).unwrap();
        let child_sys = sys.clone().with_env(HELD_ENV, parent.token());
        let child = acquire(&child_sys, path, &req(0), &mut |_| {}).unwrap();
        assert!(!child.is_held());
        assert_eq!(child.token(), parent.token());
        drop(child);
        assert!(
            Holder::parse(&sys.read(path)).is_some(),
            "still the parent's"
        );
        // A token that is not the holder's is no pass.
        let stranger = sys.clone().with_env(HELD_ENV, "1-2");
        assert!(acquire(&stranger, path, &req(0), &mut |_| {}).is_err());
    }

    #[test]
    fn a_stale_lock_is_taken_over_with_a_notice() {
        let sys = MemorySystem::new();
        let path = Path::new("/r/meta-state/.csis.lock");
        let dead = Holder {
            pid: 999_999,
            host: "h0".into(),
            command: "csis lineage record --manifest m.json".into(),
            started: "2026-01-01T00:00:00Z".into(),
            token: "999999-1".into(),
            ended: false,
        };
        sys.write(path, &dead.text());
        assert_eq!(Holder::parse(&dead.text()), Some(dead));
        let mut notices = Vec::new();
        let lock = acquire(&sys, path, &req(0), &mut |n| notices.push(n)).unwrap();
        assert!(lock.is_held());
        assert_eq!(
            notices,
            [
                "notice: taking over the lock of pid 999999 (csis lineage record --manifest m.json, started 2026-01-01T00:00:00Z on host h0), which is no longer running"
            ]
        );
        let me = Holder::parse(&sys.read(path)).unwrap();
        assert_eq!(me.pid, std::process::id());
        assert_eq!(me.token, lock.token());
    }

    #[test]
    fn a_holder_whose_processes_outlive_it_keeps_the_tree_locked_and_is_named() {
        let sys = MemorySystem::new().with_env("HOSTNAME", "h1");
        let path = Path::new("/r/meta-state/.csis.lock");
        let run = acquire(&sys, path, &req(0), &mut |_| {}).unwrap();
        let token = run.token().to_string();
        // The run released the lock (its file says so) while a process it
        // started still holds the flock.
        let mut ended = Holder::parse(&sys.read(path)).unwrap();
        ended.ended = true;
        sys.write(path, &ended.text());
        let pid = std::process::id();
        let err = acquire(&sys, path, &req(0), &mut |_| {}).err().unwrap();
        assert_eq!(
            err,
            format!(
                "the tree is locked by processes that pid {pid} (csis run all, started 2026-01-01T00:00:00Z on host h1) started and that outlived it (`fuser -v /r/meta-state/.csis.lock` names them); nothing was written (--lock-timeout SECONDS waits for it)"
            )
        );
        // Its token is no pass once it has ended.
        let late_child = sys.clone().with_env(HELD_ENV, &token);
        assert!(acquire(&late_child, path, &req(0), &mut |_| {}).is_err());
        drop(run);
        let next = acquire(&sys, path, &req(0), &mut |n| panic!("{n}")).unwrap();
        assert!(
            next.is_held(),
            "an ended holder is taken over without a notice"
        );
    }

    #[test]
    fn a_holder_killed_on_this_host_is_known_by_its_missing_process() {
        let sys = MemorySystem::new().with_env("HOSTNAME", "h1");
        let path = Path::new("/r/meta-state/.csis.lock");
        let run = acquire(&sys, path, &req(0), &mut |_| {}).unwrap();
        let mut killed = Holder::parse(&sys.read(path)).unwrap();
        killed.pid = 999_999;
        sys.write(path, &killed.text());
        let refused = |sys: &MemorySystem| acquire(sys, path, &req(0), &mut |_| {}).err().unwrap();
        // Where the system shows no processes, the holder is taken to run.
        assert!(refused(&sys).starts_with("the tree is locked by pid 999999 "));
        sys.write(Path::new("/proc/self/stat"), "1 (csis) R 0");
        assert!(
            refused(&sys).starts_with("the tree is locked by processes that pid 999999 "),
            "{}",
            refused(&sys)
        );
        sys.write(Path::new("/proc/999999/stat"), "999999 (csis run) S 1");
        assert!(refused(&sys).starts_with("the tree is locked by pid 999999 "));
        sys.write(Path::new("/proc/999999/stat"), "999999 (csis run) Z 1");
        assert!(refused(&sys).starts_with("the tree is locked by processes that "));
        drop(run);
    }
}
