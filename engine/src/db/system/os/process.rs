//! Running a process on the real machine, its output handed over line by
//! line as it comes.

use std::io;

use crate::db::system::{LimitedRun, Process, ProcessOutput, RunLimits, Stream};

/// The command for `process`: its program, arguments, directory and
/// environment, no input, both outputs piped; killed if csis dies before
/// it ends (a run's child must not write the tree without its lock).
fn piped(process: &Process) -> std::process::Command {
    use std::process::Stdio;
    let mut command = std::process::Command::new(&process.program);
    csis_child::die_with_parent(&mut command);
    command
        .args(&process.args)
        .current_dir(&process.cwd)
        .envs(process.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Spawned with both outputs piped; a thread per output reads lines and
/// sends them through one channel, so `on_line` hears them here, on the
/// caller's thread, as they come.
pub(super) fn run_streaming(
    process: &Process,
    on_line: &mut dyn FnMut(Stream, &str),
) -> io::Result<ProcessOutput> {
    use std::io::BufRead;
    let mut child = piped(process).spawn()?;
    let (tx, rx) = std::sync::mpsc::channel::<(Stream, Vec<u8>)>();
    fn reader(
        pipe: Option<impl io::Read + Send + 'static>,
        stream: Stream,
        tx: std::sync::mpsc::Sender<(Stream, Vec<u8>)>,
    ) -> Option<std::thread::JoinHandle<io::Result<()>>> {
        let pipe = pipe?;
        Some(std::thread::spawn(move || {
            let mut pipe = io::BufReader::new(pipe);
            loop {
                let mut line = Vec::new();
                if pipe.read_until(b'\n', &mut line)? == 0 {
                    return Ok(());
                }
                if tx.send((stream, line)).is_err() {
                    return Ok(());
                }
            }
        }))
    }
    let readers = [
        reader(child.stdout.take(), Stream::Stdout, tx.clone()),
        reader(child.stderr.take(), Stream::Stderr, tx),
    ];
    let mut out = ProcessOutput {
        code: None,
        stdout: String::new(),
        stderr: String::new(),
    };
    // Ends when both readers have dropped their senders.
    for (stream, bytes) in rx {
        let text = String::from_utf8_lossy(&bytes);
        let line = text.strip_suffix('\n').unwrap_or(&text);
        on_line(stream, line.strip_suffix('\r').unwrap_or(line));
        match stream {
            Stream::Stdout => out.stdout.push_str(&text),
            Stream::Stderr => out.stderr.push_str(&text),
        }
    }
    out.code = child.wait()?.code();
    for handle in readers.into_iter().flatten() {
        handle
            .join()
            .map_err(|_| io::Error::other("an output reader panicked"))??;
    }
    Ok(out)
}

/// What is kept of a bounded run's stderr: enough for a message; the rest
/// is read and dropped, so the process never blocks on a full pipe.
const STDERR_KEPT: u64 = 1 << 20;

/// [`crate::db::system::System::run_limited`] on the real machine. The
/// process leads a process group of its own, so that a timeout or an
/// overflow kills it and everything it started at once (`tofu show`
/// starts its providers, which hold the pipes open).
pub(super) fn run_limited(process: &Process, limits: RunLimits) -> io::Result<LimitedRun> {
    use std::io::Read;
    use std::sync::mpsc::RecvTimeoutError;
    let deadline = std::time::Instant::now() + limits.timeout;
    let mut command = piped(process);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command.spawn()?;
    let (tx, rx) = std::sync::mpsc::channel::<(Stream, io::Result<Vec<u8>>)>();
    // Each reader reads at most one byte past what is kept: a stdout that
    // reaches it is over the bound, and is never read further.
    fn reader(
        pipe: Option<impl Read + Send + 'static>,
        stream: Stream,
        keep: u64,
        tx: std::sync::mpsc::Sender<(Stream, io::Result<Vec<u8>>)>,
    ) {
        let Some(pipe) = pipe else {
            let _ = tx.send((stream, Ok(Vec::new())));
            return;
        };
        std::thread::spawn(move || {
            let mut pipe = pipe;
            let mut kept = Vec::new();
            let read = (&mut pipe)
                .take(keep.saturating_add(1))
                .read_to_end(&mut kept)
                .and_then(|_| match stream {
                    Stream::Stderr => io::copy(&mut pipe, &mut io::sink()).map(|_| ()),
                    Stream::Stdout => Ok(()),
                });
            let _ = tx.send((stream, read.map(|_| kept)));
        });
    }
    reader(
        child.stdout.take(),
        Stream::Stdout,
        limits.max_stdout,
        tx.clone(),
    );
    reader(child.stderr.take(), Stream::Stderr, STDERR_KEPT, tx);
    let (mut stdout, mut stderr) = (None, None);
    while stdout.is_none() || stderr.is_none() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (stream, read) = match rx.recv_timeout(left) {
            Ok(got) => got,
            Err(RecvTimeoutError::Timeout) => {
                kill_group(&mut child);
                return Ok(LimitedRun::TimedOut);
            }
            Err(RecvTimeoutError::Disconnected) => {
                kill_group(&mut child);
                return Err(io::Error::other("an output reader stopped"));
            }
        };
        let bytes = match read {
            Ok(b) => b,
            Err(e) => {
                kill_group(&mut child);
                return Err(e);
            }
        };
        match stream {
            Stream::Stdout if bytes.len() as u64 > limits.max_stdout => {
                kill_group(&mut child);
                return Ok(LimitedRun::TooMuchOutput);
            }
            Stream::Stdout => stdout = Some(bytes),
            Stream::Stderr => {
                let mut b = bytes;
                b.truncate(STDERR_KEPT as usize);
                stderr = Some(b);
            }
        }
    }
    // Both outputs are closed; the exit is still held to the deadline.
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(LimitedRun::Finished(ProcessOutput {
                code: status.code(),
                stdout: String::from_utf8_lossy(&stdout.unwrap_or_default()).into_owned(),
                stderr: String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned(),
            }));
        }
        if std::time::Instant::now() >= deadline {
            kill_group(&mut child);
            return Ok(LimitedRun::TimedOut);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Kill the child and the process group it leads, and reap it.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the group the child
        // leads (it was spawned with process_group(0)); no memory is shared.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use crate::db::system::{OsSystem, Process, Stream, System};
    use std::path::PathBuf;

    #[test]
    fn a_streamed_process_hands_over_each_line_as_it_is_printed() {
        let dir = tempfile::tempdir().unwrap();
        let process = Process {
            program: PathBuf::from("sh"),
            args: vec![
                "-c".into(),
                "echo one; echo warn >&2; sleep 1; printf 'two\\nthree'; exit 4".into(),
            ],
            cwd: dir.path().to_path_buf(),
            env: vec![],
        };
        let start = std::time::Instant::now();
        let mut seen = Vec::new();
        let out = OsSystem
            .run_streaming(&process, &mut |stream, line| {
                seen.push((stream, line.to_string(), start.elapsed()));
            })
            .unwrap();
        let of = |stream| {
            seen.iter()
                .filter(|(s, _, _)| *s == stream)
                .map(|(_, l, t)| (l.as_str(), *t))
                .collect::<Vec<_>>()
        };
        let stdout = of(Stream::Stdout);
        let lines: Vec<_> = stdout.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, ["one", "two", "three"]);
        assert_eq!(of(Stream::Stderr)[0].0, "warn");
        // `one` came before the sleep, not with the rest at the end.
        assert!(stdout[1].1 - stdout[0].1 >= std::time::Duration::from_millis(500));
        assert_eq!(out.code, Some(4));
        assert_eq!(out.stdout, "one\ntwo\nthree");
        assert_eq!(out.stderr, "warn\n");
        assert_eq!(OsSystem.run(&process).unwrap(), out);
    }

    fn sh(dir: &std::path::Path, script: &str) -> Process {
        Process {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), script.into()],
            cwd: dir.to_path_buf(),
            env: vec![],
        }
    }

    #[test]
    fn a_limited_run_kills_a_process_that_outlives_its_timeout_with_its_children() {
        use crate::db::system::{LimitedRun, RunLimits};
        let dir = tempfile::tempdir().unwrap();
        let limits = RunLimits {
            timeout: std::time::Duration::from_millis(500),
            max_stdout: 100,
        };
        let start = std::time::Instant::now();
        // The child sleeping in the background holds the pipes open: only
        // killing the group ends the wait.
        let got = OsSystem
            .run_limited(&sh(dir.path(), "sleep 30 & echo started; wait"), limits)
            .unwrap();
        assert_eq!(got, LimitedRun::TimedOut);
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        let done = OsSystem
            .run_limited(&sh(dir.path(), "echo out; echo err >&2; exit 3"), limits)
            .unwrap();
        assert_eq!(
            done,
            LimitedRun::Finished(crate::db::system::ProcessOutput {
                code: Some(3),
                stdout: "out\n".into(),
                stderr: "err\n".into(),
            })
        );
    }

    #[test]
    fn a_limited_run_stops_reading_at_its_bound() {
        use crate::db::system::{LimitedRun, RunLimits};
        let dir = tempfile::tempdir().unwrap();
        let limits = RunLimits {
            timeout: std::time::Duration::from_secs(30),
            max_stdout: 1000,
        };
        let start = std::time::Instant::now();
        // An endless stdout: read to the bound, then the process is killed.
        let got = OsSystem
            .run_limited(&sh(dir.path(), "yes"), limits)
            .unwrap();
        assert_eq!(got, LimitedRun::TooMuchOutput);
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        let exact = OsSystem
            .run_limited(&sh(dir.path(), "head -c 1000 /dev/zero"), limits)
            .unwrap();
        assert!(matches!(exact, LimitedRun::Finished(o) if o.stdout.len() == 1000));
    }
}
