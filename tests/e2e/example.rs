//! The example tree, fixtures/config, as a newcomer runs it.

use std::path::Path;
use std::process::Command;

fn csis(args: &[&str]) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/config");
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
    let left = csis_engine::render::unresolved_tags(&tree);
    assert!(left.is_empty(), "unresolved: {left:?}");
    assert_eq!(tree["config"]["systemuser"], "avery");
    let raw = csis(&["config", "render", "--raw"]);
    assert!(String::from_utf8_lossy(&raw.stdout).contains("{{"));
}

#[test]
fn a_refusal_shows_file_line_column_and_the_snippet() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cfg");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(
        cfg.join("_config.yml"),
        "id: t\nruntime_builders:\n  - name: here\n    type: local\n    is_default: true\n    default_machine_type: small\n    colour: blue\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(dir.path())
        .arg("validate")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "Runtime builder here: unknown key 'colour' (Extra inputs are not permitted)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("[cfg/_config.yml:7:5]"), "{stderr}");
    assert!(stderr.contains("7 │     colour: blue"), "{stderr}");
    assert!(stderr.contains("cfg/_config.yml:7:5"), "{stderr}");
    assert!(stderr.ends_with("validate: 1 error(s)\n"), "{stderr}");
}
