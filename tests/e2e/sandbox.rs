//! The local runtime runs every modification inside the image's root under
//! bubblewrap, never on the host (docs/local-runtime.md, "The sandbox"):
//! what a script writes lands in the build, what it destroys is the
//! build's, it sees none of the host's environment, and without bwrap or
//! a shell in the image nothing runs at all.

use std::path::Path;
use std::process::Command;

use crate::support::{csis_at, edit, read};
use csis_test_support::{plain_tree, tree};

const NOW: i64 = 1796226804;
const BUILD: &str = "store/images/base-here-2026_12_02T15_53_24/root";

/// The `marker` modification of image `base` replaced by `script`.
fn base_script(root: &Path, script: &str) {
    edit(
        root,
        "images/chain.yml",
        "script: echo base > \"$CSIS_IMAGE_ROOT/etc/layer-base\"",
        &format!("script: {script}"),
    );
}

fn run(root: &Path) -> (Option<i32>, String) {
    run_with(root, &[])
}

/// A real run with more variables in csis's environment.
fn run_with(root: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(root)
        .args(["run", "all", "--no-dry-run"])
        .env("CSIS_NOW", NOW.to_string())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn an_absolute_path_a_modification_writes_lands_in_the_build_never_on_the_host() {
    let t = tree("local-run");
    let r = t.path();
    // A name no other test and no host uses.
    let probe = format!("csis-probe-{}", std::process::id());
    base_script(
        r,
        &format!("'echo probe > /etc/{probe}; echo \"$CSIS_IMAGE_ROOT\" > /etc/image-root'"),
    );
    let (code, out) = run(r);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        !Path::new("/etc").join(&probe).exists(),
        "the host's /etc was written"
    );
    assert_eq!(read(&r.join(BUILD).join("etc").join(&probe)), "probe\n");
    // CSIS_IMAGE_ROOT is empty, as on packer: "$CSIS_IMAGE_ROOT/etc" is /etc.
    assert_eq!(read(&r.join(BUILD).join("etc/image-root")), "\n");
    // Each layer carries its parent's files.
    let top = r.join("store/images/top-here-2026_12_02T15_53_24/root/etc");
    assert_eq!(read(&top.join(&probe)), "probe\n");
    assert_eq!(read(&top.join("layer-top")), "top\n");
}

#[test]
fn rm_rf_root_in_a_modification_empties_only_the_build() {
    let t = tree("local-run");
    let r = t.path();
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("canary");
    std::fs::write(&canary, "alive").unwrap();
    base_script(r, "rm -rf / ; exit 7");
    let (code, out) = run(r);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("csis local: modification 'marker' of image 'base' failed (exit 7); nothing was recorded for this build"),
        "{out}"
    );
    assert_eq!(read(&canary), "alive");
    // The tree the script was run for, the vendor image it was copied
    // from and the parent build are all still there.
    assert!(r.join("cfg/_config.yml").is_file());
    assert!(r.join("vendor/tiny-os/bin/busybox").is_file());
    assert!(r.join("vendor/tiny-os/etc/os-release").is_file());
    let tiny = r.join("store/images/tiny-here-2026_12_02T15_53_24/root");
    assert!(tiny.join("bin/busybox").is_file());
    assert!(
        !r.join("store/images/base-here-2026_12_02T15_53_24")
            .exists()
    );
}

#[test]
fn a_modification_sees_only_the_environment_it_is_given_and_no_network() {
    let t = tree("local-run");
    let r = t.path();
    base_script(
        r,
        "'env | sort > /etc/env-seen; ls /tmp > /etc/tmp-seen; hostname > /etc/hostname-seen; cat /proc/net/dev > /etc/net-seen'",
    );
    let (code, out) = run_with(r, &[("A_HOST_SECRET", "s3cret")]);
    assert_eq!(code, Some(0), "{out}");
    let env = read(&r.join(BUILD).join("etc/env-seen"));
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert_eq!(
        names,
        ["CSIS_IMAGE_ROOT", "HOME", "PATH", "PWD", "SHLVL"],
        "{env}"
    );
    assert!(
        env.contains("HOME=/root\n") && env.contains("PWD=/\n"),
        "{env}"
    );
    assert_eq!(read(&r.join(BUILD).join("etc/tmp-seen")), "");
    assert_eq!(
        read(&r.join(BUILD).join("etc/hostname-seen")),
        "csis-sandbox\n"
    );
    let net = read(&r.join(BUILD).join("etc/net-seen"));
    let interfaces: Vec<&str> = net
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    assert_eq!(interfaces, ["lo"], "{net}");
}

#[test]
fn a_modification_script_file_is_bound_read_only_into_the_sandbox() {
    let t = tree("local-run");
    let r = t.path();
    std::fs::create_dir_all(r.join("scripts")).unwrap();
    std::fs::write(
        r.join("scripts/layer.sh"),
        "echo \"from $0\" > /etc/layer-file\necho changed >> \"$0\" || echo refused > /etc/write-refused\n",
    )
    .unwrap();
    edit(
        r,
        "images/chain.yml",
        "script: echo base > \"$CSIS_IMAGE_ROOT/etc/layer-base\"",
        "scripts: [scripts/layer.sh]",
    );
    let (code, out) = run(r);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        read(&r.join(BUILD).join("etc/layer-file")),
        "from /tmp/csis-scripts/1-layer.sh\n"
    );
    assert_eq!(read(&r.join(BUILD).join("etc/write-refused")), "refused\n");
    assert!(!read(&r.join("scripts/layer.sh")).ends_with("\nchanged\n"));
    // Nothing of the binding is left in the image.
    assert!(!r.join(BUILD).join("tmp/csis-scripts").exists());
}

#[test]
fn an_image_without_a_shell_is_refused_and_nothing_runs_on_the_host() {
    // The fixture as committed: its vendor image is only etc/os-release.
    let t = plain_tree("local-run");
    let r = t.path();
    let (code, out) = run(r);
    assert_eq!(code, Some(1), "{out}");
    let tiny = r.join("store/images/tiny-here-2026_12_02T15_53_24/root");
    assert!(
        out.contains(&format!(
            "csis local: modification 'marker' of image 'base': the root {} holds no /bin/bash: the local runtime runs every script inside the image, so its vendor image must be a userland with bash (docs/local-runtime.md, \"Base images\")",
            tiny.display()
        )),
        "{out}"
    );
    assert!(
        !r.join("store/images/base-here-2026_12_02T15_53_24")
            .exists()
    );
}

#[test]
fn without_bwrap_a_bake_is_refused_and_never_falls_back_to_the_host() {
    let t = tree("local-run");
    let r = t.path();
    let (code, err) = run_with(r, &[("PATH", "/nonexistent")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("csis local: base image 'tiny': installing the csis first-boot unit: the local runtime runs every script inside the image under bubblewrap, and bwrap is not on PATH: install it (Debian and Ubuntu: apt-get install bubblewrap); csis never runs an image's script on the host"),
        "{err}"
    );
    assert!(
        !r.join("store/images/tiny-here-2026_12_02T15_53_24")
            .exists()
    );
}

#[test]
fn a_user_data_writing_an_absolute_path_changes_only_the_instances_root() {
    let t = tree("local-run");
    let r = t.path();
    let probe = format!("csis-probe-{}", std::process::id());
    edit(
        r,
        "instances/box.yml",
        "userdata: echo \"hello from box\" > \"$CSIS_INSTANCE_DIR/greeting\"",
        &format!("userdata: echo x > /root/{probe}; rm -rf /srv/data/../../etc"),
    );
    let (code, out) = run(r);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        !Path::new("/root").join(&probe).exists(),
        "the host's /root was written"
    );
    let root = r.join("store/instances/box/root");
    assert_eq!(read(&root.join("root").join(&probe)), "x\n");
    // Its /etc went, the build's and the host's did not.
    assert!(!root.join("etc").exists());
    assert!(
        r.join("store/images/top-here-2026_12_02T15_53_24/root/etc/os-release")
            .is_file()
    );
    assert!(Path::new("/etc/os-release").is_file());
}

/// `network: true` on the runtime shares the host's network (and its
/// resolver) with the scripts, for package installs; the specs say so.
#[test]
fn network_true_on_the_runtime_shares_the_hosts_network_with_the_scripts() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "cfg/builders.yml",
        "store: store}",
        "store: store, network: true}",
    );
    base_script(
        r,
        "'cat /proc/net/dev > /etc/net-seen; test -f /etc/resolv.conf && echo yes > /etc/resolver-seen'",
    );
    let (code, out) = run(r);
    assert_eq!(code, Some(0), "{out}");
    let host: Vec<String> = read(Path::new("/proc/net/dev"))
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(|n| n.trim().to_string()))
        .collect();
    let seen: Vec<String> = read(&r.join(BUILD).join("etc/net-seen"))
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(|n| n.trim().to_string()))
        .collect();
    assert_eq!(seen, host);
    if Path::new("/etc/resolv.conf").exists() {
        assert_eq!(read(&r.join(BUILD).join("etc/resolver-seen")), "yes\n");
    }
    let spec = read(
        &r.join("generated/instance-image/bake/image-generation/bake-image-generation-base.json"),
    );
    assert!(spec.contains("\"network\": true"), "{spec}");
}

/// One modification script, written once for both: packer runs it inside
/// the VM and the local runtime inside the image's root, each with
/// `CSIS_IMAGE_ROOT` empty and the image's variables in the environment,
/// so it writes the same file on both.
#[test]
fn the_same_modification_writes_the_same_file_on_local_and_in_the_packer_provisioner() {
    let script = r#"echo "hello $app_user" > "$CSIS_IMAGE_ROOT/etc/motd""#;
    // Local: a real bake.
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "images/chain.yml",
        "  - name: base\n    source_image: tiny\n",
        "  - name: base\n    source_image: tiny\n    variables: {app_user: app}\n",
    );
    base_script(r, &format!("'{script}'"));
    let (code, out) = run(r);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(read(&r.join(BUILD).join("etc/motd")), "hello app\n");
    // Packer: the provisioner of the same script in the clouds tree.
    let c = tree("clouds");
    let cr = c.path();
    edit(
        cr,
        "images/chain.yml",
        r#"script: id "$app_user" || useradd --system "$app_user""#,
        &format!("script: '{script}'"),
    );
    let o = csis_at(cr, NOW, &["run", "all"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let hcl = read(&cr.join("generated/instance-image/pk-aws/image-generation/app.pkr.hcl"));
    assert!(
        hcl.contains("variable \"app_user\" {\n  default = \"app\"\n}"),
        "{hcl}"
    );
    assert!(
        hcl.contains(r#"environment_vars = ["CSIS_IMAGE_ROOT=", "app_user=${var.app_user}"]"#),
        "{hcl}"
    );
    assert!(
        hcl.contains(r#"inline           = ["echo 'modification app-user'", "echo \"hello $app_user\" > \"$CSIS_IMAGE_ROOT/etc/motd\""]"#),
        "{hcl}"
    );
}

#[test]
fn a_variable_a_modification_cannot_see_as_an_environment_variable_is_refused() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "images/chain.yml",
        "  - name: base\n    source_image: tiny\n",
        "  - name: base\n    source_image: tiny\n    variables: {app-user: app}\n",
    );
    let out = csis_at(r, NOW, &["run", "all"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("image 'base': variable 'app-user' cannot be an environment variable of its modifications -- name it with letters, digits and underscores, starting with a letter (CSIS_ names are csis's own)"),
        "{err}"
    );
}

#[test]
fn a_modification_gives_files_to_the_images_system_users_and_the_store_keeps_them() {
    use std::os::unix::fs::MetadataExt;
    let t = tree("local-run");
    let r = t.path();
    // What a package install does: files of `_apt` (42) and a set-uid
    // program of root's group 4242, in the base and in a child layer.
    base_script(
        r,
        "'touch /etc/by-apt /etc/suid && chown 42:42 /etc/by-apt && chown 0:4242 /etc/suid && chmod 4755 /etc/suid'",
    );
    edit(
        r,
        "images/chain.yml",
        "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"",
        "script: 'mkdir /var/lib/www && chown 33:33 /var/lib/www && echo mid > /etc/layer-mid'",
    );
    // /proc/self belongs to this process's effective user.
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let (code, out) = run(r);
    if !root {
        // One id mapped: chown to another fails in the sandbox.
        assert_eq!(code, Some(1), "{out}");
        assert!(
            out.contains("modification 'marker' of image 'base' failed"),
            "{out}"
        );
        return;
    }
    assert_eq!(code, Some(0), "{out}");
    let owner = |p: &Path| {
        let m = std::fs::symlink_metadata(p).unwrap();
        (m.uid(), m.gid(), m.mode() & 0o7777)
    };
    let base = r.join(BUILD);
    assert_eq!(owner(&base.join("etc/by-apt")), (42, 42, 0o644));
    assert_eq!(owner(&base.join("etc/suid")), (0, 4242, 0o4755));
    let mid = r.join("store/images/mid-here-2026_12_02T15_53_24/root");
    assert_eq!(owner(&mid.join("var/lib/www")).0, 33);
    assert_eq!(owner(&mid.join("etc/by-apt")), (42, 42, 0o644));
    // The instance's own root is a copy that keeps them too.
    let top = r.join("store/instances/box/root");
    assert_eq!(owner(&top.join("etc/suid")), (0, 4242, 0o4755));
    assert_eq!(owner(&top.join("var/lib/www")).0, 33);
}
