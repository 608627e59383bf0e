//! The example tree, fixtures/config, as a newcomer runs it.

use std::process::Command;

use csis_test_support::{fixture_dir, temp_tree, write_file};

fn csis(args: &[&str]) -> std::process::Output {
    let root = fixture_dir("config");
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(&root)
        .args(args)
        .env("USER", "avery")
        .output()
        .unwrap()
}

#[test]
fn the_example_tree_validates() {
    let out = csis(&["validate"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.ends_with("validate: ok\n"), "{stderr}");
}

#[test]
fn render_resolves_every_templated_value() {
    let out = csis(&["config", "render", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let left = csis_engine::load::render::unresolved_tags(&tree);
    assert!(left.is_empty(), "unresolved: {left:?}");
    assert_eq!(tree["config"]["systemuser"], "avery");
    let raw = csis(&["config", "render", "--raw"]);
    assert!(String::from_utf8_lossy(&raw.stdout).contains("{{"));
}

#[test]
fn a_refusal_shows_file_line_column_and_the_snippet() {
    let dir = temp_tree([(
        "cfg/_config.yml",
        "id: t\nruntime_builders:\n  - name: here\n    type: local\n    is_default: true\n    default_machine_type: small\n    colour: blue\n",
    )]);
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(dir.path())
        .arg("validate")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Runtime builder here: unknown key 'colour'"),
        "{stderr}"
    );
    assert!(stderr.contains("[cfg/_config.yml:7:5]"), "{stderr}");
    assert!(stderr.contains("7 │     colour: blue"), "{stderr}");
    assert!(stderr.contains("cfg/_config.yml:7:5"), "{stderr}");
    assert!(stderr.ends_with("validate: 1 error(s)\n"), "{stderr}");
}

#[test]
fn executable_versions_are_checked_against_their_specifiers() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("tool");
    std::fs::write(&tool, "#!/bin/sh\necho 'tool version 1.14.2 (linux)'\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let silent = dir.path().join("silent");
    std::fs::write(&silent, "#!/bin/sh\necho 'no version here'\n").unwrap();
    std::fs::set_permissions(&silent, std::fs::Permissions::from_mode(0o755)).unwrap();
    write_file(
        dir.path(),
        "cfg/_config.yml",
        &format!(
            "id: t\nruntime_builders:\n  - {{name: here, type: local, is_default: true, default_machine_type: s}}\nexecutables:\n  - {{name: good, binary: {t}, version: \">=1.14, <1.15\"}}\n  - {{name: old, binary: {t}, version: \"~=1.15.0\"}}\n  - {{name: mute, binary: {s}, version: \">=1\"}}\n",
            t = tool.display(),
            s = silent.display()
        ),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--brief")
        .arg("--root-dir")
        .arg(dir.path())
        .arg("validate")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Executables: good 1.14.2 ok (>=1.14, <1.15)"),
        "{stderr}"
    );
    assert!(stderr.contains("cfg/_config.yml:6:5: old 1.14.2 does not meet its requirement ~=1.15.0 (cfg/executables.yml)"), "{stderr}");
    assert!(stderr.contains("cfg/_config.yml:7:5: mute: GenericVersionChecker could not parse a version from 'no version here'"), "{stderr}");
}
