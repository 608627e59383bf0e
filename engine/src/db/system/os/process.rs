//! Running a process on the real machine, its output handed over line by
//! line as it comes.

use std::io;

use crate::db::system::{Process, ProcessOutput, Stream};

/// Spawned with both outputs piped; a thread per output reads lines and
/// sends them through one channel, so `on_line` hears them here, on the
/// caller's thread, as they come.
pub(super) fn run_streaming(
    process: &Process,
    on_line: &mut dyn FnMut(Stream, &str),
) -> io::Result<ProcessOutput> {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut child = std::process::Command::new(&process.program)
        .args(&process.args)
        .current_dir(&process.cwd)
        .envs(process.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
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
}
