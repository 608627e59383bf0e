//! The packer image builder on the aws and gce runtimes: the templates a
//! dry run writes (snapshots, the independent HCL check), and real runs
//! with a stand-in `packer` (tests/e2e/doubles/packer, a test double that
//! never ships): the steps in order, the builds recorded under the ids
//! their artifact ids give, nothing baked the second time, nothing
//! re-baked for a machine type.

use std::path::Path;

use csis_test_support::{check_hcl, temp_tree};

use crate::support::{
    csis_at, doubles, edit, hcl2_available, here, ok, read, real_run, real_run_with,
};

const NOW: i64 = 1796226804;

/// The tree: an aws and a gce runtime, a packer image builder on each, a
/// debian base image and an image `web` over it with two modifications.
fn tree() -> tempfile::TempDir {
    temp_tree([
        ("cfg/_config.yml", read(&here("packer/config.yml"))),
        ("images/web.yml", read(&here("packer/web.yml"))),
        ("scripts/tools.sh", "echo tools\n".to_string()),
    ])
}

fn generated(root: &Path, rel: &str) -> String {
    read(&root.join("generated").join(rel))
}

#[test]
fn a_dry_run_writes_one_template_per_bake_that_the_independent_parser_accepts() {
    let t = tree();
    ok(csis_at(t.path(), NOW, &["run", "all"]));
    assert_eq!(
        generated(
            t.path(),
            "instance-image/pk-gce/image-generation/web.pkr.hcl"
        ),
        read(&here("packer/web-gce.pkr.hcl.snapshot"))
    );
    assert_eq!(
        generated(
            t.path(),
            "base-image/pk-aws/image-generation/debian12.pkr.hcl"
        ),
        read(&here("packer/debian12-aws.pkr.hcl.snapshot"))
    );
    let aws_web = generated(
        t.path(),
        "instance-image/pk-aws/image-generation/web.pkr.hcl",
    );
    for line in [
        "      \"tag:csis_series\" = \"debian12\"\n",
        "    owners      = [\"self\"]\n",
        "      parent         = \"${build.SourceAMI}\"\n",
        "    scripts          = [\"../../../../scripts/tools.sh\"]\n",
    ] {
        assert!(aws_web.contains(line), "{line}\n{aws_web}");
    }
    // The in-bake verification is the last provisioner.
    let last = aws_web.rfind("provisioner \"shell\"").unwrap();
    assert!(aws_web[last..].contains("csis in-bake verification"));
    assert!(aws_web[last..].contains("file /etc/motd is missing"));
    let script = generated(t.path(), "instance-image/run-instance-image.sh");
    let steps: Vec<&str> = script.lines().filter(|l| l.starts_with("(cd ")).collect();
    assert_eq!(
        steps,
        vec![
            "(cd pk-aws/image-generation && packer init web.pkr.hcl)",
            "(cd pk-aws/image-generation && packer build -machine-readable -var \"csis_run=${CSIS_RUN_ID}\" web.pkr.hcl)",
            "(cd pk-aws/image-generation && \"$CSIS\" --root-dir \"${CSIS_ROOT}\" lineage record --manifest web.manifest.json)",
            "(cd pk-gce/image-generation && packer init web.pkr.hcl)",
            "(cd pk-gce/image-generation && packer build -machine-readable -var \"csis_run=${CSIS_RUN_ID}\" web.pkr.hcl)",
            "(cd pk-gce/image-generation && \"$CSIS\" --root-dir \"${CSIS_ROOT}\" lineage record --manifest web.manifest.json)",
        ]
    );
    check_hcl(&[&t.path().join("generated")]).unwrap();
}

#[test]
fn a_real_run_bakes_in_order_and_records_the_builds_then_bakes_nothing() {
    if !hcl2_available() {
        return;
    }
    let t = tree();
    let d = doubles(&["packer"]);
    ok(real_run_with(
        t.path(),
        d.path(),
        NOW,
        &[],
        &["--jobs", "1"],
    ));
    let log = read(&d.path().join("cloud/calls.log"));
    let root = t.path().canonicalize().unwrap();
    let lines: Vec<String> = log
        .lines()
        .map(|l| l.replace(&root.display().to_string(), "<root>"))
        .collect();
    let run = "csis_run=2026_12_02T15_53_24";
    let dir = |lc: &str, b: &str| format!("<root>/_private/{lc}/{b}/image-generation");
    assert_eq!(
        lines,
        vec![
            format!(
                "{} packer init debian12.pkr.hcl",
                dir("base-image", "pk-aws")
            ),
            format!(
                "{} packer build -machine-readable -var {run} debian12.pkr.hcl",
                dir("base-image", "pk-aws")
            ),
            format!(
                "{} packer init debian12.pkr.hcl",
                dir("base-image", "pk-gce")
            ),
            format!(
                "{} packer build -machine-readable -var {run} debian12.pkr.hcl",
                dir("base-image", "pk-gce")
            ),
            format!(
                "{} packer init web.pkr.hcl",
                dir("instance-image", "pk-aws")
            ),
            format!(
                "{} packer build -machine-readable -var {run} web.pkr.hcl",
                dir("instance-image", "pk-aws")
            ),
            format!(
                "{} packer init web.pkr.hcl",
                dir("instance-image", "pk-gce")
            ),
            format!(
                "{} packer build -machine-readable -var {run} web.pkr.hcl",
                dir("instance-image", "pk-gce")
            ),
        ]
    );
    let lineage = read(&t.path().join("meta-state/lineage.yaml"));
    let pins = read(&t.path().join("meta-state/pins.yaml"));
    // The AMI ids the double derives from series and run.
    let aws_base = "ami-e60a29cece193ff58";
    for id in [
        format!("build_id: {aws_base}"),
        "build_id: debian12-2026-12-02t15-53-24".into(),
        "build_id: ami-d20c8eea9d88f8696".into(),
        "build_id: web-2026-12-02t15-53-24".into(),
    ] {
        assert!(lineage.contains(&id), "{id}\n{lineage}");
    }
    // Each record lists what its template's verification checked (the
    // build exists only because it passed), web's declared file among them.
    assert!(
        lineage.contains("    tests:\n      in_bake: true\n      assertions: 4\n      checks:\n        - admin user csis-admin\n        - admin key ssh-ed25519 of csis-admin\n        - file /etc/motd\n        - csis first-boot unit installed\n"),
        "{lineage}"
    );
    // A packer bake applies every modification: web's two, on each runtime.
    assert_eq!(
        lineage.matches("operation: applied").count(),
        4,
        "{lineage}"
    );
    assert!(
        pins.contains(&format!("\"web@aws1\": {aws_base}")),
        "{pins}"
    );
    assert!(
        pins.contains("\"web@gce1\": debian12-2026-12-02t15-53-24"),
        "{pins}"
    );

    // Nothing changed: nothing bakes.
    std::fs::remove_file(d.path().join("cloud/calls.log")).unwrap();
    let out = ok(real_run(t.path(), d.path(), NOW + 3600, &[]));
    assert!(!d.path().join("cloud/calls.log").exists(), "{out}");

    // A machine type is not an input of the build: nothing re-bakes.
    edit(t.path(), "cfg/_config.yml", "t3.micro", "t3.large");
    edit(t.path(), "cfg/_config.yml", "e2-small", "e2-standard-4");
    let plan = ok(csis_at(t.path(), NOW + 7200, &["plan"]));
    for series in ["debian12@aws1", "debian12@gce1", "web@aws1", "web@gce1"] {
        assert!(
            plan.contains(&format!("{series}: skip: current")),
            "{series}\n{plan}"
        );
    }

    // A forced re-bake of the child starts from its pinned parent, by id.
    ok(csis_at(
        t.path(),
        NOW + 7200,
        &["run", "all", "--force-bake", "web"],
    ));
    let aws_web = generated(
        t.path(),
        "instance-image/pk-aws/image-generation/web.pkr.hcl",
    );
    assert!(
        aws_web.contains(&format!("  {:<41} = \"{aws_base}\"\n", "source_ami")),
        "{aws_web}"
    );
    assert!(
        aws_web.contains(&format!("      parent         = \"{aws_base}\"\n")),
        "{aws_web}"
    );
}

#[test]
fn a_failed_packer_build_records_nothing() {
    if !hcl2_available() {
        return;
    }
    let t = tree();
    let d = doubles(&["packer"]);
    let out = real_run(
        t.path(),
        d.path(),
        NOW,
        &[("PACKER_DOUBLE_FAIL", "debian12")],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: [debian12@aws1] command returned 1: (cd pk-aws/image-generation && packer build -machine-readable -var \"csis_run=${CSIS_RUN_ID}\" debian12.pkr.hcl)\n"),
        "{err}"
    );
    assert!(
        err.contains("error: [base-image/execution] 2 bakes failed: debian12@aws1 (command returned 1: (cd pk-aws/image-generation && packer build -machine-readable -var \"csis_run=${CSIS_RUN_ID}\" debian12.pkr.hcl)); debian12@gce1 (command returned 1: (cd pk-gce/image-generation && packer build -machine-readable -var \"csis_run=${CSIS_RUN_ID}\" debian12.pkr.hcl))\n"),
        "{err}"
    );
    assert!(!t.path().join("meta-state/lineage.yaml").exists());
}

/// A manifest as packer's manifest post-processor writes it: an earlier
/// run's build and this run's.
const MANIFEST: &str = r#"{
  "builds": [
    {"name": "debian12", "builder_type": "amazon-ebs", "build_time": 1796220000, "files": null,
     "artifact_id": "us-east-1:ami-0old", "packer_run_uuid": "0a0a",
     "custom_data": {"series": "debian12", "runtime": "aws1", "fingerprint": "FP", "parent": "vendor", "run": "r0", "identity_types": "unix", "storage_types": ""}},
    {"name": "debian12", "builder_type": "amazon-ebs", "build_time": 1796226804, "files": null,
     "artifact_id": "us-east-1:ami-0123456789abcdef0", "packer_run_uuid": "6d5d3185-fa95-44e1-8775-9e64fe2e2d8f",
     "custom_data": {"series": "debian12", "runtime": "aws1", "fingerprint": "FP", "parent": "vendor", "run": "2026_12_02T15_53_24", "identity_types": "unix", "storage_types": ""}}
  ],
  "last_run_uuid": "6d5d3185-fa95-44e1-8775-9e64fe2e2d8f"
}"#;

#[test]
fn lineage_record_reads_a_packer_manifest() {
    let t = tree();
    // Baked from other inputs than the tree's: refused, nothing recorded.
    std::fs::write(t.path().join("m.json"), MANIFEST).unwrap();
    let out = csis_at(
        t.path(),
        NOW,
        &["lineage", "record", "--manifest", "m.json"],
    );
    let fp = crate::support::planned_fingerprint(t.path(), NOW, "debian12", "aws1");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: m.json: debian12@aws1 was baked with input fingerprint FP, but this tree plans {}: it is a bake of another commit, or the tree changed after it; bake it again from this tree; nothing is recorded\n",
            &fp[..16]
        )
    );
    assert!(!t.path().join("meta-state/lineage.yaml").exists());

    let manifest = MANIFEST.replace("\"FP\"", &format!("\"{fp}\""));
    std::fs::write(t.path().join("m.json"), &manifest).unwrap();
    let out = ok(csis_at(
        t.path(),
        NOW,
        &["lineage", "record", "--manifest", "m.json"],
    ));
    assert_eq!(
        out.trim(),
        format!(
            "lineage: recorded ami-0123456789abcdef0 (debian12@aws1, fingerprint {})",
            &fp[..16]
        )
    );
    let lineage = read(&t.path().join("meta-state/lineage.yaml"));
    assert!(
        lineage.contains("build_id: ami-0123456789abcdef0"),
        "{lineage}"
    );
    assert!(!lineage.contains("ami-0old"), "{lineage}");
    assert!(lineage.contains("parent: vendor"), "{lineage}");

    // An artifact of another runtime, and a child whose parent series has
    // no recorded build on the runtime.
    let other = manifest.replace("us-east-1:ami-0123456789abcdef0", "web-image");
    std::fs::write(t.path().join("m2.json"), other).unwrap();
    let out = csis_at(
        t.path(),
        NOW,
        &["lineage", "record", "--manifest", "m2.json"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: m2.json: artifact id 'web-image' is not a build of runtime 'aws1' (type aws)"
    );
    let web = crate::support::planned_fingerprint(t.path(), NOW, "web", "gce1");
    let child = manifest
        .replace(&fp, &web)
        .replace("\"series\": \"debian12\"", "\"series\": \"web\"")
        .replace("\"runtime\": \"aws1\"", "\"runtime\": \"gce1\"")
        .replace("us-east-1:ami-0123456789abcdef0", "web-2026-12-02t15-53-24")
        .replace("\"parent\": \"vendor\"", "\"parent\": \"series:debian12\"");
    std::fs::write(t.path().join("m3.json"), child).unwrap();
    let out = csis_at(
        t.path(),
        NOW,
        &["lineage", "record", "--manifest", "m3.json"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: m3.json: 'web' was baked from the newest build of 'debian12', but lineage records no build of 'debian12' on runtime 'gce1'"
    );
}

#[test]
fn required_plugins_override_and_a_runtime_without_a_packer_source() {
    let t = tree();
    edit(
        t.path(),
        "cfg/_config.yml",
        "{name: pk-gce, type: packer, runtime: gce1}",
        "{name: pk-gce, type: packer, runtime: gce1, required_plugins: {googlecompute: \"~> 1.2\"}}",
    );
    ok(csis_at(t.path(), NOW, &["run", "all"]));
    let gce = generated(
        t.path(),
        "base-image/pk-gce/image-generation/debian12.pkr.hcl",
    );
    assert!(gce.contains("      version = \"~> 1.2\"\n"), "{gce}");

    edit(
        t.path(),
        "cfg/_config.yml",
        "runtime_builders:\n",
        "runtime_builders:\n  - {name: here, type: local, default_machine_type: small}\n",
    );
    edit(
        t.path(),
        "cfg/_config.yml",
        "runtime: aws1, is_default",
        "runtime: here, is_default",
    );
    // Refused at validate, at the image builder's runtime field.
    let v = csis_at(t.path(), NOW, &["--brief", "validate", "--offline"]);
    assert_eq!(v.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&v.stderr),
        "cfg/_config.yml:27:43: image builder 'pk-aws' bakes with packer, but runtime 'here' (type local) has no packer source -- point the image builder's runtime at an aws or gce runtime\nvalidate: 1 error(s)\n"
    );
    let out = csis_at(t.path(), NOW, &["run", "all"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: validation: cfg/_config.yml:27:43: image builder 'pk-aws' bakes with packer, but runtime 'here' (type local) has no packer source -- point the image builder's runtime at an aws or gce runtime\n"),
        "{err}"
    );
    assert!(!err.contains("generation failed"), "{err}");
}
