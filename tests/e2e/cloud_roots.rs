//! What a real `packer build` and `tofu apply` of fixtures/clouds need
//! from the emitted files, item by item (docs/clouds.md, "What a real run
//! needs"), and every emitted Packer template through Debian's `packer
//! validate`.

use std::path::Path;
use std::process::Command;

use csis_test_support::{files_below, tree};

use crate::support::{csis_at, ok, read};

const NOW: i64 = 1_796_226_804;

/// The dry run of fixtures/clouds: its generated tree.
fn generated() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tree("clouds");
    ok(csis_at(t.path(), NOW, &["run", "all"]));
    let g = t.path().join("generated");
    (t, g)
}

fn file(g: &Path, rel: &str) -> String {
    read(&g.join(rel))
}

fn contains_all(text: &str, what: &str, expected: &[&str]) {
    for e in expected {
        assert!(text.contains(e), "{what} lacks {e:?}:\n{text}");
    }
}

#[test]
fn base_bakes_install_the_session_agent_on_aws_and_cloud_init_on_gce_first() {
    let (_t, g) = generated();
    let aws = file(&g, "base-image/pk-aws/image-generation/debian12.pkr.hcl");
    contains_all(
        &aws,
        "the aws base bake",
        &[
            "\"if ! systemctl list-unit-files '*amazon-ssm-agent*' | grep -q amazon-ssm-agent; then\"",
            "\"  base=https://s3.us-east-1.amazonaws.com/amazon-ssm-us-east-1/latest\"",
            "\"    dpkg -i /tmp/amazon-ssm-agent.deb\"",
            "\"  systemctl enable amazon-ssm-agent.service\"",
        ],
    );
    let gce = file(&g, "base-image/pk-gce/image-generation/debian12.pkr.hcl");
    contains_all(
        &gce,
        "the gce base bake",
        &[
            "\"if ! command -v cloud-init >/dev/null 2>&1; then\"",
            "\"    DEBIAN_FRONTEND=noninteractive apt-get install -y cloud-init\"",
            "datasource_list: [ GCE, None ]",
        ],
    );
    // Before the admin user and the first-boot unit: the first
    // provisioner of each base bake.
    for (text, marker) in [(&aws, "amazon-ssm-agent"), (&gce, "cloud-init")] {
        let first = text.find("provisioner \"shell\"").unwrap();
        let install = text.find(marker).unwrap();
        let admin = text.find("useradd --create-home").unwrap();
        assert!(first < install && install < admin, "{text}");
    }
    // Children inherit it with the disk: no child bake installs it again.
    let web = file(&g, "instance-image/pk-aws/image-generation/web.pkr.hcl");
    assert!(!web.contains("amazon-ssm-agent.deb"), "{web}");
}

#[test]
fn the_backends_versions_and_instances_are_what_a_real_apply_accepts() {
    let (_t, g) = generated();
    // The s3 backend reads with the runtime's profile; use_lockfile needs
    // OpenTofu 1.10.
    let backend = file(
        &g,
        "instance-image/ec2/instance-generation/ec2.tfbackend.hcl",
    );
    contains_all(
        &backend,
        "the s3 backend",
        &["profile      = \"csis\"\n", "use_lockfile = true\n"],
    );
    let versions = file(&g, "instance-image/ec2/instance-generation/versions.tf");
    assert!(
        versions.contains("required_version = \">= 1.10.0\"\n"),
        "{versions}"
    );
    // The gcs backend locks natively on any OpenTofu csis supports.
    let versions = file(&g, "instance-image/gce-vms/instance-generation/versions.tf");
    assert!(
        versions.contains("required_version = \">= 1.6.0\"\n"),
        "{versions}"
    );
    // Machines reachable through Session Manager, IMDSv2 only; a changed
    // user-data is a replacement the plan names.
    let ec2 = file(&g, "instance-image/ec2/instance-generation/main.tf");
    contains_all(
        &ec2,
        "the ec2 root",
        &[
            "  iam_instance_profile        = aws_iam_instance_profile.session.name\n",
            "  user_data_replace_on_change = true\n",
            "    http_tokens   = \"required\"\n",
            "  policy_arn = \"arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore\"\n",
        ],
    );
    let gce = file(&g, "instance-image/gce-vms/instance-generation/main.tf");
    contains_all(
        &gce,
        "the gce root",
        &[
            "  allow_stopping_for_update = true\n",
            "resource \"terraform_data\" \"user_data\" {\n  for_each = local.instances\n  input    = sha256(each.value.user_data)\n}\n",
            "    replace_triggered_by = [terraform_data.user_data[each.key]]\n",
        ],
    );
}

#[test]
fn lookups_and_families_are_scoped_to_the_tree_and_bakes_connect_safely() {
    let (_t, g) = generated();
    // fixtures/clouds has `id: clouds`.
    let web = file(&g, "instance-image/pk-aws/image-generation/web.pkr.hcl");
    contains_all(
        &web,
        "the aws web bake",
        &[
            "      \"tag:csis_series\" = \"app\"\n      \"tag:csis_tree\"   = \"clouds\"\n",
            "    csis_tree           = \"clouds\"\n",
            "  temporary_security_group_source_public_ip = true\n",
            "    volume_type           = \"gp3\"\n    iops                  = 3000\n    throughput            = 125\n",
        ],
    );
    let gweb = file(&g, "instance-image/pk-gce/image-generation/web.pkr.hcl");
    contains_all(
        &gweb,
        "the gce web bake",
        &[
            "  source_image_family     = \"clouds-app\"\n",
            "  image_family            = \"clouds-web\"\n",
            "  tags                    = [\"csis-bake\"]\n",
            "    csis_tree           = \"clouds\"\n",
        ],
    );
    let ec2 = file(&g, "instance-image/ec2/instance-generation/main.tf");
    assert!(
        ec2.contains(
            "  filter {\n    name   = \"tag:csis_tree\"\n    values = [\"clouds\"]\n  }\n"
        ),
        "{ec2}"
    );
    let gce = file(&g, "instance-image/gce-vms/instance-generation/main.tf");
    assert!(gce.contains("toset([\"clouds-web\"])"), "{gce}");
}

/// Debian's packer (1.6.6 in this machine's release), or a skip.
fn packer() -> Option<String> {
    let found = Command::new("packer")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        csis_test_support::skipped_without(
            "CSIS_REQUIRE_PACKER",
            "packer is not installed",
            "the emitted templates are not validated by packer",
        );
    }
    found.then(|| "packer".to_string())
}

/// A template as Packer 1.6.6 reads it: without the `packer` block
/// (`required_plugins` arrived in Packer 1.7.0, and the block's
/// `required_version` asks for 1.7.8, which the manifest's
/// `${build.SourceAMI}` needs), and without
/// `temporary_security_group_source_public_ip` (packer-plugin-amazon
/// 1.1.2, hashicorp/packer-plugin-amazon#250, after the amazon builder
/// 1.6.6 bundles). Every other argument is validated as emitted.
fn as_packer_1_6_reads_it(text: &str) -> String {
    let start = text.find("packer {\n").expect("a packer block");
    let end = start + text[start..].find("\n}\n").expect("its end") + 3;
    let mut out = format!("{}{}", &text[..start], &text[end..]);
    out = out
        .lines()
        .filter(|l| {
            !l.trim_start()
                .starts_with("temporary_security_group_source_public_ip")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    out
}

#[test]
fn packer_validates_every_template_emitted_for_the_worked_clouds_tree() {
    let Some(packer) = packer() else {
        return;
    };
    let (_t, g) = generated();
    let templates: Vec<_> = files_below(&g)
        .into_iter()
        .filter(|(rel, _)| rel.ends_with(".pkr.hcl"))
        .collect();
    assert_eq!(templates.len(), 8, "{templates:?}");
    for (rel, path) in templates {
        let text = read(&path);
        assert!(text.contains("required_version = \">= 1.7.8\""), "{rel}");
        // Beside the original, so its provisioners' `scripts` resolve as
        // they do for the runner.
        let copy = path.with_file_name(".validate.pkr.hcl");
        std::fs::write(&copy, as_packer_1_6_reads_it(&text)).unwrap();
        let out = Command::new(&packer)
            .args(["validate", "-var", "csis_run=2026_12_02T15_53_24"])
            .arg(&copy)
            .current_dir(path.parent().unwrap())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "packer validate {rel}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::remove_file(&copy).unwrap();
    }
}

/// The EC2 instance standing under csis_instance `name`.
fn machine(moto: &crate::moto::Moto, name: &str) -> String {
    moto.python(&format!(
        "r = ec2.describe_instances(Filters=[{{'Name': 'tag:csis_instance', 'Values': ['{name}']}}, {{'Name': 'instance-state-name', 'Values': ['pending', 'running']}}])\n\
         print(' '.join(i['InstanceId'] for x in r['Reservations'] for i in x['Instances']))"
    ))
}

#[test]
fn a_new_group_member_replaces_the_launched_machines_and_the_plan_names_it() {
    let Some((moto, t, d)) = crate::moto::clouds(|_| {}) else {
        return;
    };
    let root = t.path();
    let (code, out) = moto.csis(root, d.path(), NOW, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    let first = machine(&moto, "web-aws");
    assert!(first.starts_with("i-"), "{first}");
    let record = read(&root.join("meta-state/launch-params.yaml"));
    assert!(record.contains("user_data_sha256: "), "{record}");
    let launched_run = record
        .lines()
        .find_map(|l| l.trim().strip_prefix("launched_run: "))
        .unwrap()
        .trim_matches('"')
        .to_string();

    // A third member of ops: every machine of its images boots with a
    // login more, which a running machine would never read.
    let people = root.join("groups/people.yml");
    let text = read(&people)
        .replace(
            "  - {name: blake, first_name: Blake, last_name: Bravo}\n",
            "  - {name: blake, first_name: Blake, last_name: Bravo}\n  - {name: casey, first_name: Casey, last_name: Charlie}\n",
        )
        .replace("members: [avery, blake]", "members: [avery, blake, casey]");
    std::fs::write(&people, text).unwrap();
    let (code, plan) = moto.csis(root, d.path(), NOW + 60, &["plan"]);
    assert_eq!(code, Some(0), "{plan}");
    for name in ["web-aws", "web-gce"] {
        let line = format!(
            "instance '{name}' is replaced by the next apply: its user-data changed since run {launched_run} launched it, and a running machine never reads its user-data again"
        );
        assert!(plan.contains(&line), "{line}\n{plan}");
    }
    assert!(
        plan.contains("Plan: 0 to bake, 8 current, 0 instances to launch, 2 to replace."),
        "{plan}"
    );
    // A dry run changes nothing of that: the machines stand as launched.
    let (code, out) = moto.csis(root, d.path(), NOW + 90, &["run", "all"]);
    assert_eq!(code, Some(0), "{out}");
    let (_, plan) = moto.csis(root, d.path(), NOW + 100, &["plan"]);
    assert!(plan.contains(", 2 to replace."), "{plan}");

    // The real run: the OpenTofu plans replace both machines, the gate
    // admits it, and the new machine stands in the same generation.
    let (code, out) = moto.csis(root, d.path(), NOW + 120, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("replaced out of band"), "{out}");
    let second = machine(&moto, "web-aws");
    assert!(
        second.starts_with("i-") && second != first,
        "{first} {second}"
    );
    let ledger = read(&root.join("meta-state/instance-state.yaml"));
    assert!(
        ledger.contains(&format!("instance_id: {second}")) && !ledger.contains(&first),
        "{ledger}"
    );
    let (_, plan) = moto.csis(root, d.path(), NOW + 180, &["plan"]);
    assert!(
        plan.contains("Plan: 0 to bake, 8 current, 0 instances to launch."),
        "{plan}"
    );
}
