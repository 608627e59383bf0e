//! The generated tree is committed, so generation runs the public-safe
//! hard rules over every file before it writes any.

use std::process::Command;

use crate::support::edit;
use csis_test_support::plain_tree;

#[test]
fn a_template_that_renders_a_secret_from_the_environment_is_refused_before_writing() {
    let t = plain_tree("local-run");
    let r = t.path();
    edit(
        r,
        "instances/box.yml",
        "echo \"hello from box\"",
        "echo \"{{ ENV.DEPLOY_TOKEN }}\"",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(r)
        .args(["--brief", "run", "instance-image"])
        .env("CSIS_NOW", "1796226804")
        .env("DEPLOY_TOKEN", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let file =
        "generated/instance-image/vm/instance-generation/vm-instance-generation-box.cloud-config";
    assert!(
        err.contains(&format!("error: Refusing {file}: material that must not be public -- {file}: github-token: ghp_ab")),
        "{err}"
    );
    assert!(
        !r.join("generated/instance-image").exists(),
        "a refused lifecycle wrote files"
    );
    assert!(
        !err.contains("abcdefghijklmnop"),
        "the secret reached the log: {err}"
    );
}
