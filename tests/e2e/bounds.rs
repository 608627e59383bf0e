//! Bounded input (docs/reliability.md, "Limits on input"): what csis
//! refuses to read, and that it refuses it by name, without hanging,
//! crashing or swallowing memory.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support;

/// `csis --root-dir ROOT ARGS` with a deadline: a child still running
/// after it is killed and the test fails (a FIFO read would block
/// forever). Also the highest resident memory seen while it ran, in KiB.
fn csis_env(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, u64) {
    let out_dir = tempfile::tempdir().unwrap();
    let stdout = std::fs::File::create(out_dir.path().join("stdout")).unwrap();
    let stderr = std::fs::File::create(out_dir.path().join("stderr")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env_remove("CSIS_MAX_FILE_SIZE")
        .envs(env.iter().copied())
        .env("CSIS_NOW", "1796226804")
        .env("USER", "avery")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut peak = 0;
    let status = loop {
        peak = peak.max(peak_kib(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("csis {args:?} did not finish within the deadline (it hangs)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let output = Output {
        status,
        stdout: std::fs::read(out_dir.path().join("stdout")).unwrap(),
        stderr: std::fs::read(out_dir.path().join("stderr")).unwrap(),
    };
    (output, peak)
}

/// A running process's high-water resident memory (0 once it is gone):
/// polled while it runs, so a spike in its last moments may be missed.
fn peak_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn csis(root: &Path, args: &[&str]) -> Output {
    csis_env(root, args, &[]).0
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Exit 1, not a signal, and stderr holding every piece.
fn refused(o: &Output, pieces: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{:?}\n{err}", o.status);
    for p in pieces {
        assert!(err.contains(p), "missing {p:?} in:\n{err}");
    }
    err
}

const DEPTH: &str = "nesting deeper than 256 levels; csis reads at most 256 levels";

/// The 8 KB file that overflowed the stack: 4,000 block sequences, one in
/// the next, refused at the 257th level by validate, config render and
/// run alike.
#[test]
fn deeply_nested_block_sequences_are_refused_at_a_position() {
    let t = csis_test_support::tree("local-run");
    let text = format!("images:\n{}x\n", "- ".repeat(4000));
    assert!(text.len() > 8000);
    std::fs::write(t.path().join("images/deep.yml"), &text).unwrap();
    // The 257th collection: the root mapping and 255 lists before it.
    let at = format!("images/deep.yml:2:{}: ", 2 * 255 + 1);
    for args in [
        &["--brief", "validate"][..],
        &["--brief", "config", "render"],
        &["--brief", "run", "all"],
        &["--brief", "plan"],
    ] {
        let o = csis(t.path(), args);
        refused(&o, &[&at, DEPTH]);
    }
    // The raw view prints what it could read, and the refusal.
    let o = csis(t.path(), &["--brief", "config", "render", "--raw"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", o.status);
    assert!(stderr(&o).contains(DEPTH), "{}", stderr(&o));
}

/// 3,000 mappings each under a key indented below the last (4.5 MB):
/// refused at the limit, in bounded memory (it took 829 MB before).
#[test]
fn thousands_of_nested_keys_are_refused_in_bounded_memory() {
    let t = csis_test_support::tree("local-run");
    let text: String = (0..3000)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    assert!(text.len() > 4_000_000);
    std::fs::write(t.path().join("storages/keys.yml"), &text).unwrap();
    let (o, peak) = csis_env(t.path(), &["--brief", "validate"], &[]);
    refused(&o, &["storages/keys.yml:257:257: ", DEPTH]);
    assert!(peak < 400 * 1024, "peak resident memory {peak} KiB");
}

/// Nested to the limit and no further, in the places values are walked
/// (config, an image's fields, the overlay): read, rendered and run
/// without a crash.
#[test]
fn nesting_up_to_the_limit_is_read_rendered_and_run() {
    let t = csis_test_support::tree("local-run");
    let config = t.path().join("cfg/_config.yml");
    let text = std::fs::read_to_string(&config).unwrap();
    // config: (2) deep: (3) and 250 more mappings, then a list.
    let mut deep = String::from("  deep:\n");
    for i in 0..250 {
        deep.push_str(&format!("{}k{i}:\n", " ".repeat(4 + 2 * i)));
    }
    deep.push_str(&format!("{}- [[[x]]]\n", " ".repeat(4 + 2 * 250)));
    std::fs::write(
        &config,
        text.replacen("config:\n", &format!("config:\n{deep}"), 1),
    )
    .unwrap();
    // And rendered whole by a template.
    support::edit(
        t.path(),
        "images/chain.yml",
        "  - name: top\n",
        "  - name: top\n    description: \"{{ config.deep }}\"\n",
    );
    let overlay = t.path().join("deep-overlay.yml");
    std::fs::write(&overlay, format!("config:\n{deep}")).unwrap();
    for args in [
        &["--brief", "validate"][..],
        &["--brief", "config", "render"],
        &["--brief", "config", "render", "--format", "json"],
        &["--brief", "config", "render", "--raw"],
        &["--brief", "run", "all"],
    ] {
        let o = csis(t.path(), args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let o = csis(
            t.path(),
            &[&["--overlay", "deep-overlay.yml"][..], args].concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A FIFO is never opened: as an item file or as an overlay it is refused
/// at once (reading it would wait for a writer forever).
#[test]
fn a_fifo_is_refused_not_read() {
    let t = csis_test_support::tree("local-run");
    mkfifo(&t.path().join("images/fifo.yml"));
    let o = csis(t.path(), &["--brief", "validate"]);
    refused(
        &o,
        &["images/fifo.yml: a FIFO, not a regular file; csis reads only regular files"],
    );
    let o = csis(t.path(), &["--brief", "run", "all"]);
    refused(&o, &["images/fifo.yml: a FIFO"]);

    let t = csis_test_support::tree("local-run");
    let outside = tempfile::tempdir().unwrap();
    let fifo = outside.path().join("overlay.yml");
    mkfifo(&fifo);
    let shown = fifo.display().to_string();
    let o = csis(t.path(), &["--brief", "--overlay", &shown, "validate"]);
    refused(&o, &[&format!("{shown}: a FIFO, not a regular file")]);
}

/// /dev/zero behind a symlink is a device: refused before a byte is read
/// (it read 2 GB before).
#[test]
fn a_device_behind_a_symlink_is_refused_unread() {
    let t = csis_test_support::tree("local-run");
    symlink("/dev/zero", t.path().join("images/zero.yml")).unwrap();
    let (o, peak) = csis_env(t.path(), &["--brief", "validate"], &[]);
    refused(
        &o,
        &["images/zero.yml: a character device, not a regular file"],
    );
    assert!(peak < 400 * 1024, "peak resident memory {peak} KiB");
}

/// A file over the limit (16 MiB by default) is refused with the limit and
/// how to raise it; raised, the same file is read.
#[test]
fn a_file_over_the_size_limit_is_refused_until_the_limit_is_raised() {
    let t = csis_test_support::tree("local-run");
    let line = format!("# {}\n", "x".repeat(1021));
    let mut text = line.repeat(17 * 1024);
    text.push_str("images: []\n");
    std::fs::write(t.path().join("images/big.yml"), &text).unwrap();
    let o = csis(t.path(), &["--brief", "validate"]);
    refused(
        &o,
        &[
            "images/big.yml: 17.0 MiB is over the limit of 16 MiB csis reads from one file; \
             raise it with --max-file-size BYTES (or CSIS_MAX_FILE_SIZE)",
        ],
    );
    let o = csis(
        t.path(),
        &["--brief", "--max-file-size", "32MiB", "validate"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (o, _) = csis_env(
        t.path(),
        &["--brief", "validate"],
        &[("CSIS_MAX_FILE_SIZE", "33554432")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Lowered, an ordinary file is over it.
    let o = csis(t.path(), &["--brief", "--max-file-size", "100", "validate"]);
    refused(&o, &["cfg/_config.yml: ", "is over the limit of 100 bytes"]);
}

/// A dangling symlink is named in a warning (it was skipped silently);
/// one that leaves the root is refused with where it points.
#[test]
fn symlinks_to_nothing_and_out_of_the_root_are_named() {
    let t = csis_test_support::tree("local-run");
    symlink("nowhere.yml", t.path().join("images/d.yml")).unwrap();
    let o = csis(t.path(), &["--brief", "validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "warning: images/d.yml: a symlink to nowhere.yml, which does not exist; csis skips it"
        ),
        "{}",
        stderr(&o)
    );

    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("elsewhere.yml");
    std::fs::write(&target, "images: []\n").unwrap();
    symlink(&target, t.path().join("images/out.yml")).unwrap();
    let real = std::fs::canonicalize(&target).unwrap();
    let o = csis(t.path(), &["--brief", "validate"]);
    refused(
        &o,
        &[&format!(
            "images/out.yml: a symlink to {}, outside the configuration root",
            real.display()
        )],
    );
    // Given on the command line, the same file is an overlay like any.
    std::fs::remove_file(t.path().join("images/out.yml")).unwrap();
    let shown = target.display().to_string();
    let o = csis(t.path(), &["--brief", "--overlay", &shown, "validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // A symlink inside the root is read as the file it names.
    std::fs::copy(&target, t.path().join("images/real.yml")).unwrap();
    symlink("real.yml", t.path().join("images/alias.yml")).unwrap();
    let o = csis(t.path(), &["--brief", "validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// What the file system refuses is reported against the file, not the
/// root: a symlink loop, an overlay that is a directory, bytes that are
/// not UTF-8.
#[test]
fn read_errors_name_the_file() {
    let t = csis_test_support::tree("local-run");
    symlink("loop.yml", t.path().join("images/loop.yml")).unwrap();
    let o = csis(t.path(), &["--brief", "validate"]);
    refused(&o, &["images/loop.yml: cannot be read: "]);

    let t = csis_test_support::tree("local-run");
    let o = csis(t.path(), &["--brief", "--overlay", "images", "validate"]);
    refused(&o, &["images: a directory, not a regular file"]);

    std::fs::write(
        t.path().join("images/bad.yml"),
        b"images:\n  - name: caf\xe9\n",
    )
    .unwrap();
    let o = csis(t.path(), &["--brief", "validate"]);
    refused(
        &o,
        &["images/bad.yml: not UTF-8 text (the first invalid byte is at line 2, column 14)"],
    );
}

/// A newline in a file's name cannot fake a second diagnostic: every
/// format prints it escaped.
#[test]
fn control_characters_in_a_file_name_are_escaped() {
    let t = csis_test_support::tree("local-run");
    let name = "evil.yml\nfake.yml:1:1: all good\u{1b}[2K.yml";
    std::fs::write(t.path().join("images").join(name), "images: 3\n").unwrap();
    let faked =
        |err: &str| err.lines().any(|l| l.starts_with("fake.yml")) || err.contains('\u{1b}');
    let o = csis(t.path(), &["--brief", "validate"]);
    let err = refused(
        &o,
        &["images/evil.yml\\nfake.yml:1:1: all good\\u{1b}[2K.yml:1:9: "],
    );
    assert!(!faked(&err), "{err}");
    let o = csis(t.path(), &["validate", "--color", "never"]);
    let err = refused(&o, &["evil.yml\\nfake.yml"]);
    assert!(!faked(&err), "{err}");
    let o = csis(t.path(), &["validate", "--format", "github"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(1));
    assert!(out.lines().all(|l| l.starts_with("::")), "{out}");
}
