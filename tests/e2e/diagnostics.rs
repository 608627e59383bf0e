//! One cause, one error; diagnostics for machines: `validate --format
//! json` and `--format github`.

use std::process::Command;

/// fixtures/local-run with its runtime builder's type misspelt (`lcoal`).
fn misspelt() -> tempfile::TempDir {
    let t = csis_test_support::tree("local-run");
    let builders = t.path().join("cfg/builders.yml");
    let text = std::fs::read_to_string(&builders).unwrap();
    std::fs::write(&builders, text.replacen("type: local", "type: lcoal", 1)).unwrap();
    t
}

fn validate(root: &std::path::Path, format: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .args(["--root-dir", ".", "validate", "--format", format])
        .output()
        .unwrap()
}

/// One JSON object per diagnostic on stdout, each with the same keys;
/// the summary stays on stderr.
#[test]
fn validate_json_is_one_object_per_diagnostic() {
    let t = misspelt();
    let out = validate(t.path(), "json");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        serde_json::json!({
            "severity": "error",
            "code": null,
            "message": "KeyError: lcoal",
            "file": "cfg/builders.yml",
            "line": 2,
            "column": 24,
            "help": "Runtime builder 'here': type 'lcoal' names no registered model (the plugin is not installed or the name is misspelt); known: [aws, dummy, gce, local]; did you mean 'local'?",
            "consequences": 7
        })
    );
    for l in &lines {
        let keys: Vec<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "severity",
                "code",
                "message",
                "file",
                "line",
                "column",
                "help",
                "consequences"
            ]
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.ends_with(&format!("validate: {} error(s)\n", lines.len())),
        "{stderr}"
    );
}

/// GitHub Actions workflow commands, one per diagnostic, with the file,
/// line and column, the help on a second line of the message.
#[test]
fn validate_github_prints_workflow_commands() {
    let t = misspelt();
    let out = validate(t.path(), "github");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.lines().next().unwrap(),
        "::error file=cfg/builders.yml,line=2,col=24,title=csis error::KeyError: lcoal%0Ahelp: Runtime builder 'here': type 'lcoal' names no registered model (the plugin is not installed or the name is misspelt); known: [aws, dummy, gce, local]; did you mean 'local'?%0Anote: 7 more errors follow from this; fix it first"
    );
    assert!(
        stdout
            .lines()
            .all(|l| l.starts_with("::error ") || l.starts_with("::warning "))
    );
}

/// A misspelt runtime type refuses the one runtime builder; the errors
/// that follow (no runtime builders, fields naming the default runtime,
/// no bake user on it) are folded under it.
#[test]
fn a_refused_builder_is_the_one_error() {
    let t = misspelt();
    assert_eq!(
        crate::support::brief_validate(t.path()),
        (
            Some(1),
            "cfg/builders.yml:2:24: KeyError: lcoal
  help: Runtime builder 'here': type 'lcoal' names no registered model (the plugin is not installed or the name is misspelt); known: [aws, dummy, gce, local]; did you mean 'local'?
  note: 7 more errors follow from this; fix it first
validate: 1 error(s)
"
            .to_string()
        )
    );
    let run = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(t.path())
        .args(["run", "all"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.matches("validation: ").count(), 1, "{stderr}");
    assert!(
        stderr.contains("validation: cfg/builders.yml:2:24: KeyError: lcoal (7 more errors follow from this; fix it first)"),
        "{stderr}"
    );
}

/// A file that does not parse declares nothing: what names its images
/// or its groups follows from it.
#[test]
fn a_broken_file_is_the_one_error() {
    let t = csis_test_support::tree("local-run");
    let chain = t.path().join("images/chain.yml");
    let text = std::fs::read_to_string(&chain).unwrap();
    std::fs::write(
        &chain,
        text.replacen("  - name: mid\n", "  - name: mid\n   bad: [\n", 1),
    )
    .unwrap();
    assert_eq!(
        crate::support::brief_validate(t.path()),
        (
            Some(1),
            "images/chain.yml:10:4: images/chain.yml: invalid YAML: while parsing a block collection, did not find expected '-' indicator
  note: 1 more error follows from this; fix it first
validate: 1 error(s)
"
            .to_string()
        )
    );

    let t = csis_test_support::tree("local-run");
    std::fs::write(t.path().join("groups/people.yml"), "users:\n  - {name: [\n").unwrap();
    let (code, out) = crate::support::brief_validate(t.path());
    assert_eq!(code, Some(1));
    assert!(
        out.ends_with(
            "  note: 4 more errors follow from this; fix it first\nvalidate: 1 error(s)\n"
        ),
        "{out}"
    );
}
