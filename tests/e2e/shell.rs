//! csis in the shell: completion scripts and the man page.

use std::process::Command;

fn csis(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .args(args)
        .output()
        .unwrap()
}

/// The bash completion script parses as bash and completes every
/// subcommand `csis --help` lists.
#[test]
fn bash_completions_are_generated() {
    let out = csis(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.starts_with("_csis() {"), "{script}");
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("csis.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    for sub in [
        "validate",
        "run",
        "plan",
        "watch",
        "upgrade",
        "completions",
        "man",
    ] {
        assert!(
            script.contains(&format!("csis,{sub})")),
            "no {sub} in:\n{script}"
        );
    }
    for shell in ["zsh", "fish", "powershell"] {
        let out = csis(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(!out.stdout.is_empty(), "{shell}");
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
