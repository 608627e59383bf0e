//! The two clouds, and what a root reads of its runtime: the runtime
//! plugins' contract (a Cloud base model with `region` and `networking`;
//! `profile` on AWS, `project` and `zone` on GCE, among its own fields).

use csis_model::models::BaseBuilder;
use csis_model::{Diagnostic, Value, Vct};
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
    pub region: String,
    /// AWS: the named profile the provider authenticates with.
    pub profile: Option<String>,
    /// GCE: the project.
    pub project: Option<String>,
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

fn extra_str(decl: &BuilderDecl, key: &str) -> Option<String> {
    decl.extra
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The runtime of builder `me`, read through the contract.
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
    let BaseBuilder::Cloud(c) = &rt.base else {
        return refuse(format!(
            "{} builder '{}' (type {}) launches on runtime '{}' of type '{}', which has no region or networking -- point its runtime at a runtime of type {}",
            role_label(me),
            me.name(),
            me.model,
            rt.name(),
            rt.model,
            cloud.runtime_type()
        ));
    };
    let project = extra_str(&rt, "project");
    if cloud == Cloud::Gce && project.is_none() {
        return refuse(format!(
            "{} builder '{}' (type tofu-gce) launches on runtime '{}', which declares no project -- add `project: <GCP project id>` to runtime '{}'",
            role_label(me),
            me.name(),
            rt.name(),
            rt.name()
        ));
    }
    let region = c.region.trim().to_string();
    let default_zone = c
        .networking
        .default_availability_zone()
        .map(str::to_string)
        .or_else(|| {
            c.networking
                .default_subnet()
                .and_then(|s| s.availability_zone.clone())
        });
    let zone = match cloud {
        Cloud::Aws => default_zone.unwrap_or_else(|| format!("{region}a")),
        Cloud::Gce => extra_str(&rt, "zone")
            .or(default_zone)
            .unwrap_or_else(|| format!("{region}-a")),
    };
    Ok(Runtime {
        name: rt.name().to_string(),
        region,
        // `profile`, else `credentials.profile_name`.
        profile: extra_str(&rt, "profile").or_else(|| {
            c.runtime
                .credentials
                .get("profile_name")
                .and_then(Value::as_str)
                .map(str::to_string)
        }),
        project,
        zone,
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

fn role_label(me: &BuilderDecl) -> &'static str {
    match me.classification {
        Vct::InstanceBuilderModel => "instance",
        Vct::StorageBuilderModel => "storage",
        _ => "state",
    }
}

/// A name as GCE accepts it for a resource or a device: lowercase
/// letters, digits and dashes (underscores and other characters become
/// dashes), starting with a letter, at most 63 characters, not ending in
/// a dash (spec: `_gce_device_name`; GCE forbids underscores in device
/// names, and the disk must be mounted under the name it is attached
/// as).
pub fn gce_name(name: &str) -> String {
    let mut out: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.insert_str(0, "csis-");
    }
    out.truncate(63);
    while out.ends_with('-') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gce_names_have_no_underscores_and_start_with_a_letter() {
        assert_eq!(gce_name("gce_data"), "gce-data");
        assert_eq!(gce_name("Data.Disk"), "data-disk");
        assert_eq!(gce_name("9lives"), "csis-9lives");
        assert_eq!(gce_name("x_"), "x");
        assert_eq!(gce_name(&"a".repeat(80)).len(), 63);
    }
}
