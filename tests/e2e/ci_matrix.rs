//! The CI fan-out end to end (fixtures/clouds against moto, the packer,
//! tofu and gcloud test doubles): `plan --format matrix` cuts the bakes
//! into one group per chain and runtime, each group bakes in its own
//! checkout with `run --shard` (two processes at once, nothing recorded,
//! no tofu root touched), one `lineage record` over every shard's
//! manifests records them parents first, and the next plan bakes nothing.
//! A manifest of another commit is refused and nothing is recorded.

use std::path::{Path, PathBuf};

use crate::support::read;

const NOW: i64 = 1_796_226_804;

const MATRIX: &str = concat!(
    r#"{"include":["#,
    r#"{"group":"debian12@aws","runtime":"aws","lifecycles":"base-image instance-image","#,
    r#""bakes":"debian12@aws base@aws app@aws web@aws","#,
    r#""args":"--only-runtime aws --only debian12@aws --only base@aws --only app@aws --only web@aws"},"#,
    r#"{"group":"debian12@gce","runtime":"gce","lifecycles":"base-image instance-image","#,
    r#""bakes":"debian12@gce base@gce app@gce web@gce","#,
    r#""args":"--only-runtime gce --only debian12@gce --only base@gce --only app@gce --only web@gce"}"#,
    "]}\n"
);

/// A shard's command line, as a workflow builds it from a matrix entry.
fn shard_args(entry: &serde_json::Value, keep: &Path) -> Vec<String> {
    let words = |k: &str| {
        entry[k]
            .as_str()
            .unwrap()
            .split(' ')
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let mut args = vec!["run".to_string()];
    args.extend(words("lifecycles"));
    args.extend(["--no-dry-run".into(), "--shard".into()]);
    args.push(keep.display().to_string());
    args.extend(words("args"));
    args
}

#[test]
fn shards_bake_their_groups_at_once_and_one_record_job_records_them_all() {
    let Some((moto, t, d)) = crate::moto::clouds(|_| {}) else {
        return;
    };
    let root = t.path();
    let (code, matrix) = moto.csis(root, d.path(), NOW, &["plan", "--format", "matrix"]);
    assert_eq!(code, Some(0), "{matrix}");
    assert_eq!(matrix, MATRIX);
    let entries: serde_json::Value = serde_json::from_str(&matrix).unwrap();
    let entries = entries["include"].as_array().unwrap().clone();

    // Each shard in a checkout of its own, both at once: the first build
    // of each waits until the other's has started.
    let work = tempfile::tempdir().unwrap();
    let artifacts = work.path().join("artifacts");
    let shards: Vec<(PathBuf, Vec<String>)> = entries
        .iter()
        .map(|e| {
            let group = e["group"].as_str().unwrap();
            let checkout = work.path().join(format!("checkout-{group}"));
            csis_test_support::copy_tree(root, &checkout);
            (checkout, shard_args(e, &artifacts.join(group)))
        })
        .collect();
    let outs: Vec<(Option<i32>, String)> = std::thread::scope(|s| {
        let running: Vec<_> = shards
            .iter()
            .map(|(checkout, args)| {
                let moto = &moto;
                let d = d.path();
                s.spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    moto.csis_with(checkout, d, NOW, &args, &[("PACKER_DOUBLE_TOGETHER", "2")])
                })
            })
            .collect();
        running.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((code, out), (checkout, _)) in outs.iter().zip(&shards) {
        assert_eq!(*code, Some(0), "{out}");
        // Nothing recorded, no machine launched: meta-state is the record
        // job's.
        assert!(!out.contains("lineage: recorded"), "{out}");
        assert!(
            out.contains("[instance-image/execution] not executed in a shard: (cd "),
            "{out}"
        );
        assert!(!checkout.join("meta-state/lineage.yaml").exists(), "{out}");
        assert!(!checkout.join("meta-state/runs.yaml").exists(), "{out}");
        // The bakes' outcomes are the job's to keep.
        let summary: serde_json::Value =
            serde_json::from_str(&read(&checkout.join("generated/run-summary.json"))).unwrap();
        let bakes = summary["bakes"].as_array().unwrap();
        assert_eq!(bakes.len(), 4, "{summary}");
        assert!(bakes.iter().all(|b| b["outcome"] == "baked"), "{summary}");
    }
    // The kept manifest is the bake's last step, done like the one it
    // stands in for (the progress counts it).
    let kept = format!(
        ": kept {} as {}",
        shards[0]
            .0
            .join("_private/instance-image/pk-aws/image-generation/web.manifest.json")
            .display(),
        artifacts.join("debian12@aws/web@aws.json").display()
    );
    assert!(
        outs[0]
            .1
            .lines()
            .any(|l| l.starts_with("[web@aws] done in ") && l.ends_with(&kept)),
        "{}",
        outs[0].1
    );
    let calls = read(&d.path().join("cloud/calls.log"));
    assert!(!calls.contains(" tofu "), "{calls}");
    assert_eq!(calls.matches(" packer build ").count(), 8, "{calls}");

    // The record job: every manifest, children first on the command line.
    let mut manifests: Vec<PathBuf> = Vec::new();
    for e in &entries {
        for key in e["bakes"].as_str().unwrap().split(' ').rev() {
            let m = artifacts
                .join(e["group"].as_str().unwrap())
                .join(format!("{key}.json"));
            assert!(m.is_file(), "{} was not kept", m.display());
            manifests.push(m);
        }
    }
    let record_args = |manifests: &[PathBuf]| -> Vec<String> {
        let mut a = vec!["lineage".into(), "record".into(), "--manifest".into()];
        a.extend(manifests.iter().map(|m| m.display().to_string()));
        a
    };
    let args = record_args(&manifests);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // A tree that moved on since the plan refuses every shard's bake of
    // what changed, and records nothing at all.
    let moved = work.path().join("moved");
    csis_test_support::copy_tree(root, &moved);
    crate::support::append(&moved, "scripts/site.sh", "echo moved\n");
    let (code, out) = moto.csis(&moved, d.path(), NOW, &args);
    assert_eq!(code, Some(1), "{out}");
    let web_aws = artifacts.join("debian12@aws/web@aws.json");
    assert!(
        out.starts_with("error: 2 manifests do not match this tree's plan; nothing is recorded:\n"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "\n  {}: web@aws was baked with input fingerprint ",
            web_aws.display()
        )),
        "{out}"
    );
    assert!(out.contains(", but this tree plans "), "{out}");
    assert!(!moved.join("meta-state/lineage.yaml").exists(), "{out}");

    let (code, out) = moto.csis(root, d.path(), NOW, &args);
    assert_eq!(code, Some(0), "{out}");
    let recorded: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("lineage: recorded "))
        .map(|l| l.split_once(" (").unwrap().1.split_once(',').unwrap().0)
        .collect();
    // Parents first, whatever the order of the files.
    assert_eq!(
        recorded,
        [
            "debian12@aws",
            "debian12@gce",
            "base@aws",
            "base@gce",
            "app@aws",
            "app@gce",
            "web@aws",
            "web@gce"
        ],
        "{out}"
    );
    let lineage = read(&root.join("meta-state/lineage.yaml"));
    assert_eq!(lineage.matches("\n  - build_id: ").count(), 8, "{lineage}");
    let pins = read(&root.join("meta-state/pins.yaml"));
    assert_eq!(pins.matches("op: bind").count(), 6, "{pins}");

    // Recording again changes nothing.
    let (code, again) = moto.csis(root, d.path(), NOW, &args);
    assert_eq!(code, Some(0), "{again}");
    assert_eq!(
        again.matches(" is already recorded\n").count(),
        8,
        "{again}"
    );
    assert_eq!(read(&root.join("meta-state/lineage.yaml")), lineage);
    assert_eq!(read(&root.join("meta-state/pins.yaml")), pins);

    // The next plan bakes nothing, and its matrix is empty.
    let (code, plan) = moto.csis(root, d.path(), NOW + 60, &["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    assert!(plan.contains("\nPlan: 0 to bake, 8 current, "), "{plan}");
    let (code, matrix) = moto.csis(root, d.path(), NOW + 60, &["plan", "--format", "matrix"]);
    assert_eq!((code, matrix.as_str()), (Some(0), "{\"include\":[]}\n"));

    // Changes to the lower images of the chains (each pinned to its
    // parent build, so the two re-bake on their own): groups of images
    // only, and the plan's --force-bake passed on to the group it falls
    // in.
    crate::support::edit(root, "images/chain.yml", "useradd --system", "useradd -r");
    crate::support::append(root, "scripts/site.sh", "echo moved\n");
    let (code, matrix) = moto.csis(root, d.path(), NOW + 60, &["plan", "--format", "matrix"]);
    assert_eq!(code, Some(0), "{matrix}");
    assert_eq!(
        matrix,
        concat!(
            r#"{"include":["#,
            r#"{"group":"app@aws","runtime":"aws","lifecycles":"instance-image","bakes":"app@aws web@aws","args":"--only-runtime aws --only app@aws --only web@aws"},"#,
            r#"{"group":"app@gce","runtime":"gce","lifecycles":"instance-image","bakes":"app@gce web@gce","args":"--only-runtime gce --only app@gce --only web@gce"}"#,
            "]}\n"
        )
    );
    let (code, matrix) = moto.csis(
        root,
        d.path(),
        NOW + 60,
        &[
            "plan",
            "--format",
            "matrix",
            "--only-runtime",
            "aws",
            "--force-bake",
            "base",
        ],
    );
    assert_eq!(code, Some(0), "{matrix}");
    assert_eq!(
        matrix,
        concat!(
            r#"{"include":[{"group":"base@aws","runtime":"aws","lifecycles":"instance-image","#,
            r#""bakes":"base@aws app@aws web@aws","#,
            r#""args":"--only-runtime aws --only base@aws --only app@aws --only web@aws --force-bake base"}]}"#,
            "\n"
        )
    );
}
