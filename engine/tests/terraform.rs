//! The terraform steps over a workspace on an in-memory system, whose
//! process stand-in answers the tofu command lines (no process runs):
//! apply-check's flag rule, unmount's receipts, and a state migration's
//! sequence and record.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use csis_engine::db::system::MemorySystem;
use csis_engine::terraform::apply_check::{ApplyCheck, apply_check};
use csis_engine::terraform::state_migration::{StateMigration, begin, finish};
use csis_engine::terraform::unmount::{Unmount, receipt_path, unmount};
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_test_support::{LINKED, ROOT, fixture_dir, load, read_tree, registry};

/// local-run in memory, with `edits` (`file`, `from`, `to`) applied and
/// `extra` files written.
fn system(edits: &[(&str, &str, &str)], extra: &[(&str, &str)]) -> MemorySystem {
    let root = Path::new(ROOT);
    let sys = MemorySystem::new()
        .with_env("CSIS_RUN_ID", "R7")
        .with_env("USERNAME", "blake");
    for (rel, text) in read_tree(&fixture_dir("local-run")) {
        let mut text = text;
        for (file, from, to) in edits {
            if *file == rel {
                assert!(text.contains(from), "{rel} has no {from:?}");
                text = text.replacen(from, to, 1);
            }
        }
        sys.write(&root.join(rel), &text);
    }
    for (rel, text) in extra {
        sys.write(&root.join(rel), text);
    }
    sys
}

fn ws(sys: &MemorySystem) -> Workspace {
    load(
        sys,
        registry(LINKED),
        Path::new(ROOT),
        &LoadOptions::default(),
    )
}

#[test]
fn apply_check_lets_a_listed_runtime_or_builder_apply() {
    let check = |flag: &str, builder: &str, runtime: Option<&str>| {
        let sys = system(&[("cfg/_config.yml", "config:\n", flag)], &[]);
        let req = ApplyCheck {
            lifecycle: "storage",
            builder,
            runtime,
        };
        apply_check(&ws(&sys), &req).code
    };
    let list = "config:\n  apply_storage: [here]\n";
    assert_eq!(check(list, "dirs", Some("here")), 0);
    assert_eq!(check(list, "dirs", None), 3);
    assert_eq!(check(list, "here", None), 0);
    assert_eq!(
        check("config:\n  apply_storage: \" dirs \"\n", "dirs", None),
        0
    );
    assert_eq!(
        check("config:\n  apply_storage: false\n", "dirs", Some("here")),
        3
    );
    assert_eq!(
        check("config:\n  apply_storage: []\n", "dirs", Some("here")),
        3
    );
    assert_eq!(
        check("config:\n  apply_storage: yes\n", "dirs", Some("here")),
        0
    );
}

#[test]
fn apply_check_refuses_a_tree_whose_cfg_does_not_load_and_states_the_value_it_read() {
    let on = [(
        "cfg/_config.yml",
        "config:\n",
        "config:\n  apply_storage: true\n",
    )];
    let req = ApplyCheck {
        lifecycle: "storage",
        builder: "dirs",
        runtime: None,
    };
    let refusal = |files: &[(&str, &str)]| apply_check(&ws(&system(&on, files)), &req);
    assert_eq!(refusal(&[]).code, 0);
    let closing = "apply-check: REFUSED: config.apply_storage is not read from a tree that does not load (1 file above); the storage root stops after its plan and gate -- fix it (csis validate shows it) and rerun";
    // A later cfg/ file that would turn the flag off, but does not load:
    // the flag is not read from the files that did.
    let o = refusal(&[(
        "cfg/zz.yml",
        "config:\n  apply_storage: false\n  apply_storage: false\n",
    )]);
    assert_eq!(o.code, 3);
    assert_eq!(
        o.err,
        [
            "apply-check: REFUSED: cfg/zz.yml:3:3: duplicate key 'apply_storage' in one mapping",
            closing
        ]
    );
    let o = refusal(&[("cfg/zz.yml", "config: {apply_storage: [\n")]);
    assert_eq!(o.code, 3);
    assert_eq!(o.err.len(), 2);
    assert!(
        o.err[0].starts_with("apply-check: REFUSED: cfg/zz.yml:2:1: invalid YAML: "),
        "{:?}",
        o.err
    );
    let o = refusal(&[("cfg/zz.yml", "- a list\n")]);
    assert_eq!(
        o.err[0],
        "apply-check: REFUSED: cfg/zz.yml:1:1: the document must be a mapping at the top level, got a list -- write `key: value` pairs at the top level"
    );
    // An overlay turning it off: refused, saying the value it read.
    let sys = system(
        &on,
        &[("/tmp/off.yml", "config:\n  apply_storage: false\n")],
    );
    let options = LoadOptions {
        overlays: vec!["/tmp/off.yml".into()],
        ..LoadOptions::default()
    };
    let o = apply_check(
        &load(&sys, registry(LINKED), Path::new(ROOT), &options),
        &req,
    );
    assert_eq!(
        o.err,
        [
            "apply-check: REFUSED: config.apply_storage is now false, which does not let builder 'dirs' apply; the storage root stops after its plan and gate -- to apply it, set it to true, or to a list naming 'dirs'"
        ]
    );
}

/// The unmount of storage `data` from instance `box`, `confirm`ed by hand
/// or not.
fn unmount_data(confirm: bool) -> Unmount<'static> {
    Unmount {
        storage: "data",
        instance: "box",
        confirm,
    }
}

#[test]
fn a_storage_whose_attachment_was_removed_is_unmounted_at_its_recorded_mount_point() {
    // The declaration no longer attaches data; the launch record still
    // mounts it (the detach has not applied).
    let launched = "instances:\n  box:\n    params:\n      mounts:\n        - {storage: data, mount_point: /var/lib/data}\n    run: R1\n    launched: true\n";
    let sys = system(
        &[(
            "instances/box.yml",
            "    storages:\n      - {name: data, mount_point: /srv/data}\n",
            "",
        )],
        &[("meta-state/launch-params.yaml", launched)],
    );
    let w = ws(&sys);
    let o = unmount(&w, &sys, &unmount_data(false));
    // The local runtime looks for the machine in its store, which this
    // in-memory tree has never launched: the failure is the receipt's.
    let path = receipt_path(Path::new(ROOT), "box", "data");
    assert_eq!(o.code, 1);
    assert_eq!(
        o.err,
        [format!(
            "unmount of /var/lib/data on box failed (exit 1): instance 'box' is not launched: the store holds no /t/store/instances/box -- a receipt with ok: false was written ({}); the gate's --require-unmounted refuses the detach until it is unmounted (or unmounted by hand and confirmed with --confirm)",
            path.display()
        )]
    );
    let receipt: serde_json::Value = serde_json::from_str(&sys.read(&path)).unwrap();
    assert_eq!(
        receipt,
        serde_json::json!({
            "instance": "box", "storage": "data", "mount_point": "/var/lib/data",
            "ok": false, "confirmed": false, "operator": null, "run": "R7",
            "at": "2026-01-01T00:00:00+00:00",
            "detail": "unmount of /var/lib/data on box failed (exit 1): instance 'box' is not launched: the store holds no /t/store/instances/box"
        })
    );
    // Confirmed by hand: USERNAME names the operator when USER is unset.
    let o = unmount(&w, &sys, &unmount_data(true));
    assert_eq!(o.code, 0, "{o:?}");
    let receipt: serde_json::Value = serde_json::from_str(&sys.read(&path)).unwrap();
    assert_eq!(
        (
            &receipt["ok"],
            &receipt["confirmed"],
            &receipt["operator"],
            &receipt["detail"]
        ),
        (
            &serde_json::json!(true),
            &serde_json::json!(true),
            &serde_json::json!("blake"),
            &serde_json::json!("unmounted by hand, confirmed by blake")
        )
    );
}

const OLD: &str = r#"{"version":4,"serial":12,"lineage":"lin-a","resources":[{"type":"x"}]}"#;
const MOVED: &str = r#"{"version":4,"serial":13,"lineage":"lin-a","resources":[{"type":"x"}]}"#;

/// A tree whose storage root `bucket` keeps state, recorded in state-a and
/// declared in state-b now.
fn migrating() -> MemorySystem {
    let builders = "cfg/builders.yml";
    system(
        &[
            (
                builders,
                "runtime_builders:\n",
                "runtime_builders:\n  - {name: cloud, type: dummy, default_machine_type: m, region: r1, networking: {network: vpc-1, subnets: [{subnet_id: s-1, is_default: true}]}}\n",
            ),
            (
                builders,
                "  - {name: dirs, type: local, is_default: true}\n",
                "  - {name: dirs, type: local, is_default: true}\n  - {name: bucket, type: dummy, runtime: cloud, state_configuration: secondary}\nstate_backends:\n  - {name: primary, type: local, is_default: true, config: {bucket: state-a}}\n  - {name: secondary, type: local, config: {bucket: state-b}}\n",
            ),
            (
                "cfg/_config.yml",
                "config:\n",
                "config:\n  use_state_backends: true\n",
            ),
        ],
        &[
            (
                "meta-state/state-locations.yaml",
                "workspaces:\n  bucket: {backend: primary, type: local, location: \"local://state-a/bucket.tfstate\", run: R0}\nmigrations: []\n",
            ),
            ("_private/storage/bucket/.terraform/terraform.tfstate", "{}"),
        ],
    )
}

/// The root of `bucket`.
const BUCKET: &str = "/t/_private/storage/bucket";

/// The move of `bucket` to the backend its generated config names.
fn bucket_migration() -> StateMigration<'static> {
    StateMigration {
        cwd: Path::new(BUCKET),
        workspace: "bucket",
        backend_config: Some("bucket.tfbackend.hcl"),
        tofu: "tofu",
    }
}

/// The stand-in's answers to a begin of [`bucket_migration`]: every pull
/// gives the old state, the probe's init succeeds, and the copying init
/// exits `copy_code` with `copy_stderr`.
fn answer_begin(sys: &MemorySystem, copy_code: i32, copy_stderr: &str) {
    sys.answer("tofu state pull", 0, OLD, "");
    sys.answer(
        &format!(
            "tofu init -input=false -reconfigure -backend-config={BUCKET}/bucket.tfbackend.hcl"
        ),
        0,
        "",
        "",
    );
    sys.answer(
        "tofu init -input=false -migrate-state -force-copy -backend-config=bucket.tfbackend.hcl",
        copy_code,
        "",
        copy_stderr,
    );
}

#[test]
fn a_migration_runs_its_tofu_steps_in_order_and_finish_records_the_move() {
    let sys = migrating();
    let cwd = Path::new(BUCKET);
    let probe = cwd.join(".csis-state-probe");
    let config = "-backend-config=/t/_private/storage/bucket/bucket.tfbackend.hcl";
    answer_begin(&sys, 0, "");
    let w = ws(&sys);
    let req = bucket_migration();
    // The stand-in answers every pull with the old state: in the probe
    // that is this workspace's own lineage, so no collision.
    let o = begin(&w, &sys, &req);
    assert_eq!(o.code, 0, "{o:?}");
    let ran: Vec<String> = sys
        .ran()
        .iter()
        .map(|(line, dir)| format!("{} :: {line}", dir.display()))
        .collect();
    assert_eq!(
        ran,
        [
            format!("{} :: tofu state pull", cwd.display()),
            format!(
                "{} :: tofu init -input=false -reconfigure {config}",
                probe.display()
            ),
            format!("{} :: tofu state pull", probe.display()),
            format!(
                "{} :: tofu init -input=false -migrate-state -force-copy -backend-config=bucket.tfbackend.hcl",
                cwd.display()
            ),
            format!("{} :: tofu state pull", cwd.display()),
        ]
    );
    assert_eq!(
        sys.read(&probe.join("main.tf")),
        "",
        "the probe root is removed"
    );
    assert_eq!(
        sys.read(Path::new(
            "/t/_private/state-backups/bucket.backup-R7.tfstate"
        )),
        OLD
    );
    sys.answer("tofu state pull", 0, MOVED, "");
    let o = finish(&w, &sys, &req);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(
        o.out,
        [
            "state-migration finish: workspace 'bucket' moved from local://state-a/bucket.tfstate to local://state-b/bucket.tfstate (serial 13); recorded in meta-state/state-locations.yaml"
        ]
    );
    assert!(
        sys.read(Path::new("/t/meta-state/state-locations.yaml")).ends_with(
            "migrations:\n  - workspace: bucket\n    from: \"local://state-a/bucket.tfstate\"\n    to: \"local://state-b/bucket.tfstate\"\n    run: R7\n    at: \"2026-01-01T00:00:00+00:00\"\n    serial: 13\n    backup: _private/state-backups/bucket.backup-R7.tfstate\n"
        )
    );
    assert_eq!(sys.read(&cwd.join("bucket.state-migration.json")), "");
    // finish again: begin's note is gone.
    assert_eq!(
        finish(&w, &sys, &req).err,
        ["state-migration finish: no bucket.state-migration.json -- 'begin' did not run"]
    );
}

#[test]
fn a_copy_that_fails_fails_the_begin_and_leaves_no_note() {
    let sys = migrating();
    let cwd = Path::new(BUCKET);
    answer_begin(
        &sys,
        1,
        "Error: Error copying state from the previous \"local\" backend\n",
    );
    let w = ws(&sys);
    let req = bucket_migration();
    assert_eq!(
        begin(&w, &sys, &req).err,
        [
            "state-migration begin: init against bucket.tfbackend.hcl failed: 'tofu init -input=false -migrate-state -force-copy -backend-config=bucket.tfbackend.hcl' exited 1: Error: Error copying state from the previous \"local\" backend; the old state is untouched"
        ]
    );
    assert_eq!(sys.read(&cwd.join("bucket.state-migration.json")), "");
}
