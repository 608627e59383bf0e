//! `verify instance` on a runtime that reaches its machines through its
//! provider (power state, the image a machine booted) and runs commands on
//! them through a session (AWS Systems Manager, GCE's IAP tunnel). The
//! order of the checks, the power-state rule and the details recorded are
//! the same on every such runtime; each runtime supplies a [`Machine`].
//!
//! The power-state rule (spec: "A machine that is running vs one that is
//! stopped"): only a verification may start a stopped machine, it says so
//! in its record, and it stops the machine again whether the checks passed,
//! failed or could not be run. A runtime that cannot start it makes the
//! verification a skip ([`Verdict::Stopped`]).

use crate::builder::{CheckResult, Verdict, VerifyRequest};

/// What a provider says of a machine's power (the spec's power_state
/// vocabulary, less `unknown`: a provider that cannot say answers `Err`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Power {
    Running,
    Stopped,
    /// Starting, stopping, suspended: a state the checks cannot run in
    /// and a verification does not change, as the provider names it.
    Other(String),
    /// No machine of the instance exists.
    Absent,
}

/// One command's answer: its exit code (`None`: it never finished) and
/// what it said on stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    pub code: Option<i32>,
    pub stderr: String,
}

/// A machine of one instance, as its runtime reaches it.
pub trait Machine {
    /// Where the machine is, for the `machine` check (its provider id).
    fn describe(&self) -> String;
    fn power(&mut self) -> Result<Power, String>;
    /// Start a stopped machine and wait until it can run commands.
    /// `Err`: this runtime cannot (the verification is then a skip).
    fn start(&mut self) -> Result<(), String>;
    fn stop(&mut self) -> Result<(), String>;
    /// The image the machine booted, by the build id lineage records.
    fn boot_image(&mut self) -> Result<String, String>;
    /// Run each command (a POSIX shell line) on the machine as root, one
    /// answer per command in order.
    fn run(&mut self, lines: &[String]) -> Result<Vec<Ran>, String>;
}

/// The check a mounted storage answers: the mount point is a mount.
pub fn mounted_line(mount_point: &str) -> String {
    format!(
        "mountpoint -q {}",
        crate::image_tests::shell_quote(mount_point)
    )
}

/// Unmount `mount_point` on `instance`'s machine before its storage is
/// detached (`unmount storage` on a runtime that reaches its machines
/// through a provider). A machine that is stopped or gone holds no
/// mount: nothing to do. A running one runs `umount` after a `sync`,
/// only when the point is a mount, so a second unmount is no error. A
/// machine in between (starting, stopping) is refused: try again.
pub fn unmount(
    machine: &mut dyn Machine,
    instance: &str,
    mount_point: &str,
) -> Result<(), (i32, String)> {
    match machine.power().map_err(|e| (1, e))? {
        Power::Absent | Power::Stopped => Ok(()),
        Power::Other(state) => Err((
            1,
            format!(
                "{} of instance {instance} is {state}: unmount {mount_point} once it is running or stopped",
                machine.describe()
            ),
        )),
        Power::Running => {
            let q = crate::image_tests::shell_quote(mount_point);
            let line = format!("if mountpoint -q {q}; then sync && umount {q}; fi");
            let ran = machine.run(&[line]).map_err(|e| (1, e))?;
            match ran.first() {
                Some(Ran { code: Some(0), .. }) => Ok(()),
                Some(Ran { code, stderr }) => Err((
                    code.unwrap_or(1),
                    format!(
                        "umount {mount_point} on {} failed: {}",
                        machine.describe(),
                        failure_detail(stderr)
                    ),
                )),
                None => Err((1, "the machine answered no command".into())),
            }
        }
    }
}

/// What a failed assertion said: its last stderr line, without the in-bake
/// prefix the assertion lines share (a post-bake check is not in a bake).
pub fn failure_detail(stderr: &str) -> String {
    stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("failed")
        .trim_start_matches("in-bake test failed: ")
        .to_string()
}

/// Verify `req.instance` on `machine`: it exists, runs the build it is
/// pinned to, each declared storage is mounted where declared, each mount
/// point the post-bake tests name holds one, then each post-bake
/// assertion.
pub fn verify(machine: &mut dyn Machine, req: &VerifyRequest) -> Result<Verdict, String> {
    let mut out = Vec::new();
    let started = match machine.power()? {
        Power::Absent => {
            return Ok(Verdict::Checked(vec![fail(
                "machine",
                format!(
                    "no machine of instance '{}' exists: launch it first",
                    req.instance
                ),
            )]));
        }
        Power::Other(state) => {
            return Ok(Verdict::Checked(vec![fail(
                "machine",
                format!(
                    "{} is {state}: verify it once it is running",
                    machine.describe()
                ),
            )]));
        }
        Power::Running => false,
        Power::Stopped => {
            if machine.start().is_err() {
                return Ok(Verdict::Stopped);
            }
            true
        }
    };
    out.push(pass("machine", machine.describe()));
    let checked = checks(machine, req, &mut out);
    if started {
        let stopped = machine.stop();
        out.push(match &stopped {
            Ok(()) => pass(
                "power",
                "was stopped: started for this verification and stopped again".into(),
            ),
            Err(e) => fail(
                "power",
                format!(
                    "was stopped: started for this verification, but could not stop it again: {e}"
                ),
            ),
        });
    }
    checked?;
    Ok(Verdict::Checked(out))
}

fn checks(
    machine: &mut dyn Machine,
    req: &VerifyRequest,
    out: &mut Vec<CheckResult>,
) -> Result<(), String> {
    out.push(boot_image_check(&machine.boot_image()?, req));
    // Each command with the check it answers and what a pass and a
    // failure record.
    let mut named: Vec<(String, String, String, Option<String>)> = Vec::new();
    for (storage, at) in &req.storages {
        named.push((
            format!("mount {at}"),
            mounted_line(at),
            format!("storage {storage}"),
            Some(format!("storage {storage} is not mounted there")),
        ));
    }
    for at in &req.mounts {
        if !req.storages.iter().any(|(_, m)| m == at) {
            named.push((
                format!("post-bake mount {at}"),
                mounted_line(at),
                String::new(),
                Some("no storage is mounted there".into()),
            ));
        }
    }
    for c in &req.post_bake {
        named.push((
            format!("post-bake {}", c.what),
            c.line.clone(),
            String::new(),
            None,
        ));
    }
    let lines: Vec<String> = named.iter().map(|n| n.1.clone()).collect();
    let answers = machine.run(&lines)?;
    for ((check, _, passed, failed), ran) in named.into_iter().zip(answers) {
        out.push(match ran.code {
            Some(0) => pass(&check, passed),
            code => fail(
                &check,
                failed.unwrap_or_else(|| match code {
                    Some(_) => failure_detail(&ran.stderr),
                    None => format!("no answer: {}", failure_detail(&ran.stderr)),
                }),
            ),
        });
    }
    Ok(())
}

/// The `boot image` check: the machine runs the build it is pinned to
/// (any build, when it is not pinned).
pub fn boot_image_check(booted: &str, req: &VerifyRequest) -> CheckResult {
    match &req.pinned_build {
        Some(pin) if pin != booted => fail(
            "boot image",
            format!("runs {booted}, but it is pinned to {pin}"),
        ),
        _ => pass("boot image", format!("runs {booted}")),
    }
}

pub fn pass(check: &str, detail: String) -> CheckResult {
    CheckResult {
        check: check.to_string(),
        ok: true,
        detail,
    }
}

pub fn fail(check: &str, detail: String) -> CheckResult {
    CheckResult {
        check: check.to_string(),
        ok: false,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image_tests::InBakeCheck;

    /// A machine answered from fields: the unit tests' own, not a runtime.
    struct Scripted {
        power: Power,
        can_start: bool,
        booted: String,
        failing: Vec<String>,
        log: Vec<String>,
    }

    impl Machine for Scripted {
        fn describe(&self) -> String {
            "i-0abc".into()
        }
        fn power(&mut self) -> Result<Power, String> {
            Ok(self.power.clone())
        }
        fn start(&mut self) -> Result<(), String> {
            self.log.push("start".into());
            if self.can_start {
                Ok(())
            } else {
                Err("no".into())
            }
        }
        fn stop(&mut self) -> Result<(), String> {
            self.log.push("stop".into());
            Ok(())
        }
        fn boot_image(&mut self) -> Result<String, String> {
            Ok(self.booted.clone())
        }
        fn run(&mut self, lines: &[String]) -> Result<Vec<Ran>, String> {
            self.log.extend(lines.iter().cloned());
            Ok(lines
                .iter()
                .map(
                    |l| match self.failing.iter().any(|f| l.contains(f.as_str())) {
                        true => Ran {
                            code: Some(1),
                            stderr: "in-bake test failed: file /srv/x is missing\n".into(),
                        },
                        false => Ran {
                            code: Some(0),
                            stderr: String::new(),
                        },
                    },
                )
                .collect())
        }
    }

    fn machine(power: Power) -> Scripted {
        Scripted {
            power,
            can_start: true,
            booted: "ami-1".into(),
            failing: Vec::new(),
            log: Vec::new(),
        }
    }

    fn request() -> VerifyRequest {
        VerifyRequest {
            instance: "web".into(),
            pinned_build: Some("ami-1".into()),
            post_bake: vec![InBakeCheck {
                what: "file /srv/x".into(),
                line: "test -e /srv/x".into(),
            }],
            mounts: vec!["/srv".into(), "/data".into()],
            storages: vec![("data".into(), "/data".into())],
        }
    }

    fn summary(v: &Verdict) -> Vec<String> {
        match v {
            Verdict::Stopped => vec!["STOPPED".into()],
            Verdict::Checked(c) => c
                .iter()
                .map(|c| format!("{} {}: {}", c.ok, c.check, c.detail))
                .collect(),
        }
    }

    #[test]
    fn a_running_machine_is_checked_in_the_specs_order() {
        let mut m = machine(Power::Running);
        m.failing.push("/srv/x".into());
        let v = verify(&mut m, &request()).unwrap();
        assert_eq!(
            summary(&v),
            [
                "true machine: i-0abc",
                "true boot image: runs ami-1",
                "true mount /data: storage data",
                "true post-bake mount /srv: ",
                "false post-bake file /srv/x: file /srv/x is missing",
            ]
        );
        assert_eq!(
            m.log,
            [
                "mountpoint -q '/data'",
                "mountpoint -q '/srv'",
                "test -e /srv/x"
            ]
        );
    }

    #[test]
    fn a_machine_on_another_build_fails_its_boot_image_check() {
        let mut m = machine(Power::Running);
        m.booted = "ami-2".into();
        let v = verify(&mut m, &request()).unwrap();
        assert_eq!(
            summary(&v)[1],
            "false boot image: runs ami-2, but it is pinned to ami-1"
        );
    }

    #[test]
    fn a_stopped_machine_is_started_for_the_checks_and_stopped_again() {
        let mut m = machine(Power::Stopped);
        let v = verify(&mut m, &request()).unwrap();
        assert_eq!(m.log.first().map(String::as_str), Some("start"));
        assert_eq!(m.log.last().map(String::as_str), Some("stop"));
        assert_eq!(
            summary(&v).last().unwrap(),
            "true power: was stopped: started for this verification and stopped again"
        );
    }

    #[test]
    fn a_stopped_machine_the_runtime_cannot_start_is_a_skip() {
        let mut m = machine(Power::Stopped);
        m.can_start = false;
        assert_eq!(verify(&mut m, &request()).unwrap(), Verdict::Stopped);
        assert_eq!(m.log, ["start"]);
    }

    #[test]
    fn no_machine_is_one_failed_check() {
        let mut m = machine(Power::Absent);
        assert_eq!(
            summary(&verify(&mut m, &request()).unwrap()),
            ["false machine: no machine of instance 'web' exists: launch it first"]
        );
    }

    #[test]
    fn an_unmount_runs_on_a_running_machine_only_and_says_why_it_failed() {
        let mut m = machine(Power::Running);
        assert_eq!(unmount(&mut m, "web", "/srv/data"), Ok(()));
        assert_eq!(
            m.log,
            ["if mountpoint -q '/srv/data'; then sync && umount '/srv/data'; fi"]
        );
        for power in [Power::Stopped, Power::Absent] {
            let mut m = machine(power);
            assert_eq!(unmount(&mut m, "web", "/srv/data"), Ok(()));
            assert!(m.log.is_empty());
        }
        let mut m = machine(Power::Other("stopping".into()));
        assert_eq!(
            unmount(&mut m, "web", "/srv/data"),
            Err((
                1,
                "i-0abc of instance web is stopping: unmount /srv/data once it is running or stopped"
                    .into()
            ))
        );
        let mut m = machine(Power::Running);
        m.failing = vec!["umount".into()];
        assert_eq!(
            unmount(&mut m, "web", "/srv/data"),
            Err((
                1,
                "umount /srv/data on i-0abc failed: file /srv/x is missing".into()
            ))
        );
    }
}
