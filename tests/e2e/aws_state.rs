//! What the `aws` runtime sees, through the binary and the AWS SDK against
//! moto's EC2 server: fixtures/clouds after a real run with the packer and
//! tofu doubles (which make their AMIs, instances and volumes there), then
//! `state query` over planted drift and `dispose image` of a stale build.

use std::path::Path;

use crate::support::{edit, read};

const NOW: i64 = 1_797_000_000;

/// The build ids lineage records for `series@aws`, oldest first (each
/// record opens with its build_id, series and runtime).
fn builds(root: &Path, series: &str) -> Vec<String> {
    let lineage = read(&root.join("meta-state/lineage.yaml"));
    lineage
        .split("\n  - build_id: ")
        .skip(1)
        .filter_map(|record| {
            let mut lines = record.lines();
            let id = lines.next()?.trim().to_string();
            let s = lines.next()?.trim().strip_prefix("series: ")?.to_string();
            let rt = lines.next()?.trim().strip_prefix("runtime: ")?.to_string();
            (s == series && rt == "aws").then_some(id)
        })
        .collect()
}

/// Declare `spare` in the tree: an image on aws only, baked from app,
/// that nothing consumes (`extra`: more of its keys, each line indented).
fn add_spare(root: &Path, extra: &str) {
    edit(
        root,
        "images/chain.yml",
        "  - name: web\n",
        &format!(
            "  - name: spare\n    source_image: app\n    group: ops\n{extra}    runtimes:\n      - image_builder: pk-aws\n  - name: web\n"
        ),
    );
}

/// The EBS snapshot the AMI `ami` was registered from.
fn snapshot_of(moto: &crate::moto::Moto, ami: &str) -> String {
    moto.python(&format!(
        "print(ec2.describe_images(ImageIds=['{ami}'])['Images'][0]['BlockDeviceMappings'][0]['Ebs']['SnapshotId'])"
    ))
}

/// How many AMIs `ami` and snapshots `snapshot` EC2 still has: `0\n0`
/// once both are gone.
fn left_of(moto: &crate::moto::Moto, ami: &str, snapshot: &str) -> String {
    moto.python(&format!(
        "print(len(ec2.describe_images(Filters=[{{'Name': 'image-id', 'Values': ['{ami}']}}])['Images']))\n\
         print(len([s for s in ec2.describe_snapshots(OwnerIds=['self'])['Snapshots'] if s['SnapshotId'] == '{snapshot}']))"
    ))
}

#[test]
fn state_query_on_aws_sees_foreign_missing_and_stale_builds_and_dispose_deregisters_one() {
    // An image nothing consumes, baked on aws only: its older builds go
    // stale.
    let Some((moto, t, d)) = crate::moto::clouds(|root| add_spare(root, "")) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis(root, d.path(), NOW, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");

    // Everything the run made is where lineage says: no aws drift, and
    // gce (which cannot be asked yet) is unavailable, never "missing".
    let (code, out) = moto.csis(root, d.path(), NOW + 60, &["state", "query"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("(aws)"), "{out}");
    assert!(out.contains("unavailable: gce: "), "{out}");

    // A second bake of spare leaves the first one stale.
    let (code, out) = moto.csis(
        root,
        d.path(),
        NOW + 120,
        &[
            "run",
            "instance-image",
            "--no-dry-run",
            "--force-bake",
            "spare",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    let spare = builds(root, "spare");
    assert_eq!(spare.len(), 2, "{spare:?}");
    let web = builds(root, "web");

    // A foreign AMI (lineage tags, no record), a pinned build gone; and
    // another tree's build of a series of the same name, which is not
    // this tree's to report (its csis_tree is not `clouds`).
    let stray = |name: &str, tree: &str| {
        moto.python(&format!(
            "src = ec2.describe_images(Owners=['amazon'])['Images'][0]['ImageId']\n\
             i = ec2.run_instances(ImageId=src, MinCount=1, MaxCount=1)['Instances'][0]['InstanceId']\n\
             img = ec2.create_image(InstanceId=i, Name='{name}')['ImageId']\n\
             ec2.create_tags(Resources=[img], Tags=[{{'Key': 'csis_series', 'Value': 'web'}}, {{'Key': 'csis_tree', 'Value': '{tree}'}}])\n\
             print(img)"
        ))
    };
    let foreign = stray("stray", "clouds");
    let elsewhere = stray("other-tree", "other");
    moto.python(&format!("ec2.deregister_image(ImageId='{}')", web[0]));
    let (code, out) = moto.csis(root, d.path(), NOW + 180, &["state", "query"]);
    assert_eq!(code, Some(0), "{out}");
    for line in [
        format!(
            "foreign image {foreign} (aws): carries csis_series 'web' but meta-state/lineage.yaml does not record it"
        ),
        format!(
            "hard: missing image {} (aws): a pinned build is gone (pinned by instance web-aws)",
            web[0]
        ),
        format!(
            "stale image {} (aws): superseded by spare's head and pinned by nothing (retention disposes it)",
            spare[0]
        ),
    ] {
        assert!(out.contains(&line), "{line}\n{out}");
    }
    assert!(!out.contains(&elsewhere), "{out}");

    // state import adopts only what its tags describe whole: the stray
    // (csis_series alone) is refused and nothing is written; an AMI with
    // every lineage tag of an older spare bake is adopted, in run order
    // (so it is not the head), and is no longer foreign.
    let (code, out) = moto.csis(root, d.path(), NOW + 190, &["state", "import"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out.trim(),
        format!(
            "error: state import refused, nothing adopted: build '{foreign}' lacks its lineage tag csis_run; only a build csis baked can be adopted; build '{foreign}' lacks its lineage tag csis_fingerprint; only a build csis baked can be adopted"
        )
    );
    let adopted = moto.python(
        "src = ec2.describe_images(Owners=['amazon'])['Images'][0]['ImageId']\n\
         i = ec2.run_instances(ImageId=src, MinCount=1, MaxCount=1)['Instances'][0]['InstanceId']\n\
         img = ec2.create_image(InstanceId=i, Name='spare-old')['ImageId']\n\
         ec2.create_tags(Resources=[img], Tags=[{'Key': 'csis_tree', 'Value': 'clouds'}, {'Key': 'csis_series', 'Value': 'spare'}, {'Key': 'csis_run', 'Value': '2026_01_01T00_00_00'}, {'Key': 'csis_fingerprint', 'Value': '0123456789abcdef'}, {'Key': 'csis_parent', 'Value': 'series:app'}, {'Key': 'csis_identity_types', 'Value': 'unix'}])\n\
         print(img)",
    );
    let (code, out) = moto.csis(root, d.path(), NOW + 200, &["state", "import", &adopted]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out.trim(),
        format!(
            "state import: {adopted} (spare@aws, run 2026_01_01T00_00_00) adopted into lineage from its tags; it has no in-bake record, so release refuses it"
        )
    );
    assert_eq!(
        builds(root, "spare"),
        [adopted.clone(), spare[0].clone(), spare[1].clone()]
    );
    let (_, out) = moto.csis(root, d.path(), NOW + 210, &["state", "query"]);
    assert!(!out.contains(&format!("foreign image {adopted}")), "{out}");
    let (code, out) = moto.csis(root, d.path(), NOW + 220, &["state", "import", &adopted]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("build '{adopted}' is recorded in lineage already")),
        "{out}"
    );

    // Disposing the stale build deregisters its AMI and deletes its
    // snapshot in EC2.
    let snapshot = snapshot_of(&moto, &spare[0]);
    let (code, out) = moto.csis(root, d.path(), NOW + 240, &["dispose", "image", &spare[0]]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(left_of(&moto, &spare[0], &snapshot), "0\n0", "{out}");
    assert!(!read(&root.join("meta-state/lineage.yaml")).contains(&spare[0]));

    // A build an instance stands on is refused, and stays recorded.
    let (code, out) = moto.csis(root, d.path(), NOW + 250, &["dispose", "image", &web[0]]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out.trim(),
        format!(
            "error: dispose: instance(s) [web-aws] are pinned to / launched from the build(s) [{}]; decommission them first",
            web[0]
        )
    );
    assert!(read(&root.join("meta-state/lineage.yaml")).contains(&web[0]));

    // What the runtime answers: where it is, whether what it declares
    // exists there (moto has neither the example's VPC nor its subnets),
    // and what csis owns there against lineage.
    let (code, out) = moto.csis(root, d.path(), NOW + 300, &["runtime", "describe", "aws"]);
    assert_eq!(code, Some(0), "{out}");
    for line in [
        "runtime aws (aws, durable)\n  region: us-east-1\n  account: 123456789012\n",
        "  subnet subnet-0aaa (us-east-1a): NOT FOUND\n",
        "  builds: 6 found with lineage tags (5 recorded in lineage, 1 not), 1 recorded but absent\n  instances: web-aws (i-",
        ", running)\n  storages: web_data\n",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    let (code, out) = moto.csis(root, d.path(), NOW + 300, &["runtime", "empty", "aws"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out.trim(),
        "error: runtime empty: runtime 'aws' is not ephemeral; its builds are kept by decision -- dispose them with 'dispose image --all --runtime aws' (or declare it ephemeral: true)"
    );
}

/// `csis_series` and the `csis_release_*` tags of an AMI, `key=value`
/// sorted, one line.
fn csis_tags(moto: &crate::moto::Moto, ami: &str) -> String {
    moto.python(&format!(
        "t = ec2.describe_images(ImageIds=['{ami}'])['Images'][0].get('Tags', [])\n\
         print(' '.join(sorted(x['Key'] + '=' + x['Value'] for x in t if x['Key'] == 'csis_series' or x['Key'].startswith('csis_release_'))))"
    ))
}

#[test]
fn a_release_tags_its_ami_retention_disposes_the_one_superseded_and_a_relabel_retags_the_series() {
    let Some((moto, t, d)) = crate::moto::clouds(|root| {
        add_spare(root, "    release: {model: default}\n");
        crate::support::append(root, "cfg/_config.yml", "  apply_release: [aws]\n");
        edit(
            root,
            "cfg/builders.yml",
            "    profile: csis\n",
            "    profile: csis\n    retention_keep: 1\n",
        );
    }) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis(root, d.path(), NOW, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    let first = builds(root, "spare");
    assert!(
        out.contains(&format!(
            "release: {} of spare released for model default",
            first[0]
        )),
        "{out}"
    );
    assert_eq!(
        csis_tags(&moto, &first[0]),
        "csis_release_default=2026_12_11T14_40_00 csis_series=spare"
    );
    let snapshot = snapshot_of(&moto, &first[0]);
    // The next head released takes the mark; the old build loses it, and
    // retention (one build kept per series on this runtime) disposes it:
    // AMI deregistered, snapshot deleted.
    let (code, out) = moto.csis(
        root,
        d.path(),
        NOW + 3600,
        &["run", "all", "--no-dry-run", "--force-bake", "spare"],
    );
    assert_eq!(code, Some(0), "{out}");
    let second = builds(root, "spare");
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(second, first);
    for line in [
        format!(
            "release --tag-runtime: {} (aws): removed csis_release_default (no longer released)",
            first[0]
        ),
        format!(
            "release --tag-runtime: {} (aws): csis_release_default=2026_12_11T15_40_00",
            second[0]
        ),
        format!("dispose: {} (spare@aws) disposed", first[0]),
    ] {
        assert!(out.contains(&line), "{line}\n{out}");
    }
    assert_eq!(left_of(&moto, &first[0], &snapshot), "0\n0", "{out}");
    assert_eq!(
        csis_tags(&moto, &second[0]),
        "csis_release_default=2026_12_11T15_40_00 csis_series=spare"
    );
    // Renamed in the tree, the series' AMIs are retagged and recorded
    // under the new name; the release follows it.
    edit(
        root,
        "images/chain.yml",
        "  - name: spare\n",
        "  - name: reserve\n",
    );
    let (code, out) = moto.csis(
        root,
        d.path(),
        NOW + 3700,
        &["lineage", "relabel", "spare", "reserve", "--commit"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.ends_with("lineage relabel: 1 build of 'spare' now recorded as 'reserve'\n"),
        "{out}"
    );
    assert_eq!(
        csis_tags(&moto, &second[0]),
        "csis_release_default=2026_12_11T15_40_00 csis_series=reserve"
    );
    let snapshot = snapshot_of(&moto, &second[0]);
    let snapshot_series = moto.python(&format!(
        "print([x['Value'] for x in ec2.describe_snapshots(SnapshotIds=['{snapshot}'])['Snapshots'][0]['Tags'] if x['Key'] == 'csis_series'][0])"
    ));
    assert_eq!(snapshot_series, "reserve");
    assert_eq!(builds(root, "reserve"), second);
    assert!(
        read(&root.join("meta-state/releases.yaml")).contains(&format!("reserve: {}", second[0])),
        "{}",
        read(&root.join("meta-state/releases.yaml"))
    );
    let (code, out) = moto.csis(
        root,
        d.path(),
        NOW + 3800,
        &["plan", "--only-runtime", "aws"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("reserve@aws: skip: current\n"), "{out}");
}

#[test]
fn validate_refuses_a_vendor_ami_the_region_does_not_know_or_a_query_that_finds_none() {
    let Some(moto) = crate::moto::Moto::start() else {
        return;
    };
    let t = csis_test_support::tree("clouds");
    let root = t.path();
    let pin = |id: &str| {
        let text = read(&root.join("cfg/builders.yml"));
        let from = text
            .lines()
            .find(|l| l.contains("debian-12-amd64-*") || l.contains("image_id: ami-"))
            .unwrap()
            .to_string();
        edit(
            root,
            "cfg/builders.yml",
            &from,
            &format!("        image_id: {id}"),
        );
    };
    let d = tempfile::tempdir().unwrap();
    let validate = |moto: &crate::moto::Moto, args: &[&str]| {
        let mut a = vec!["--brief", "validate"];
        a.extend(args);
        moto.csis(root, d.path(), NOW, &a)
    };
    // The tree's own query finds its Debian AMI (moto-amis.json); one no
    // image matches is refused at the query.
    let (code, out) = validate(&moto, &[]);
    assert_eq!(code, Some(0), "{out}");
    edit(
        root,
        "cfg/builders.yml",
        "debian-12-amd64-*",
        "debian-99-amd64-*",
    );
    let (code, out) = validate(&moto, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "cfg/builders.yml:73:16: OS builder debian12: query {name: debian-99-amd64-*} with owners [136693071363] on runtime aws matches no image the provider knows -- check the name pattern and the owners (the account that publishes the image), or pin one with image_id:\n"
        ),
        "{out}"
    );
    edit(
        root,
        "cfg/builders.yml",
        "debian-99-amd64-*",
        "debian-12-amd64-*",
    );
    pin("ami-0123456789abcdef0");
    let (code, out) = validate(&moto, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "cfg/builders.yml:73:19: OS builder debian12: image_id 'ami-0123456789abcdef0' on runtime aws is not known to the provider -- pin an image the runtime's region has (an id from another region or a deregistered one is not), or find it with query: and owners\n"
        ),
        "{out}"
    );
    // --offline asks nobody.
    let (code, out) = validate(&moto, &["--offline"]);
    assert_eq!(code, Some(0), "{out}");
    // An AMI the region has passes.
    let known =
        moto.python("print(ec2.describe_images(Owners=['amazon'])['Images'][0]['ImageId'])");
    pin(&known);
    let (code, out) = validate(&moto, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains(&known), "{out}");
    // A provider that cannot be asked is a note, never a refusal.
    drop(moto);
    let Some(gone) = crate::moto::Moto::start() else {
        return;
    };
    let mut env = gone.env();
    env.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
    drop(gone);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_csis"))
        .args(["--root-dir"])
        .arg(root)
        .args(["validate"])
        .envs(env)
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "note: OS builder debian12: image_id '{known}' on runtime aws not checked: EC2 DescribeImages {known}: dispatch failure"
        )),
        "{err}"
    );
}

#[test]
fn state_query_on_aws_notes_a_stopped_machine_and_sees_one_replaced_out_of_band() {
    let Some((moto, t, d)) = crate::moto::clouds(|_| {}) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis(root, d.path(), NOW, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    // The real apply confirmed the machine's generation by its id.
    let machines = moto.instances("web-aws");
    assert_eq!(machines.len(), 1, "{machines:?}");
    let old = machines[0].0.clone();
    let generations = read(&root.join("meta-state/instance-state.yaml"));
    assert!(
        generations.contains("how: observed")
            && generations.contains(&format!("instance_id: {old}")),
        "{generations}"
    );
    let pin = builds(root, "web")[0].clone();

    // Its storage is unmounted through Systems Manager before a detach.
    let (code, out) = moto.csis(
        root,
        d.path(),
        NOW + 30,
        &["unmount", "storage", "web_data", "--instance", "web-aws"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("unmount: /srv/data on web-aws unmounted"),
        "{out}"
    );
    let commands = moto.python(&format!(
        "ssm = boto3.client('ssm')\n\
         for c in ssm.list_commands(InstanceId='{old}')['Commands']:\n    print(c['Parameters']['commands'][0])"
    ));
    assert!(
        commands.contains("if mountpoint -q '/srv/data'; then sync && umount '/srv/data'; fi"),
        "{commands}"
    );

    moto.python(&format!("ec2.stop_instances(InstanceIds=['{old}'])"));
    let (_, out) = moto.csis(root, d.path(), NOW + 60, &["state", "query"]);
    assert!(
        out.contains("note: instances/web-aws: STOPPED (switched off; not drift)\n"),
        "{out}"
    );
    assert!(!out.contains("changed instance"), "{out}");

    // Someone replaced it by hand, from another image.
    let (new, ami) = {
        let out = moto.python(&format!(
            "ec2.terminate_instances(InstanceIds=['{old}'])\n\
             src = ec2.describe_images(Owners=['amazon'])['Images'][0]['ImageId']\n\
             i = ec2.run_instances(ImageId=src, MinCount=1, MaxCount=1, TagSpecifications=[{{'ResourceType': 'instance', 'Tags': [{{'Key': 'csis_instance', 'Value': 'web-aws'}}, {{'Key': 'csis_runtime', 'Value': 'aws'}}]}}])['Instances'][0]['InstanceId']\n\
             print(i, src)"
        ));
        let (a, b) = out.split_once(' ').unwrap();
        (a.to_string(), b.to_string())
    };
    let (code, out) = moto.csis(root, d.path(), NOW + 120, &["state", "query", "--strict"]);
    assert_eq!(code, Some(1), "{out}");
    for line in [
        format!(
            "changed instance web-aws (aws): the machine bearing this name is {new}, not {old} (replaced out of band; the next real apply records it)\n"
        ),
        format!(
            "changed instance web-aws (aws): booted image {ami} is neither its pin {pin} nor the build it was launched from ({pin})\n"
        ),
    ] {
        assert!(out.contains(&line), "{line}\n{out}");
    }
    assert!(out.contains(", 2 changed, "), "{out}");
}

#[test]
fn retention_on_an_ephemeral_aws_runtime_disposes_every_build_but_the_ones_held() {
    // An image nothing consumes, beside the chain web stands on.
    let Some((moto, t, d)) = crate::moto::clouds(|root| {
        edit(
            root,
            "cfg/builders.yml",
            "    profile: csis\n",
            "    profile: csis\n    ephemeral: true\n",
        );
        add_spare(root, "");
    }) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis(root, d.path(), NOW, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    // Everything on an ephemeral runtime goes, but what an instance
    // stands on and what a child bakes from (its image pin): the spare
    // build alone is disposed, its AMI deregistered.
    // (Sorted: the warnings come on stderr, the disposals on stdout.)
    let mut retention: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("[retention/execution] "))
        .filter(|l| l.contains("retention debt") || l.starts_with("dispose: "))
        .collect();
    retention.sort();
    let id = |s: &str| builds(root, s).first().cloned().unwrap_or_default();
    let spare_gone = retention
        .iter()
        .find_map(|l| {
            l.strip_prefix("dispose: ")?
                .strip_suffix(" (spare@aws) disposed")
        })
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    let mut want = vec![
        format!("dispose: {spare_gone} (spare@aws) disposed"),
        format!(
            "warning: retention debt: {} (app@aws) would be disposed but an image is pinned to it (a child bakes from it)",
            id("app")
        ),
        format!(
            "warning: retention debt: {} (base@aws) would be disposed but an image is pinned to it (a child bakes from it)",
            id("base")
        ),
        format!(
            "warning: retention debt: {} (debian12@aws) would be disposed but an image is pinned to it (a child bakes from it)",
            id("debian12")
        ),
        format!(
            "warning: retention debt: {} (web@aws) would be disposed but an instance is pinned to it or was launched from it",
            id("web")
        ),
    ];
    want.sort();
    assert_eq!(retention, want);
    assert!(builds(root, "spare").is_empty());
    let left = moto.python(&format!(
        "print(len(ec2.describe_images(Filters=[{{'Name': 'image-id', 'Values': ['{spare_gone}']}}])['Images']))"
    ));
    assert_eq!(left, "0", "{out}");
}
