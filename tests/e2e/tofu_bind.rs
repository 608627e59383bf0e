//! `csis lineage bind-instance --tofu-outputs`: after a tofu apply, the
//! instance is pinned to the build its root's `instances` output says it
//! booted. The `tofu` here is a test double (a shell script that prints a
//! fixed `tofu output -json` document and records how it was called); it
//! never ships.

use std::path::{Path, PathBuf};

use crate::support::{csis_at, ok};
use csis_test_support::tree;

const NOW: i64 = 1_796_226_804;

/// A stand-in for `tofu` in `dir`: records its working directory and
/// arguments in `dir/calls`, prints `stdout` and exits `code`.
fn tofu_double(dir: &Path, stdout: &str, code: i32) -> PathBuf {
    let path = dir.join("tofu-test-double");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n# Test double standing in for OpenTofu: not OpenTofu.\necho \"$PWD $*\" >> '{}'\ncat <<'JSON'\n{stdout}\nJSON\n[ {code} -eq 0 ] || echo 'Error: no state' >&2\nexit {code}\n",
            dir.join("calls").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn bind(root: &Path, tofu: &Path, instance: &str) -> std::process::Output {
    csis_at(
        root,
        NOW,
        &[
            "lineage",
            "bind-instance",
            "--instance",
            instance,
            "--tofu-outputs",
            root.join("generated").to_str().unwrap(),
            "--tofu",
            tofu.to_str().unwrap(),
        ],
    )
}

const OUTPUTS: &str = r#"{"instances": {"sensitive": false, "type": ["object", {}], "value": {"box": {"id": "i-0123", "image": "ami-0abc", "private_ip": "10.0.0.5"}}}}"#;

#[test]
fn an_instance_is_pinned_to_the_build_its_root_says_it_booted() {
    let t = tree("local-run");
    let r = t.path();
    std::fs::create_dir_all(r.join("generated")).unwrap();
    let doubles = tempfile::tempdir().unwrap();
    let tofu = tofu_double(doubles.path(), OUTPUTS, 0);
    let out = ok(bind(r, &tofu, "box"));
    assert!(
        out.contains("pins: instance box -> ami-0abc (bind)"),
        "{out}"
    );
    let pins = std::fs::read_to_string(r.join("meta-state/pins.yaml")).unwrap();
    assert!(pins.contains("  box: ami-0abc\n"), "{pins}");
    // Run in the root directory it names, as `tofu output -json`.
    let calls = std::fs::read_to_string(doubles.path().join("calls")).unwrap();
    let generated = std::fs::canonicalize(r.join("generated")).unwrap();
    assert_eq!(calls, format!("{} output -json\n", generated.display()));
    // Bound once; a later move is an upgrade.
    let again = ok(bind(r, &tofu, "box"));
    assert!(
        again.contains("pins: instance box is pinned to ami-0abc already"),
        "{again}"
    );
}

#[test]
fn a_failed_or_silent_output_binds_nothing() {
    let t = tree("local-run");
    let r = t.path();
    std::fs::create_dir_all(r.join("generated")).unwrap();
    let doubles = tempfile::tempdir().unwrap();
    let dir = r.join("generated");
    let failing = tofu_double(doubles.path(), "", 1);
    let o = bind(r, &failing, "box");
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{} output -json (in {}) exited 1: Error: no state",
            failing.display(),
            dir.display()
        )),
        "{err}"
    );
    let other = tofu_double(doubles.path(), r#"{"instances": {"value": {}}}"#, 0);
    let o = bind(r, &other, "box");
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("output 'instances' names no image for instance 'box'"),
        "{err}"
    );
    let none = tofu_double(doubles.path(), "{}", 0);
    let o = bind(r, &none, "box");
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "no output 'instances' -- is {} an instance root csis generated?",
            dir.display()
        )),
        "{err}"
    );
    assert!(
        !r.join("meta-state/pins.yaml").exists()
            || !std::fs::read_to_string(r.join("meta-state/pins.yaml"))
                .unwrap()
                .contains("box:")
    );
    // One of --launched and --tofu-outputs.
    let o = csis_at(r, NOW, &["lineage", "bind-instance", "--instance", "box"]);
    assert_eq!(o.status.code(), Some(2));
}
