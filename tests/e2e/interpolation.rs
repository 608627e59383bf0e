//! `${env.NAME}` and `${terraform.KEY}` (spec 003, docs/interpolation.md)
//! through the binary: render raw and resolved, a sensitive output kept
//! out of every output and file, and watch re-planning on a state change.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use csis_test_support::{files_below, tree, write_file};

use crate::support::{csis_at, ok};

const SECRET: &str = "hunter2-do-not-print";

fn state(top_note: &str) -> String {
    format!(
        r#"{{"version": 4, "terraform_version": "1.9.0", "serial": 3, "outputs": {{
  "base_note": {{"value": "base-from-state", "type": "string"}},
  "top_note": {{"value": "{top_note}", "type": "string"}},
  "db_password": {{"value": "{SECRET}", "type": "string", "sensitive": true}},
  "zones": {{"value": ["z1", "z2"], "type": ["list", "string"]}}
}}, "resources": []}}"#
    )
}

/// local-run with a state source, images whose modifications read it, and
/// an instance that reads a sensitive output and the environment.
fn interp_tree() -> tempfile::TempDir {
    let t = tree("local-run");
    let r = t.path();
    crate::support::append(
        r,
        "cfg/_config.yml",
        "interpolation:\n  terraform:\n    - name: net\n      path: state/net.tfstate\n",
    );
    write_file(r, "state/net.tfstate", &state("top-one"));
    crate::support::edit(
        r,
        "images/chain.yml",
        "echo base > ",
        "echo ${terraform.base_note} > ",
    );
    crate::support::edit(
        r,
        "images/chain.yml",
        "echo \"{{ image.name }}\" > ",
        "echo ${terraform.top_note} > ",
    );
    write_file(
        r,
        "instances/box.env",
        "# the box's own\nBOX_ROLE=\"from-env-file\"\n",
    );
    crate::support::edit(
        r,
        "instances/box.yml",
        "    image: top\n",
        "    image: top\n    env_file: instances/box.env\n    tags:\n      role: \"${env.box_role}\"\n      db: \"${terraform.db_password}\"\n",
    );
    // The sensitive output in a value csis writes (user-data, launch
    // parameters): it is written as its placeholder.
    crate::support::edit(
        r,
        "instances/box.yml",
        "> \"$CSIS_INSTANCE_DIR/greeting\"",
        "> \"$CSIS_INSTANCE_DIR/greeting\"; echo 'pw=${terraform.db_password}' > /dev/null",
    );
    t
}

#[test]
fn render_shows_raw_placeholders_and_resolved_values() {
    let t = interp_tree();
    let r = t.path();
    let raw = ok(csis_at(r, 1_796_226_804, &["config", "render", "--raw"]));
    assert!(raw.contains("${terraform.top_note}"), "{raw}");
    assert!(raw.contains("${env.box_role}"), "{raw}");
    let resolved = ok(csis_at(r, 1_796_226_804, &["config", "render"]));
    assert!(resolved.contains("echo top-one > "), "{resolved}");
    assert!(resolved.contains("from-env-file"), "{resolved}");
    assert!(!resolved.contains("${terraform.top_note}"), "{resolved}");
    // The sensitive output prints as its placeholder.
    assert!(resolved.contains("${terraform.db_password}"), "{resolved}");
    assert!(!resolved.contains(SECRET));
}

#[test]
fn a_missing_key_fails_naming_section_entry_key_and_place() {
    let t = interp_tree();
    let r = t.path();
    crate::support::edit(
        r,
        "images/chain.yml",
        "terraform.top_note",
        "terraform.nope",
    );
    let o = csis_at(r, 1_796_226_804, &["validate", "--brief"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("images/chain.yml:23:17:")
            && err.contains("interpolation: images entry 'top', field 'modifications[0].script': terraform key 'nope' is not an output of state/net.tfstate"),
        "{err}"
    );
}

#[test]
fn a_missing_env_fails_or_is_tolerated_with_one_warning_per_name() {
    let t = interp_tree();
    let r = t.path();
    crate::support::edit(
        r,
        "instances/box.yml",
        "${env.box_role}",
        "${env.CSIS_TEST_UNSET_A} ${env.CSIS_TEST_UNSET_A}",
    );
    let o = csis_at(r, 1_796_226_804, &["validate", "--brief"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("interpolation: instances entry 'box', field 'tags.role': environment variable 'CSIS_TEST_UNSET_A' is not set"),
        "{err}"
    );
    for args in [
        &["--tolerate-missing-env", "validate", "--brief"][..],
        &["validate", "--brief", "--tolerate-missing-env"][..],
    ] {
        let o = csis_at(r, 1_796_226_804, args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert_eq!(
            err.matches("warning: environment variable 'CSIS_TEST_UNSET_A' is not set; substituted <missing env CSIS_TEST_UNSET_A>").count(),
            1,
            "{err}"
        );
    }
    let resolved = ok(csis_at(
        r,
        1_796_226_804,
        &["--tolerate-missing-env", "config", "render"],
    ));
    assert!(
        resolved.contains("<missing env CSIS_TEST_UNSET_A> <missing env CSIS_TEST_UNSET_A>"),
        "{resolved}"
    );
}

/// Every file below `dir` that holds `needle`, except `skip`.
fn files_holding(dir: &Path, needle: &str, skip: &str) -> Vec<String> {
    files_below(dir)
        .into_iter()
        .filter(|(rel, _)| rel != skip)
        .filter(|(_, p)| {
            std::fs::read(p)
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
        })
        .map(|(rel, _)| rel)
        .collect()
}

#[test]
fn a_sensitive_output_never_appears_in_outputs_or_files() {
    let t = interp_tree();
    let r = t.path();
    let mut captured = String::new();
    for args in [
        &["validate"][..],
        &["config", "render"][..],
        &["run", "all", "--no-dry-run"][..],
        &["plan", "--explain"][..],
        &["run", "all"][..],
    ] {
        let o = csis_at(r, 1_796_226_804, args);
        captured.push_str(&String::from_utf8_lossy(&o.stdout));
        captured.push_str(&String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {captured}");
    }
    assert!(!captured.contains(SECRET), "{captured}");
    assert!(r.join("meta-state").is_dir() && r.join("generated").is_dir());
    let leaks = files_holding(r, SECRET, "state/net.tfstate");
    assert!(
        leaks.is_empty(),
        "the sensitive value is in clear in {leaks:?}"
    );
}

#[test]
fn watch_replans_only_the_entries_that_read_a_changed_output() {
    let t = interp_tree();
    let r = t.path();
    ok(csis_at(r, 1_796_226_804, &["run", "all", "--no-dry-run"]));
    let (mut child, rx) = crate::support::watch(
        Command::new(env!("CARGO_BIN_EXE_csis"))
            .arg("--root-dir")
            .arg(r)
            .args(["watch", "all"]),
    );
    crate::support::until(&rx, "Watching for changes");
    std::fs::write(r.join("state/net.tfstate"), state("top-two")).unwrap();
    let mut block = crate::support::until(&rx, "state/net.tfstate changed; re-planned in");
    assert!(
        block.last().unwrap().contains("queries executed"),
        "a state change re-plans in place: {block:#?}"
    );
    // What follows the header up to the next quiet moment.
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(1500)) {
        block.push(line);
    }
    let printed = block.join("\n");
    assert!(
        printed.contains("  top@here: skip: current -> bake: inputs changed (fingerprint "),
        "{printed}"
    );
    assert!(
        printed.contains("(interpolated from terraform output top_note of state/net.tfstate)"),
        "{printed}"
    );
    for other in ["base@here", "mid@here"] {
        assert!(!printed.contains(other), "{other} moved: {printed}");
    }
    assert!(!printed.contains(SECRET));
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
