//! csis in the shell: completion scripts and the man page.

use std::process::Command;

fn csis(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .args(args)
        .output()
        .unwrap()
}

/// Every shell's completion script is what that shell parses, and
/// calls csis back (tests/e2e/completion.rs runs bash's).
#[test]
fn completion_scripts_are_generated() {
    let t = tempfile::tempdir().unwrap();
    for (shell, check) in [
        ("bash", Some(["bash", "-n"])),
        ("zsh", None),
        ("fish", None),
        ("elvish", None),
        ("powershell", None),
    ] {
        let out = csis(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains("CSIS_COMPLETE"), "{shell}: {script}");
        assert!(
            script.contains(env!("CARGO_BIN_EXE_csis")),
            "{shell}: {script}"
        );
        if let Some([program, flag]) = check {
            let path = t.path().join(format!("csis.{shell}"));
            std::fs::write(&path, &script).unwrap();
            let parsed = Command::new(program).arg(flag).arg(&path).output().unwrap();
            assert!(
                parsed.status.success(),
                "{shell}: {}",
                String::from_utf8_lossy(&parsed.stderr)
            );
        }
    }
}

/// `csis man` is a roff page for section 1 naming every command.
#[test]
fn the_man_page_is_roff() {
    let out = csis(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH csis 1"), "{page}");
    assert!(page.contains("csis\\-validate"), "{page}");
}

/// docs/cli.md lists every command `csis --help` lists.
#[test]
fn the_cli_reference_lists_every_command() {
    let help = String::from_utf8(csis(&["--help"]).stdout).unwrap();
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md"),
    )
    .unwrap();
    let commands = help
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap();
    for line in commands.lines() {
        let name = line.split_whitespace().next().unwrap();
        assert!(
            doc.contains(&format!("\n  {name} ")),
            "docs/cli.md does not list `{name}`"
        );
    }
}

/// `validate` of a tree with one refusal, under a pseudo-terminal
/// (`script`), with the given environment and flags.
fn on_a_terminal(env: &[(&str, &str)], flags: &str) -> String {
    let t = csis_test_support::tree("local-run");
    let builders = t.path().join("cfg/builders.yml");
    let text = std::fs::read_to_string(&builders).unwrap();
    std::fs::write(&builders, text.replacen("type: local", "type: lcoal", 1)).unwrap();
    let cmd = format!(
        "{} --root-dir {} {flags} validate",
        env!("CARGO_BIN_EXE_csis"),
        t.path().display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Colour on a terminal, unless NO_COLOR (any non-empty value) or
/// `--color never`; `--color always` colours a pipe too, which is plain
/// and unwrapped by default.
#[test]
fn colour_follows_the_terminal_no_color_and_the_flag() {
    const ESC: &str = "\u{1b}[";
    let plain = on_a_terminal(&[], "");
    assert!(plain.contains("lcoal"), "{plain}");
    assert!(plain.contains(ESC), "no colour on a terminal:\n{plain}");
    assert!(!on_a_terminal(&[("NO_COLOR", "1")], "").contains(ESC));
    assert!(!on_a_terminal(&[], "--color never").contains(ESC));
    assert!(on_a_terminal(&[("NO_COLOR", "")], "").contains(ESC));

    let t = csis_test_support::tree("config");
    let piped = |flags: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_csis"))
            .arg("--root-dir")
            .arg(t.path())
            .args(flags)
            .arg("validate")
            .env_remove("NO_COLOR")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let default = piped(&[]);
    assert!(!default.contains(ESC), "{default}");
    // Not wrapped: a long warning stays one line.
    assert!(
        default.lines().any(|l| l.contains(
            "user-data account 'casey.charlie' is granted sudo, but its name holds a dot, so instance-setup skips the grant at boot"
        )),
        "{default}"
    );
    assert!(piped(&["--color", "always"]).contains(ESC));
}

/// `plan --help` says what `--format` takes and offers no flag that only
/// a real run reads.
#[test]
fn plan_help_describes_format_and_offers_no_run_only_flag() {
    let help = String::from_utf8(csis(&["plan", "--help"]).stdout).unwrap();
    assert!(
        help.contains("text (a line per decision), json (the plan report on stdout) or"),
        "{help}"
    );
    assert!(
        help.contains("[possible values: text, json, matrix]"),
        "{help}"
    );
    assert!(!help.contains("--allow-unscoped-bakes"), "{help}");
    let run = String::from_utf8(csis(&["run", "--help"]).stdout).unwrap();
    assert!(run.contains("--allow-unscoped-bakes"), "{run}");
}

/// `csis graph` of the example, in both formats, equals the reviewed
/// drawings in fixtures/expected/ (`CSIS_UPDATE_EXPECT=1` rewrites them).
#[test]
fn the_example_graph_in_dot_and_mermaid() {
    let t = csis_test_support::tree("config");
    for (format, file) in [("dot", "config-graph.dot"), ("mermaid", "config-graph.mmd")] {
        let out = Command::new(env!("CARGO_BIN_EXE_csis"))
            .arg("--root-dir")
            .arg(t.path())
            .args(["graph", "--format", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}");
        let got = String::from_utf8(out.stdout).unwrap();
        let path = csis_test_support::fixture_dir("expected").join(file);
        if std::env::var("CSIS_UPDATE_EXPECT").is_ok() {
            std::fs::write(&path, &got).unwrap();
        }
        assert_eq!(got, std::fs::read_to_string(&path).unwrap(), "{format}");
    }
}

/// With --lineage, the recorded builds, their parents and the pins.
#[test]
fn the_graph_with_lineage_draws_builds_and_pins() {
    let t = csis_test_support::tree("local-run");
    let run = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(t.path())
        .args(["run", "all", "--no-dry-run"])
        .env("CSIS_NOW", "1796226804")
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(t.path())
        .args(["graph", "--lineage"])
        .output()
        .unwrap();
    let dot = String::from_utf8(out.stdout).unwrap();
    for line in [
        "  \"build:top-here-2026_12_02T15_53_24\" [label=\"top-here-2026_12_02T15_53_24\", shape=note];",
        "  \"build:top-here-2026_12_02T15_53_24\" -> \"build:mid-here-2026_12_02T15_53_24\" [label=\"parent\"];",
        "  \"build:top-here-2026_12_02T15_53_24\" -> \"image:top\" [label=\"of\"];",
        "  \"image:top\" -> \"build:mid-here-2026_12_02T15_53_24\" [label=\"pin top@here\"];",
        "  \"instance:box\" -> \"build:top-here-2026_12_02T15_53_24\" [label=\"pin\"];",
    ] {
        assert!(dot.lines().any(|l| l == line), "no {line} in:\n{dot}");
    }
}

/// A command's --help keeps the global options apart; the top-level list
/// leaves the plumbing out and names it after the list.
#[test]
fn help_sets_the_global_options_and_the_plumbing_apart() {
    let plan = String::from_utf8(csis(&["plan", "--help"]).stdout).unwrap();
    let (own, global) = plan.split_once("\nGlobal options:\n").unwrap();
    assert!(own.contains("--format <FORMAT>"), "{plan}");
    assert!(!own.contains("--root-dir"), "{plan}");
    assert!(global.contains("--root-dir <ROOT_DIR>"), "{plan}");
    let top = String::from_utf8(csis(&["--help"]).stdout).unwrap();
    let (list, after) = top.split_once("\nPlumbing").unwrap();
    for plumbing in ["gate-plan", "apply-check", "state-migration", "unmount"] {
        assert!(!list.contains(&format!("\n  {plumbing} ")), "{top}");
        assert!(after.contains(&format!("\n  {plumbing} ")), "{top}");
        // Still there, with its own help.
        assert_eq!(csis(&[plumbing, "--help"]).status.code(), Some(0));
    }
    let lineage = String::from_utf8(csis(&["lineage", "--help"]).stdout).unwrap();
    assert!(!lineage.contains("  record "), "{lineage}");
    let watch = csis(&["watch", "--generate"]);
    assert_eq!(watch.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&watch.stderr).contains("<LIFECYCLE>..."),
        "{}",
        String::from_utf8_lossy(&watch.stderr)
    );
}

/// `csis man --dir` writes a page for every command, and every page a
/// page names is among them.
#[test]
fn every_man_page_named_exists() {
    let t = tempfile::tempdir().unwrap();
    let out = csis(&["man", "--dir", t.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let pages: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    for page in ["csis.1", "csis-run.1", "csis-lineage-show.1", "csis-init.1"] {
        assert!(pages.iter().any(|p| p == page), "{page}: {pages:?}");
    }
    for page in &pages {
        let text = std::fs::read_to_string(t.path().join(page)).unwrap();
        for named in text
            .split("(1)")
            .filter_map(|s| s.rsplit([' ', '\n']).next())
        {
            let named = named.replace("\\-", "-").replace("\\fB", "");
            if named.starts_with("csis-") {
                assert!(
                    pages.contains(&format!("{named}.1")),
                    "{page} names {named}"
                );
            }
        }
    }
    let run = csis(&["man", "run"]);
    assert!(String::from_utf8_lossy(&run.stdout).contains(".TH csis-run 1"));
    let nope = csis(&["man", "nope"]);
    assert_eq!(nope.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&nope.stderr),
        "error: man: no page for 'csis nope'; `csis --help` lists the commands\n"
    );
}

/// `csis run` alone names the lifecycles it could run (exit 2, before any
/// tree is read).
#[test]
fn run_without_a_lifecycle_lists_them() {
    let out = csis(&["--root-dir", "/nonexistent", "run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: csis run needs the lifecycles to run: `all`, or one or more of identity, storage, base-image, instance-image, release, retention\n"),
        "{err}"
    );
}
