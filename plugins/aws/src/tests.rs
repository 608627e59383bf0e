#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::path::DocPath;
use csis_model::{Diagnostic, Fields, Origin};
use csis_plugin_api::{Builder, BuilderDecl, PackerBake, PackerParent, PackerValue};

use super::*;

const RUNTIME: &str = r#"
name: aws1
type: aws
region: us-east-1
profile: csis
default_machine_type: t3.micro
networking:
  network: vpc-0123
  subnets:
    - {subnet_id: subnet-0bbb, is_default: false}
    - {subnet_id: subnet-0aaa, is_default: true, availability_zone: us-east-1a}
"#;

pub(crate) fn decl(yaml: &str) -> (BuilderDecl, Vec<String>) {
    let (v, _) = csis_yaml::parse(yaml).unwrap();
    let m = v.as_map().unwrap();
    let mut diags: Vec<Diagnostic> = Vec::new();
    let f = Fields::new(
        m,
        Origin::new("cfg/x.yml", DocPath::default()),
        "runtime 'aws1'",
        &mut diags,
    );
    let d = AwsPlugin.models()[0].declare(f);
    (d, diags.into_iter().map(|d| d.message.clone()).collect())
}

fn runtime(extra: &str) -> Box<dyn Builder> {
    let (d, diags) = decl(&format!("{RUNTIME}{extra}"));
    assert!(diags.is_empty(), "{diags:?}");
    builder(&Arc::new(d))
}

fn bake(parent: PackerParent) -> PackerBake {
    PackerBake {
        series: "web".into(),
        tree: "demo".into(),
        source_name: "web".into(),
        parent,
        family: "debian".into(),
        machine_type: "t3.small".into(),
        disk_size: Some(30),
        ssh_username: "admin".into(),
        tags: vec![
            ("csis_run".into(), PackerValue::Run),
            ("csis_series".into(), PackerValue::Literal("web".into())),
        ],
    }
}

fn source(rt: &dyn Builder, parent: PackerParent) -> String {
    let block = rt.packer_source(&bake(parent)).unwrap().unwrap();
    csis_hcl::Body::new().block(block).render()
}

#[test]
fn a_vendor_ami_by_query_is_a_source_ami_filter() {
    let rt = runtime("");
    let query = BTreeMap::from([("name".to_string(), "debian-12-amd64-*".to_string())]);
    let text = source(
        rt.as_ref(),
        PackerParent::Vendor {
            image_id: None,
            query,
            owners: vec!["136693071363".into()],
        },
    );
    assert_eq!(
        text,
        r#"source "amazon-ebs" "web" {
  region        = "us-east-1"
  profile       = "csis"
  instance_type = "t3.small"

  source_ami_filter {
    filters = {
      name = "debian-12-amd64-*"
    }
    owners      = ["136693071363"]
    most_recent = true
  }

  ami_name                                  = "web-${var.csis_run}"
  ssh_username                              = "admin"
  subnet_id                                 = "subnet-0aaa"
  temporary_security_group_source_public_ip = true

  launch_block_device_mappings {
    device_name           = "/dev/xvda"
    volume_size           = 30
    volume_type           = "gp3"
    iops                  = 3000
    throughput            = 125
    delete_on_termination = true
  }

  tags = {
    csis_run    = "${var.csis_run}"
    csis_series = "web"
  }
  run_tags = {
    csis_run    = "${var.csis_run}"
    csis_series = "web"
  }
}
"#
    );
}

#[test]
fn a_pinned_parent_is_its_ami_and_an_unpinned_one_the_newest_of_its_series() {
    let rt = runtime("vpc_id: vpc-0123\nroot_device_name: /dev/sdz\n");
    let text = source(rt.as_ref(), PackerParent::Build("ami-0abc".into()));
    assert!(
        text.contains(&format!("  {:<41} = \"ami-0abc\"\n", "source_ami")),
        "{text}"
    );
    assert!(
        text.contains(&format!("  {:<41} = \"vpc-0123\"\n", "vpc_id")),
        "{text}"
    );
    assert!(
        text.contains("device_name           = \"/dev/sdz\""),
        "{text}"
    );
    let text = source(rt.as_ref(), PackerParent::Series("base".into()));
    assert!(
        text.contains(
            "  source_ami_filter {\n    filters = {\n      \"tag:csis_series\" = \"base\"\n      \"tag:csis_tree\"   = \"demo\"\n    }\n    owners      = [\"self\"]\n    most_recent = true\n  }\n"
        ),
        "{text}"
    );
}

#[test]
fn a_vendor_without_id_or_query_or_owners_is_refused_naming_what_to_write() {
    let rt = runtime("");
    let none = PackerParent::Vendor {
        image_id: None,
        query: BTreeMap::new(),
        owners: Vec::new(),
    };
    let err = rt.packer_source(&bake(none)).unwrap_err();
    assert_eq!(
        err[0].message,
        "image 'web' on runtime 'aws1': the OS builder entry names no vendor AMI -- set image_id (an ami-... id) or query (EC2 DescribeImages filters such as name) with owners"
    );
    let no_owner = PackerParent::Vendor {
        image_id: None,
        query: BTreeMap::from([("name".to_string(), "x".to_string())]),
        owners: Vec::new(),
    };
    let err = rt.packer_source(&bake(no_owner)).unwrap_err();
    assert!(err[0].message.contains("needs owners"), "{err:?}");
    let mut unknown = bake(PackerParent::Build("ami-1".into()));
    unknown.family = "plan9".into();
    let err = rt.packer_source(&unknown).unwrap_err();
    assert_eq!(
        err[0].message,
        "image 'web' on runtime 'aws1': no known root device for OS family 'plan9' -- set root_device_name on the runtime (the vendor AMI's RootDeviceName, such as /dev/xvda)"
    );
}

#[test]
fn the_build_id_is_the_ami_of_the_runtimes_region() {
    let rt = runtime("");
    assert_eq!(
        rt.build_id_from_artifact("us-east-1:ami-0123456789abcdef0"),
        Some("ami-0123456789abcdef0".into())
    );
    assert_eq!(
        rt.build_id_from_artifact("eu-west-1:ami-1,us-east-1:ami-2"),
        Some("ami-2".into())
    );
    assert_eq!(
        rt.build_id_from_artifact("eu-west-1:ami-1"),
        Some("ami-1".into())
    );
    assert_eq!(rt.build_id_from_artifact("web-image"), None);
    assert_eq!(rt.build_id_from_artifact("us-east-1:snap-1"), None);
}

#[test]
fn capability_answers() {
    let rt = runtime("");
    assert_eq!(rt.default_bake_user("ubuntu"), Some("ubuntu".into()));
    assert_eq!(rt.default_bake_user("debian"), Some("admin".into()));
    assert_eq!(rt.default_bake_user("alma-linux"), Some("ec2-user".into()));
    assert_eq!(rt.default_bake_user("rhel"), Some("ec2-user".into()));
    assert_eq!(
        rt.default_bake_user("amazon-linux"),
        Some("ec2-user".into())
    );
    assert_eq!(rt.default_bake_user("rocky-linux"), Some("rocky".into()));
    assert_eq!(rt.default_bake_user("plan9"), None);
    assert_eq!(
        runtime("ssh_username: ops\n").default_bake_user("ubuntu"),
        Some("ops".into())
    );
    assert!(!rt.one_bake_user_per_chain());
    assert!(!rt.keeps_state());
    assert_eq!(rt.session_mechanism(), Some("ssm"));
    assert_eq!(rt.label_key_problem("Team"), None);
    assert_eq!(
        rt.label_key_problem("aws:owner"),
        Some("the aws: prefix of an EC2 tag key is reserved for AWS".into())
    );
    assert_eq!(
        rt.label_key_problem(""),
        Some("an EC2 tag key has 1 to 128 characters ('' has 0)".into())
    );
}

#[test]
fn extra_fields_and_their_refusals() {
    let (d, diags) = decl(&format!("{RUNTIME}default_disk_size: 40\n"));
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(
        d.extra.get("default_disk_size").and_then(Value::as_str),
        Some("40")
    );
    assert_eq!(d.extra.get("session").and_then(Value::as_str), Some("ssm"));
    let (_, diags) = decl(&format!("{RUNTIME}session: ssh\ndefault_disk_size: 0\n"));
    assert_eq!(
        diags,
        vec![
            "default_disk_size is a size in GiB, at least 1 (not 0)".to_string(),
            "runtime aws knows the session mechanism ssm only (not 'ssh') -- remove session or write ssm".to_string(),
        ]
    );
}

#[test]
fn profile_and_zone_as_the_roots_and_bakes_read_them() {
    let (d, _) = decl(RUNTIME);
    assert_eq!(profile(&d), Some("csis"));
    assert_eq!(zone(&d).as_deref(), Some("us-east-1a"));
    let bare = RUNTIME
        .replace("profile: csis\n", "credentials: {profile_name: corp}\n")
        .replace(", availability_zone: us-east-1a", "");
    let (d, diags) = decl(&bare);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(profile(&d), Some("corp"));
    assert_eq!(zone(&d).as_deref(), Some("us-east-1a"));
    let other_region = bare.replace("us-east-1\n", "eu-west-3\n");
    assert_eq!(zone(&decl(&other_region).0).as_deref(), Some("eu-west-3a"));
}

#[test]
fn packer_reaches_the_bake_as_the_runtime_says_and_port_22_opens_to_its_host_only() {
    let rt = runtime("");
    let text = source(rt.as_ref(), PackerParent::Build("ami-0abc".into()));
    assert!(
        text.contains("  temporary_security_group_source_public_ip = true\n"),
        "{text}"
    );
    assert!(!text.contains("associate_public_ip_address"), "{text}");
    assert!(!text.contains("ssh_interface"), "{text}");
    let rt = runtime(
        "associate_public_ip_address: true\nssh_interface: public_ip\ntemporary_security_group_source_cidrs: [203.0.113.0/24]\n",
    );
    let text = source(rt.as_ref(), PackerParent::Build("ami-0abc".into()));
    assert!(
        text.contains("  associate_public_ip_address           = true\n"),
        "{text}"
    );
    assert!(
        text.contains("  ssh_interface                         = \"public_ip\"\n"),
        "{text}"
    );
    assert!(
        text.contains("  temporary_security_group_source_cidrs = [\"203.0.113.0/24\"]\n"),
        "{text}"
    );
    assert!(!text.contains("source_public_ip"), "{text}");
}

#[test]
fn session_manager_ssh_needs_the_runtimes_instance_profile_and_unknown_interfaces_are_refused() {
    let rt = runtime("ssh_interface: session_manager\n");
    let err = rt
        .packer_source(&bake(PackerParent::Build("ami-0abc".into())))
        .unwrap_err();
    assert_eq!(
        err[0].message,
        "runtime 'aws1': ssh_interface session_manager needs an instance profile for the bake instance -- set session_instance_profile to an IAM instance profile with the AmazonSSMManagedInstanceCore policy"
    );
    let rt = runtime("ssh_interface: session_manager\nsession_instance_profile: csis-ssm\n");
    let text = source(rt.as_ref(), PackerParent::Build("ami-0abc".into()));
    assert!(
        text.contains("  iam_instance_profile                      = \"csis-ssm\"\n"),
        "{text}"
    );
    let (_, diags) = decl(&format!("{RUNTIME}ssh_interface: tunnel\n"));
    assert_eq!(
        diags,
        vec!["ssh_interface 'tunnel' is not one Packer's EBS builder knows -- write one of public_ip, private_ip, public_dns, private_dns, session_manager".to_string()]
    );
}

#[test]
fn every_base_bake_installs_the_ssm_agent_from_the_regions_bucket_unless_the_image_has_it() {
    let lines = runtime("").base_bake_commands().join("\n");
    assert!(
        lines.contains(
            "if ! systemctl list-unit-files '*amazon-ssm-agent*' | grep -q amazon-ssm-agent; then"
        ),
        "{lines}"
    );
    assert!(
        lines.contains("  base=https://s3.us-east-1.amazonaws.com/amazon-ssm-us-east-1/latest"),
        "{lines}"
    );
    assert!(
        lines.contains("\"$base/debian_$arch/amazon-ssm-agent.deb\""),
        "{lines}"
    );
    assert!(
        lines.contains("systemctl enable amazon-ssm-agent.service"),
        "{lines}"
    );
}
