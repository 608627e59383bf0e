//! Issue 32, defects 5 and 6: the gates between a tofu plan and its apply
//! fail closed. gate-plan refuses a plan it does not understand (read
//! against the documented JSON output format), stops a `tofu show` that
//! hangs, bounds the plan it reads and counts every file of the root for
//! staleness; apply-check refuses a tree that does not load and states
//! the value it read. Run as the runner runs them, with the stand-in
//! `tofu` of tests/e2e/gate.rs (a TEST DOUBLE that prints the planfile).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::gate::{Double, csis_in, gate, set_mtime, stderr, stdout, tofu_root};
use crate::support::edit;
use csis_test_support::tree;

/// What csis reads of change.actions, as every action refusal says it.
const READS: &str = "the plan is refused (csis reads no-op, create, read, update, delete and the two replace pairs)";

/// How an entry's shape refusal ends.
const SHAPE: &str = "the plan is refused (each resource change is an object with an address, a type and change.actions)";

/// The last line of a refusal of a plan the gate does not understand.
const NOT_UNDERSTOOD: &str = "error: gate-plan: ws.tfplan: refused, the plan is not one csis understands; nothing is applied\n";

/// The gate over the fixture plan `plan`: exit code, stdout, stderr.
fn gate_over(plan: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let t = tree("local-run");
    let double = Double::new();
    let cwd = tofu_root(t.path(), plan);
    let o = gate(t.path(), &cwd, &double, extra);
    (o.status.code(), stdout(&o), stderr(&o))
}

#[test]
fn an_action_the_format_does_not_document_is_refused_with_where_it_is() {
    for (plan, what) in [
        ("unknown-action.json", r#"unknown action "obliterate""#),
        ("action-capitalised.json", r#"unknown action "Delete""#),
        (
            "actions-string.json",
            "change.actions is a string, not an array of actions",
        ),
        (
            "actions-null.json",
            "change.actions is null, not an array of actions",
        ),
    ] {
        // Whitelisted or not, a plan not understood is not judged.
        let got = gate_over(plan, &["--whitelist", "aws_instance.web"]);
        assert_eq!(
            got,
            (
                Some(3),
                String::new(),
                format!(
                    "error: gate-plan: resource_changes[2] (aws_instance.web): {what}; {READS}\n{NOT_UNDERSTOOD}"
                )
            ),
            "{plan}"
        );
    }
}

#[test]
fn resource_changes_that_are_no_array_of_changes_are_refused() {
    for (plan, what) in [
        (
            "no-change.json",
            format!("resource_changes[2] (aws_instance.web): it has no change; {SHAPE}"),
        ),
        (
            "resource-changes-object.json",
            format!("resource_changes is an object, not an array of resource changes; {SHAPE}"),
        ),
        (
            "resource-changes-null.json",
            format!("resource_changes is null, not an array of resource changes; {SHAPE}"),
        ),
        (
            "resource-changes-absent.json",
            "resource_changes is absent, yet planned_values.root_module.resources holds 1 entry; the plan is refused (the plan format omits resource_changes only when there is no resource at all)".to_string(),
        ),
    ] {
        let got = gate_over(plan, &[]);
        assert_eq!(
            got,
            (
                Some(3),
                String::new(),
                format!("error: gate-plan: {what}\n{NOT_UNDERSTOOD}")
            ),
            "{plan}"
        );
    }
    // How OpenTofu prints the plan of a root without any resource: no
    // resource_changes, nothing planned. It passes.
    assert_eq!(
        gate_over("empty-root.json", &[]),
        (
            Some(0),
            "gate-plan: ws.tfplan: 0 change(s), 0 destroy(s) whitelisted: pass\n".to_string(),
            String::new()
        )
    );
}

#[test]
fn a_tofu_show_that_hangs_is_stopped_at_the_timeout() {
    let t = tree("local-run");
    let double = Double::new();
    let cwd = tofu_root(t.path(), "destroy-whitelisted.json");
    // A tofu whose show never ends, and whose child holds its output
    // open: only stopping the whole process group ends the wait.
    let bin = tempfile::tempdir().unwrap();
    let hung = bin.path().join("tofu-hangs");
    std::fs::write(&hung, "#!/bin/sh\nsleep 120 &\nwait\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hung, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tofu = hung.display().to_string();
    let start = Instant::now();
    let o = gate(
        t.path(),
        &cwd,
        &double,
        &["--tofu", &tofu, "--show-timeout", "1"],
    );
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "error: gate-plan: '{tofu} show -json ws.tfplan' did not finish within 1 s (--show-timeout); it was stopped and the plan is not judged -- check that tofu can start the root's providers, or raise --show-timeout\n"
        )
    );
    let o = gate(t.path(), &cwd, &double, &["--show-timeout", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_plan_over_the_bound_is_refused_unread() {
    // destroy-whitelisted.json is 1092 bytes.
    let wl = ["--whitelist", "aws_ebs_volume.data"];
    let (code, out, err) = gate_over(
        "destroy-whitelisted.json",
        &[wl[0], wl[1], "--max-plan-size", "1KiB"],
    );
    assert_eq!(
        (code, out, err),
        (
            Some(3),
            String::new(),
            "error: gate-plan: 'tofu show -json ws.tfplan' printed more than 1 KiB of plan JSON (--max-plan-size); the plan is refused unread -- raise --max-plan-size if the plan is really that large\n".to_string()
        )
    );
    let (code, _, err) = gate_over(
        "destroy-whitelisted.json",
        &[wl[0], wl[1], "--max-plan-size", "2KiB"],
    );
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn every_file_of_the_root_counts_for_staleness() {
    let t = tree("local-run");
    let double = Double::new();
    let cwd = tofu_root(t.path(), "destroy-whitelisted.json");
    let wl = ["--whitelist", "aws_ebs_volume.data"];
    let stale = |file: &str| {
        format!(
            "error: gate-plan: REFUSED: ws.tfplan is stale: {file} changed after it was planned (a planfile older than any file of its root is stale; .terraform/, the local state and planfiles aside) -- re-run tofu plan -out=ws.tfplan\nerror: gate-plan: ws.tfplan: refused, 1 problem(s); nothing is applied\n"
        )
    };
    // What tofu and csis write beside the plan is not read by it.
    for (file, text) in [
        (".terraform/backend", "b\n"),
        ("terraform.tfstate", "{}\n"),
        ("terraform.tfstate.backup", "{}\n"),
        ("ws-teardown-web.tfplan", "{}\n"),
        ("ws.state-migration.json", "{}\n"),
    ] {
        let path = cwd.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        set_mtime(&path, 3_000);
    }
    let o = gate(t.path(), &cwd, &double, &wl);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Every input is: a user-data file, the backend configuration, a
    // local module's file.
    for file in ["web.user-data", "ws.tfbackend.hcl", "modules/m/x.tf"] {
        let path = cwd.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "# edited after the plan\n").unwrap();
        set_mtime(&path, 3_000);
        let o = gate(t.path(), &cwd, &double, &wl);
        assert_eq!(o.status.code(), Some(3), "{file}");
        assert_eq!(stderr(&o), stale(file), "{file}");
        set_mtime(&path, 1_500);
    }
    let o = gate(t.path(), &cwd, &double, &wl);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `csis apply-check --lifecycle storage --builder dirs` in `root`, with
/// `extra` arguments first.
fn apply_check(root: &Path, extra: &[&str]) -> std::process::Output {
    let double = Double::new();
    let mut args = extra.to_vec();
    args.extend(["apply-check", "--lifecycle", "storage", "--builder", "dirs"]);
    csis_in(root, root, &double, &[], &args)
}

const CANNOT_READ: &str = "error: apply-check: REFUSED: config.apply_storage is not read from a tree that does not load (1 file above); the storage root stops after its plan and gate -- fix it (csis validate shows it) and rerun\n";

#[test]
fn apply_check_refuses_a_tree_whose_cfg_does_not_load() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "cfg/_config.yml",
        "config:\n",
        "config:\n  apply_storage: true\n",
    );
    let o = apply_check(r, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "apply-check: config.apply_storage is true: the storage root of builder 'dirs' applies\n"
    );
    // A later cfg/ file turning the flag off, with the key written twice:
    // the file does not load, and what the rest says is not the flag.
    let later = r.join("cfg/zz-stop.yml");
    std::fs::write(
        &later,
        "config:\n  apply_storage: false\n  apply_storage: false\n",
    )
    .unwrap();
    let o = apply_check(r, &[]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        format!(
            "error: apply-check: REFUSED: cfg/zz-stop.yml:3:3: duplicate key 'apply_storage' in one mapping\n{CANNOT_READ}"
        )
    );
    std::fs::write(&later, "config:\n  apply_storage: [dirs\n").unwrap();
    let o = apply_check(r, &[]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        format!(
            "error: apply-check: REFUSED: cfg/zz-stop.yml:3:1: invalid YAML: while parsing a flow sequence, expected ',' or ']'\n{CANNOT_READ}"
        )
    );
    std::fs::remove_file(&later).unwrap();
    // An overlay turning it off: refused, with the value read.
    let overlay = r.join("stop.yml");
    std::fs::write(&overlay, "config:\n  apply_storage: false\n").unwrap();
    let o = apply_check(r, &["--overlay", "stop.yml"]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(
        stderr(&o),
        "error: apply-check: REFUSED: config.apply_storage is now false, which does not let builder 'dirs' apply; the storage root stops after its plan and gate -- to apply it, set it to true, or to a list naming 'dirs'\n"
    );
    // An overlay that does not load is a tree that does not load.
    std::fs::write(&overlay, "config: {apply_storage: false\n").unwrap();
    let o = apply_check(r, &["--overlay", "stop.yml"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).starts_with("error: apply-check: REFUSED: stop.yml:2:1: invalid YAML: "),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).ends_with(CANNOT_READ), "{}", stderr(&o));
}
