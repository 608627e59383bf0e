//! `csis run` end to end: the generated tree of the example (snapshot),
//! incremental emission, real runs on the local runtime, failures.

use csis_test_support::{files_below, fixture_dir, tree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

/// A fixed start time, so run ids and summaries are the same every run.
const NOW: &str = "1796226804";

fn csis(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("USER", "avery")
        .env("CSIS_NOW", NOW)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn mtimes(dir: &Path) -> BTreeMap<String, SystemTime> {
    files_below(dir)
        .into_iter()
        .map(|(rel, p)| (rel, std::fs::metadata(p).unwrap().modified().unwrap()))
        .collect()
}

/// A snapshot stores a generated `.gitignore` as `gitignore.snapshot`, or
/// git would apply it to the snapshot itself.
fn snapshot_name(rel: &str) -> String {
    match rel.rsplit_once('/') {
        Some((dir, ".gitignore")) => format!("{dir}/gitignore.snapshot"),
        None if rel == ".gitignore" => "gitignore.snapshot".into(),
        _ => rel.to_string(),
    }
}

/// The generated tree of fixtures/config must equal the reviewed snapshot in
/// fixtures/expected/config-generated, file by file, and hold no file the
/// snapshot does not. `CSIS_UPDATE_EXPECT=1` rewrites the snapshot: review
/// the diff.
#[test]
fn the_example_generates_the_reviewed_tree() {
    let t = tree("config");
    let out = csis(t.path(), &["run", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got: BTreeMap<String, PathBuf> = files_below(&t.path().join("generated"))
        .into_iter()
        .map(|(rel, p)| (snapshot_name(&rel), p))
        .collect();
    let expected_dir = fixture_dir("expected/config-generated");
    if std::env::var("CSIS_UPDATE_EXPECT").is_ok() {
        let _ = std::fs::remove_dir_all(&expected_dir);
        for (rel, p) in &got {
            let dest = expected_dir.join(rel);
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::copy(p, dest).unwrap();
        }
        return;
    }
    let want = files_below(&expected_dir);
    let got_paths: Vec<&String> = got.keys().collect();
    let want_paths: Vec<&String> = want.keys().collect();
    assert_eq!(got_paths, want_paths, "the set of generated files changed");
    for (rel, p) in &got {
        let a = std::fs::read_to_string(p).unwrap();
        let b = std::fs::read_to_string(&want[rel]).unwrap();
        assert_eq!(a, b, "{rel} differs from the snapshot");
    }
}

#[test]
fn a_second_run_rewrites_nothing_and_an_edit_rewrites_only_its_files() {
    let t = tree("config");
    let generated = t.path().join("generated");
    assert_eq!(csis(t.path(), &["run", "all"]).status.code(), Some(0));
    let first = mtimes(&generated);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(csis(t.path(), &["run", "all"]).status.code(), Some(0));
    let second = mtimes(&generated);
    let changed: Vec<&String> = second
        .iter()
        .filter(|(rel, m)| first.get(*rel) != Some(m))
        .map(|(rel, _)| rel)
        .collect();
    // The summary belongs to the run (it is gitignored): it is the one file
    // a run always writes.
    assert_eq!(changed, ["run-summary.json"]);

    let image = t.path().join("images/apps.yml");
    let text = std::fs::read_to_string(&image).unwrap();
    std::fs::write(
        &image,
        text.replace(
            "mkdir -p \"$CSIS_IMAGE_ROOT/opt/research\"",
            "mkdir -p \"$CSIS_IMAGE_ROOT/opt/research\" \"$CSIS_IMAGE_ROOT/opt/data\"",
        ),
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(csis(t.path(), &["run", "all"]).status.code(), Some(0));
    let third = mtimes(&generated);
    let changed: Vec<&String> = third
        .iter()
        .filter(|(rel, m)| second.get(*rel) != Some(m))
        .map(|(rel, _)| rel)
        .collect();
    assert_eq!(
        changed,
        [
            "instance-image/local-images/image-generation/local-images-image-generation-research-workstation.json",
            "run-summary.json",
        ]
    );
}

#[test]
fn a_real_run_bakes_the_chain_and_launches_with_the_storage_mounted() {
    let t = tree("local-run");
    // The launch script also writes into the storage, at its mount point.
    crate::support::edit(
        t.path(),
        "instances/box.yml",
        "/greeting\"",
        "/greeting\"; hostname > /srv/data/booted-on",
    );
    let out = csis(t.path(), &["run", "all", "--no-dry-run"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let store = t.path().join("store");
    let run = "2026_12_02T15_53_24";
    for series in ["tiny", "base", "mid", "top"] {
        let build = format!("{series}-here-{run}");
        let head = std::fs::read_to_string(store.join(format!("heads/{series}@here"))).unwrap();
        assert_eq!(head.trim(), build);
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(store.join(format!("images/{build}/manifest.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(manifest["tags"]["csis_series"], series);
        assert_eq!(manifest["tags"]["csis_run"], run);
    }
    // Each layer carries its parents' changes.
    let top = store.join(format!("images/top-here-{run}/root"));
    assert_eq!(
        std::fs::read_to_string(top.join("etc/layer-base")).unwrap(),
        "base\n"
    );
    assert_eq!(
        std::fs::read_to_string(top.join("etc/layer-mid")).unwrap(),
        "mid\n"
    );
    assert_eq!(
        std::fs::read_to_string(top.join("etc/layer-top")).unwrap(),
        "top\n"
    );
    assert!(top.join("etc/os-release").is_file());
    // The instance: its image, its storage mounted, its user-data run.
    let inst = store.join("instances/box");
    assert_eq!(
        std::fs::read_to_string(inst.join("image/etc/layer-top")).unwrap(),
        "top\n"
    );
    let mount = inst.join("mounts/srv/data");
    assert_eq!(
        std::fs::canonicalize(&mount).unwrap(),
        std::fs::canonicalize(store.join("storages/data")).unwrap()
    );
    // Its own root, booted: instance-setup applied the cloud-config (the
    // hostname, the group's accounts, the launch script), then the image's
    // first-boot unit ran the launch script, inside the root.
    let root = inst.join("root");
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    assert_eq!(read("etc/hostname"), "box-001\n");
    assert_eq!(read("greeting"), "hello from box\n");
    assert!(root.join("var/lib/csis/launch-applied").is_file());
    assert!(read("var/lib/csis/launch.sh").contains("hello from box"));
    let passwd = read("etc/passwd");
    assert!(
        passwd.contains(":Avery Alpha:/home/avery_alpha:/bin/bash\n")
            && passwd.contains(":Blake Bravo:/home/blake_bravo:/bin/bash\n"),
        "{passwd}"
    );
    assert!(read("etc/group").contains("\nops:x:1000:avery_alpha,blake_bravo\n"));
    assert_eq!(
        read("etc/sudoers.d/90-cloud-init-users"),
        "avery_alpha ALL=(ALL) NOPASSWD:ALL\n"
    );
    assert!(
        root.join("etc/systemd/system/csis-launch.service")
            .is_file()
    );
    // What it wrote at the mount point is in the storage, on the host.
    assert_eq!(
        std::fs::read_to_string(store.join("storages/data/booted-on")).unwrap(),
        "box-001\n"
    );
    // The build itself is untouched by the instance.
    assert!(
        !store
            .join(format!("images/top-here-{run}/root/greeting"))
            .exists()
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["apply"]["instance-image"], "executed");
    assert_eq!(summary["apply"]["base-image"], "executed");
    assert!(err.contains("[top@here] executing \"$CSIS\" local bake --spec bake/image-generation/bake-image-generation-top.json"), "{err}");
    // The tree does not set sleep_before_finalization: no word about it.
    assert!(!err.contains("sleep_before_finalization"), "{err}");
}

/// A tree that asks for a pause before finalization hears, once, that a
/// real run does not take it; a dry run says nothing.
#[test]
fn a_set_sleep_before_finalization_is_reported_as_ignored() {
    let t = tree("local-run");
    let cfg = t.path().join("cfg/_config.yml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("{text}sleep_before_finalization: 5\n")).unwrap();
    let notice =
        "sleep_before_finalization=5 in cfg/ is ignored: csis never pauses before finalization";
    let dry = csis(t.path(), &["run", "identity"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(
        !stderr(&dry).contains("sleep_before_finalization"),
        "{}",
        stderr(&dry)
    );
    let real = csis(t.path(), &["run", "identity", "--no-dry-run"]);
    assert_eq!(real.status.code(), Some(0), "{}", stderr(&real));
    assert_eq!(
        stderr(&real).matches(notice).count(),
        1,
        "{}",
        stderr(&real)
    );
}

#[test]
fn a_failing_modification_fails_the_run_and_records_nothing_for_that_build() {
    let t = tree("local-run");
    let out = csis(
        t.path(),
        &[
            "--overlay",
            "fail-overlay.yml",
            "run",
            "all",
            "--no-dry-run",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // The step's stderr, streamed with the bake's prefix before its failure.
    assert!(err.contains("[top@here] csis local: modification 'boom' of image 'top' failed (exit 3); nothing was recorded for this build\nerror: [top@here] command returned 1"), "{err}");
    assert!(
        err.contains("error: [instance-image/execution] bake top@here failed (command returned 1: \"$CSIS\" local bake --spec bake/image-generation/bake-image-generation-top.json)"),
        "{err}"
    );
    assert!(
        err.contains("error: Apply failed for lifecycle instance-image"),
        "{err}"
    );
    let store = t.path().join("store");
    assert!(!store.join("heads/top@here").exists());
    let builds: Vec<String> = std::fs::read_dir(store.join("images"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        builds
            .iter()
            .all(|b| !b.starts_with("top-") && !b.contains("partial")),
        "{builds:?}"
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["ok"], false);
    assert_eq!(summary["apply"]["instance-image"], "failed");
    assert_eq!(summary["apply"]["release"], "not-attempted");
    assert_eq!(summary["apply"]["retention"], "not-attempted");
    let journal = std::fs::read_to_string(t.path().join("meta-state/runs.yaml")).unwrap();
    assert!(journal.contains("ok: false"), "{journal}");
}

#[test]
fn a_script_from_an_earlier_run_is_skipped_as_stale() {
    let t = tree("local-run");
    assert_eq!(csis(t.path(), &["run", "all"]).status.code(), Some(0));
    let out = csis(t.path(), &["run", "storage"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: [identity] stale-script-skipped"),
        "{err}"
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["apply"]["identity"], "stale-script-skipped");
    assert_eq!(summary["apply"]["storage"], "dry-run");
    assert_eq!(summary["requested"], serde_json::json!(["storage"]));
}

#[test]
fn only_names_images_and_unknown_ones_are_refused() {
    let t = tree("local-run");
    let out = csis(t.path(), &["run", "instance-image", "--only", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("error: --only names unknown image(s): nope; known: base, mid, tiny, top"),
        "{}",
        stderr(&out)
    );
    let out = csis(t.path(), &["run", "instance-image", "--only", "mid"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("bake plan: top@here: skip: not selected"),
        "{err}"
    );
    assert!(
        err.contains("bake plan: mid@here: bake: no build yet"),
        "{err}"
    );
    assert!(
        !t.path()
            .join("generated/instance-image/bake/image-generation/bake-image-generation-top.json")
            .exists()
    );
    // A runtime scope that names no runtime is refused, by the flag given.
    for (args, want) in [
        (
            &["--only-runtime", "nowhere"][..],
            "error: --only-runtime names unknown runtime 'nowhere'; declared: here\n",
        ),
        (
            &["--apply-runtime", "hree"],
            "error: --apply-runtime names unknown runtime 'hree'; declared: here; did you mean 'here'?\n",
        ),
    ] {
        let mut all = vec!["run", "all"];
        all.extend_from_slice(args);
        let out = csis(t.path(), &all);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
    }
}

#[test]
fn validation_errors_stop_the_run_before_generation() {
    let t = tree("local-run");
    std::fs::write(
        t.path().join("images/bad.yml"),
        "images:\n  - name: bad\n    colour: red\n",
    )
    .unwrap();
    let out = csis(t.path(), &["run", "all"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: validation: images/bad.yml:3:5: Image 'bad': unknown key 'colour'"),
        "{err}"
    );
    assert!(!t.path().join("generated/identity").exists());
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["ok"], false);
    assert!(summary["validation_errors"].as_array().unwrap().len() >= 2);
}

#[test]
fn a_runtime_scope_keeps_other_runtimes_directories_as_they_were() {
    let t = tree("config");
    assert_eq!(csis(t.path(), &["run", "all"]).status.code(), Some(0));
    let dummy = t.path().join(
        "generated/instance-image/dummy-images/image-generation/dummy-images-image-generation.json",
    );
    std::fs::write(&dummy, "as committed\n").unwrap();
    let stray = t
        .path()
        .join("generated/instance-image/local-images/stray.txt");
    std::fs::write(&stray, "stale\n").unwrap();
    let out = csis(t.path(), &["run", "all", "--only-runtime", "local"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("bake plan: alma-base@dummy-cloud: skip: outside the apply scope"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&dummy).unwrap(), "as committed\n");
    assert!(!stray.exists(), "a stale file in scope is removed");
    // Builders of other runtimes contribute no command to the scoped run.
    let script = std::fs::read_to_string(
        t.path()
            .join("generated/instance-image/run-instance-image.sh"),
    )
    .unwrap();
    assert!(!script.contains("dummy-images"), "{script}");
    assert!(script.contains("local bake"), "{script}");
}

#[test]
fn a_base_image_without_a_vendor_tree_fails_resolution() {
    let t = tree("local-run");
    let cfg = t.path().join("cfg/builders.yml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("        image_id: vendor/tiny-os\n", "")).unwrap();
    let out = csis(t.path(), &["run", "base-image"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: [base-image] generation failed for image-generation: bake: No resolved Image identifiers for OS tiny in predefined_resolve"),
        "{err}"
    );
    assert!(
        err.contains("run 2026_12_02T15_53_24: failed: Generation failed for lifecycle base-image"),
        "{err}"
    );
    // A lifecycle that failed to generate stops the applies after it.
    let out = csis(t.path(), &["run", "base-image", "instance-image"]);
    assert_eq!(out.status.code(), Some(1));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["apply"]["base-image"], "not-attempted");
    assert_eq!(summary["apply"]["instance-image"], "not-attempted");
}

#[test]
fn a_real_run_from_the_root_with_the_default_root_dir() {
    let t = tree("local-run");
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(t.path())
        .args(["run", "all", "--no-dry-run"])
        .env("CSIS_NOW", NOW)
        .env_remove("CSIS_ROOT_DIR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(t.path().join("store/heads/top@here").is_file());
    assert!(
        t.path()
            .join("store/instances/box/mounts/srv/data")
            .exists()
    );
}

#[test]
fn no_apply_generates_only() {
    let t = tree("local-run");
    let out = csis(t.path(), &["run", "storage", "--no-apply"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("[DRY RUN]"), "{err}");
    assert!(t.path().join("generated/storage/run-storage.sh").is_file());
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["apply"], serde_json::json!({}));
    assert_eq!(summary["lifecycles"]["storage"]["status"], "generated");
}

/// A root that holds no configuration is refused once, with the hint,
/// and nothing is written: not the directory, not generated/, not the
/// journal.
#[test]
fn a_missing_root_writes_nothing_and_says_so_once() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("no-such-tree");
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(t.path())
        .arg("--root-dir")
        .arg(&missing)
        .args(["run", "all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "error: Failed to read configuration from {}/cfg: no cfg/ directory or no YAML in it; check --root-dir\n",
            missing.display()
        )
    );
    assert!(!missing.exists());
    // An existing directory without cfg/ stays as it was.
    let out = csis(t.path(), &["run", "all", "--no-dry-run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
}

/// A mistyped lifecycle: the names that exist, the nearest one suggested,
/// and no run recorded (a run that never started is no run).
#[test]
fn a_mistyped_lifecycle_suggests_the_name_and_records_no_run() {
    let t = tree("local-run");
    let out = csis(t.path(), &["run", "al"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: unknown lifecycle 'al'; did you mean 'all'? known: all, identity, storage, base-image, instance-image, release, retention\n"
    );
    assert!(!t.path().join("meta-state/runs.yaml").exists());
    assert!(!t.path().join("generated").exists());
}

/// From a subdirectory of a tree, without --root-dir, csis finds the root
/// by walking up to the nearest cfg/ with YAML, as git and cargo do.
#[test]
fn the_root_is_found_from_a_subdirectory() {
    let t = tree("local-run");
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(t.path().join("images"))
        .env_remove("CSIS_ROOT_DIR")
        .args(["--brief", "validate"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).ends_with("validate: ok\n"), "{}", stderr(&out));
}

/// `csis plan` ends with terraform's kind of summary, and names what a
/// re-baked parent leaves on its old build, with the command that moves it.
#[test]
fn the_plan_summarizes_and_names_what_stays_on_an_old_build() {
    let t = tree("local-run");
    // Two more instances of top, in a file after box's: what stays is
    // named in the order the tree declares it, not the pins' order.
    std::fs::write(
        t.path().join("instances/more.yml"),
        "instances:\n  - name: zed\n    image: top\n  - name: amy\n    image: top\n",
    )
    .unwrap();
    let first = csis(t.path(), &["plan"]);
    assert!(
        String::from_utf8_lossy(&first.stdout)
            .ends_with("Plan: 4 to bake, 0 current, 3 instances to launch.\n"),
        "{}",
        String::from_utf8_lossy(&first.stdout)
    );
    let out = csis(t.path(), &["run", "all", "--no-dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let chain = t.path().join("images/chain.yml");
    let text = std::fs::read_to_string(&chain).unwrap();
    std::fs::write(&chain, text.replace("echo mid >", "echo mid2 >")).unwrap();
    let plan = csis(t.path(), &["plan"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    let stdout = String::from_utf8_lossy(&plan.stdout);
    let tail: Vec<&str> = stdout.lines().rev().take(2).collect();
    assert_eq!(
        tail,
        [
            "image 'top' on here stays on build mid-here-2026_12_02T15_53_24 while 'mid' re-bakes (parent_policy: pinned); to move it after the bake: csis upgrade image top --runtime here",
            "Plan: 1 to bake, 3 current, 0 instances to launch.",
        ]
    );
    std::fs::write(
        &chain,
        text.replace(
            "> \"$CSIS_IMAGE_ROOT/etc/layer-top\"",
            "> \"$CSIS_IMAGE_ROOT/etc/layer-top2\"",
        ),
    )
    .unwrap();
    let plan = csis(t.path(), &["plan"]);
    let stdout = String::from_utf8_lossy(&plan.stdout);
    let stays = |i: &str| {
        format!(
            "instance '{i}' stays on build top-here-2026_12_02T15_53_24 while 'top' re-bakes; to move it after the bake: csis upgrade instance {i}\n"
        )
    };
    assert!(
        stdout.ends_with(&format!(
            "Plan: 1 to bake, 3 current, 0 instances to launch.\n{}{}{}",
            stays("box"),
            stays("zed"),
            stays("amy")
        )),
        "{stdout}"
    );
}
