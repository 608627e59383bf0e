//! Running a script inside an image's root, never on the host: every
//! modification, `ensure` command and user-data of the local runtime runs
//! under bubblewrap with the build's (or instance's) root as `/`, as
//! packer runs the same script inside the VM with `CSIS_IMAGE_ROOT` empty.
//!
//! What the sandbox gives the script (docs/local-runtime.md, "The
//! sandbox"): the root read-write; a fresh /proc (its /proc/sys read-only,
//! since root inside is root's uid outside), a minimal /dev and an empty
//! /tmp; a new user namespace whose ids csis maps (0..65536 as
//! themselves when it runs as root, else the caller's own as 0: see
//! [`map_ids`]), and new pid, ipc, uts, cgroup and network namespaces (the
//! network shared only when the runtime says `network: true`); a new
//! session; an environment holding only what the step declares; and
//! nothing of the host but the files bound read-only on purpose (a
//! modification's script files). bwrap's `--die-with-parent` and the pid
//! namespace end everything the script started when the step ends or is
//! killed. It is not a VM: the kernel is the host's.
//!
//! No bwrap, no run: there is no fallback to running a script on the host.

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The shell every bash step runs under, as the image holds it.
pub(super) const BASH: &str = "/bin/bash";

/// Where a bound script file appears inside the sandbox: under the fresh
/// /tmp, so that no mount point is left in the image's root.
const SCRIPTS_INSIDE: &str = "/tmp/csis-scripts";

/// Why the sandbox's programs are needed, for the refusal without them.
const SANDBOXED: &str = "runs every script inside the image under bubblewrap";

/// The PATH a script sees: the usual Debian one.
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One sandboxed run's settings: the root that becomes `/`, and what is
/// let in.
#[derive(Clone)]
pub(super) struct Sandbox {
    root: PathBuf,
    /// Share the host's network (and its /etc/resolv.conf), for package
    /// installs.
    network: bool,
    hostname: String,
    env: Vec<(String, String)>,
    /// Host file, path inside; bound read-only.
    files: Vec<(PathBuf, String)>,
    /// Host directory, path inside; bound read-write (an instance's
    /// storages at their mount points).
    dirs: Vec<(PathBuf, String)>,
    /// `/` is an overlay: `root` its lower layer, never written, and
    /// these its upper, work and mount directories (`layer.rs`).
    layer: Option<[PathBuf; 3]>,
}

impl Sandbox {
    /// A sandbox over `root`, with no network, `CSIS_IMAGE_ROOT` empty and
    /// the standard PATH and HOME.
    pub(super) fn new(root: &Path) -> Sandbox {
        Sandbox {
            root: root.to_path_buf(),
            network: false,
            hostname: "csis-sandbox".into(),
            env: vec![
                ("CSIS_IMAGE_ROOT".into(), String::new()),
                ("HOME".into(), "/root".into()),
                ("PATH".into(), PATH.into()),
            ],
            files: Vec::new(),
            dirs: Vec::new(),
            layer: None,
        }
    }

    /// A sandbox whose `/` is `lower` seen through an overlay: what the
    /// scripts write lands in `layer`'s upper directory, `lower` is never
    /// written.
    pub(super) fn over(lower: &Path, layer: &super::layer::Layer) -> Sandbox {
        let mut s = Sandbox::new(lower);
        s.layer = Some([
            layer.upper.clone(),
            layer.work.clone(),
            layer.merged.clone(),
        ]);
        s
    }

    /// Share the host's network (and its /etc/resolv.conf): the runtime's
    /// `network: true`, carried by the step's spec.
    pub(super) fn network(mut self, on: bool) -> Sandbox {
        self.network = on;
        self
    }

    /// One more variable the script sees (replacing one of that name).
    pub(super) fn env(mut self, key: &str, value: &str) -> Sandbox {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
        self
    }

    /// The host name the script sees (`csis-sandbox` unless set).
    pub(super) fn hostname(mut self, name: &str) -> Sandbox {
        self.hostname = name.to_string();
        self
    }

    /// Bind `host` (a directory) read-write at `inside` (absolute).
    pub(super) fn bind_dir(mut self, host: &Path, inside: &str) -> Sandbox {
        self.dirs.push((host.to_path_buf(), inside.to_string()));
        self
    }

    /// Bind `host` (a script file) read-only into the sandbox; the path
    /// the script runs it by.
    pub(super) fn bind_script(&mut self, host: &Path) -> String {
        let name = host
            .file_name()
            .map(|n| n.to_string_lossy().replace(['/', '\n'], "_"))
            .unwrap_or_else(|| "script".into());
        let inside = format!("{SCRIPTS_INSIDE}/{}-{name}", self.files.len() + 1);
        self.files.push((host.to_path_buf(), inside.clone()));
        inside
    }

    /// Run `script` with the image's bash; its exit code (None: killed by
    /// a signal). `what` names the step in errors.
    pub(super) fn run_bash(&self, what: &str, script: &str) -> Result<Option<i32>, String> {
        self.run(what, &[BASH, "-c", script])
    }

    /// Run `argv` inside the sandbox; its exit code.
    pub(super) fn run(&self, what: &str, argv: &[&str]) -> Result<Option<i32>, String> {
        self.run_capturing(what, argv, false).map(|(code, _)| code)
    }

    /// Run `script` with the image's bash; its exit code and what it
    /// wrote on stderr (a check's verdict names what it found there).
    pub(super) fn output_bash(
        &self,
        what: &str,
        script: &str,
    ) -> Result<(Option<i32>, String), String> {
        self.run_capturing(what, &[BASH, "-c", script], true)
    }

    fn run_capturing(
        &self,
        what: &str,
        argv: &[&str],
        capture: bool,
    ) -> Result<(Option<i32>, String), String> {
        if let Some(program) = argv.first()
            && resolve_inside(&self.root, program).is_none()
        {
            return Err(format!(
                "{what}: the root {} holds no {program}: the local runtime runs every script inside the image, so its vendor image must be a userland with bash (docs/local-runtime.md, \"Base images\")",
                self.root.display()
            ));
        }
        let mut command = self.command(argv).map_err(|e| format!("{what}: {e}"))?;
        if capture {
            command.stderr(Stdio::piped());
        }
        let mut child = csis_child::die_with_parent(&mut command)
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{what}: unshare: {e}"))?;
        let started = map_ids(&mut child).and_then(|()| {
            // The line the outer shell waits for: its ids are mapped.
            let mut go = child.stdin.take().ok_or("no stdin to the sandbox")?;
            go.write_all(b"go\n")
                .map_err(|e| format!("starting the sandbox: {e}"))
        });
        if let Err(e) = started {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what}: {e}"));
        }
        let output = child
            .wait_with_output()
            .map_err(|e| format!("{what}: bwrap: {e}"))?;
        Ok((
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ))
    }

    /// The command line: bwrap, started in a user, mount and pid namespace
    /// of its own whose ids [`map_ids`] maps while its shell waits, where an
    /// overlay is mounted first (bwrap 0.8 mounts no overlay itself).
    /// bwrap makes no user namespace of its own: it would map one id only.
    fn command(&self, argv: &[&str]) -> Result<Command, String> {
        let bwrap = program("bwrap", "bubblewrap", SANDBOXED)?;
        let mut c = Command::new(program("unshare", "util-linux", SANDBOXED)?);
        // Its own pid namespace too, whose first process is bwrap's
        // monitor: when the step ends, `--kill-child` ends that process and
        // the kernel everything in the namespace, bwrap's own nested one
        // included. bwrap's `--die-with-parent` alone leaves a window in
        // which a step killed as bwrap forks leaves the script running.
        c.args([
            "--user",
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "--",
            "/bin/sh",
            "-c",
        ]);
        let root = match &self.layer {
            None => {
                c.arg("read -r go || exit 70; exec \"$@\"")
                    .arg("csis-sandbox");
                self.root.clone()
            }
            Some([upper, work, merged]) => {
                let opts = format!(
                    "lowerdir={},upperdir={},workdir={},userxattr",
                    mount_path(&self.root),
                    mount_path(upper),
                    mount_path(work)
                );
                c.arg("read -r go || exit 70; mount -t overlay csis-layer -o \"$1\" \"$2\" && shift 2 && exec \"$@\"")
                    .arg("csis-sandbox")
                    .arg(opts)
                    .arg(merged);
                merged.clone()
            }
        };
        c.arg(&bwrap).args([
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]);
        if !self.network {
            c.arg("--unshare-net");
        }
        c.args(["--hostname", &self.hostname])
            .args(["--die-with-parent", "--new-session", "--clearenv"])
            .arg("--bind")
            .arg(&root)
            .arg("/")
            .args(["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"])
            .args(["--dev", "/dev", "--perms", "01777", "--tmpfs", "/tmp"]);
        if self.network && Path::new("/etc/resolv.conf").exists() {
            c.args(["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]);
        }
        for (host, inside) in &self.files {
            c.arg("--ro-bind").arg(host).arg(inside);
        }
        for (host, inside) in &self.dirs {
            c.arg("--bind").arg(host).arg(inside);
        }
        for (k, v) in &self.env {
            c.args(["--setenv", k, v]);
        }
        c.args(["--chdir", "/", "--"]).args(argv);
        Ok(c)
    }
}

/// A sandboxed run's exit code as its failure names it: the code, or `by
/// a signal` (None from [`Sandbox::run`]).
pub(super) fn exit_text(code: Option<i32>) -> String {
    code.map_or("by a signal".into(), |c| c.to_string())
}

/// How many ids the sandbox maps when csis runs as root: Debian's system
/// users and groups (`_apt`, `www-data`, `nobody`) and the first regular
/// ones, so that a package's files keep their owners.
const ID_RANGE: u32 = 65_536;

/// Map the ids of `child`'s new user namespace, once it has one. As root,
/// ids 0..65536 inside are the same ids outside, as a root run of
/// mmdebstrap leaves them: a package install chowns to its system users,
/// and the store keeps those owners. Anyone else maps their own ids to 0
/// and only those: chown to another id fails in the sandbox.
fn map_ids(child: &mut Child) -> Result<(), String> {
    let proc = PathBuf::from(format!("/proc/{}", child.id()));
    let mine =
        std::fs::read_link("/proc/self/ns/user").map_err(|e| format!("/proc/self/ns/user: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if std::fs::read_link(proc.join("ns/user")).is_ok_and(|ns| ns != mine) {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "unshare ended before the sandbox started ({status}): this kernel may refuse user namespaces (sysctl user.max_user_namespaces)"
            ));
        }
        if Instant::now() > deadline {
            return Err("unshare made no user namespace within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: geteuid and getegid read the caller's ids and cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let write = |file: &str, text: String| {
        std::fs::write(proc.join(file), text)
            .map_err(|e| format!("mapping the sandbox's ids ({file}): {e}"))
    };
    if uid == 0 {
        write("uid_map", format!("0 0 {ID_RANGE}\n"))?;
        write("gid_map", format!("0 0 {ID_RANGE}\n"))
    } else {
        write("uid_map", format!("0 {uid} 1\n"))?;
        write("setgroups", "deny\n".into())?;
        write("gid_map", format!("0 {gid} 1\n"))
    }
}

/// `name` on PATH; none is a refusal naming the Debian package.
/// `why` says what the runtime needs it for.
pub(super) fn program(name: &str, package: &str, why: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!("the local runtime {why}, and {name} is not on PATH: install it (Debian and Ubuntu: apt-get install {package}); csis never runs an image's script on the host")
        })
}

/// A path as an overlay mount option holds it: `\`, `,` and `:` escaped.
fn mount_path(p: &Path) -> String {
    let mut out = String::new();
    for c in p.to_string_lossy().chars() {
        if matches!(c, '\\' | ',' | ':') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Where `path` (absolute, as the image sees it) is on the host, following
/// symlinks as they resolve inside `root` (an absolute target starts again
/// at the image's root, `..` stops there); None when nothing is there.
pub(super) fn resolve_inside(root: &Path, path: &str) -> Option<PathBuf> {
    let mut todo: Vec<String> = components(path);
    todo.reverse();
    let mut at: Vec<String> = Vec::new();
    let mut hops = 0;
    while let Some(part) = todo.pop() {
        match part.as_str() {
            "." => continue,
            ".." => {
                at.pop();
                continue;
            }
            _ => {}
        }
        let host = at
            .iter()
            .fold(root.to_path_buf(), |p, c| p.join(c))
            .join(&part);
        let meta = std::fs::symlink_metadata(&host).ok()?;
        if meta.file_type().is_symlink() {
            hops += 1;
            if hops > 40 {
                return None;
            }
            let target = std::fs::read_link(&host).ok()?;
            let target = target.to_string_lossy();
            if target.starts_with('/') {
                at.clear();
            }
            let mut more = components(&target);
            more.reverse();
            todo.extend(more);
        } else {
            at.push(part);
        }
    }
    let host = at.iter().fold(root.to_path_buf(), |p, c| p.join(c));
    std::fs::symlink_metadata(&host).ok().map(|_| host)
}

fn components(path: &str) -> Vec<String> {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_string()),
            Component::ParentDir => Some("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_path_inside_resolves_its_symlinks_against_the_images_root_never_the_hosts() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("usr/bin")).unwrap();
        std::fs::write(r.join("usr/bin/bash"), "").unwrap();
        symlink("usr/bin", r.join("bin")).unwrap();
        symlink("/usr/bin/bash", r.join("usr/bin/sh")).unwrap();
        symlink("../../../../../etc", r.join("usr/escape")).unwrap();
        symlink("/etc/hostname", r.join("usr/host")).unwrap();
        symlink("loop", r.join("loop")).unwrap();
        assert_eq!(resolve_inside(r, "/bin/bash"), Some(r.join("usr/bin/bash")));
        assert_eq!(resolve_inside(r, "/bin/sh"), Some(r.join("usr/bin/bash")));
        // The host's /etc is not the image's: `..` stops at the root and
        // an absolute target starts again there.
        assert_eq!(resolve_inside(r, "/usr/escape/hostname"), None);
        assert_eq!(resolve_inside(r, "/usr/host"), None);
        assert_eq!(resolve_inside(r, "/loop"), None);
        assert_eq!(resolve_inside(r, "/bin/zsh"), None);
    }
}
