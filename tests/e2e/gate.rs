//! The system CLI's steps between a tofu plan and its apply, run as the
//! runner runs them: from the OpenTofu root, with a stand-in `tofu` first
//! on PATH. The stand-in is a TEST DOUBLE, never OpenTofu: `show -json F`
//! prints F (the tests' planfiles are plan JSON documents from
//! fixtures/plans/), `state pull` prints the state of the backend the root
//! was last initialised against, `init -backend-config=F` records F as the
//! root's backend (copying the state over with -migrate-state).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{csis_at, edit, ok};
use csis_test_support::{fixture_dir, tree};

const T0: i64 = 1_796_226_804;

const TOFU_DOUBLE: &str = r#"#!/bin/sh
# TEST DOUBLE standing in for OpenTofu in csis's e2e tests (tests/e2e/gate.rs).
# It is not OpenTofu and never ships.
set -eu
echo "$PWD :: $*" >> "$TOFU_DOUBLE_DIR/argv.log"
backend() { cat .terraform/backend 2>/dev/null || true; }
case "$1" in
  show)
    [ "$2" = "-json" ] || { echo "test double: show wants -json" >&2; exit 2; }
    cat "$3"
    ;;
  state)
    [ "$2" = "pull" ] || { echo "test double: only state pull" >&2; exit 2; }
    if [ -n "${TOFU_DOUBLE_FAIL_PULL:-}" ]; then
      echo "Error: Failed to load state: $TOFU_DOUBLE_FAIL_PULL" >&2
      exit 1
    fi
    b=$(backend)
    if [ -n "$b" ] && [ -f "$TOFU_DOUBLE_DIR/states/$b.tfstate" ]; then
      cat "$TOFU_DOUBLE_DIR/states/$b.tfstate"
    fi
    ;;
  init)
    new=""
    migrate=""
    for a in "$@"; do
      case "$a" in
        -backend-config=*) new=$(basename "${a#-backend-config=}") ;;
        -migrate-state) migrate=1 ;;
      esac
    done
    if [ -n "${TOFU_DOUBLE_FAIL_INIT:-}" ]; then
      echo "Error: Failed to get existing workspaces: $TOFU_DOUBLE_FAIL_INIT" >&2
      exit 1
    fi
    old=$(backend)
    mkdir -p .terraform "$TOFU_DOUBLE_DIR/states"
    if [ -n "$migrate" ] && [ -f "$TOFU_DOUBLE_DIR/states/$old.tfstate" ]; then
      cp "$TOFU_DOUBLE_DIR/states/$old.tfstate" "$TOFU_DOUBLE_DIR/states/$new.tfstate"
    fi
    echo "$new" > .terraform/backend
    echo "OpenTofu has been successfully initialized! (test double)"
    ;;
  *)
    echo "test double: unexpected tofu $*" >&2
    exit 2
    ;;
esac
"#;

/// A directory holding the stand-in `tofu`, and its world (argv.log,
/// states/).
pub(crate) struct Double {
    dir: tempfile::TempDir,
}

impl Double {
    pub(crate) fn new() -> Double {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let tofu = bin.join("tofu");
        std::fs::write(&tofu, TOFU_DOUBLE).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tofu, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(dir.path().join("states")).unwrap();
        Double { dir }
    }

    fn state(&self, backend: &str, text: &str) {
        std::fs::write(
            self.dir
                .path()
                .join("states")
                .join(format!("{backend}.tfstate")),
            text,
        )
        .unwrap();
    }

    fn read_state(&self, backend: &str) -> Option<String> {
        std::fs::read_to_string(
            self.dir
                .path()
                .join("states")
                .join(format!("{backend}.tfstate")),
        )
        .ok()
    }

    fn argv(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("argv.log")).unwrap_or_default()
    }
}

/// `csis --root-dir ROOT ARGS` from `cwd`, the stand-in tofu first on
/// PATH, with `env` set.
pub(crate) fn csis_in(
    cwd: &Path,
    root: &Path,
    double: &Double,
    env: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let path = format!(
        "{}:{}",
        double.dir.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_csis"));
    cmd.current_dir(cwd)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("PATH", path)
        .env("TOFU_DOUBLE_DIR", double.dir.path())
        .env("CSIS_NOW", T0.to_string())
        .env("CSIS_RUN_ID", "R1")
        .env_remove("CSIS_ROOT_DIR")
        .env_remove("CSIS_LOCK_HELD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// An OpenTofu root (a directory with a .tf file) inside `root`'s private
/// mirror, with the plan fixture `plan` as its planfile `<ws>.tfplan`,
/// planned after the .tf was last written.
pub(crate) fn tofu_root(root: &Path, plan: &str) -> PathBuf {
    let dir = root.join("_private/storage/cloud/execution");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.tf"), "# a root\n").unwrap();
    std::fs::copy(fixture_dir("plans").join(plan), dir.join("ws.tfplan")).unwrap();
    set_mtime(&dir.join("main.tf"), 1_000);
    set_mtime(&dir.join("ws.tfplan"), 2_000);
    dir
}

pub(crate) fn set_mtime(path: &Path, secs: u64) {
    let f = std::fs::File::options().append(true).open(path).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .unwrap();
}

pub(crate) fn gate(root: &Path, cwd: &Path, double: &Double, extra: &[&str]) -> Output {
    let mut args = vec!["gate-plan", "--planfile", "ws.tfplan"];
    args.extend_from_slice(extra);
    csis_in(cwd, root, double, &[], &args)
}

#[test]
fn a_whitelisted_destroy_passes_and_says_what_passed() {
    let t = tree("local-run");
    let double = Double::new();
    let cwd = tofu_root(t.path(), "destroy-whitelisted.json");
    let o = gate(
        t.path(),
        &cwd,
        &double,
        &["--whitelist", "aws_ebs_volume.data"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "gate-plan: ws.tfplan: 2 change(s), 1 destroy(s) whitelisted: pass\n"
    );
    // tofu show ran in the root the gate was started from.
    assert_eq!(
        double.argv(),
        format!("{} :: show -json ws.tfplan\n", cwd.display())
    );
}

#[test]
fn a_destroy_not_whitelisted_is_refused_with_exit_3() {
    let t = tree("local-run");
    let double = Double::new();
    let cwd = tofu_root(t.path(), "destroy-not-whitelisted.json");
    let o = gate(
        t.path(),
        &cwd,
        &double,
        &["--whitelist", "google_compute_disk.dis"],
    );
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        "error: gate-plan: REFUSED: planned destroy of google_compute_disk.disk[\"logs\"] (actions: delete) is not whitelisted -- whitelist it in the builder that owns the root (--whitelist google_compute_disk.disk[\"logs\"]), or change the declaration so nothing is destroyed\nerror: gate-plan: ws.tfplan: refused, 1 problem(s); nothing is applied\n"
    );
    assert_eq!(
        stdout(&o),
        "gate-plan: ws.tfplan: 2 change(s), 0 destroy(s) whitelisted\n"
    );
}

#[test]
fn a_replace_is_a_destroy_and_its_attachment_goes_with_it() {
    let t = tree("local-run");
    let double = Double::new();
    let cwd = tofu_root(t.path(), "replace.json");
    let o = gate(t.path(), &cwd, &double, &["--whitelist", "aws_instance.vm"]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        "error: gate-plan: REFUSED: planned replace of aws_volume_attachment.attach[\"web/data\"] (actions: delete, create) is not whitelisted -- whitelist it in the builder that owns the root (--whitelist aws_volume_attachment.attach[\"web/data\"]), or change the declaration so nothing is destroyed\nerror: gate-plan: ws.tfplan: refused, 1 problem(s); nothing is applied\n"
    );
    let o = gate(
        t.path(),
        &cwd,
        &double,
        &[
            "--whitelist",
            "aws_instance.vm[\"web\"]",
            "--whitelist",
            "aws_volume_attachment.attach",
        ],
    );
    assert_eq!(
        stdout(&o),
        "gate-plan: ws.tfplan: 2 change(s), 2 destroy(s) whitelisted: pass\n"
    );
}

#[test]
fn a_planfile_older_than_the_newest_tf_is_stale() {
    let t = tree("local-run");
    let double = Double::new();
    let cwd = tofu_root(t.path(), "destroy-whitelisted.json");
    std::fs::write(cwd.join("storage.tf"), "# edited after the plan\n").unwrap();
    set_mtime(&cwd.join("storage.tf"), 3_000);
    // A local module below the root is read by the plan too (issue 32):
    // this one is older than the plan.
    std::fs::create_dir_all(cwd.join("modules/m")).unwrap();
    std::fs::write(cwd.join("modules/m/x.tf"), "").unwrap();
    set_mtime(&cwd.join("modules/m/x.tf"), 1_000);
    let o = gate(
        t.path(),
        &cwd,
        &double,
        &["--whitelist", "aws_ebs_volume.data"],
    );
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        "error: gate-plan: REFUSED: ws.tfplan is stale: storage.tf changed after it was planned (a planfile older than any file of its root is stale; .terraform/, the local state and planfiles aside) -- re-run tofu plan -out=ws.tfplan\nerror: gate-plan: ws.tfplan: refused, 1 problem(s); nothing is applied\n"
    );
    set_mtime(&cwd.join("storage.tf"), 1_500);
    let o = gate(
        t.path(),
        &cwd,
        &double,
        &["--whitelist", "aws_ebs_volume.data"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_tofu_that_cannot_answer_or_a_document_that_is_no_plan_is_an_error() {
    let t = tree("local-run");
    let double = Double::new();
    let cwd = tofu_root(t.path(), "state-not-plan.json");
    let o = gate(t.path(), &cwd, &double, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: gate-plan: ws.tfplan: not a plan document: it has neither resource_changes nor planned_values (a state?)\n"
    );
    std::fs::copy(fixture_dir("plans/format-2.json"), cwd.join("ws.tfplan")).unwrap();
    let o = gate(t.path(), &cwd, &double, &[]);
    assert_eq!(
        stderr(&o),
        "error: gate-plan: ws.tfplan: plan format_version '2.0' is not one this gate reads (1.x); refusing to judge it\n"
    );
    let o = gate(t.path(), &cwd, &double, &["--tofu", "/nonexistent/tofu"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: gate-plan: '/nonexistent/tofu show -json ws.tfplan' could not start: No such file or directory (os error 2) -- install OpenTofu, or pass --tofu <binary>\n"
    );
    let o = csis_in(
        &cwd,
        t.path(),
        &double,
        &[],
        &["gate-plan", "--planfile", "other.tfplan"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "error: gate-plan: no planfile other.tfplan in {} -- run tofu plan -out=other.tfplan there first\n",
            cwd.display()
        )
    );
}

#[test]
fn apply_check_reads_the_flag_now() {
    let t = tree("local-run");
    let r = t.path();
    let double = Double::new();
    let check = |args: &[&str]| {
        let mut a = vec!["apply-check", "--lifecycle", "instance-image"];
        a.extend_from_slice(args);
        csis_in(r, r, &double, &[], &a)
    };
    let o = check(&["--builder", "vm", "--runtime", "here"]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        "error: apply-check: REFUSED: config.apply_instances is now unset, which does not let builder 'vm' (runtime 'here') apply; the instance-image root stops after its plan and gate -- to apply it, set it to true, or to a list naming 'vm' or 'here'\n"
    );
    edit(
        r,
        "cfg/_config.yml",
        "config:\n",
        "config:\n  apply_instances: [other]\n",
    );
    let o = check(&["--builder", "vm", "--runtime", "here"]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        "error: apply-check: REFUSED: config.apply_instances is now [other], which does not let builder 'vm' (runtime 'here') apply; the instance-image root stops after its plan and gate -- to apply it, list 'vm' or 'here' in it, or set it to true\n"
    );
    edit(r, "cfg/_config.yml", "[other]", "[other, here]");
    let o = check(&["--builder", "vm", "--runtime", "here"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "apply-check: config.apply_instances is [other, here]: the instance-image root of builder 'vm' (runtime 'here') applies\n"
    );
    edit(r, "cfg/_config.yml", "[other, here]", "true");
    assert_eq!(check(&["--builder", "vm"]).status.code(), Some(0));
    edit(
        r,
        "cfg/_config.yml",
        "apply_instances: true",
        "apply_instances: \"ENC[age:YWJj]\"",
    );
    let o = check(&["--builder", "vm"]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        "error: apply-check: REFUSED: config.apply_instances is encrypted; an apply flag may not be (apply-check reads it raw) -- write it in the clear in cfg/_config.yml\n"
    );
    let o = check(&["--builder", "vm"]);
    assert_eq!(o.status.code(), Some(3));
    let o = csis_in(
        r,
        r,
        &double,
        &[],
        &[
            "apply-check",
            "--lifecycle",
            "base-image",
            "--builder",
            "bake",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: apply-check: lifecycle 'base-image' has no apply flag (lifecycles with one: identity, storage, instance-image, release)\n"
    );
}

const STATE: &str = r#"{"version":4,"terraform_version":"1.8.5","serial":36,"lineage":"5f1c-lineage-a","outputs":{},"resources":[{"mode":"managed","type":"aws_ebs_volume","name":"data","instances":[]},{"mode":"managed","type":"aws_volume_attachment","name":"attach","instances":[]}]}"#;

#[test]
fn the_backup_keeps_the_pulled_state_under_the_private_root_and_refuses_everything_else() {
    let t = tree("local-run");
    let r = t.path();
    let double = Double::new();
    let cwd = r.join("_private/storage/cloud/execution");
    std::fs::create_dir_all(&cwd).unwrap();
    let backup = |env: &[(&str, &str)]| {
        csis_in(
            &cwd,
            r,
            &double,
            env,
            &["state", "backup", "--workspace", "cloud"],
        )
    };
    // From the configuration root (the 2026-09-23 bug): not initialised.
    let o = csis_in(
        r,
        r,
        &double,
        &[],
        &["state", "backup", "--workspace", "cloud"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "error: state backup for workspace 'cloud' REFUSED: {} is not an initialised terraform root; nothing is removed from state -- initialise the root against its location (tofu init) and rerun\n",
            r.display()
        )
    );
    std::fs::create_dir_all(cwd.join(".terraform")).unwrap();
    std::fs::write(cwd.join(".terraform/backend"), "current\n").unwrap();
    let o = backup(&[]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: state backup for workspace 'cloud' REFUSED: the location holds no state, yet a state rm is due -- initialise the root against its location and rerun\n"
    );
    let o = backup(&[("TOFU_DOUBLE_FAIL_PULL", "AccessDenied")]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: state backup for workspace 'cloud' FAILED; nothing is removed from state: 'tofu state pull' exited 1: Error: Failed to load state: AccessDenied\n"
    );
    double.state("current", STATE);
    let o = backup(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let kept = r.join("_private/state-backups/cloud.backup-R1.tfstate");
    assert_eq!(
        stdout(&o),
        format!(
            "state backup for workspace 'cloud': serial 36, 2 resource(s) kept in {}\n",
            kept.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), STATE);
    // Never overwritten: a second backup of the run gets its own file.
    let o = backup(&[]);
    assert!(
        stdout(&o).ends_with("cloud.backup-R1-2.tfstate\n"),
        "{}",
        stdout(&o)
    );
    assert!(
        double
            .argv()
            .contains(&format!("{} :: state pull", cwd.display()))
    );
}

/// local-run with a storage root keeping state in `primary`, its location
/// recorded by a run, then moved to `secondary` in the configuration; and
/// its OpenTofu root in the mirror initialised against the old location.
fn migrating_tree(double: &Double) -> (tempfile::TempDir, PathBuf) {
    let t = crate::state_locations::backends_tree();
    let r = t.path();
    ok(csis_at(r, T0, &["run", "all"]));
    edit(
        r,
        "cfg/builders.yml",
        "{name: bucket, type: dummy, runtime: cloud}",
        "{name: bucket, type: dummy, runtime: cloud, state_configuration: secondary}",
    );
    let cwd = r.join("_private/storage/bucket/execution");
    std::fs::create_dir_all(cwd.join(".terraform")).unwrap();
    std::fs::write(cwd.join(".terraform/backend"), "old.tfbackend.hcl\n").unwrap();
    std::fs::write(
        cwd.join("bucket.tfbackend.hcl"),
        "path = \"state-b/bucket.tfstate\"\n",
    )
    .unwrap();
    double.state("old.tfbackend.hcl", STATE);
    (t, cwd)
}

#[test]
fn a_migration_copies_the_state_and_finish_records_the_move() {
    let double = Double::new();
    let (t, cwd) = migrating_tree(&double);
    let r = t.path();
    let step = |args: &[&str]| {
        let mut a = vec!["state-migration"];
        a.extend_from_slice(args);
        csis_in(&cwd, r, &double, &[], &a)
    };
    let o = step(&["finish", "--workspace", "bucket"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: state-migration finish: no bucket.state-migration.json -- 'begin' did not run\n"
    );
    let o = step(&["begin", "--workspace", "bucket"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: state-migration begin: --backend-config <file> is required: the .tfbackend.hcl of the location the state moves to (the root's bucket.tfbackend.hcl)\n"
    );
    let o = step(&[
        "begin",
        "--workspace",
        "nothing",
        "--backend-config",
        "x.hcl",
    ]);
    assert_eq!(
        stderr(&o),
        "error: state-migration begin: meta-state records no location for workspace 'nothing'; there is nothing to migrate from\n"
    );
    let o = step(&[
        "begin",
        "--workspace",
        "bucket",
        "--backend-config",
        "bucket.tfbackend.hcl",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "state-migration begin: workspace 'bucket' copied from local://state-a/bucket.tfstate to local://state-b/bucket.tfstate (lineage 5f1c-lineage-a, serial 36); the old state is untouched and kept in _private/state-backups/bucket.backup-R1.tfstate; 'state-migration finish' records the move\n"
    );
    assert_eq!(
        double.read_state("bucket.tfbackend.hcl").as_deref(),
        Some(STATE)
    );
    assert_eq!(
        double.read_state("old.tfbackend.hcl").as_deref(),
        Some(STATE)
    );
    // The probe ran in a scratch root, which is gone.
    let probe = cwd.join(".csis-state-probe");
    assert!(!probe.exists());
    assert_eq!(
        double.argv(),
        format!(
            "{c} :: state pull\n{p} :: init -input=false -reconfigure -backend-config={c}/bucket.tfbackend.hcl\n{p} :: state pull\n{c} :: init -input=false -migrate-state -force-copy -backend-config=bucket.tfbackend.hcl\n{c} :: state pull\n",
            c = cwd.display(),
            p = probe.display()
        )
    );
    assert!(cwd.join("bucket.state-migration.json").is_file());
    let o = step(&["finish", "--workspace", "bucket"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "state-migration finish: workspace 'bucket' moved from local://state-a/bucket.tfstate to local://state-b/bucket.tfstate (serial 36); recorded in meta-state/state-locations.yaml\n"
    );
    assert!(!cwd.join("bucket.state-migration.json").exists());
    let record = std::fs::read_to_string(r.join("meta-state/state-locations.yaml")).unwrap();
    assert!(
        record.contains("  bucket:\n    backend: secondary\n    type: local\n    location: \"local://state-b/bucket.tfstate\"\n    run: R1\n"),
        "{record}"
    );
    assert!(
        record.ends_with("migrations:\n  - workspace: bucket\n    from: \"local://state-a/bucket.tfstate\"\n    to: \"local://state-b/bucket.tfstate\"\n    run: R1\n    at: \"2026-12-02T15:53:24+00:00\"\n    serial: 36\n    backup: _private/state-backups/bucket.backup-R1.tfstate\n"),
        "{record}"
    );
    // The move is recorded: the tree validates again.
    ok(csis_at(r, T0 + 60, &["validate"]));
}

#[test]
fn a_new_location_holding_another_lineage_is_a_collision() {
    let double = Double::new();
    let (t, cwd) = migrating_tree(&double);
    let r = t.path();
    let other = STATE.replace("5f1c-lineage-a", "9e9e-lineage-b");
    double.state("bucket.tfbackend.hcl", &other);
    let begin = [
        "state-migration",
        "begin",
        "--workspace",
        "bucket",
        "--backend-config",
        "bucket.tfbackend.hcl",
    ];
    let o = csis_in(&cwd, r, &double, &[], &begin);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: the new location local://state-b/bucket.tfstate already holds state (lineage 9e9e-lineage-b) that is not this workspace's: a collision, refused. The old state is untouched.\n"
    );
    // Nothing was copied over it, no migration begun.
    assert_eq!(double.read_state("bucket.tfbackend.hcl"), Some(other));
    assert!(!double.argv().contains("-migrate-state"));
    assert!(!cwd.join("bucket.state-migration.json").exists());
    let o = csis_in(
        &cwd,
        r,
        &double,
        &[("TOFU_DOUBLE_FAIL_INIT", "AccessDenied")],
        &begin,
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: state-migration begin: init against bucket.tfbackend.hcl failed: 'tofu init -input=false -reconfigure -backend-config=".to_string()
            + &cwd.join("bucket.tfbackend.hcl").display().to_string()
            + "' exited 1: Error: Failed to get existing workspaces: AccessDenied; the old state is untouched\n"
    );
}

fn receipt(root: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(root.join("_private/unmount-receipts/box/data.json")).unwrap(),
    )
    .unwrap()
}

#[test]
fn unmount_leaves_a_receipt_the_gate_reads_before_a_detach() {
    let t = tree("local-run");
    let r = t.path();
    let double = Double::new();
    ok(csis_at(r, T0, &["run", "all", "--no-dry-run"]));
    let link = r.join("store/instances/box/mounts/srv/data");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    let unmount = |env: &[(&str, &str)], args: &[&str]| {
        let mut a = vec!["unmount", "storage"];
        a.extend_from_slice(args);
        csis_in(r, r, &double, env, &a)
    };
    let o = unmount(&[], &["data", "--instance", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: unmount: instance 'nope' is not declared\n"
    );
    let o = unmount(&[], &["logs", "--instance", "box"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: unmount: storage 'logs' is not attached to instance 'box' (it attaches: [data]) -- name one of its storages\n"
    );
    // The detach is planned; no receipt yet.
    let cwd = tofu_root(r, "detach.json");
    let wl = [
        "--whitelist",
        "aws_volume_attachment.attach",
        "--require-unmounted",
    ];
    let o = gate(r, &cwd, &double, &wl);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        "error: gate-plan: REFUSED: planned detach aws_volume_attachment.attach[\"box/data\"] of storage 'data' from instance 'box' has no unmount receipt -- run csis unmount storage data --instance box first (or unmount it by hand and run it with --confirm)\nerror: gate-plan: ws.tfplan: refused, 1 problem(s); nothing is applied\n"
    );
    // Something there that is not a mount: the runtime refuses, the
    // receipt says so.
    std::fs::remove_file(&link).unwrap();
    std::fs::create_dir_all(&link).unwrap();
    let o = unmount(&[], &["data", "--instance", "box"]);
    assert_eq!(o.status.code(), Some(1));
    let path = r.join("_private/unmount-receipts/box/data.json");
    assert_eq!(
        stderr(&o),
        format!(
            "error: unmount of /srv/data on box failed (exit 1): {} is not a mount (a link to a storage); it is left as it is -- a receipt with ok: false was written ({}); the gate's --require-unmounted refuses the detach until it is unmounted (or unmounted by hand and confirmed with --confirm)\n",
            link.display(),
            path.display()
        )
    );
    let failed = receipt(r);
    assert_eq!(failed["ok"], false);
    assert_eq!(failed["confirmed"], false);
    assert_eq!(failed["mount_point"], "/srv/data");
    assert_eq!(failed["run"], "R1");
    assert_eq!(failed["at"], "2026-12-02T15:53:24+00:00");
    let o = gate(r, &cwd, &double, &wl);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).starts_with(&format!(
            "error: gate-plan: REFUSED: planned detach aws_volume_attachment.attach[\"box/data\"] of storage 'data' from instance 'box': its unmount receipt says the unmount failed (unmount of /srv/data on box failed (exit 1): {} is not a mount",
            link.display()
        )),
        "{}",
        stderr(&o)
    );
    // Unmounted by hand and confirmed: the operator is named.
    let o = unmount(
        &[("USER", ""), ("USERNAME", "")],
        &["data", "--instance", "box", "--confirm"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: unmount --confirm: neither USER nor USERNAME is set, and the receipt must name who unmounted it by hand -- set USER to your name\n"
    );
    std::fs::remove_dir(&link).unwrap();
    let o = unmount(
        &[("USER", "avery")],
        &["data", "--instance", "box", "--confirm"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "unmount: /srv/data on box confirmed unmounted by hand by avery; receipt {}\n",
            path.display()
        )
    );
    let confirmed = receipt(r);
    assert_eq!(
        (
            &confirmed["ok"],
            &confirmed["confirmed"],
            &confirmed["operator"]
        ),
        (
            &serde_json::json!(true),
            &serde_json::json!(true),
            &serde_json::json!("avery")
        )
    );
    let o = gate(r, &cwd, &double, &wl);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "gate-plan: ws.tfplan: 1 change(s), 1 destroy(s) whitelisted, 1 detach(es) unmounted: pass\n"
    );
}

#[test]
fn the_local_runtime_unmounts_by_removing_the_mount_link() {
    let t = tree("local-run");
    let r = t.path();
    let double = Double::new();
    ok(csis_at(r, T0, &["run", "all", "--no-dry-run"]));
    let link = r.join("store/instances/box/mounts/srv/data");
    let o = csis_in(
        r,
        r,
        &double,
        &[],
        &["unmount", "storage", "data", "--instance", "box"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "unmount: /srv/data on box unmounted (runtime 'here'); receipt {}\n",
            r.join("_private/unmount-receipts/box/data.json").display()
        )
    );
    assert!(link.symlink_metadata().is_err());
    // The storage itself is untouched.
    assert!(r.join("store/storages/data").is_dir());
    let rec = receipt(r);
    assert_eq!(
        (&rec["ok"], &rec["confirmed"]),
        (&serde_json::json!(true), &serde_json::json!(false))
    );
    assert_eq!(rec["detail"], "unmounted by runtime 'here'");
}
