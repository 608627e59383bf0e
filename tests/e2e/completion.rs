//! `csis completions bash` sourced into a real bash: TAB asks the binary,
//! which completes lifecycles from the registry and image, instance and
//! runtime names from the tree the words name.

use std::path::Path;
use std::process::Command;

/// What bash offers at the end of `line` (its last word is the one being
/// completed), the script sourced from `csis completions bash`, run in
/// `cwd`; the options (`--...`) left out unless `flags`.
fn offered(cwd: &Path, line: &str, flags: bool) -> Vec<String> {
    let script = r#"source <("$CSIS" completions bash) || exit 9
read -r -a COMP_WORDS <<< "$LINE"
case "$LINE" in *' ') COMP_WORDS+=("") ;; esac
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_clap_complete_csis csis "${COMP_WORDS[$COMP_CWORD]}" "${COMP_WORDS[$COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#;
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env("CSIS", env!("CARGO_BIN_EXE_csis"))
        .env("LINE", line)
        .env_remove("CSIS_ROOT_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{line}: {stderr}");
    // The completer never writes to the terminal the user is typing in.
    assert_eq!(stderr, "", "{line}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|w| !w.is_empty() && (flags || !w.starts_with('-')))
        .map(str::to_string)
        .collect()
}

#[test]
fn lifecycles_come_from_the_registry() {
    let t = csis_test_support::plain_tree("config");
    assert_eq!(
        offered(t.path(), "csis run ", false),
        [
            "all",
            "identity",
            "storage",
            "base-image",
            "instance-image",
            "release",
            "retention"
        ]
    );
    assert_eq!(
        offered(t.path(), "csis run identity i", false),
        ["identity", "instance-image"]
    );
    assert_eq!(
        offered(t.path(), "csis watch --generate st", false),
        ["storage"]
    );
}

#[test]
fn names_come_from_the_tree_the_words_name() {
    let t = csis_test_support::plain_tree("config");
    let root = t.path().to_string_lossy().to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    // Images and the OS builders whose base images bake, by --root-dir
    // from outside the tree.
    assert_eq!(
        offered(
            elsewhere.path(),
            &format!("csis --root-dir {root} run all --only "),
            false
        ),
        [
            "alma-base",
            "alma-tools",
            "alma10",
            "debian-batch",
            "debian12",
            "research-workstation"
        ]
    );
    assert_eq!(
        offered(
            elsewhere.path(),
            &format!("csis --root-dir={root} plan --force-bake d"),
            false
        ),
        ["debian-batch", "debian12"]
    );
    // The root found from a directory inside the tree, as every command
    // finds it.
    let inside = t.path().join("images");
    assert_eq!(
        offered(&inside, "csis plan --only-runtime ", false),
        ["dummy-cloud", "local"]
    );
    assert_eq!(
        offered(&inside, "csis verify instance ", false),
        ["batch-01", "ws-01"]
    );
    assert_eq!(
        offered(&inside, "csis upgrade instance ", false),
        ["batch-01", "ws-01"]
    );
    assert_eq!(
        offered(&inside, "csis upgrade image alma-", false),
        ["alma-base", "alma-tools"]
    );
    assert_eq!(
        offered(&inside, "csis test-mods r", false),
        ["research-workstation"]
    );
}

#[test]
fn options_and_commands_complete_as_the_help_lists_them() {
    let t = csis_test_support::plain_tree("config");
    assert_eq!(
        offered(t.path(), "csis run all --no-d", true),
        ["--no-dry-run"]
    );
    assert_eq!(offered(t.path(), "csis ver", false), ["verify"]);
    // The plumbing is left out of the list, as from --help, and offered
    // once its name is begun.
    let commands = offered(t.path(), "csis ", false);
    assert!(commands.iter().any(|c| c == "validate"), "{commands:?}");
    assert!(!commands.iter().any(|c| c == "gate-plan"), "{commands:?}");
    assert_eq!(offered(t.path(), "csis gate", false), ["gate-plan"]);
}

#[test]
fn outside_any_tree_names_are_simply_not_offered() {
    let nowhere = tempfile::tempdir().unwrap();
    assert_eq!(
        offered(nowhere.path(), "csis run all --only ", false),
        Vec::<String>::new()
    );
    assert_eq!(
        offered(nowhere.path(), "csis run base", false),
        ["base-image"]
    );
}
