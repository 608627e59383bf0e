//! Launch parameters over real local runs: recorded after instance-image
//! generates, marked launched after the apply, immutable afterwards except
//! for a removed mount; forget drops the record of an undeclared instance.

use crate::support::{csis_at, edit, ok};
use csis_test_support::tree;

const NOW: i64 = 1796226804;

#[test]
fn launched_instances_are_immutable_but_may_detach() {
    let t = tree("local-run");
    let r = t.path();
    let record = r.join("meta-state/launch-params.yaml");
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(
        text.contains("    params:\n      image: top\n      build: unbound\n      group: ops\n      identity_type: unix\n"),
        "{text}"
    );
    assert!(
        text.contains("      session: local-shell\n      hostname: box-001\n      alias: null\n      ephemeral: false\n"),
        "{text}"
    );
    assert!(
        text.contains("    launched: true\n    launched_run: \"2026_12_02T15_53_24\"\n"),
        "{text}"
    );

    // The pin bound after the launch is no change; the record takes it.
    ok(csis_at(r, NOW + 60, &["run", "instance-image"]));
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(
        text.contains("      build: top-here-2026_12_02T15_53_24\n"),
        "{text}"
    );
    assert!(text.contains("    launched: true\n"), "{text}");

    edit(r, "instances/box.yml", "hello from box", "hello again");
    let v = csis_at(r, NOW + 120, &["--brief", "validate"]);
    assert_eq!(v.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&v.stderr),
        "instance 'box' was launched (run 2026_12_02T15_53_24) and its launch parameters changed (userdata); launch parameters are immutable after launch -- replace the instance (upgrade instance, or decommission and redeclare) (N26)\n  help: a running machine keeps what it was launched with: undo the change to userdata, or let a new machine take it (`csis upgrade instance box`, or remove the instance, run, and declare it again)\nvalidate: 1 error(s)\n"
    );
    edit(r, "instances/box.yml", "hello again", "hello from box");

    // Removing a mount is the one change allowed in place: a detach.
    edit(
        r,
        "instances/box.yml",
        "    storages:\n      - {name: data, mount_point: /srv/data}\n",
        "",
    );
    ok(csis_at(r, NOW + 180, &["validate"]));

    // Decommissioned, the record is forgotten with the pin.
    std::fs::remove_file(r.join("instances/box.yml")).unwrap();
    assert_eq!(
        ok(csis_at(r, NOW + 240, &["forget", "instance", "box"])).trim(),
        "forget: instance box (was on top-here-2026_12_02T15_53_24)"
    );
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(!text.contains("box"), "{text}");
}

#[test]
fn a_replacement_is_the_next_generation_with_the_next_hostname() {
    let t = tree("local-run");
    let r = t.path();
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    let state = std::fs::read_to_string(r.join("meta-state/instance-state.yaml")).unwrap();
    assert!(
        state.contains("  box:\n    generations:\n      durable: 1\n    current:\n      number: 1\n      kind: durable\n      how: inferred\n"),
        "{state}"
    );
    ok(csis_at(
        r,
        NOW + 60,
        &[
            "run",
            "instance-image",
            "--force-bake",
            "top",
            "--no-dry-run",
        ],
    ));
    ok(csis_at(r, NOW + 120, &["upgrade", "instance", "box"]));
    ok(csis_at(r, NOW + 180, &["validate"]));
    ok(csis_at(
        r,
        NOW + 180,
        &["run", "instance-image", "--no-dry-run"],
    ));
    assert_eq!(
        std::fs::read_to_string(r.join("store/instances/box/root/etc/hostname")).unwrap(),
        "box-002\n"
    );
    let params = std::fs::read_to_string(r.join("meta-state/launch-params.yaml")).unwrap();
    assert!(params.contains("      hostname: box-002\n"), "{params}");
    let state = std::fs::read_to_string(r.join("meta-state/instance-state.yaml")).unwrap();
    assert!(state.contains("      durable: 2\n"), "{state}");
    assert!(
        state.contains("        closed_run: \"2026_12_02T15_56_24\"\n        why: replaced\n"),
        "{state}"
    );
}

#[test]
fn a_new_durable_machine_draws_the_first_free_alias_once() {
    let t = tree("local-run");
    let r = t.path();
    let pool = r.join("meta-state/aliases.txt");
    std::fs::create_dir_all(pool.parent().unwrap()).unwrap();
    std::fs::write(&pool, "# the pool\nkestrel\nheron\n").unwrap();
    let dry = ok(csis_at(r, NOW, &["run", "instance-image"]));
    assert!(
        dry.contains("[DRY RUN] alias pool: instance 'box' would take 'kestrel'"),
        "{dry}"
    );
    assert_eq!(
        std::fs::read_to_string(&pool).unwrap(),
        "# the pool\nkestrel\nheron\n",
        "a dry run draws nothing"
    );
    let real = ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    assert!(
        real.contains("alias pool: instance 'box' takes 'kestrel'"),
        "{real}"
    );
    assert_eq!(
        std::fs::read_to_string(&pool).unwrap(),
        "# the pool\n# kestrel -- instance box as box-001 2026-12-02T15:53:24+00:00 run 2026_12_02T15_53_24\nheron\n"
    );
    let params = std::fs::read_to_string(r.join("meta-state/launch-params.yaml")).unwrap();
    assert!(params.contains("      alias: kestrel\n"), "{params}");
    // Launched, the machine keeps its alias and draws no other.
    ok(csis_at(
        r,
        NOW + 60,
        &["run", "instance-image", "--no-dry-run"],
    ));
    assert!(
        std::fs::read_to_string(&pool)
            .unwrap()
            .ends_with("\nheron\n")
    );
    ok(csis_at(r, NOW + 60, &["validate"]));
}

#[test]
fn stats_report_each_stage_only_when_asked() {
    let t = tree("local-run");
    let r = t.path();
    let summary = |r: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(r.join("generated/run-summary.json")).unwrap(),
        )
        .unwrap()
    };
    ok(csis_at(r, NOW, &["run", "all"]));
    assert!(summary(r).get("stats").is_none(), "no stats unless asked");
    let out = ok(csis_at(r, NOW, &["run", "all", "--stats"]));
    for stage in ["validate", "plan", "generate", "apply"] {
        assert!(out.contains(&format!("stats: {stage}: ")), "{out}");
        let st = &summary(r)["stats"]["stages"][stage];
        assert!(
            st["ms"].is_number() && st["executed"].is_u64() && st["reused"].is_u64(),
            "{st}"
        );
    }
    assert!(out.contains("stats: peak memory "), "{out}");
    assert!(summary(r)["stats"]["peak_memory_kib"].as_u64().unwrap() > 0);
    // A second run in a fresh process executes the generation queries anew.
    assert!(
        summary(r)["stats"]["stages"]["generate"]["executed"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn an_ephemeral_instance_is_torn_down_and_forgotten_after_its_real_run() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "instances/box.yml",
        "    image: top\n",
        "    image: top\n    ephemeral: true\n",
    );
    let log = ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));
    assert!(
        log.contains("teardown: ephemeral instance box removed"),
        "{log}"
    );
    assert!(
        log.contains("forget: ephemeral instance box (was on top-here-2026_12_02T15_53_24)"),
        "{log}"
    );
    assert!(!r.join("store/instances/box").exists());
    assert!(r.join("store/storages/data").is_dir(), "its storage stays");
    let read = |f: &str| std::fs::read_to_string(r.join("meta-state").join(f)).unwrap();
    assert!(!read("launch-params.yaml").contains("box"));
    let pins = read("pins.yaml");
    assert!(!pins.contains("box: "), "{pins}");
    assert!(pins.contains("op: ephemeral"), "{pins}");
    let state = read("instance-state.yaml");
    assert!(state.contains("ephemeral: 1\n    current: null"), "{state}");
    assert!(state.contains("why: ephemeral"), "{state}");
    // The next real run launches a new one, counted apart from durables.
    let log = ok(csis_at(r, NOW + 60, &["run", "all", "--no-dry-run"]));
    assert!(log.contains("forget: ephemeral instance box"), "{log}");
    assert!(read("instance-state.yaml").contains("ephemeral: 2\n"));
    let spec = std::fs::read_to_string(
        r.join("generated/instance-image/vm/instance-generation/vm-instance-generation-box.json"),
    )
    .unwrap();
    assert!(spec.contains("\"hostname\": \"box-002\""), "{spec}");
}
