//! `verify instance` on the clouds, through the binary: AWS through the
//! AWS SDK against moto's EC2/SSM server, GCE through the gcloud test
//! double, over fixtures/clouds after a real run with the packer and tofu
//! doubles (tests/e2e/doubles/).

use std::path::Path;

use crate::moto::Moto;
use crate::support::{edit, read, real_run};

const NOW: i64 = 1_796_000_000;

/// `csis verify ARGS` a minute after the run.
fn verify(root: &Path, d: &Path, moto: &Moto, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["verify"];
    all.extend(args);
    moto.csis(root, d, NOW + 60, &all)
}

/// The pinned build of `instance`.
fn pin(root: &Path, instance: &str) -> String {
    let pins = read(&root.join("meta-state/pins.yaml"));
    let line = pins
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{instance}: ")))
        .unwrap_or_else(|| panic!("{instance} is not pinned:\n{pins}"));
    line.split_once(": ").unwrap().1.trim().to_string()
}

#[test]
fn a_stopped_ec2_machine_is_started_for_its_checks_and_one_on_another_ami_fails() {
    let Some((moto, t, d)) = crate::moto::clouds(|_| ()) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis(root, d.path(), NOW, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    let ami = pin(root, "web-aws");
    let machines = moto.instances("web-aws");
    assert_eq!(machines.len(), 1, "{machines:?}");
    let id = machines[0].0.clone();

    // Stopped: started through EC2, checked, stopped again, and the
    // verdict says so.
    moto.python(&format!("ec2.stop_instances(InstanceIds=['{id}'])"));
    assert_eq!(moto.instances("web-aws")[0].1, "stopped");
    let (code, out) = verify(root, d.path(), &moto, &["instance", "web-aws"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out.trim(),
        format!("verify web-aws: ok (4 checks on {ami})")
    );
    assert_eq!(moto.instances("web-aws")[0].1, "stopped");
    let verdicts = read(&root.join("meta-state/verifications.yaml"));
    assert!(
        verdicts.contains(
            "      - check: power\n        ok: true\n        detail: \"was stopped: started for this verification and stopped again\"\n"
        ),
        "{verdicts}"
    );

    // A machine replaced out of band from another AMI fails its boot
    // image check, with the spec's message, and --record-only records
    // the same verdict and exits 0.
    moto.python(&format!(
        "ec2.terminate_instances(InstanceIds=['{id}'])\n\
         ec2.run_instances(ImageId='ami-0ffffffffffffffff', MinCount=1, MaxCount=1, TagSpecifications=[{{'ResourceType': 'instance', 'Tags': [{{'Key': 'csis_instance', 'Value': 'web-aws'}}, {{'Key': 'csis_runtime', 'Value': 'aws'}}]}}])"
    ));
    let (code, out) = verify(root, d.path(), &moto, &["instance", "web-aws"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out.trim(),
        format!(
            "error: instance web-aws failed verification: boot image: runs ami-0ffffffffffffffff, but it is pinned to {ami}"
        )
    );
    let (code, out) = verify(
        root,
        d.path(),
        &moto,
        &["instance", "web-aws", "--record-only"],
    );
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = verify(root, d.path(), &moto, &["assert"]);
    assert_eq!(code, Some(1), "{out}");

    // Two machines carrying the launch tags: csis names both and checks
    // neither.
    moto.python(
        "ec2.run_instances(ImageId='ami-0ffffffffffffffff', MinCount=1, MaxCount=1, TagSpecifications=[{'ResourceType': 'instance', 'Tags': [{'Key': 'csis_instance', 'Value': 'web-aws'}, {'Key': 'csis_runtime', 'Value': 'aws'}]}])",
    );
    let (code, out) = verify(root, d.path(), &moto, &["instance", "web-aws"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "more than one EC2 instance carries the launch tags of instance 'web-aws' (i-"
        ),
        "{out}"
    );
}

#[test]
fn a_failed_post_bake_check_on_gce_stops_the_run_and_release_refuses_the_build() {
    let Some((moto, t, d)) = crate::moto::clouds(|root| {
        edit(
            root,
            "images/chain.yml",
            "    tags: {team: web}\n",
            "    tags: {team: web}\n    tests:\n      post_bake:\n        files: [/etc/web.conf]\n",
        )
    }) else {
        return;
    };
    let root = t.path();
    let mut e = moto.env();
    e.push(("GCLOUD_DOUBLE_FAIL", "/etc/web.conf".into()));
    let e: Vec<(&str, &str)> = e.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let o = real_run(root, d.path(), NOW, &e);
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(1), "{out}");
    // web-aws passed (moto answers every command), web-gce did not.
    let aws = pin(root, "web-aws");
    let gce = pin(root, "web-gce");
    assert!(
        out.contains(&format!("verify web-aws: ok (4 checks on {aws})")),
        "{out}"
    );
    assert!(
        out.contains(
            "error: instance web-gce failed verification: post-bake file /etc/web.conf: check failed on web-gce (gcloud test double, GCLOUD_DOUBLE_FAIL=/etc/web.conf)"
        ),
        "{out}"
    );
    let tests = read(&root.join("meta-state/image-tests.yaml"));
    assert!(tests.contains(&format!("{aws}:\n  ok: true\n")), "{tests}");
    assert!(tests.contains(&format!("{gce}:\n  ok: false\n")), "{tests}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(root)
        .args(["release", "web", "--build", &gce])
        .env("CSIS_NOW", (NOW + 120).to_string())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("build '{gce}' failed its post-bake tests in run ")),
        "{said}"
    );

    // Switched off (TERMINATED, as Compute Engine calls a stopped
    // machine): started through gcloud, checked, stopped again.
    let power = d.path().join("cloud/gce-power");
    std::fs::create_dir_all(&power).unwrap();
    std::fs::write(power.join("web-gce"), "TERMINATED").unwrap();
    let (code, out) = verify(root, d.path(), &moto, &["instance", "web-gce"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out.trim(),
        format!("verify web-gce: ok (5 checks on {gce})")
    );
    assert_eq!(read(&power.join("web-gce")), "TERMINATED");
}
