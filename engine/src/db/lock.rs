//! The advisory lock a writer of the tree holds: an flock on one file
//! (through [`System::try_lock`]), the file naming its holder.
//!
//! - The holder writes its pid, host, command line, start time and a token
//!   into the file after taking the flock, and empties it on release.
//! - A second writer waits up to its timeout, then is refused with the
//!   holder's name ([`refusal`]).
//! - The OS releases an flock when its holder dies, so a free flock on a
//!   file that still names a holder is a stale lock: it is taken over with
//!   a notice.
//! - A process the holder started (a runner script's `"$CSIS" lineage
//!   record ...`) is handed the token in [`HELD_ENV`]; it proceeds under
//!   its parent's lock while the file names that token and the flock is
//!   held, instead of waiting for a lock its parent will not release.

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
        )
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
    /// An emptied file is a released lock: the next holder takes it over
    /// without a notice. The flock goes with the file handle.
    fn drop(&mut self) {
        if let Some(held) = &mut self.held {
            let _ = held.set_text("");
        }
    }
}

/// What a writer asks for.
pub struct Request<'a> {
    /// The holder's command line, as the file and a refusal show it.
    pub command: &'a str,
    /// How long to wait for a holder to finish; zero refuses at once.
    pub timeout: Duration,
}

/// The refusal of a writer that did not get the lock.
pub fn refusal(holder: Option<&Holder>, path: &Path, timeout: Duration) -> String {
    let who = match holder {
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
    let deadline = Instant::now() + req.timeout;
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
            if let Some(p) = previous {
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
                token: me.token,
            });
        }
        let holder = read_holder(system, path);
        if let (Some(token), Some(h)) = (&inherited, &holder)
            && h.token == *token
        {
            return Ok(Lock {
                held: None,
                token: token.clone(),
            });
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(refusal(holder.as_ref(), path, req.timeout));
        }
        if !waiting {
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
/// may not have written its name yet: a few short retries.
fn read_holder(system: &dyn System, path: &Path) -> Option<Holder> {
    for _ in 0..20 {
        if let Some(h) = system
            .read_to_string(path)
            .ok()
            .flatten()
            .and_then(|t| Holder::parse(&t))
        {
            return Some(h);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
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
        drop(first);
        assert_eq!(sys.read(path), "", "a released lock names no holder");
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
}
