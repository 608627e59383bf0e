//! Paths and names from the configuration or the command line stay inside
//! the root (issue 32, defect 3): `state backup` wrote its backup wherever
//! `--workspace`, `CSIS_RUN_ID` or a symlinked `_private/state-backups`
//! led; a modification's `scripts:` entry `../../outside.sh` validated and
//! was fingerprinted and run; a storage named `..` became the store
//! itself. One rule (csis_model::confine) refuses each, naming the key.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::validate_refuses;
use csis_test_support::{copy_tree, files_below, fixture_dir, tree};

/// A stand-in for OpenTofu that answers `state pull` with a state of one
/// resource (and logs that it was asked).
const TOFU_DOUBLE: &str = r#"#!/bin/sh
# TEST DOUBLE standing in for OpenTofu in csis's e2e tests
# (tests/e2e/path_confinement.rs). It is not OpenTofu and never ships.
echo "$*" >> "$TOFU_DOUBLE_LOG"
echo '{"version":4,"serial":3,"lineage":"l-1","resources":[{"type":"aws_instance"}]}'
"#;

/// An outer directory holding the tree three levels down (so that
/// `../../../x` from the backup directory lands in the outer directory,
/// never in the system's temporary directory), the tree's initialised
/// OpenTofu root and the double.
struct Setup {
    outer: tempfile::TempDir,
    root: PathBuf,
    cwd: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().canonicalize().unwrap().join("a/b/root");
        copy_tree(&fixture_dir("local-run"), &root);
        let cwd = root.join("_private/storage/cloud/execution");
        std::fs::create_dir_all(cwd.join(".terraform")).unwrap();
        let bin = outer.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("tofu"), TOFU_DOUBLE).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("tofu"), std::fs::Permissions::from_mode(0o755)).unwrap();
        Setup { outer, root, cwd }
    }

    fn outer(&self) -> PathBuf {
        self.outer.path().canonicalize().unwrap()
    }

    fn backup(&self, workspace: &str, run_id: &str) -> Output {
        Command::new(env!("CARGO_BIN_EXE_csis"))
            .current_dir(&self.cwd)
            .arg("--root-dir")
            .arg(&self.root)
            .args(["state", "backup", "--workspace", workspace])
            .arg("--tofu")
            .arg(self.outer.path().join("bin/tofu"))
            .env("TOFU_DOUBLE_LOG", self.outer.path().join("tofu.log"))
            .env("CSIS_RUN_ID", run_id)
            .env_remove("CSIS_ROOT_DIR")
            .env_remove("CSIS_LOCK_HELD")
            .output()
            .unwrap()
    }

    /// Every file of the outer directory that is not the tree's or the
    /// double's: what a backup wrote where it must not.
    fn written_outside(&self) -> Vec<String> {
        files_below(self.outer.path())
            .into_keys()
            .filter(|f| !f.starts_with("a/b/root/") && f != "bin/tofu" && f != "tofu.log")
            .collect()
    }
}

fn refused(o: &Output) -> (Option<i32>, String, String) {
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

fn refusal(workspace: &str, why: &str) -> (Option<i32>, String, String) {
    (
        Some(1),
        String::new(),
        format!(
            "error: state backup for workspace '{workspace}' REFUSED: {why}; nothing is written and nothing is removed from state\n"
        ),
    )
}

#[test]
fn a_state_backup_named_by_a_workspace_or_run_id_that_climbs_out_is_refused() {
    let s = Setup::new();
    // The issue's case: three levels up from _private/state-backups is
    // the outer directory.
    assert_eq!(
        refused(&s.backup("../../../x", "R1")),
        refusal(
            "../../../x",
            "--workspace '../../../x' holds '/' or '\\', which would make it a path; write one plain name such as 'data-01'"
        )
    );
    let absolute = s.outer().join("abs/x");
    let shown = absolute.display().to_string();
    assert_eq!(
        refused(&s.backup(&shown, "R1")),
        refusal(
            &shown,
            &format!(
                "--workspace '{shown}' holds '/' or '\\', which would make it a path; write one plain name such as 'data-01'"
            )
        )
    );
    assert_eq!(
        refused(&s.backup("..", "R1")),
        refusal(
            "..",
            "--workspace '..' is a directory's own name ('.' or '..') and would name the directory it is in, or its parent; write one plain name such as 'data-01'"
        )
    );
    assert_eq!(
        refused(&s.backup("cloud", "R1/../../../../x")),
        refusal(
            "cloud",
            "CSIS_RUN_ID 'R1/../../../../x' holds '/' or '\\', which would make it a path; write one plain name such as 'data-01'"
        )
    );
    assert_eq!(s.written_outside(), Vec::<String>::new());
    // Refused before tofu was asked for anything.
    assert!(!s.outer.path().join("tofu.log").exists());
    // A sound backup still lands in the tree.
    let o = s.backup("cloud", "R1");
    assert_eq!(o.status.code(), Some(0), "{}", refused(&o).2);
    assert!(
        s.root
            .join("_private/state-backups/cloud.backup-R1.tfstate")
            .is_file()
    );
}

#[test]
fn a_state_backup_directory_that_is_a_symlink_out_of_the_root_is_refused() {
    let s = Setup::new();
    let elsewhere = s.outer().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(s.root.join("_private")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, s.root.join("_private/state-backups")).unwrap();
    assert_eq!(
        refused(&s.backup("cloud", "R1")),
        refusal(
            "cloud",
            &format!(
                "the backup directory '_private/state-backups' resolves to {}, outside the configuration root {}: a symlink on the way leads out of it, and csis reads and writes only inside the root; make '_private/state-backups' a file or directory inside the root, not a symlink out of it",
                elsewhere.display(),
                s.root.display()
            )
        )
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert_eq!(s.written_outside(), Vec::<String>::new());
}

/// The base image's modification, given `scripts: [<entry>]`.
fn with_script(root: &Path, entry: &str) {
    crate::support::edit(
        root,
        "images/chain.yml",
        "        script: echo base > \"$CSIS_IMAGE_ROOT/etc/layer-base\"\n",
        &format!(
            "        script: echo base > \"$CSIS_IMAGE_ROOT/etc/layer-base\"\n        scripts: [{entry}]\n"
        ),
    );
}

#[test]
fn a_modification_script_outside_the_root_is_refused_at_validate() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("a/root");
    copy_tree(&fixture_dir("local-run"), &root);
    std::fs::write(outer.path().join("outside.sh"), "touch /tmp/escaped\n").unwrap();
    with_script(&root, "../../outside.sh");
    assert_eq!(
        validate_refuses(&root),
        "images/chain.yml:9:19: Modification 'marker' of image 'base': scripts[0] '../../outside.sh' holds '..', which climbs out of the directory it is relative to; write a path below the configuration root without '..'\nvalidate: 1 error(s)\n"
    );

    let t = tree("local-run");
    let abs = outer.path().join("outside.sh").display().to_string();
    with_script(t.path(), &abs);
    assert_eq!(
        validate_refuses(t.path()),
        format!(
            "images/chain.yml:9:19: Modification 'marker' of image 'base': scripts[0] '{abs}' is an absolute path, and csis reads and writes only inside the configuration root; write a path relative to the root, such as 'scripts/setup.sh' (copy a file from elsewhere into the tree)\nvalidate: 1 error(s)\n"
        )
    );
}

/// An interpolation `env_file:` that climbs out is refused for what it
/// is (it read "does not exist"), by the same rule; it is never read.
#[test]
fn an_env_file_outside_the_root_is_refused_for_climbing_out() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    copy_tree(&fixture_dir("local-run"), &root);
    std::fs::write(outer.path().join("outside.env"), "A=1\n").unwrap();
    crate::support::edit(
        &root,
        "images/chain.yml",
        "  - name: base\n",
        "  - name: base\n    env_file: ../outside.env\n",
    );
    assert_eq!(
        validate_refuses(&root),
        "images/chain.yml:3:15: interpolation: images entry 'base', field 'env_file': env_file '../outside.env' holds '..', which climbs out of the directory it is relative to; write a path below the configuration root without '..'\n  help: docs/interpolation.md: ${env.NAME}, ${terraform.KEY}, env_file:, --tolerate-missing-env\nvalidate: 1 error(s)\n"
    );
}

/// A directory on the way that is a symlink out of the root is refused
/// like the script itself being one (only the last link was looked at).
#[test]
fn a_modification_script_behind_a_directory_symlink_out_of_the_root_is_refused() {
    let outer = tempfile::tempdir().unwrap();
    let out = outer.path().canonicalize().unwrap().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("outside.sh"), "touch /tmp/escaped\n").unwrap();
    let t = tree("local-run");
    std::os::unix::fs::symlink(&out, t.path().join("linked")).unwrap();
    with_script(t.path(), "linked/outside.sh");
    let root = t.path().canonicalize().unwrap();
    assert_eq!(
        validate_refuses(t.path()),
        format!(
            "linked/outside.sh: the file 'linked/outside.sh' resolves to {}, outside the configuration root {}: a symlink on the way leads out of it, and csis reads and writes only inside the root; make 'linked/outside.sh' a file or directory inside the root, not a symlink out of it\nvalidate: 1 error(s)\n",
            out.join("outside.sh").display(),
            root.display()
        )
    );
}

#[test]
fn a_storage_named_dot_dot_is_refused_as_a_name() {
    let t = tree("local-run");
    crate::support::edit(t.path(), "storages/data.yml", "name: data", "name: \"..\"");
    let refused = validate_refuses(t.path());
    assert!(
        refused.starts_with(
            "storages/data.yml:2:11: Storage '..': name may not be '.' or '..', which would name a directory itself or its parent where the name becomes a directory; write a plain name such as 'data-01'\n"
        ),
        "{refused}"
    );
}

/// A mount point the local runtime would link below the instance's
/// directory may not climb out of it.
#[test]
fn a_mount_point_holding_dot_dot_is_refused() {
    let t = tree("local-run");
    crate::support::edit(
        t.path(),
        "instances/box.yml",
        "mount_point: /srv/data}",
        "mount_point: /srv/../../../x}",
    );
    assert_eq!(
        validate_refuses(t.path()),
        "instances/box.yml:6:35: StorageMapping 'data': mount point '/srv/../../../x' holds '..', which climbs out of the directory it is mounted under; write the absolute path it means without '..', such as '/srv/data'\nvalidate: 1 error(s)\n"
    );
}
