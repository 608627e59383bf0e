//! A reader that goes away (`csis man | head -1`) ends a command quietly
//! with its own exit code; any other failure to write stdout is an error.

use std::process::{Command, Stdio};

/// `csis ARGS` with a stdout whose reader has already gone: its exit
/// code and stderr.
fn with_closed_stdout(root: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn every_writer_of_stdout_ends_quietly_when_its_reader_is_gone() {
    let t = csis_test_support::plain_tree("local-run");
    let root = t.path();
    for args in [
        &["completions", "bash"][..],
        &["completions", "zsh"],
        &["man"],
        &["--help"],
        &["plan", "--help"],
        &["config", "render", "--format", "json"],
        &["config", "render"],
        &["plan"],
        &["plan", "--format", "json"],
        &["plan", "--format", "matrix"],
        &["graph", "--format", "mermaid"],
        &["public-safe", "--format", "sarif"],
        &["public-safe", "--format", "json"],
        &["lineage", "show"],
        &["validate", "--format", "json"],
    ] {
        let (code, err) = with_closed_stdout(root, args);
        assert_eq!(code, Some(0), "csis {args:?}: {err}");
        assert!(!err.contains("panicked"), "csis {args:?}: {err}");
        assert!(!err.contains("error"), "csis {args:?}: {err}");
    }
}

#[test]
fn a_stdout_that_cannot_be_written_is_an_error() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .args(["completions", "bash"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: writing to standard output: No space left on device (os error 28)\n"
    );
}
