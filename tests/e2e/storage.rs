//! The storage state machine over a real local run: transitions recorded in
//! meta-state/storage-state.yaml, the illegal ones refused at validate.

use crate::support::{csis_at, edit, ok};
use csis_test_support::tree;

const NOW: i64 = 1796226804;

fn refused(root: &std::path::Path, expected: &[&str]) {
    let v = csis_at(root, NOW, &["--brief", "validate"]);
    let err = String::from_utf8_lossy(&v.stderr).to_string();
    assert_eq!(v.status.code(), Some(1), "{err}");
    let mut want: String = expected.iter().map(|l| format!("{l}\n")).collect();
    want.push_str(&format!("validate: {} error(s)\n", expected.len()));
    assert_eq!(err, want);
}

#[test]
fn a_storage_is_created_destroyed_only_unattached_and_regenerated() {
    let t = tree("local-run");
    let r = t.path();
    let record = r.join("meta-state/storage-state.yaml");
    let dir = r.join("store/storages/data");

    // A new storage must start active.
    edit(
        r,
        "storages/data.yml",
        "    groups: [ops]\n",
        "    groups: [ops]\n    state: destroyed\n",
    );
    refused(
        r,
        &[
            "storages/data.yml:4:12: storage: storage 'data' has never been applied; a new storage must start 'active', not 'destroyed'",
        ],
    );
    edit(r, "storages/data.yml", "    state: destroyed\n", "");
    ok(csis_at(r, NOW, &["run", "storage", "--no-dry-run"]));
    assert!(dir.is_dir());
    let created = std::fs::read_to_string(&record).unwrap();
    assert!(
        created.contains("  data:\n    state: active\n    generation: 1\n    builder: dirs\n"),
        "{created}"
    );

    // Attached, it may not leave active.
    edit(
        r,
        "storages/data.yml",
        "    groups: [ops]\n",
        "    groups: [ops]\n    state: destroyed\n",
    );
    refused(
        r,
        &[
            "storages/data.yml:4:12: storage: storage 'data' cannot move active -> destroyed while attached by [box] (detach in one run, transition in the next; N21)",
        ],
    );
    let run = csis_at(r, NOW + 60, &["run", "storage", "--no-dry-run"]);
    assert_eq!(run.status.code(), Some(1));
    assert!(dir.is_dir(), "a refused run destroys nothing");
    assert_eq!(std::fs::read_to_string(&record).unwrap(), created);

    // Detached, it is destroyed and recorded so.
    edit(
        r,
        "instances/box.yml",
        "    storages:\n      - {name: data, mount_point: /srv/data}\n",
        "",
    );
    ok(csis_at(r, NOW + 120, &["run", "storage", "--no-dry-run"]));
    assert!(!dir.exists());

    // Destroyed cannot become archived (and the local runtime does not
    // archive at all).
    edit(
        r,
        "storages/data.yml",
        "state: destroyed",
        "state: archived",
    );
    refused(
        r,
        &[
            "storages/data.yml:4:12: storage: storage 'data' requests archived, which its builder 'dirs' does not realize",
            "storages/data.yml:4:12: storage: storage 'data': transition destroyed -> archived is not legal",
        ],
    );

    // Active again: the next generation of the name.
    edit(r, "storages/data.yml", "    state: archived\n", "");
    ok(csis_at(r, NOW + 180, &["run", "storage", "--no-dry-run"]));
    assert!(dir.is_dir());
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(
        text.contains("    state: active\n    generation: 2\n"),
        "{text}"
    );
    assert!(
        text.contains("      - from: destroyed\n        to: active\n        run: \"2026_12_02T15_56_24\"\n        generation: 2\n        action: regenerate\n"),
        "{text}"
    );
    // A dry run records no transition.
    edit(
        r,
        "storages/data.yml",
        "    groups: [ops]\n",
        "    groups: [ops]\n    state: destroyed\n",
    );
    ok(csis_at(r, NOW + 240, &["run", "storage"]));
    assert_eq!(std::fs::read_to_string(&record).unwrap(), text);
    // The read-model shows both: what is requested, what is current.
    assert_eq!(
        std::fs::read_to_string(r.join("meta-state/storage.yaml")).unwrap(),
        "# csis meta-state: storage.yaml. Written by csis; change it through csis commands.
run: \"2026_12_02T15_57_24\"
storages:
  data:
    builder: dirs
    requested_state: destroyed
    current_state: active
    generation: 2
    allowed_groups:
      - ops
    public_read: false
    share_mode: \"2770\"
    lifecycle: null
    attachments: []
    type: local
    plugin: local
    attachment_cardinality: many
    posix: true
"
    );
}

#[test]
fn an_undeclared_storage_is_destroyed_from_its_record_and_comes_back_as_a_new_generation() {
    let t = tree("local-run");
    let r = t.path();
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    let declaration = std::fs::read_to_string(r.join("storages/data.yml")).unwrap();
    std::fs::remove_file(r.join("storages/data.yml")).unwrap();
    // Still attached: refused until the mapping goes too.
    let v = csis_at(r, NOW, &["--brief", "validate"]);
    assert_eq!(v.status.code(), Some(1));
    // Said once, where the mapping is (no second, placeless line).
    let err = String::from_utf8_lossy(&v.stderr);
    assert!(
        err.contains("instances/box.yml:6:16: instance 'box' (storages[0]) names storage 'data', which is not declared (declared: [])\n"),
        "{err}"
    );
    assert!(!err.contains("attach unknown storage"), "{err}");
    edit(
        r,
        "instances/box.yml",
        "    storages:\n      - {name: data, mount_point: /srv/data}\n",
        "",
    );
    let log = ok(csis_at(r, NOW + 60, &["run", "storage", "--no-dry-run"]));
    assert!(
        log.contains(
            "executing \"$CSIS\" local storage --spec dirs/storage-generation/dirs-storage-generation-data.json"
        ),
        "the destroy is generated from the record: {log}"
    );
    assert!(log.contains("storage data destroyed"), "{log}");
    assert!(!r.join("store/storages/data").exists());
    let record = || std::fs::read_to_string(r.join("meta-state/storage-state.yaml")).unwrap();
    assert!(
        record().contains("      - from: active\n        to: destroyed\n        run: \"2026_12_02T15_54_24\"\n        generation: 1\n        action: undeclared\n"),
        "{}",
        record()
    );
    // Nothing is generated for it any more.
    let log = ok(csis_at(r, NOW + 90, &["run", "storage", "--no-dry-run"]));
    assert!(!log.contains("storage-generation-data.json"), "{log}");
    std::fs::write(r.join("storages/data.yml"), declaration).unwrap();
    ok(csis_at(r, NOW + 120, &["run", "storage", "--no-dry-run"]));
    assert!(
        record().contains("    state: active\n    generation: 2\n"),
        "{}",
        record()
    );
    assert!(r.join("store/storages/data").is_dir());
}

/// A storage an overlay declares on an ephemeral runtime is transient: the
/// run creates it, and its retention lifecycle's closing storage run,
/// over the tree without what the overlays declare, destroys it. A
/// declared storage on the same runtime stays.
#[test]
fn a_transient_storage_on_an_ephemeral_runtime_goes_with_the_run_that_made_it() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "cfg/builders.yml",
        "default_machine_type: small, store: store}",
        "default_machine_type: small, store: store, ephemeral: true}",
    );
    std::fs::write(
        r.join("scratch.yml"),
        "storages:\n  - {name: scratch, groups: [ops]}\n",
    )
    .unwrap();
    let out = ok(csis_at(
        r,
        NOW,
        &["--overlay", "scratch.yml", "run", "all", "--no-dry-run"],
    ));
    let step = "run storage --only none --no-state-query --no-dry-run --undeclare storages:scratch";
    assert!(out.contains(step), "{out}");
    let made = out.find("storage scratch at ").expect(&out);
    let gone = out.find("storage scratch destroyed").expect(&out);
    assert!(made < gone && out[..gone].contains(step), "{out}");
    assert!(!r.join("store/storages/scratch").exists());
    assert!(r.join("store/storages/data").is_dir());
    // Without the overlay there is nothing transient: no closing run.
    let out = ok(csis_at(r, NOW + 60, &["run", "all"]));
    assert!(!out.contains("run storage --only none"), "{out}");
}
