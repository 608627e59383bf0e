//! Child processes that end with the process that started them.
//!
//! csis runs engines and scripts that write the tree (a local bake writes
//! the store, packer and tofu write state). If csis is killed (kill -9, an
//! OOM kill, a CI runner cancelling the job) a child that went on would
//! write the tree without the lock that orders writers. So every child
//! csis or one of its plugin steps starts is marked to receive SIGKILL
//! when its parent dies (Linux's `PR_SET_PDEATHSIG`); a step started by a
//! run marks its own children the same way, so a kill reaches down the
//! chain of csis's processes. What a script starts in the background is
//! out of this chain's reach; the tree's lock accounts for it instead (its
//! file handle is inherited: docs/reliability.md, "The tree's lock").

use std::process::Command;

/// Mark `command` so that the process it spawns is killed when this
/// thread's process dies.
///
/// The kernel delivers the signal when the *thread* that spawned the
/// child ends, so the caller must wait for the child on the thread that
/// spawned it (every csis caller does: `status()`, `output()`, or a wait
/// before returning).
pub fn die_with_parent(command: &mut Command) -> &mut Command {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id();
        // SAFETY: the closure runs in the forked child before exec and
        // calls only prctl(2) and getppid(2), both async-signal-safe; it
        // allocates nothing.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died between fork and prctl: then
                // the signal will never come, and the child must not run.
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    return Err(std::io::Error::other(
                        "the process that started this one has ended",
                    ));
                }
                Ok(())
            });
        }
    }
    command
}

#[cfg(test)]
// The test reads /proc directly: this crate has no System to go through.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Whether `pid` runs; a zombie waiting to be reaped has ended.
    fn running(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, state)| !state.starts_with('Z'))
        })
    }

    /// A `sleep 30` spawned from a thread that ends at once: for the
    /// kernel, the end of the spawning thread is the parent's death.
    fn orphan(mark: bool) -> u32 {
        std::thread::spawn(move || {
            let mut c = Command::new("sleep");
            c.arg("30");
            if mark {
                die_with_parent(&mut c);
            }
            c.spawn().unwrap().id()
        })
        .join()
        .unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_marked_child_is_killed_when_its_parent_dies_and_an_unmarked_one_is_not() {
        let marked = orphan(true);
        let plain = orphan(false);
        let deadline = Instant::now() + Duration::from_secs(10);
        while running(marked) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let plain_ran = running(plain);
        // SAFETY: kill(2) on a pid this test started.
        unsafe {
            libc::kill(plain as i32, libc::SIGKILL);
        }
        assert!(!running(marked), "the marked child outlived its parent");
        assert!(plain_ran, "the unmarked child was killed too");
    }
}
