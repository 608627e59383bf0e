//! The `aws` plugin: runtime `aws`, EC2 in one region, as the `packer`
//! image builder bakes on it (Packer's `amazon-ebs` source) and the tofu
//! builders launch on it.
//!
//! Declared under `runtime_builders:` with the cloud base model (`region`,
//! `networking` with its subnets and availability zones) and its own
//! fields: `profile` (the AWS shared-credentials profile), `vpc_id`,
//! `default_disk_size` (GiB; the bake disk of every image on this runtime
//! and part of their fingerprints), `ssh_username` (the bake user of every
//! OS family), `session` (`ssm`), `root_device_name` (the vendor AMIs'
//! root device, when the family table below does not know it),
//! `session_instance_profile` (an existing IAM instance profile the
//! machines run with instead of the one each instance root makes), and
//! how Packer reaches a bake instance: `associate_public_ip_address`,
//! `ssh_interface`, `temporary_security_group_source_cidrs`.

use csis_hcl::Block;
use csis_model::models::{BaseModelKind, CloudBuilderModel};
use csis_model::{Fields, Map, Value, Vct};
use csis_plugin_api::runtime_fields::{read_bool, read_disk_size, read_string_list, read_strings};
use csis_plugin_api::sessions::{RawRuntime, Session, SessionEnv};
use csis_plugin_api::{
    Builder, BuilderDecl, HookResult, ModelSpec, PackerBake, PackerPlugin, Plugin,
};
use std::sync::Arc;

mod bake;
pub use bake::root_device;
mod machine;
mod reality;
pub mod s3_state;
mod sdk;
mod sessions;

pub struct AwsPlugin;

/// The model name `type:` selects.
pub const MODEL: &str = "aws";

struct AwsRuntime {
    decl: Arc<BuilderDecl>,
    /// The SDK clients, made on the first hook that asks AWS and shared by
    /// the rest (loading the configuration resolves the credentials).
    clients: std::sync::OnceLock<Result<sdk::Clients, String>>,
}

impl AwsRuntime {
    fn cloud(&self) -> Option<&CloudBuilderModel> {
        self.decl.cloud()
    }

    fn clients(&self) -> Result<&sdk::Clients, String> {
        self.clients
            .get_or_init(|| sdk::Clients::connect(&self.decl))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// The named profile an aws runtime authenticates with: `profile`, else
/// `credentials.profile_name`.
pub fn profile(runtime: &BuilderDecl) -> Option<&str> {
    runtime.extra_str("profile").or_else(|| {
        runtime
            .cloud()?
            .runtime
            .credentials
            .get("profile_name")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    })
}

/// The existing IAM instance profile an aws runtime's machines run with
/// (`session_instance_profile`), when the runtime names one; otherwise
/// each instance root makes its own for the session (spec:
/// session_instance_profile).
pub fn session_instance_profile(runtime: &BuilderDecl) -> Option<&str> {
    runtime.extra_str("session_instance_profile")
}

/// The availability zone an aws runtime's machines land in when they name
/// none: the default availability zone, else the default subnet's, else
/// the region's first (`<region>a`).
pub fn zone(runtime: &BuilderDecl) -> Option<String> {
    let cloud = runtime.cloud()?;
    Some(
        cloud
            .networking
            .default_zone()
            .unwrap_or_else(|| format!("{}a", cloud.region.trim())),
    )
}

/// The default login of the vendor AMIs of an OS family, from AWS's table
/// "Default user names" (EC2 User Guide, "Manage system users on your
/// Amazon EC2 Linux instance":
/// <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/managing-users.html>):
/// Amazon Linux, RHEL, CentOS, Fedora, SUSE, Oracle, FreeBSD and AlmaLinux
/// `ec2-user`; Debian `admin`; Ubuntu `ubuntu`; Rocky Linux `rocky`;
/// Bitnami `bitnami`.
pub fn default_user(family: &str) -> Option<&'static str> {
    let f = family.trim().to_ascii_lowercase();
    let is = |prefixes: &[&str]| prefixes.iter().any(|p| f.starts_with(p));
    if is(&["ubuntu"]) {
        Some("ubuntu")
    } else if is(&["debian"]) {
        Some("admin")
    } else if is(&["rocky"]) {
        Some("rocky")
    } else if is(&["bitnami"]) {
        Some("bitnami")
    } else if is(&[
        "amazon", "al2", "amzn", "rhel", "redhat", "red-hat", "centos", "fedora", "suse", "sles",
        "oracle", "ol", "freebsd", "alma",
    ]) {
        Some("ec2-user")
    } else {
        None
    }
}

impl Builder for AwsRuntime {
    fn default_bake_user(&self, family: &str) -> Option<String> {
        self.decl
            .extra_str("ssh_username")
            .map(str::to_string)
            .or_else(|| default_user(family).map(str::to_string))
    }

    /// EC2 tag keys (EC2 User Guide, "Tag restrictions",
    /// <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions>):
    /// 1 to 128 characters, and the `aws:` prefix is reserved.
    fn label_key_problem(&self, key: &str) -> Option<String> {
        let n = key.chars().count();
        if n == 0 || n > 128 {
            return Some(format!(
                "an EC2 tag key has 1 to 128 characters ('{key}' has {n})"
            ));
        }
        key.to_ascii_lowercase()
            .starts_with("aws:")
            .then(|| "the aws: prefix of an EC2 tag key is reserved for AWS".to_string())
    }

    /// `ssm` (the default): csis reaches instances through AWS Systems
    /// Manager Session Manager, with no inbound port and no SSH key to
    /// distribute, access governed by IAM.
    fn session_mechanism(&self) -> Option<&str> {
        Some(self.decl.extra_str("session").unwrap_or("ssm"))
    }

    fn packer_plugin(&self) -> Option<PackerPlugin> {
        Some(PackerPlugin {
            name: "amazon",
            source: "github.com/hashicorp/amazon",
            version: ">= 1.3, < 2.0.0",
        })
    }

    fn packer_source(&self, bake: &PackerBake) -> HookResult<Option<Block>> {
        self.source(bake).map(Some)
    }

    /// amazon-ebs shares the AMI it launched from with post-processors as
    /// `build.SourceAMI` (the EBS builder's "Build Shared Information
    /// Variables").
    fn packer_parent_expression(&self) -> Option<&'static str> {
        Some("${build.SourceAMI}")
    }

    /// The amazon-ebs artifact id is `<region>:<ami-id>` per region the AMI
    /// exists in, comma-separated: the build id is the AMI of this
    /// runtime's region (else the first).
    fn build_id_from_artifact(&self, artifact_id: &str) -> Option<String> {
        let region = self.cloud().map(|c| c.region.as_str()).unwrap_or_default();
        let pairs: Vec<(&str, &str)> = artifact_id
            .split(',')
            .filter_map(|p| p.trim().split_once(':'))
            .filter(|(_, ami)| ami.starts_with("ami-") && ami.len() > 4)
            .collect();
        pairs
            .iter()
            .find(|(r, _)| *r == region)
            .or_else(|| pairs.first())
            .map(|(_, ami)| ami.to_string())
    }

    /// The machine is found by its launch tags and checked through EC2
    /// and Systems Manager (`machine.rs`).
    fn verify_instance(
        &self,
        _ctx: &dyn csis_plugin_api::HookContext,
        _root: &std::path::Path,
        req: &csis_plugin_api::VerifyRequest,
    ) -> Result<csis_plugin_api::Verdict, String> {
        let clients = self.clients()?;
        let mut machine = machine::Ec2Machine::find(clients, self.decl.name(), &req.instance)?;
        csis_plugin_api::machine_verify::verify(&mut machine, req)
    }

    /// Through Systems Manager on the instance's machine (`machine.rs`).
    fn unmount(
        &self,
        _root: &std::path::Path,
        instance: &str,
        mount_point: &str,
    ) -> Result<(), (i32, String)> {
        let clients = self.clients().map_err(|e| (1, e))?;
        let mut machine =
            machine::Ec2Machine::find(clients, self.decl.name(), instance).map_err(|e| (1, e))?;
        csis_plugin_api::machine_verify::unmount(&mut machine, instance, mount_point)
    }

    /// The AMIs, instances and volumes csis's tags mark (`reality.rs`).
    fn observe(
        &self,
        _root: &std::path::Path,
        tree: &str,
    ) -> Result<csis_plugin_api::Observed, String> {
        let clients = self.clients()?;
        reality::observe(clients, self.decl.name(), tree)
    }

    /// Region, account and the declared network as EC2 knows it
    /// (`reality.rs`).
    fn describe(&self, _root: &std::path::Path) -> Result<Vec<String>, String> {
        let clients = self.clients()?;
        reality::describe(clients, &self.decl)
    }

    /// Deregister the AMI and delete its snapshots (`reality.rs`).
    fn vendor_image_known(
        &self,
        image: &csis_plugin_api::VendorImage<'_>,
    ) -> Result<Option<bool>, String> {
        reality::vendor_image_known(self.clients()?, image).map(Some)
    }

    fn can_retag_image(&self) -> bool {
        true
    }

    fn retag_image(
        &self,
        _root: &std::path::Path,
        build_id: &str,
        tags: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), String> {
        reality::retag(self.clients()?, build_id, tags)
    }

    fn dispose_image(&self, _root: &std::path::Path, build_id: &str) -> Result<(), String> {
        let clients = self.clients()?;
        reality::dispose(clients, build_id)
    }

    /// cloud-init, when the image has it, forgets this machine so an
    /// instance launched from the image runs its user-data afresh.
    fn bake_finalize_commands(&self) -> Vec<String> {
        vec![csis_plugin_api::cloud_config::CLOUD_INIT_CLEAN.to_string()]
    }

    /// The ssm session mechanism needs the SSM agent in the image: Amazon
    /// Linux and Ubuntu's AMIs ship it, Debian's and RHEL's do not
    /// (Systems Manager User Guide, "Find AMIs with the SSM Agent
    /// preinstalled"). Installed from the region's own agent bucket, as
    /// the guide's manual installation for Debian and RHEL does; cloud-init,
    /// which reads the user-data, is in every vendor AMI csis knows.
    fn base_bake_commands(&self) -> Vec<String> {
        bake::ssm_agent_install(self.cloud().map_or("us-east-1", |c| c.region.trim()))
    }
}

fn builder(decl: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(AwsRuntime {
        decl: decl.clone(),
        clients: std::sync::OnceLock::new(),
    })
}

/// The EBS builder's `ssh_interface` values.
const SSH_INTERFACES: [&str; 5] = [
    "public_ip",
    "private_ip",
    "public_dns",
    "private_dns",
    "session_manager",
];

/// `profile`, `vpc_id`, `default_disk_size`, `ssh_username`, `session`,
/// `root_device_name`, `session_instance_profile`: kept only when declared
/// (session defaults to ssm).
fn runtime_extra(f: &mut Fields<'_>) -> Map {
    let mut m = Map::default();
    read_strings(
        f,
        &mut m,
        &[
            "profile",
            "vpc_id",
            "ssh_username",
            "root_device_name",
            "session_instance_profile",
        ],
    );
    read_disk_size(f, &mut m, 1, "");
    read_bool(f, &mut m, "associate_public_ip_address");
    if let Some(interface) = f.opt_str("ssh_interface") {
        if !SSH_INTERFACES.contains(&interface.as_str()) {
            f.error_at(
                "ssh_interface",
                format!(
                    "ssh_interface '{interface}' is not one Packer's EBS builder knows -- write one of {}",
                    SSH_INTERFACES.join(", ")
                ),
            );
        }
        m.insert("ssh_interface".into(), Value::str(interface));
    }
    read_string_list(f, &mut m, "temporary_security_group_source_cidrs");
    let session = f.str_or("session", "ssm");
    if session != "ssm" {
        f.error_at(
            "session",
            format!("runtime aws knows the session mechanism ssm only (not '{session}') -- remove session or write ssm"),
        );
    }
    m.insert("session".into(), Value::str(session));
    m
}

impl Plugin for AwsPlugin {
    fn name(&self) -> &'static str {
        "aws"
    }

    fn models(&self) -> Vec<ModelSpec> {
        vec![ModelSpec {
            read_extra: runtime_extra,
            ..ModelSpec::plain(MODEL, Vct::CloudBuilderModel, BaseModelKind::Cloud, builder)
        }]
    }

    fn sessions(&self, runtimes: &[RawRuntime], env: &SessionEnv) -> Vec<Session> {
        sessions::sessions(runtimes, env)
    }

    /// STS GetCallerIdentity with the runtime's profile and region (else
    /// AWS_REGION, else us-east-1: STS answers in every region).
    fn caller_identity(
        &self,
        runtime: &RawRuntime,
        env: &SessionEnv,
    ) -> Option<Result<String, String>> {
        let region = runtime
            .region
            .as_deref()
            .or_else(|| env.var("AWS_REGION"))
            .unwrap_or("us-east-1");
        Some(
            sdk::Clients::at(region, runtime.profile.as_deref()).and_then(|c| {
                let who = c
                    .block_on(c.sts.get_caller_identity().send())
                    .map_err(|e| format!("STS GetCallerIdentity failed: {}", sdk::said(e)))?;
                Ok(format!(
                    "account {} as {}",
                    who.account().unwrap_or("?"),
                    who.arn().unwrap_or("?")
                ))
            }),
        )
    }
}

#[cfg(test)]
mod tests;
