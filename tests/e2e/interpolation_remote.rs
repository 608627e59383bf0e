//! `${terraform.KEY}` from sources on s3 and gcs state backends
//! (docs/interpolation.md) through the binary: the s3 object read through
//! the AWS SDK from moto's S3 (a real S3 API server, started per test),
//! the gcs one by `gcloud` of tests/e2e/doubles/ (a TEST DOUBLE that never
//! ships) first on PATH; the value in `config render`, a sensitive output
//! kept out of every output and file, and the load error when a read
//! fails.

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

/// The state of the s3 source's workspace, with a sensitive output.
fn network_state() -> String {
    format!(
        r#"{{"version": 4, "terraform_version": "1.9.0", "serial": 7, "outputs": {{
  "subnet_id": {{"value": "subnet-from-s3", "type": "string"}},
  "db_password": {{"value": "{SECRET}", "type": "string", "sensitive": true}}
}}, "resources": []}}"#
    )
}

/// moto's S3 with the bucket of the s3 source (in eu-west-1, as the
/// backend says) and, when `object`, its workspace's state; and the
/// doubles' directory: bin/ with the stand-in `gcloud`, cloud/ its
/// pretend buckets (objects/, calls.log).
fn remote(object: bool) -> Option<(crate::moto::Moto, tempfile::TempDir)> {
    let moto = crate::moto::Moto::start()?;
    let state = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(state.path(), network_state()).unwrap();
    moto.python(&format!(
        "s3 = boto3.client('s3', region_name='eu-west-1')\n\
         s3.create_bucket(Bucket='corp-state', CreateBucketConfiguration={{'LocationConstraint': 'eu-west-1'}})\n\
         if {object}: s3.put_object(Bucket='corp-state', Key='csis/network.tfstate', Body=open('{}', 'rb').read())",
        state.path().display(),
        object = if object { "True" } else { "False" }
    ));
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(here("doubles/gcloud"), bin.join("gcloud")).unwrap();
    write_file(
        &d.path().join("cloud"),
        "objects/g-state/env/box-app/default.tfstate",
        r#"{"version": 4, "outputs": {"role": {"value": "role-from-gcs", "type": "string"}}}"#,
    );
    Some((moto, d))
}

/// csis with the doubles first on PATH and moto's environment.
fn csis_with(root: &Path, moto: &crate::moto::Moto, doubles: &Path, args: &[&str]) -> Output {
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
        .envs(moto.env())
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
fn render_reads_each_remote_state_once_from_its_backend() {
    let t = remote_tree();
    let r = t.path();
    let Some((moto, d)) = remote(true) else {
        return;
    };
    let resolved = ok(csis_with(r, &moto, d.path(), &["config", "render"]));
    // One gcloud call for the gcs object (the s3 one is an SDK request).
    assert_eq!(
        take_calls(d.path()),
        ["gcloud storage cat gs://g-state/env/box-app/default.tfstate"]
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
    let raw = ok(csis_with(
        r,
        &moto,
        d.path(),
        &["config", "render", "--raw"],
    ));
    assert!(raw.contains("${terraform.own.role}"), "{raw}");
}

#[test]
fn a_sensitive_remote_output_never_appears_in_outputs_or_files() {
    let t = remote_tree();
    let r = t.path();
    let Some((moto, d)) = remote(true) else {
        return;
    };
    let mut captured = String::new();
    for args in [
        &["validate"][..],
        &["config", "render"][..],
        &["run", "all", "--no-dry-run"][..],
        &["plan", "--explain"][..],
    ] {
        let o = csis_with(r, &moto, d.path(), args);
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
fn a_failing_state_read_is_a_load_error_saying_what_to_do() {
    let t = remote_tree();
    let r = t.path();
    let Some((moto, d)) = remote(false) else {
        return;
    };
    let o = csis_with(r, &moto, d.path(), &["validate", "--brief"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{err}");
    let first = err
        .lines()
        .find(|l| l.contains("interpolation source"))
        .unwrap_or_default();
    assert_eq!(
        first,
        "interpolation source 'net' (state backend 'corp', s3): s3://corp-state/csis/network.tfstate: \
S3 GetObject s3://corp-state/csis/network.tfstate (region eu-west-1, profile ops) failed: service error: NoSuchKey: The specified key does not exist. -- \
check that your AWS credentials (profile ops, the backend's config.profile) can read the object and that it exists",
        "{err}"
    );
}
