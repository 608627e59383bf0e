//! `csis init`: a first tree that validates on every runtime kind and,
//! on local, runs end to end; a second init over it writes nothing.

use crate::support::{csis_at, csis_text, ok};

const NOW: i64 = 1_796_226_804;

fn init(dir: &std::path::Path, runtime: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("init")
        .arg(dir)
        .args(["--runtime", runtime])
        .output()
        .unwrap()
}

#[test]
fn init_then_validate_then_a_real_local_run() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("infra");
    let out = ok(init(&root, "local"));
    assert_eq!(
        out,
        format!(
            "init: wrote .gitignore\ninit: wrote cfg/_config.yml\ninit: wrote cfg/builders.yml\ninit: wrote groups/people.yml\ninit: wrote images/images.yml\ninit: wrote instances/instances.yml\nnext: csis --root-dir {r} validate, then csis --root-dir {r} run all --no-dry-run (docs/getting-started.md)\n",
            r = root.display()
        )
    );
    assert!(crate::support::read(&root.join("cfg/_config.yml")).contains("\nid: infra\n"));
    let (code, v) = csis_text(&root, NOW, &["--brief", "validate"]);
    assert_eq!(code, Some(0), "{v}");
    assert!(v.ends_with("validate: ok\n"), "{v}");
    let run = ok(csis_at(&root, NOW, &["run", "all", "--no-dry-run"]));
    assert!(
        run.contains(
            "[instance-image/execution] launched box from base-here-2026_12_02T15_53_24\n"
        ),
        "{run}"
    );
    assert!(run.contains("verify box: ok ("), "{run}");
    let motd = root.join(".csis-local/instances/box/root/etc/motd");
    assert_eq!(crate::support::read(&motd), "baked by csis\n");

    // A misspelt runtime type in the tree init wrote is one error: the
    // base image's debug path follows from the runtime it names.
    let copy = t.path().join("lcoal");
    for dir in ["cfg", "groups", "images", "instances"] {
        csis_test_support::copy_tree(&root.join(dir), &copy.join(dir));
    }
    crate::support::edit(
        &copy,
        "cfg/builders.yml",
        "type: local, is_default: true, default_machine_type",
        "type: lcoal, is_default: true, default_machine_type",
    );
    let (code, v) = csis_text(&copy, NOW, &["--brief", "validate"]);
    assert_eq!(code, Some(1), "{v}");
    assert!(!v.contains("debug path"), "{v}");
    assert!(v.ends_with("validate: 1 error(s)\n"), "{v}");

    // Over a tree: nothing written, every file it would write named.
    let before = crate::support::read(&root.join("cfg/builders.yml"));
    let again = init(&root, "aws");
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        format!(
            "error: init: {} already holds .gitignore, cfg/_config.yml, cfg/builders.yml, groups/people.yml, images/images.yml, instances/instances.yml; init writes a new tree only, nothing was written\n",
            root.display()
        )
    );
    assert_eq!(crate::support::read(&root.join("cfg/builders.yml")), before);
}

#[test]
fn init_on_a_cloud_validates_with_its_values_to_fill_in_marked() {
    for runtime in ["aws", "gce"] {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("cloud-tree");
        let out = ok(init(&root, runtime));
        assert!(out.contains("next: fill in every CHANGE-ME in "), "{out}");
        assert!(crate::support::read(&root.join("cfg/builders.yml")).contains("CHANGE-ME"));
        let (code, v) = csis_text(&root, NOW, &["--brief", "validate", "--offline"]);
        assert_eq!(code, Some(0), "{runtime}: {v}");
        assert!(v.ends_with("validate: ok\n"), "{runtime}: {v}");
        // Each value left to fill in is a warning at its place.
        let unfilled: Vec<&str> = v
            .lines()
            .filter(|l| {
                l.contains(": warning: ")
                    && l.contains("a value `csis init` left for you to fill in")
            })
            .collect();
        let expected = if runtime == "aws" {
            vec![
                "cfg/builders.yml:10:14: warning: runtime_builders[0].profile is still 'CHANGE-ME': a value `csis init` left for you to fill in",
                "cfg/builders.yml:13:16: warning: runtime_builders[0].networking.network is still 'vpc-CHANGE-ME': a value `csis init` left for you to fill in",
                "cfg/builders.yml:15:23: warning: runtime_builders[0].networking.subnets[0].subnet_id is still 'subnet-CHANGE-ME': a value `csis init` left for you to fill in",
                "cfg/builders.yml:26:22: warning: state_backends[0].config.bucket is still 'CHANGE-ME-tofu-state': a value `csis init` left for you to fill in",
            ]
        } else {
            vec![
                "cfg/builders.yml:9:14: warning: runtime_builders[0].project is still 'CHANGE-ME': a value `csis init` left for you to fill in",
                "cfg/builders.yml:27:22: warning: state_backends[0].config.bucket is still 'CHANGE-ME-tofu-state': a value `csis init` left for you to fill in",
            ]
        };
        assert_eq!(unfilled, expected, "{runtime}: {v}");
        // A dry run writes the engines' files.
        let (code, run) = csis_text(&root, NOW, &["run", "all", "--no-state-query"]);
        assert_eq!(code, Some(0), "{runtime}: {run}");
        assert!(
            root.join("generated/base-image/bake/image-generation/debian12.pkr.hcl")
                .is_file(),
            "{runtime}: {run}"
        );
    }
}
