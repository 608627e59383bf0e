//! A bake on EC2: the `amazon-ebs` source Packer launches it from
//! (vendor AMI or parent build, the root volume, how Packer reaches the
//! instance, the lineage tags) and what every base bake installs first.

use csis_hcl::{Block, Expr};
use csis_model::Diagnostic;
use csis_plugin_api::{BuilderDecl, HookResult, PackerBake, PackerParent, PackerValue};

use crate::{AwsRuntime, profile, session_instance_profile};

/// The root device of a family's vendor AMIs, which
/// `launch_block_device_mappings` must name to resize the root volume
/// rather than add a second one: Amazon Linux and Debian register
/// `/dev/xvda`, Ubuntu, RHEL and its rebuilds `/dev/sda1`.
pub fn root_device(family: &str) -> Option<&'static str> {
    let f = family.trim().to_ascii_lowercase();
    let is = |prefixes: &[&str]| prefixes.iter().any(|p| f.starts_with(p));
    if is(&["amazon", "al2", "amzn", "debian", "fedora"]) {
        Some("/dev/xvda")
    } else if is(&[
        "ubuntu", "rhel", "redhat", "red-hat", "centos", "alma", "rocky", "suse", "sles", "oracle",
    ]) {
        Some("/dev/sda1")
    } else {
        None
    }
}

fn tag_value(v: &PackerValue) -> Expr {
    match v {
        PackerValue::Literal(s) => Expr::str(s.as_str()),
        PackerValue::Run => Expr::template("${var.csis_run}"),
    }
}

fn tags_expr(tags: &[(String, PackerValue)]) -> Expr {
    let mut v: Vec<(String, Expr)> = tags
        .iter()
        .map(|(k, x)| (k.clone(), tag_value(x)))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    Expr::Object(v)
}

fn refuse<T>(msg: String) -> HookResult<T> {
    Err(vec![Diagnostic::error(msg)])
}

impl AwsRuntime {
    /// The `amazon-ebs` source of one bake. Arguments as the Amazon
    /// plugin's EBS builder documents them
    /// (<https://developer.hashicorp.com/packer/integrations/hashicorp/amazon/latest/components/builder/ebs>).
    pub(crate) fn source(&self, bake: &PackerBake) -> HookResult<Block> {
        let me = self.decl.name();
        let Some(cloud) = self.cloud() else {
            return refuse(format!("runtime '{me}' is not a cloud runtime"));
        };
        let mut b = Block::new("source", ["amazon-ebs", bake.source_name.as_str()])
            .attr("region", cloud.region.as_str())
            .opt_attr("profile", profile(&self.decl))
            .attr("instance_type", bake.machine_type.as_str());
        match &bake.parent {
            PackerParent::Vendor {
                image_id: Some(id), ..
            }
            | PackerParent::Build(id) => b = b.attr("source_ami", id.as_str()),
            PackerParent::Vendor {
                image_id: None,
                query,
                owners,
            } => {
                if query.is_empty() {
                    return refuse(format!(
                        "image '{}' on runtime '{me}': the OS builder entry names no vendor AMI -- set image_id (an ami-... id) or query (EC2 DescribeImages filters such as name) with owners",
                        bake.series
                    ));
                }
                if owners.is_empty() {
                    return refuse(format!(
                        "image '{}' on runtime '{me}': a vendor AMI found by query needs owners (the AMI owner's account id or alias, such as amazon or 099720109477) on the OS builder, its entry or the runtime's default_owners",
                        bake.series
                    ));
                }
                b = b.block(
                    Block::new("source_ami_filter", Vec::<String>::new())
                        .attr(
                            "filters",
                            Expr::string_map(query.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
                        )
                        .attr("owners", Expr::strs(owners.iter().map(String::as_str)))
                        .attr("most_recent", true),
                );
            }
            PackerParent::Series(parent) => {
                b = b.block(
                    Block::new("source_ami_filter", Vec::<String>::new())
                        .attr(
                            "filters",
                            Expr::string_map([
                                ("tag:csis_series", parent.as_str()),
                                ("tag:csis_tree", bake.tree.as_str()),
                            ]),
                        )
                        .attr("owners", Expr::strs(["self"]))
                        .attr("most_recent", true),
                );
            }
        }
        let device = self
            .decl
            .extra_str("root_device_name")
            .or_else(|| root_device(&bake.family));
        let Some(device) = device else {
            return refuse(format!(
                "image '{}' on runtime '{me}': no known root device for OS family '{}' -- set root_device_name on the runtime (the vendor AMI's RootDeviceName, such as /dev/xvda)",
                bake.series, bake.family
            ));
        };
        let mut disk = Block::new("launch_block_device_mappings", Vec::<String>::new())
            .attr("device_name", device);
        if let Some(size) = bake.disk_size {
            disk = disk.attr("volume_size", size);
        }
        // gp3 with its baseline stated: an AMI registered without iops
        // and throughput asks for them at every launch
        // (hashicorp/packer-plugin-amazon#32); 3000 IOPS and 125 MiB/s are
        // gp3's included baseline (EBS User Guide, "General Purpose SSD
        // volumes").
        disk = disk
            .attr("volume_type", "gp3")
            .attr("iops", 3000)
            .attr("throughput", 125)
            .attr("delete_on_termination", true);
        b = b
            .attr(
                "ami_name",
                Expr::template(format!("{}-${{var.csis_run}}", ami_name_part(&bake.series))),
            )
            .attr("ssh_username", bake.ssh_username.as_str())
            .opt_attr("vpc_id", self.decl.extra_str("vpc_id"));
        if let Some(subnet) = cloud.networking.default_subnet() {
            b = b.attr("subnet_id", subnet.subnet_id.as_str());
        }
        b = bake_connectivity(&self.decl, b)?;
        Ok(b.block(disk)
            .attr("tags", tags_expr(&bake.tags))
            .attr("run_tags", tags_expr(&bake.tags)))
    }
}

/// How Packer reaches the bake instance, as the runtime declares it
/// (the EBS builder's "Run configuration" and "Communicator"
/// arguments): `associate_public_ip_address` (outside a default VPC the
/// instance has no public address unless asked, and Packer, running
/// outside the VPC, waits on the private one), `ssh_interface`, and who
/// may reach port 22 of its temporary security group:
/// `temporary_security_group_source_cidrs` when declared, else only the
/// public address of the host running Packer
/// (`temporary_security_group_source_public_ip`, packer-plugin-amazon
/// 1.1.2+), never Packer's default 0.0.0.0/0. Session Manager SSH needs
/// an instance profile on the bake instance: the runtime's
/// `session_instance_profile`.
fn bake_connectivity(decl: &BuilderDecl, mut b: Block) -> HookResult<Block> {
    if let Some(public) = decl.extra_str("associate_public_ip_address") {
        b = b.attr("associate_public_ip_address", public == "true");
    }
    if let Some(interface) = decl.extra_str("ssh_interface") {
        b = b.attr("ssh_interface", interface);
        if interface == "session_manager" {
            let Some(profile) = session_instance_profile(decl) else {
                return refuse(format!(
                    "runtime '{}': ssh_interface session_manager needs an instance profile for the bake instance -- set session_instance_profile to an IAM instance profile with the AmazonSSMManagedInstanceCore policy",
                    decl.name()
                ));
            };
            b = b.attr("iam_instance_profile", profile);
        }
    }
    let cidrs = decl.extra_strs("temporary_security_group_source_cidrs");
    Ok(if cidrs.is_empty() {
        b.attr("temporary_security_group_source_public_ip", true)
    } else {
        b.attr("temporary_security_group_source_cidrs", Expr::strs(cidrs))
    })
}

/// A series as it may appear in an AMI name: letters, digits and
/// `( ) [ ] . / - ' @ _` (EC2 CreateImage's Name rule); anything else
/// becomes `-`.
fn ami_name_part(series: &str) -> String {
    series
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "()[]./-'@_".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The lines that install and enable the SSM agent when the image has
/// none (as a systemd unit or Ubuntu's snap).
pub(crate) fn ssm_agent_install(region: &str) -> Vec<String> {
    let base = format!("https://s3.{region}.amazonaws.com/amazon-ssm-{region}/latest");
    [
        "# The SSM agent (session: ssm), unless the vendor image ships it",
        "if ! systemctl list-unit-files '*amazon-ssm-agent*' | grep -q amazon-ssm-agent; then",
        "  case \"$(uname -m)\" in aarch64) arch=arm64 ;; *) arch=amd64 ;; esac",
        &format!("  base={base}"),
        "  if command -v dpkg >/dev/null 2>&1; then",
        "    if ! command -v curl >/dev/null 2>&1; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y curl; fi",
        "    curl -fsSL --retry 3 -o /tmp/amazon-ssm-agent.deb \"$base/debian_$arch/amazon-ssm-agent.deb\"",
        "    dpkg -i /tmp/amazon-ssm-agent.deb",
        "    rm -f /tmp/amazon-ssm-agent.deb",
        "  elif command -v dnf >/dev/null 2>&1; then",
        "    dnf install -y \"$base/linux_$arch/amazon-ssm-agent.rpm\"",
        "  else",
        "    yum install -y \"$base/linux_$arch/amazon-ssm-agent.rpm\"",
        "  fi",
        "  systemctl enable amazon-ssm-agent.service",
        "fi",
    ]
    .iter()
    .map(|l| l.to_string())
    .collect()
}
