//! fixtures/clouds, the worked tree of docs/clouds.md (an aws and a gce
//! runtime, packer bakes of a three-level chain on each, tofu-aws and
//! tofu-gce instances and storages, an s3 and a gcs state backend):
//! it validates, its dry run's generated tree is snapshot-tested and
//! passes the independent HCL check, and real runs go through the stand-in
//! `packer` and `tofu` of tests/e2e/doubles/ (TEST DOUBLES that never ship,
//! sharing a pretend cloud in a temporary directory): the documented
//! sequence in order on both clouds, builds recorded from the artifact ids,
//! instances pinned to them, and a second run that bakes nothing and
//! applies no change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use csis_test_support::{check_hcl, files_below, tree};

use crate::moto::Moto;
use crate::support::{csis_at, doubles, hcl2_available, here, ok, read, real_run, real_run_with};

const NOW: i64 = 1_796_226_804;
/// The run id CSIS_NOW=NOW gives.
const RUN: &str = "2026_12_02T15_53_24";

/// `text` against tests/e2e/clouds/<name>.snapshot; CSIS_UPDATE_EXPECT=1
/// rewrites the snapshot instead.
fn snapshot(name: &str, text: &str) {
    let path = here(&format!("clouds/{name}.snapshot"));
    if std::env::var("CSIS_UPDATE_EXPECT").is_ok() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    assert_eq!(
        text,
        read(&path),
        "{name} changed (CSIS_UPDATE_EXPECT=1 rewrites tests/e2e/clouds/)"
    );
}

#[test]
fn the_worked_tree_validates_and_plans_every_bake_on_both_clouds() {
    let t = tree("clouds");
    assert_eq!(
        ok(csis_at(t.path(), NOW, &["validate", "--offline"])).trim(),
        "validate: ok"
    );
    let plan = ok(csis_at(t.path(), NOW, &["plan"]));
    let lines: Vec<&str> = plan.lines().collect();
    assert_eq!(
        lines,
        vec![
            "debian12@aws: bake: no build yet",
            "debian12@gce: bake: no build yet",
            "base@aws: bake: no build yet",
            "base@gce: bake: no build yet",
            "app@aws: bake: no build yet",
            "app@gce: bake: no build yet",
            "web@aws: bake: no build yet",
            "web@gce: bake: no build yet",
            "Plan: 8 to bake, 0 current, 2 instances to launch.",
        ],
        "{plan}"
    );
}

#[test]
fn the_dry_run_writes_the_snapshot_tree_without_the_run_id_and_it_parses() {
    let t = tree("clouds");
    ok(csis_at(t.path(), NOW, &["run", "all"]));
    let generated = t.path().join("generated");
    let files = files_below(&generated);
    let mut listing = String::new();
    for (rel, p) in &files {
        listing.push_str(rel);
        listing.push('\n');
        // The generated tree is reviewable and stable across runs: the run
        // id reaches the bakes only as `-var csis_run=${CSIS_RUN_ID}`.
        // run-summary.json is the record of this run, so it names it.
        if rel != "run-summary.json" {
            let text = read(p);
            assert!(
                !text.contains(RUN) && !text.contains("2026-12-02t15-53-24"),
                "{rel} names the run id:\n{text}"
            );
        }
    }
    snapshot("files", &listing);
    for (name, rel) in [
        ("run-storage.sh", "storage/run-storage.sh"),
        ("run-base-image.sh", "base-image/run-base-image.sh"),
        (
            "run-instance-image.sh",
            "instance-image/run-instance-image.sh",
        ),
        (
            "debian12-aws.pkr.hcl",
            "base-image/pk-aws/image-generation/debian12.pkr.hcl",
        ),
        (
            "debian12-gce.pkr.hcl",
            "base-image/pk-gce/image-generation/debian12.pkr.hcl",
        ),
        (
            "web-aws.pkr.hcl",
            "instance-image/pk-aws/image-generation/web.pkr.hcl",
        ),
        (
            "web-gce.pkr.hcl",
            "instance-image/pk-gce/image-generation/web.pkr.hcl",
        ),
        (
            "ec2-main.tf",
            "instance-image/ec2/instance-generation/main.tf",
        ),
        (
            "gce-vms-main.tf",
            "instance-image/gce-vms/instance-generation/main.tf",
        ),
        ("ebs-main.tf", "storage/ebs/storage-generation/main.tf"),
        ("pd-main.tf", "storage/pd/storage-generation/main.tf"),
    ] {
        snapshot(name, &read(&generated.join(rel)));
    }
    // Each cloud's roots keep their state on that cloud's backend.
    for (rel, bucket, object) in [
        (
            "storage/ebs/storage-generation/ebs",
            "csis-example-state",
            "key          = \"csis/ebs.tfstate\"",
        ),
        (
            "instance-image/ec2/instance-generation/ec2",
            "csis-example-state",
            "key          = \"csis/ec2.tfstate\"",
        ),
        (
            "storage/pd/storage-generation/pd",
            "csis-example-gstate",
            "prefix = \"csis/pd\"",
        ),
        (
            "instance-image/gce-vms/instance-generation/gce_vms",
            "csis-example-gstate",
            "prefix = \"csis/gce_vms\"",
        ),
    ] {
        let backend = read(&generated.join(format!("{rel}.tfbackend.hcl")));
        assert!(
            backend.contains(&format!("\"{bucket}\"\n")),
            "{rel}: {backend}"
        );
        assert!(backend.contains(&format!("{object}\n")), "{rel}: {backend}");
    }
    check_hcl(&[&generated]).unwrap();
}

/// The doubles' calls, `<dir below _private/> <tool> <argv>`; the log is
/// then emptied.
fn take_calls(root: &Path, doubles: &Path) -> Vec<String> {
    let path = doubles.join("cloud/calls.log");
    let Ok(log) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    std::fs::remove_file(&path).unwrap();
    let prefix = format!("{}/_private/", root.canonicalize().unwrap().display());
    log.lines().map(|l| l.replace(&prefix, "")).collect()
}

/// The images the packer double baked: (cloud, series) -> id.
fn baked(doubles: &Path) -> BTreeMap<(String, String), String> {
    let images: serde_json::Value =
        serde_json::from_str(&read(&doubles.join("cloud/images.json"))).unwrap();
    images
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                (
                    i["cloud"].as_str().unwrap().to_string(),
                    i["series"].as_str().unwrap().to_string(),
                ),
                i["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The steps a run executed (its `executing (...)` lines), as `<dir>:
/// <step>`.
fn executed(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_once("] executing (cd ").map(|(_, s)| s))
        .map(|s| {
            let s = s.strip_suffix(')').unwrap_or(s);
            let (dir, cmd) = s.split_once(" && ").unwrap();
            let cmd = cmd.replace("\"$CSIS\" --root-dir \"${CSIS_ROOT}\" ", "csis ");
            let step = cmd.split(" --").next().unwrap().to_string();
            format!("{dir}: {step}")
        })
        .collect()
}

fn bake_calls(lc: &str, builder: &str, series: &str) -> Vec<String> {
    let dir = format!("{lc}/{builder}/image-generation");
    vec![
        format!("{dir} packer init {series}.pkr.hcl"),
        format!("{dir} packer build -machine-readable -var csis_run={RUN} {series}.pkr.hcl"),
    ]
}

fn root_calls(lc: &str, builder: &str, ws: &str, instance: bool) -> Vec<String> {
    let kind = if lc == "storage" {
        "storage"
    } else {
        "instance"
    };
    let dir = format!("{lc}/{builder}/{kind}-generation");
    let mut v = vec![
        format!("{dir} tofu init -input=false -backend-config={ws}.tfbackend.hcl"),
        format!("{dir} tofu plan -input=false -out={ws}.tfplan"),
        format!("{dir} tofu show -json {ws}.tfplan"),
        format!("{dir} tofu apply -input=false {ws}.tfplan"),
    ];
    if instance {
        v.push(format!("{dir} tofu output -json"));
    }
    v
}

/// Every planfile of the run's OpenTofu roots (the double's plan JSON):
/// its resources' actions.
fn planned_actions(root: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for (rel, p) in files_below(&root.join("_private")) {
        if !rel.ends_with(".tfplan") {
            continue;
        }
        let plan: serde_json::Value = serde_json::from_str(&read(&p)).unwrap();
        for rc in plan["resource_changes"].as_array().unwrap() {
            out.insert(
                format!("{rel} {}", rc["address"].as_str().unwrap()),
                rc["change"]["actions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_string())
                    .collect(),
            );
        }
    }
    out
}

#[test]
fn a_real_run_bakes_applies_records_and_pins_on_both_clouds_then_changes_nothing() {
    if !hcl2_available() {
        return;
    }
    let Some(moto) = Moto::start() else {
        return;
    };
    let env = moto.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let t = tree("clouds");
    let root = t.path();
    let d = doubles(&["packer", "tofu", "gcloud"]);
    // One bake at a time: the runner script's order (tests/e2e/
    // parallel_bakes.rs runs them at once).
    let out = ok(real_run_with(root, d.path(), NOW, &env, &["--jobs", "1"]));

    // The stand-ins' calls, in order: the storage lifecycle's roots (ebs,
    // then pd), the base-image bakes, the chains' bakes (aws, then gce),
    // then the instance roots -- storages exist before the instances that
    // attach them.
    let mut want = Vec::new();
    want.extend(root_calls("storage", "ebs", "ebs", false));
    want.extend(root_calls("storage", "pd", "pd", false));
    want.extend(bake_calls("base-image", "pk-aws", "debian12"));
    want.extend(bake_calls("base-image", "pk-gce", "debian12"));
    for builder in ["pk-aws", "pk-gce"] {
        for series in ["base", "app", "web"] {
            want.extend(bake_calls("instance-image", builder, series));
        }
    }
    want.extend(root_calls("instance-image", "ec2", "ec2", true));
    want.extend(root_calls("instance-image", "gce-vms", "gce_vms", true));
    // web-gce's verification, through gcloud (the stand-in): the machine,
    // its boot disk's image, then its storage's mount over IAP.
    let gce = "instance-image/gce-vms/instance-generation gcloud compute";
    let at = "--project=csis-example --zone=europe-west1-b";
    want.extend([
        format!("{gce} instances describe web-gce {at} --format=json"),
        format!("{gce} disks describe https://www.googleapis.com/compute/v1/projects/csis-example/zones/europe-west1-b/disks/web-gce --format=json"),
        format!(
            r"{gce} ssh web-gce --tunnel-through-iap --quiet {at} --command=sudo -n sh -c 'mountpoint -q '\''/srv/data'\'''"
        ),
    ]);
    assert_eq!(take_calls(root, d.path()), want, "{out}");

    // With csis's own steps between them: each bake is packer init, build,
    // lineage record; each root init, plan, gate-plan, apply-check, apply
    // (and bind-instance on instance roots).
    let bake = |dir: &str| {
        vec![
            format!("{dir}: packer init"),
            format!("{dir}: packer build -machine-readable -var \"csis_run=${{CSIS_RUN_ID}}\""),
            format!("{dir}: csis lineage record"),
        ]
    };
    let tofu_root = |dir: &str, ws: &str, bind: Option<&str>| {
        let mut v = vec![
            format!("{dir}: tofu init -input=false -backend-config={ws}.tfbackend.hcl"),
            format!("{dir}: tofu plan -input=false -out={ws}.tfplan"),
            format!("{dir}: csis gate-plan"),
            format!("{dir}: csis apply-check"),
            format!("{dir}: tofu apply -input=false {ws}.tfplan"),
        ];
        if let Some(instance) = bind {
            v.push(format!("{dir}: csis lineage bind-instance"));
            v.push(format!("{dir}: csis verify instance {instance}"));
        }
        v
    };
    let steps: Vec<String> = executed(&out)
        .into_iter()
        .map(|s| {
            // The template name ends each packer step; drop it.
            s.strip_suffix(".pkr.hcl")
                .and_then(|s| s.rsplit_once(' ').map(|(a, _)| a.to_string()))
                .unwrap_or(s)
        })
        .collect();
    let mut want = Vec::new();
    want.extend(tofu_root("ebs/storage-generation", "ebs", None));
    want.extend(tofu_root("pd/storage-generation", "pd", None));
    want.extend(bake("pk-aws/image-generation"));
    want.extend(bake("pk-gce/image-generation"));
    for _ in 0..3 {
        want.extend(bake("pk-aws/image-generation"));
    }
    for _ in 0..3 {
        want.extend(bake("pk-gce/image-generation"));
    }
    want.extend(tofu_root("ec2/instance-generation", "ec2", Some("web-aws")));
    want.extend(tofu_root(
        "gce-vms/instance-generation",
        "gce_vms",
        Some("web-gce"),
    ));
    assert_eq!(steps, want, "{out}");

    // Lineage records each build under the id its artifact id gives (the
    // AMI id of `<region>:<ami>`, the GCE image name), parents first.
    let images = baked(d.path());
    let id = |cloud: &str, series: &str| images[&(cloud.to_string(), series.to_string())].clone();
    assert!(id("aws", "web").starts_with("ami-"));
    assert_eq!(id("gce", "web"), "web-2026-12-02t15-53-24");
    let recorded: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once("lineage: recorded ").map(|(_, r)| r))
        .map(|r| r.split(", fingerprint").next().unwrap())
        .collect();
    let want: Vec<String> = [
        ("aws", "debian12"),
        ("gce", "debian12"),
        ("aws", "base"),
        ("aws", "app"),
        ("aws", "web"),
        ("gce", "base"),
        ("gce", "app"),
        ("gce", "web"),
    ]
    .iter()
    .map(|(c, s)| format!("{} ({s}@{c}", id(c, s)))
    .collect();
    assert_eq!(recorded, want, "{out}");
    let lineage = read(&root.join("meta-state/lineage.yaml"));
    for (c, s) in [("aws", "web"), ("gce", "web"), ("aws", "debian12")] {
        assert!(
            lineage.contains(&format!("build_id: {}\n", id(c, s))),
            "{lineage}"
        );
    }

    // The instance roots booted the newest web build of their cloud
    // (data "aws_ami" by tag:csis_series, data "google_compute_image" by
    // family, resolved by the tofu double against what packer baked), and
    // bind-instance pinned each instance to it.
    let pins = read(&root.join("meta-state/pins.yaml"));
    let instances = format!(
        "instances:\n  web-aws: {}\n  web-gce: {}\n",
        id("aws", "web"),
        id("gce", "web")
    );
    assert!(pins.contains(&instances), "{pins}");
    assert!(out.contains(&format!(
        "pins: instance web-aws -> {} (bind)",
        id("aws", "web")
    )));
    assert!(out.contains("pins: instance web-gce -> web-2026-12-02t15-53-24 (bind)"));
    // Each instance was verified as it launched: web-aws through EC2 and
    // Systems Manager (moto: the machine the tofu double ran there from
    // the pinned AMI), web-gce through gcloud (the stand-in).
    let machines = moto.instances("web-aws");
    assert_eq!(machines.len(), 1, "{machines:?}");
    assert_eq!(machines[0].1, "running");
    let verdicts = read(&root.join("meta-state/verifications.yaml"));
    for (instance, build, machine) in [
        (
            "web-aws",
            id("aws", "web"),
            format!("EC2 instance {}", machines[0].0),
        ),
        (
            "web-gce",
            id("gce", "web"),
            "GCE instance web-gce in csis-example/europe-west1-b".to_string(),
        ),
    ] {
        let verdict = format!(
            "  - instance: {instance}\n    runtime: {}\n    build: {build}\n    ok: true\n",
            &instance[4..]
        );
        assert!(verdicts.contains(&verdict), "{verdict}\n{verdicts}");
        for detail in [machine, format!("runs {build}"), "storage ".to_string()] {
            assert!(
                verdicts.contains(&format!("detail: {detail}")),
                "{detail}\n{verdicts}"
            );
        }
    }
    assert!(out.contains(&format!(
        "verify web-gce: ok (3 checks on {})",
        id("gce", "web")
    )));
    let created = planned_actions(root);
    assert!(created.values().all(|a| a == &["create"]), "{created:?}");
    assert!(created.contains_key(
        "instance-image/ec2/instance-generation/ec2.tfplan aws_instance.instance[\"web-aws\"]"
    ));
    assert!(created.contains_key(
        "instance-image/gce-vms/instance-generation/gce_vms.tfplan google_compute_instance.instance[\"web-gce\"]"
    ));
    // Each cloud's roots on its own backend (state-locations.yaml).
    let locations = read(&root.join("meta-state/state-locations.yaml"));
    for (ws, backend) in [
        ("ebs", "s3-state"),
        ("ec2", "s3-state"),
        ("pd", "gcs-state"),
        ("gce_vms", "gcs-state"),
    ] {
        assert!(
            locations.contains(&format!("  {ws}:\n    backend: {backend}\n")),
            "{locations}"
        );
    }
    let state_dir = d.path().join("cloud/state");
    let states_before: BTreeMap<String, PathBuf> = files_below(&state_dir);
    assert_eq!(
        states_before.keys().collect::<Vec<_>>(),
        vec![
            "csis-example-gstate_csis_gce_vms.json",
            "csis-example-gstate_csis_pd.json",
            "csis-example-state_csis_ebs.tfstate.json",
            "csis-example-state_csis_ec2.tfstate.json",
        ]
    );
    let states_before: BTreeMap<String, String> = states_before
        .iter()
        .map(|(k, p)| (k.clone(), read(p)))
        .collect();

    // The second run: every bake is current, so no `packer` is called at
    // all; each root still inits, plans, passes its gate and applies, but
    // every planned resource is a no-op (the double's plan diffs the
    // roots, now naming the pinned builds, against the state it applied),
    // the gate says so, and the states and pins stay as they were.
    let out = ok(real_run(root, d.path(), NOW + 3600, &env));
    let calls = take_calls(root, d.path());
    assert!(!calls.iter().any(|c| c.contains(" packer ")), "{calls:#?}");
    // Each root's init, plan, show, apply and (instance roots) output,
    // then web-gce's three verification calls.
    assert_eq!(calls.len(), 21, "{calls:#?}");
    for s in [
        "debian12@aws",
        "debian12@gce",
        "base@aws",
        "base@gce",
        "app@aws",
        "app@gce",
        "web@aws",
        "web@gce",
    ] {
        assert!(
            out.contains(&format!("bake plan: {s}: skip: current\n")),
            "{out}"
        );
    }
    assert!(!out.contains("lineage: recorded"), "{out}");
    let ec2 = read(&root.join("generated/instance-image/ec2/instance-generation/main.tf"));
    assert!(
        ec2.contains(&format!("ami               = \"{}\"\n", id("aws", "web"))),
        "{ec2}"
    );
    let actions = planned_actions(root);
    assert_eq!(actions.len(), created.len());
    assert!(actions.values().all(|a| a == &["no-op"]), "{actions:?}");
    for gate in [
        "gate-plan: ebs.tfplan: 0 change(s), 0 destroy(s) whitelisted: pass",
        "gate-plan: pd.tfplan: 0 change(s), 0 destroy(s) whitelisted: pass",
        "gate-plan: ec2.tfplan: 0 change(s), 0 destroy(s) whitelisted, 0 detach(es) unmounted: pass",
        "gate-plan: gce_vms.tfplan: 0 change(s), 0 destroy(s) whitelisted, 0 detach(es) unmounted: pass",
    ] {
        assert!(out.contains(gate), "{gate}\n{out}");
    }
    let states_after: BTreeMap<String, String> = files_below(&state_dir)
        .iter()
        .map(|(k, p)| (k.clone(), read(p)))
        .collect();
    assert_eq!(states_after, states_before);
    assert!(read(&root.join("meta-state/pins.yaml")).contains(&instances));
}

#[test]
fn a_failed_tofu_apply_fails_the_run_and_pins_no_instance() {
    if !hcl2_available() {
        return;
    }
    let t = tree("clouds");
    let root = t.path();
    let d = doubles(&["packer", "tofu"]);
    let out = real_run(
        root,
        d.path(),
        NOW,
        &[("TOFU_DOUBLE_FAIL", "apply@instance-generation")],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: [instance-image/execution] command returned 1: (cd ec2/instance-generation && tofu apply -input=false ec2.tfplan)\n"),
        "{err}"
    );
    let calls = take_calls(root, d.path());
    assert_eq!(
        calls.last().map(String::as_str),
        Some("instance-image/ec2/instance-generation tofu apply -input=false ec2.tfplan")
    );
    assert!(!calls.iter().any(|c| c.contains("gce-vms")), "{calls:#?}");
    // The bakes before it were recorded; no instance is pinned.
    let pins = read(&root.join("meta-state/pins.yaml"));
    assert!(pins.contains("\ninstances: {}\n"), "{pins}");
    assert!(
        pins.contains(&format!(
            "  \"web@aws\": {}\n",
            baked(d.path())[&("aws".to_string(), "app".to_string())]
        )),
        "{pins}"
    );
    assert!(!pins.contains("web-aws"), "{pins}");
}
