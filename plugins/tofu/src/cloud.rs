//! The two clouds, and what a root reads of its runtime: the Cloud base
//! model (`region`, `networking`) and, through the aws and gce runtime
//! plugins' own accessors, the profile (AWS), the project (GCE) and the
//! zone (each cloud's rule).

use csis_model::models::CloudBuilderModel;
use csis_model::{Diagnostic, Vct};
use csis_plugin_api::{BuilderDecl, HookContext, HookResult};

/// The cloud a builder's roots launch on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cloud {
    Aws,
    Gce,
}

impl Cloud {
    /// The storage type (`capability_type`) of its block storage, as the
    /// launch parameters name it.
    pub fn storage_type(self) -> &'static str {
        match self {
            Cloud::Aws => "ebs",
            Cloud::Gce => "pd",
        }
    }

    /// The builder model (`type:`) of this cloud's builders.
    pub fn model(self) -> &'static str {
        match self {
            Cloud::Aws => "tofu-aws",
            Cloud::Gce => "tofu-gce",
        }
    }

    /// The runtime `type:` this cloud's builders expect.
    pub fn runtime_type(self) -> &'static str {
        match self {
            Cloud::Aws => "aws",
            Cloud::Gce => "gce",
        }
    }

    /// The provider's local name, registry source and version constraint.
    pub fn provider(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Cloud::Aws => ("aws", "hashicorp/aws", "~> 5.0"),
            Cloud::Gce => ("google", "hashicorp/google", "~> 6.0"),
        }
    }
}

/// One subnet a root may place machines in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub id: String,
    pub zone: Option<String>,
    pub is_default: bool,
}

/// What a root reads of its builder's runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    pub name: String,
    /// The tree's id, which scopes image lookups and families.
    pub tree: String,
    pub region: String,
    /// AWS: the named profile the provider authenticates with.
    pub profile: Option<String>,
    /// GCE: the project.
    pub project: Option<String>,
    /// AWS: the existing instance profile the runtime names
    /// (`session_instance_profile`); `None`, the root makes one.
    pub instance_profile: Option<String>,
    /// The zone a machine or disk lands in when it names none: GCE's
    /// `zone`, else the default availability zone, else the region's
    /// first (`<region>a` on AWS, `<region>-a` on GCE).
    pub zone: String,
    pub network: String,
    pub subnets: Vec<Subnet>,
    pub default_machine_type: String,
}

impl Runtime {
    /// The subnet of a zone: one declared there, else the default, else
    /// the first.
    pub fn subnet_for(&self, zone: &str) -> Option<&Subnet> {
        self.subnets
            .iter()
            .find(|s| s.zone.as_deref() == Some(zone))
            .or_else(|| self.subnets.iter().find(|s| s.is_default))
            .or_else(|| self.subnets.first())
    }
}

/// The runtime of builder `me`, read through the runtime plugins' own
/// accessors (`csis_plugin_aws`, `csis_plugin_gce`).
pub fn runtime_of(ctx: &dyn HookContext, me: &BuilderDecl, cloud: Cloud) -> HookResult<Runtime> {
    let reference = me.base.runtime().unwrap_or("default");
    let refuse = |msg: String| Err(vec![Diagnostic::error(msg)]);
    let Some(rt) = ctx.builder(Vct::RuntimeBuilderModel, reference) else {
        return refuse(format!(
            "{} builder '{}' (type {}) names runtime '{reference}', which is not declared",
            role_label(me),
            me.name(),
            me.model
        ));
    };
    let c = match cloud_of(me, &rt, cloud) {
        Ok(c) => c,
        Err(problem) => return refuse(problem),
    };
    // The gce runtime requires its project at load.
    let (profile, project, zone) = match cloud {
        Cloud::Aws => (
            csis_plugin_aws::profile(&rt),
            None,
            csis_plugin_aws::zone(&rt),
        ),
        Cloud::Gce => (
            None,
            csis_plugin_gce::project(&rt),
            csis_plugin_gce::zone(&rt),
        ),
    };
    Ok(Runtime {
        name: rt.name().to_string(),
        tree: ctx.tree_id(),
        region: c.region.trim().to_string(),
        profile: profile.map(str::to_string),
        project: project.map(str::to_string),
        instance_profile: match cloud {
            Cloud::Aws => csis_plugin_aws::session_instance_profile(&rt).map(str::to_string),
            Cloud::Gce => None,
        },
        zone: zone.unwrap_or_default(),
        network: c.networking.network.clone(),
        subnets: c
            .networking
            .subnets
            .iter()
            .map(|s| Subnet {
                id: s.subnet_id.clone(),
                zone: s.availability_zone.clone(),
                is_default: s.is_default,
            })
            .collect(),
        default_machine_type: c.runtime.default_machine_type.clone(),
    })
}

/// The Cloud base model of runtime `rt`, or why builder `me` cannot
/// launch on it: it is no cloud runtime, or one of another cloud's type.
/// Asked at load (`Builder::runtime_problem`) and again at generation.
pub fn cloud_of<'a>(
    me: &BuilderDecl,
    rt: &'a BuilderDecl,
    cloud: Cloud,
) -> Result<&'a CloudBuilderModel, String> {
    let Some(c) = rt.cloud() else {
        return Err(format!(
            "{} builder '{}' (type {}) launches on runtime '{}' of type '{}', which has no region or networking -- point its runtime at a runtime of type {}",
            role_label(me),
            me.name(),
            me.model,
            rt.name(),
            rt.model,
            cloud.runtime_type()
        ));
    };
    if rt.model != cloud.runtime_type() {
        return Err(format!(
            "{} builder '{}' (type {}) launches on runtime '{}' of type '{}' -- point its runtime at a runtime of type {}",
            role_label(me),
            me.name(),
            me.model,
            rt.name(),
            rt.model,
            cloud.runtime_type()
        ));
    }
    Ok(c)
}

fn role_label(me: &BuilderDecl) -> &'static str {
    match me.classification {
        Vct::InstanceBuilderModel => "instance",
        Vct::StorageBuilderModel => "storage",
        _ => "state",
    }
}
