//! Runs a person can watch: a real run's step output streamed as it
//! comes, each step closed by its wall time, and the progress bar on a
//! terminal only.

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use csis_test_support::tree;

const NOW: &str = "1796226804";

/// The step that bakes image `base` of fixtures/local-run.
const BAKE_BASE: &str =
    "\"$CSIS\" local bake --spec bake/image-generation/bake-image-generation-base.json";

/// fixtures/local-run with image `base`'s modification printing a line,
/// pausing `sleep` seconds, then printing another.
fn slow_tree(sleep: u32) -> tempfile::TempDir {
    let t = tree("local-run");
    crate::support::edit(
        t.path(),
        "images/chain.yml",
        "script: echo base > \"$CSIS_IMAGE_ROOT/etc/layer-base\"",
        &format!("script: echo step-one; sleep {sleep}; echo step-two"),
    );
    t
}

fn run_command(root: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_csis"));
    c.current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(["run", "all", "--no-dry-run"])
        .env("USER", "avery")
        .env("CSIS_NOW", NOW)
        .env_remove("CSIS_RUN_ID")
        .env_remove("CI");
    c
}

/// The modification's `step-one` reaches the log while it sleeps, not
/// with `step-two` when the step ends; the step closes with its `done in`
/// line, prefixed like its output.
#[test]
fn a_real_run_streams_each_line_the_moment_the_step_prints_it() {
    let t = slow_tree(2);
    // The run's log is on stderr.
    let mut child = run_command(t.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines: Vec<(Instant, String)> = Vec::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        lines.push((Instant::now(), line.unwrap()));
    }
    let status = child.wait().unwrap();
    let log: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert!(status.success(), "{log:#?}");
    let at = |want: &str| {
        lines
            .iter()
            .position(|(_, l)| l == want)
            .unwrap_or_else(|| panic!("no line {want:?} in {log:#?}"))
    };
    // A bake's lines carry the bake's name.
    let executing = at(&format!("[base@here] executing {BAKE_BASE}"));
    let one = at("[base@here] step-one");
    let two = at("[base@here] step-two");
    assert!(executing < one && one < two, "{log:#?}");
    let gap = lines[two].0 - lines[one].0;
    assert!(
        gap >= Duration::from_secs(1),
        "step-one came only {gap:?} before step-two: buffered, not streamed"
    );
    // The step's last line: `done in <wall time>: <command line>`.
    let done = lines
        .iter()
        .position(|(_, l)| {
            l.starts_with("[base@here] done in ") && l.ends_with(&format!(": {BAKE_BASE}"))
        })
        .unwrap_or_else(|| panic!("no done line for the bake of base in {log:#?}"));
    assert!(two < done, "{log:#?}");
    assert!(
        lines[two + 1..done]
            .iter()
            .all(|(_, l)| !l.contains(" executing ")),
        "{log:#?}"
    );
    // At least the sleep: `2.0s` or more, seconds with one decimal.
    let took = log[done]
        .strip_prefix("[base@here] done in ")
        .and_then(|rest| rest.split_once("s: "))
        .map(|(secs, _)| secs.parse::<f64>().unwrap())
        .unwrap();
    assert!(took >= 2.0, "{}", log[done]);
    // Every executed step closes with its own done line.
    let executed = log.iter().filter(|l| l.contains("] executing ")).count();
    let closed = log.iter().filter(|l| l.contains("] done in ")).count();
    assert_eq!(executed, closed, "{log:#?}");
}

/// Piped, the log is plain lines: no bar, no carriage return, no escape
/// sequence.
#[test]
fn a_piped_run_draws_no_progress_bar() {
    let t = tree("local-run");
    let out = run_command(t.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("] done in "), "{err}");
    for s in [&out.stdout, &out.stderr] {
        let s = String::from_utf8_lossy(s);
        assert!(!s.contains('\r'), "{s:?}");
        assert!(!s.contains('\u{1b}'), "{s:?}");
        assert!(!bar_shows(&s, ""), "{s:?}");
    }
}

/// The run under a pseudo-terminal (`script`), what the terminal showed.
fn on_a_terminal(root: &Path, env: &[(&str, &str)]) -> String {
    let cmd = format!(
        "{} --root-dir {} run all --no-dry-run",
        env!("CARGO_BIN_EXE_csis"),
        root.display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(root)
        .env("USER", "avery")
        .env("CSIS_NOW", NOW)
        .env_remove("CSIS_RUN_ID")
        .env_remove("CI")
        .env("TERM", "xterm")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Whether `text` holds a bar's `step N/M <step>` with `step` running.
fn bar_shows(text: &str, step: &str) -> bool {
    text.match_indices(" step ").any(|(i, m)| {
        let rest = &text[i + m.len()..];
        let Some((count, after)) = rest.split_once(' ') else {
            return false;
        };
        let counted = count.split_once('/').is_some_and(|(done, total)| {
            [done, total]
                .iter()
                .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        });
        counted && after.starts_with(step)
    })
}

/// On a terminal the steps done/total and the step now running show in a
/// bar below the log; with CI set there is none.
#[test]
fn a_terminal_shows_the_progress_bar_unless_ci() {
    // The bar names the bakes in flight.
    let running = "instance-image/execution: baking base@here";
    let t = slow_tree(1);
    let shown = on_a_terminal(t.path(), &[]);
    assert!(shown.contains("[base@here] step-two"), "{shown}");
    assert!(bar_shows(&shown, running), "{shown:?}");
    let t = slow_tree(1);
    let ci = on_a_terminal(t.path(), &[("CI", "true")]);
    assert!(ci.contains("[base@here] step-two"), "{ci}");
    assert!(!bar_shows(&ci, running), "{ci:?}");
    assert!(!ci.contains('\u{1b}'), "{ci:?}");
}
