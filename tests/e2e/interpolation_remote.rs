//! `${terraform.KEY}` from sources on s3 and gcs state backends
//! (docs/interpolation.md) through the binary: the state object read by
//! the backend plugin's command, run with the `aws` and `gcloud` of
//! tests/e2e/doubles/ (TEST DOUBLES that never ship) first on PATH; the
//! exact argv, the value in `config render`, a sensitive output kept out
//! of every output and file, and the load error when the command fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use csis_test_support::{files_below, tree, write_file};

use crate::support::ok;

const SECRET: &str = "remote-hunter2-do-not-print";

fn here(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/e2e")
        .join(rel)
}

/// local-run with an s3 source (one object for every entry) and a gcs
/// source whose workspace takes `{name}` (one object per entry).
fn remote_tree() -> tempfile::TempDir {
    let t = tree("local-run");
    let r = t.path();
    crate::support::append(
        r,
        "cfg/_config.yml",
        "interpolation:\n  terraform:\n    - {name: net, backend: corp, workspace: network}\n    - {name: own, backend: gstate, workspace: \"{name}-app\"}\n",
    );
    let builders = std::fs::read_to_string(r.join("cfg/builders.yml")).unwrap();
    write_file(
        r,
        "cfg/builders.yml",
        &format!(
            "{builders}state_backends:\n  - {{name: corp, type: s3, is_default: true, config: {{bucket: corp-state, prefix: csis/, region: eu-west-1, profile: ops}}}}\n  - {{name: gstate, type: gcs, config: {{bucket: g-state, prefix: env/}}}}\n"
        ),
    );
    crate::support::edit(
        r,
        "instances/box.yml",
        "    image: top\n",
        "    image: top\n    tags:\n      subnet: \"${terraform.net.subnet_id}\"\n      db: \"${terraform.net.db_password}\"\n      role: \"${terraform.own.role}\"\n",
    );
    t
}

/// The doubles' directory: bin/ with the stand-in `aws` and `gcloud`,
/// cloud/ their pretend buckets (objects/, calls.log).
fn doubles() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["aws", "gcloud"] {
        std::fs::copy(here(&format!("doubles/{tool}")), bin.join(tool)).unwrap();
    }
    let cloud = d.path().join("cloud");
    write_file(
        &cloud,
        "objects/corp-state/csis/network.tfstate",
        &format!(
            r#"{{"version": 4, "terraform_version": "1.9.0", "serial": 7, "outputs": {{
  "subnet_id": {{"value": "subnet-from-s3", "type": "string"}},
  "db_password": {{"value": "{SECRET}", "type": "string", "sensitive": true}}
}}, "resources": []}}"#
        ),
    );
    write_file(
        &cloud,
        "objects/g-state/env/box-app/default.tfstate",
        r#"{"version": 4, "outputs": {"role": {"value": "role-from-gcs", "type": "string"}}}"#,
    );
    d
}

/// csis with the doubles first on PATH.
fn csis_with(root: &Path, doubles: &Path, args: &[&str]) -> Output {
    let path = format!(
        "{}:{}",
        doubles.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("CSIS_NOW", "1796226804")
        .env_remove("CSIS_RUN_ID")
        .env("PATH", path)
        .env("CSIS_STATE_DOUBLE", doubles.join("cloud"))
        .output()
        .unwrap()
}

/// The doubles' calls, then emptied.
fn take_calls(doubles: &Path) -> Vec<String> {
    let path = doubles.join("cloud/calls.log");
    let log = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    log.lines().map(str::to_string).collect()
}

#[test]
fn render_reads_each_remote_state_once_with_the_backends_cli() {
    let t = remote_tree();
    let r = t.path();
    let d = doubles();
    let resolved = ok(csis_with(r, d.path(), &["config", "render"]));
    // One call per object, in the order of their locations.
    assert_eq!(
        take_calls(d.path()),
        [
            "gcloud storage cat gs://g-state/env/box-app/default.tfstate",
            "aws s3 cp s3://corp-state/csis/network.tfstate - --region eu-west-1 --profile ops",
        ]
    );
    assert!(resolved.contains("subnet: subnet-from-s3"), "{resolved}");
    assert!(resolved.contains("role: role-from-gcs"), "{resolved}");
    // The sensitive output prints as its placeholder.
    assert!(
        resolved.contains("${terraform.net.db_password}"),
        "{resolved}"
    );
    assert!(!resolved.contains(SECRET));
    // --raw shows the placeholders as written.
    let raw = ok(csis_with(r, d.path(), &["config", "render", "--raw"]));
    assert!(raw.contains("${terraform.own.role}"), "{raw}");
}

#[test]
fn a_sensitive_remote_output_never_appears_in_outputs_or_files() {
    let t = remote_tree();
    let r = t.path();
    let d = doubles();
    let mut captured = String::new();
    for args in [
        &["validate"][..],
        &["config", "render"][..],
        &["run", "all", "--no-dry-run"][..],
        &["plan", "--explain"][..],
    ] {
        let o = csis_with(r, d.path(), args);
        captured.push_str(&String::from_utf8_lossy(&o.stdout));
        captured.push_str(&String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {captured}");
    }
    assert!(!captured.contains(SECRET), "{captured}");
    assert!(r.join("meta-state").is_dir() && r.join("generated").is_dir());
    let leaks: Vec<String> = files_below(r)
        .into_iter()
        .filter(|(_, p)| {
            std::fs::read(p)
                .map(|b| String::from_utf8_lossy(&b).contains(SECRET))
                .unwrap_or(false)
        })
        .map(|(rel, _)| rel)
        .collect();
    assert!(
        leaks.is_empty(),
        "the sensitive value is in clear in {leaks:?}"
    );
}

#[test]
fn a_failing_state_command_is_a_load_error_saying_what_to_do() {
    let t = remote_tree();
    let r = t.path();
    let d = doubles();
    std::fs::remove_file(
        d.path()
            .join("cloud/objects/corp-state/csis/network.tfstate"),
    )
    .unwrap();
    let o = csis_with(r, d.path(), &["validate", "--brief"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{err}");
    let first = err
        .lines()
        .find(|l| l.contains("interpolation source"))
        .unwrap_or_default();
    assert_eq!(
        first,
        "interpolation source 'net' (state backend 'corp', s3): s3://corp-state/csis/network.tfstate: \
`aws s3 cp s3://corp-state/csis/network.tfstate - --region eu-west-1 --profile ops` exited 1: \
fatal error: An error occurred (404) when calling the HeadObject operation: Key \"csis/network.tfstate\" does not exist -- \
check that the AWS CLI can read s3://corp-state/csis/network.tfstate with your credentials \
(aws sts get-caller-identity --profile ops; AWS_PROFILE or the backend's config.profile) and that the object exists",
        "{err}"
    );
}
