//! Issue 33, item 5, on the clouds: an instance's user-data only writes
//! /var/lib/csis/launch.sh, and instance-setup runs no script (spec 004),
//! so every base bake on packer installs the dormant first-boot unit
//! that runs it, the images over a base inherit it (they do not install
//! it again), and every bake's in-bake verification checks it is there.
//! Over fixtures/clouds (a three-level chain on aws and on gce), by the
//! dry run's templates; the emitted install lines are then run with `sh`
//! against a temporary root to show where the unit lands.

use std::path::Path;
use std::process::Command;

use csis_plugin_api::first_boot;
use csis_test_support::{files_below, tree};

use crate::support::{csis_at, ok, read};

const NOW: i64 = 1_796_226_804;

/// The shell provisioners of a packer template, in order: each one's
/// `environment_vars` and `inline` lists (empty when it has none).
fn provisioners(template: &str) -> Vec<(Vec<String>, Vec<String>)> {
    template
        .split("\n  provisioner \"shell\" {\n")
        .skip(1)
        .map(|rest| {
            let block = rest.split("\n  }\n").next().unwrap();
            (list(block, "environment_vars"), list(block, "inline"))
        })
        .collect()
}

/// A list-of-strings attribute of a block. The emitter writes it on one
/// line, and its HCL string escapes (`\"`, `\\`, `\n`) are JSON's; a
/// `${` or `%{`, which HCL escapes differently, makes the parse fail
/// loudly rather than read a wrong value.
fn list(block: &str, attr: &str) -> Vec<String> {
    let Some(line) = block
        .lines()
        .find(|l| l.split_whitespace().next() == Some(attr))
    else {
        return Vec::new();
    };
    let value = line.split_once("= ").unwrap().1;
    assert!(!value.contains("$${") && !value.contains("%%{"), "{line}");
    serde_json::from_str(value).unwrap_or_else(|e| panic!("{attr}: {e}\n{line}"))
}

fn sh(script: &str, root: &Path) -> std::process::Output {
    Command::new("sh")
        .args(["-e", "-c", script])
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("CSIS_IMAGE_ROOT", root)
        .output()
        .unwrap()
}

#[test]
fn base_bakes_install_the_first_boot_unit_children_inherit_it_and_every_bake_verifies_it() {
    let t = tree("clouds");
    ok(csis_at(t.path(), NOW, &["run", "all"]));
    let generated = t.path().join("generated");
    let templates: Vec<(String, String)> = files_below(&generated)
        .into_iter()
        .filter(|(rel, _)| rel.ends_with(".pkr.hcl"))
        .map(|(rel, p)| (rel, read(&p)))
        .collect();
    let names: Vec<&str> = templates.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "base-image/pk-aws/image-generation/debian12.pkr.hcl",
            "base-image/pk-gce/image-generation/debian12.pkr.hcl",
            "instance-image/pk-aws/image-generation/app.pkr.hcl",
            "instance-image/pk-aws/image-generation/base.pkr.hcl",
            "instance-image/pk-aws/image-generation/web.pkr.hcl",
            "instance-image/pk-gce/image-generation/app.pkr.hcl",
            "instance-image/pk-gce/image-generation/base.pkr.hcl",
            "instance-image/pk-gce/image-generation/web.pkr.hcl",
        ]
    );
    let install = first_boot::install_lines();
    let assertion = first_boot::installed_assertion();
    let mut emitted_install = None;
    for (rel, text) in &templates {
        let provs = provisioners(text);
        let installs: Vec<usize> = provs
            .iter()
            .enumerate()
            .filter(|(_, (_, inline))| inline.iter().any(|l| l.contains("csis-launch.service")))
            .filter(|(_, (_, inline))| !inline.contains(&assertion))
            .map(|(i, _)| i)
            .collect();
        if rel.starts_with("base-image/") {
            // (a) One install provisioner, after the admin setup and before
            // the closing ones, with the image's root empty, writing the
            // unit's exact text.
            assert_eq!(installs.len(), 1, "{rel}:\n{text}");
            let (env, inline) = &provs[installs[0]];
            assert_eq!(env, &vec!["CSIS_IMAGE_ROOT=".to_string()], "{rel}");
            assert_eq!(inline, &install, "{rel}");
            assert!(
                provs[installs[0] - 1].1[0].contains("useradd"),
                "{rel}: the admin setup comes first:\n{text}"
            );
            assert!(installs[0] < provs.len() - 1, "{rel}");
            emitted_install.get_or_insert_with(|| inline.clone());
        } else {
            // (b) An image over a base inherits the unit with its parent's
            // disk: it never installs it again.
            assert_eq!(installs, Vec::<usize>::new(), "{rel}:\n{text}");
            assert!(!text.contains("printf '%s' '# Installed by csis"), "{rel}");
        }
        // (c) The in-bake verification, the last provisioner of every
        // bake, checks the unit is there.
        let (_, verify) = provs.last().unwrap();
        assert_eq!(verify[0], "echo 'csis in-bake verification'", "{rel}");
        assert!(verify.contains(&assertion), "{rel}:\n{text}");
    }
    // What the base bake's lines do, run from outside with the image's
    // root named by CSIS_IMAGE_ROOT: the unit and its enabling link land
    // where systemd reads them, and the emitted verification then passes.
    let root = tempfile::tempdir().unwrap();
    let check = assertion.replace(" /etc", &format!(" {}/etc", root.path().display()));
    let before = sh(&check, root.path());
    assert_eq!(before.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&before.stderr),
        "in-bake test failed: the csis first-boot unit (csis-launch.service) is not installed\n"
    );
    let out = sh(&emitted_install.unwrap().join("\n"), root.path());
    assert!(out.status.success(), "{out:?}");
    let unit = read(&root.path().join("etc/systemd/system/csis-launch.service"));
    assert_eq!(unit, first_boot::unit_text());
    for line in [
        "ConditionPathExists=/var/lib/csis/launch.sh\n",
        "ConditionPathExists=!/var/lib/csis/launch-applied\n",
        "Type=oneshot\n",
        "ExecStart=/bin/bash /var/lib/csis/launch.sh\n",
        "WantedBy=multi-user.target\n",
    ] {
        assert!(unit.contains(line), "{line}\n{unit}");
    }
    assert_eq!(
        std::fs::read_link(
            root.path()
                .join("etc/systemd/system/multi-user.target.wants/csis-launch.service")
        )
        .unwrap(),
        Path::new("/etc/systemd/system/csis-launch.service")
    );
    assert!(root.path().join("var/lib/csis").is_dir());
    let after = sh(&check, root.path());
    assert!(after.status.success(), "{after:?}");
}
