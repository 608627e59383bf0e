//! Helpers every end-to-end module shares: the binary run over a tree,
//! edits. The trees themselves come from csis-test-support.

use std::path::Path;
use std::process::{Command, Output};

/// `csis --root-dir ROOT ARGS` at a fixed clock.
pub fn csis_at(root: &Path, now: i64, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("CSIS_NOW", now.to_string())
        .env_remove("CSIS_RUN_ID")
        // The aws runtime asks EC2 what exists at every run's start: with
        // no endpoint and no credentials it is unavailable, and never
        // waits on an instance metadata service this machine has not.
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap()
}

/// `csis --root-dir ROOT ARGS` at a fixed clock: its exit code, and its
/// stdout then stderr as one text.
pub fn csis_text(root: &Path, now: i64, args: &[&str]) -> (Option<i32>, String) {
    let o = csis_at(root, now, args);
    (
        o.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// `csis --root-dir ROOT run all --no-dry-run` at a fixed clock, started
/// in the background with its output dropped: a run a test kills.
pub fn spawn_real_run(root: &Path, now: i64) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(root)
        .args(["run", "all", "--no-dry-run"])
        .env("CSIS_NOW", now.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The input fingerprint `csis plan` computes for `series@runtime`: the
/// one a bake's manifest must carry for `lineage record` to take it.
pub fn planned_fingerprint(root: &Path, now: i64, series: &str, runtime: &str) -> String {
    let o = csis_at(root, now, &["plan", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    plan["plan"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["series"] == series && p["runtime"] == runtime)
        .and_then(|p| p["fingerprint"].as_str())
        .unwrap_or_else(|| panic!("no fingerprint for {series}@{runtime} in {plan}"))
        .to_string()
}

/// Stdout and stderr of a command that must have exited 0.
pub fn ok(o: Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(0), "{err}");
    format!("{}{err}", String::from_utf8_lossy(&o.stdout))
}

/// Replace the first `from` in a file of the tree; the text must be there.
pub fn edit(root: &Path, file: &str, from: &str, to: &str) {
    let p = root.join(file);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{file} has no {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}

/// Add `text` at the end of a file of the tree; the file must be there.
pub fn append(root: &Path, file: &str, text: &str) {
    let p = root.join(file);
    let before = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, before + text).unwrap();
}

/// The author and committer of every commit a test makes.
pub fn with_git_identity(cmd: &mut Command) -> &mut Command {
    cmd.env("GIT_AUTHOR_NAME", "Avery Alpha")
        .env("GIT_AUTHOR_EMAIL", "avery.alpha@example.com")
        .env("GIT_COMMITTER_NAME", "Avery Alpha")
        .env("GIT_COMMITTER_EMAIL", "avery.alpha@example.com")
}

/// `git ARGS` in `root`, which must succeed; its stdout.
pub fn git(root: &Path, args: &[&str]) -> String {
    let o = with_git_identity(Command::new("git").current_dir(root).args(args))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// The stderr of `csis --root-dir ROOT --brief validate`, which must
/// refuse the tree (exit 1).
pub fn validate_refuses(root: &Path) -> String {
    let (code, stderr) = brief_validate(root);
    assert_eq!(code, Some(1), "{stderr}");
    stderr
}

/// `csis --root-dir ROOT --brief validate`: its exit code and stderr.
pub fn brief_validate(root: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(root)
        // The tree's own refusals: no provider is asked about vendor
        // images (the clouds are not reachable from the tests).
        .args(["--brief", "validate", "--offline"])
        .env_remove("CSIS_ROOT_DIR")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// `cmd` (a `csis ... watch` command) started with its stderr streamed,
/// line by line, to the receiver.
pub fn watch(cmd: &mut Command) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    let mut child = cmd.stderr(std::process::Stdio::piped()).spawn().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// Lines until one contains `want` (30 s at most); all of them, for the
/// message.
pub fn until(rx: &std::sync::mpsc::Receiver<String>, want: &str) -> Vec<String> {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            let done = line.contains(want);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
    panic!("no line with {want:?} in {seen:#?}");
}

/// A file of tests/e2e (a fixture, a snapshot, a test double).
pub fn here(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/e2e")
        .join(rel)
}

/// A file's text, which must be there.
pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Whether python-hcl2 is installed: the packer and tofu test doubles of
/// tests/e2e/doubles/ parse with it. Without it a test that runs them is
/// skipped, with a notice, unless CSIS_REQUIRE_HCL2 is set.
pub fn hcl2_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import hcl2"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        csis_test_support::skipped_without(
            "CSIS_REQUIRE_HCL2",
            "python-hcl2 is not installed",
            "the packer and tofu test doubles cannot run, this test is skipped",
        );
    }
    ok
}

/// The test doubles' directory: bin/ with the named stand-ins of
/// tests/e2e/doubles/ (`packer`, `tofu`), cloud/ their pretend cloud
/// (calls.log, images.json, state/), made by the doubles as they run.
pub fn doubles(tools: &[&str]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in tools {
        std::fs::copy(here(&format!("doubles/{tool}")), bin.join(tool)).unwrap();
    }
    d
}

/// `csis run all --no-dry-run` at a fixed clock with the doubles of
/// [`doubles`] first on PATH; `env` adds variables such as
/// PACKER_DOUBLE_FAIL or TOFU_DOUBLE_FAIL (unset otherwise).
pub fn real_run(root: &Path, doubles: &Path, now: i64, env: &[(&str, &str)]) -> Output {
    real_run_with(root, doubles, now, env, &[])
}

/// [`real_run`] with more arguments after `run all --no-dry-run`
/// (`--jobs 1`: the bakes one at a time, in the runner script's order).
pub fn real_run_with(
    root: &Path,
    doubles: &Path,
    now: i64,
    env: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let path = format!(
        "{}:{}",
        doubles.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_csis"));
    cmd.current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(["run", "all", "--no-dry-run"])
        .args(args)
        .env("CSIS_NOW", now.to_string())
        .env_remove("CSIS_RUN_ID")
        .env_remove("TOFU_DOUBLE_FAIL")
        .env_remove("PACKER_DOUBLE_FAIL")
        .env("PATH", path)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("CSIS_DOUBLE_CLOUD", doubles.join("cloud"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}
