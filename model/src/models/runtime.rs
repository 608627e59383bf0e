//! Runtime builders (cfg/runtime-builders.yml, key `runtime_builders`):
//! RuntimeBuilderModel, CloudBuilderModel, ContainerBuilderModel and the
//! networking sub-models.

use crate::Map;
use serde::Serialize;

use crate::diag::Diagnostic;
use crate::fields::Fields;
use crate::models::common::{BuilderModel, opt_str_list};

/// BuilderModel plus the fields every runtime shares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeBuilderModel {
    #[serde(flatten)]
    pub builder: BuilderModel,
    pub default_machine_type: String,
    /// fk IMAGE_BUILDER_MODEL.
    pub default_image_builder: String,
    pub default_owners: Option<Vec<String>>,
    /// Declared object; each plugin narrows it.
    pub credentials: Map,
    pub default_config_username: Option<String>,
    pub ephemeral: bool,
    pub retention_keep: Option<i64>,
    pub on_failure: Option<String>,
    pub teardown_after: Option<String>,
}

impl RuntimeBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let builder = BuilderModel::read(f);
        let default_machine_type = match f.opt_str("default_machine_type") {
            Some(s) if !s.trim().is_empty() => s,
            other => {
                let msg = format!(
                    "Runtime builder {} must have a default machine type specified.",
                    builder.name()
                );
                if other.is_some() {
                    f.error_at("default_machine_type", msg);
                } else {
                    f.error(Diagnostic::error(msg).at(f.origin().clone()));
                }
                other.unwrap_or_default()
            }
        };
        RuntimeBuilderModel {
            default_machine_type,
            default_image_builder: f.str_or("default_image_builder", "default"),
            default_owners: opt_str_list(f, "default_owners"),
            credentials: f.any_map("credentials"),
            default_config_username: f.opt_str("default_config_username"),
            ephemeral: f.bool_or("ephemeral", false),
            retention_keep: f.opt_int("retention_keep"),
            on_failure: f.opt_str("on_failure"),
            teardown_after: f.opt_str("teardown_after"),
            builder,
        }
    }

    pub fn name(&self) -> &str {
        self.builder.name()
    }
}

/// A cloud runtime: `region` and `networking` required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CloudBuilderModel {
    #[serde(flatten)]
    pub runtime: RuntimeBuilderModel,
    pub region: String,
    pub networking: RuntimeNetworkingModel,
}

impl CloudBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let runtime = RuntimeBuilderModel::read(f);
        let region = f.req_str("region");
        let owner = format!("{} networking", f.owner());
        let networking = match f.sub_map("networking") {
            Some((m, origin)) => f.nested(m, origin, owner, RuntimeNetworkingModel::read),
            None => {
                if f.raw("networking").is_none() {
                    let msg = format!("{}: field 'networking' is required", f.owner());
                    f.error(Diagnostic::error(msg).at(f.origin().clone()));
                }
                RuntimeNetworkingModel::empty()
            }
        };
        CloudBuilderModel {
            runtime,
            region,
            networking,
        }
    }
}

/// A container runtime: optional `networking: {network_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerBuilderModel {
    #[serde(flatten)]
    pub runtime: RuntimeBuilderModel,
    pub networking: Option<ContainerNetworkingModel>,
}

impl ContainerBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let runtime = RuntimeBuilderModel::read(f);
        let owner = format!("{} networking", f.owner());
        let networking = f
            .sub_map("networking")
            .map(|(m, origin)| f.nested(m, origin, owner, ContainerNetworkingModel::read));
        ContainerBuilderModel {
            runtime,
            networking,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerNetworkingModel {
    pub network_id: String,
}

impl ContainerNetworkingModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        ContainerNetworkingModel {
            network_id: f.str_or("network_id", "local"),
        }
    }
}

/// A cloud runtime's `networking:`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeNetworkingModel {
    /// Label; the network when not declared.
    pub name: String,
    pub network: String,
    pub subnets: Vec<RuntimeSubnetModel>,
    pub availability_zones: Vec<RuntimeAvailabilityZoneModel>,
}

impl RuntimeNetworkingModel {
    fn empty() -> Self {
        RuntimeNetworkingModel {
            name: "default".into(),
            network: "default".into(),
            subnets: Vec::new(),
            availability_zones: Vec::new(),
        }
    }

    /// Reads and checks: a network, at least one subnet, exactly one default
    /// subnet.
    pub fn read(f: &mut Fields<'_>) -> Self {
        let network = f.str_or("network", "default");
        if network.trim().is_empty() {
            f.error_at(
                "network",
                "RuntimeNetworkingModel must have a network specified.",
            );
        }
        let name = f.opt_str("name").unwrap_or_else(|| network.clone());
        let mut subnets = Vec::new();
        for (i, (m, origin)) in f.map_list("subnets").into_iter().enumerate() {
            let owner = format!("{} subnets[{i}]", f.owner());
            subnets.push(f.nested(m, origin, owner, RuntimeSubnetModel::read));
        }
        let mut availability_zones = Vec::new();
        for (i, (m, origin)) in f.map_list("availability_zones").into_iter().enumerate() {
            let owner = format!("{} availability_zones[{i}]", f.owner());
            availability_zones.push(f.nested(m, origin, owner, RuntimeAvailabilityZoneModel::read));
        }
        let at_subnets = if f.has("subnets") {
            f.origin_of("subnets")
        } else {
            f.origin().clone()
        };
        if subnets.is_empty() {
            let msg = format!("Network {network} has no subnets defined.");
            f.error(Diagnostic::error(msg).at(at_subnets));
        } else {
            match subnets.iter().filter(|s| s.is_default).count() {
                1 => {}
                0 => {
                    let msg = format!("No default subnet defined for network {network}.");
                    f.error(Diagnostic::error(msg).at(at_subnets));
                }
                _ => {
                    let msg = format!("Multiple default subnets defined for network {network}.");
                    f.error(Diagnostic::error(msg).at(at_subnets));
                }
            }
        }
        RuntimeNetworkingModel {
            name,
            network,
            subnets,
            availability_zones,
        }
    }

    /// The name of the availability zone marked default, if any.
    pub fn default_availability_zone(&self) -> Option<&str> {
        self.availability_zones
            .iter()
            .find(|z| z.is_default)
            .map(|z| z.name.as_str())
    }

    /// The subnet marked default, if any.
    pub fn default_subnet(&self) -> Option<&RuntimeSubnetModel> {
        self.subnets.iter().find(|s| s.is_default)
    }

    /// The zone a machine lands in when it names none: the default
    /// availability zone, else the default subnet's.
    pub fn default_zone(&self) -> Option<String> {
        self.default_availability_zone()
            .map(str::to_string)
            .or_else(|| {
                self.default_subnet()
                    .and_then(|s| s.availability_zone.clone())
            })
    }
}

/// One `networking.subnets[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeSubnetModel {
    /// The subnet id when not declared.
    pub name: String,
    pub subnet_id: String,
    pub is_default: bool,
    pub public: bool,
    pub cidr: Option<String>,
    pub availability_zone: Option<String>,
    pub config: Map,
}

impl RuntimeSubnetModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let subnet_id = f.req_str("subnet_id");
        RuntimeSubnetModel {
            name: f.opt_str("name").unwrap_or_else(|| subnet_id.clone()),
            is_default: f.bool_or("is_default", false),
            public: f.bool_or("public", false),
            cidr: f.opt_str("cidr"),
            availability_zone: f.opt_str("availability_zone"),
            config: f.any_map("config"),
            subnet_id,
        }
    }
}

/// One `networking.availability_zones[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeAvailabilityZoneModel {
    pub name: String,
    pub is_default: bool,
}

impl RuntimeAvailabilityZoneModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        RuntimeAvailabilityZoneModel {
            name: f.req_str("name"),
            is_default: f.bool_or("is_default", false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;

    fn subnet(id: &str, default: bool) -> crate::value::Value {
        mapv(&[
            ("subnet_id", plain(id)),
            ("is_default", plain(if default { "true" } else { "false" })),
        ])
    }

    #[test]
    fn runtime_defaults_and_missing_machine_type() {
        let m = map(&[("name", plain("AWS")), ("type", plain("aws"))]);
        let (r, diags) = read(&m, RuntimeBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "Runtime builder aws must have a default machine type specified.",
                "things[0]"
            )]
        );
        assert_eq!(r.default_image_builder, "default");
        assert_eq!(r.default_owners, None);
        assert!(!r.ephemeral);
        assert_eq!(r.retention_keep, None);
        assert!(r.credentials.is_empty());
    }

    #[test]
    fn runtime_fields_read() {
        let m = map(&[
            ("name", plain("aws")),
            ("type", plain("aws")),
            ("default_machine_type", plain("t3.small")),
            ("default_owners", strs(&["amazon"])),
            ("retention_keep", plain("3")),
            ("ephemeral", plain("true")),
            ("credentials", mapv(&[("profile_name", plain("dev"))])),
        ]);
        let (r, diags) = read(&m, RuntimeBuilderModel::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(r.default_owners, Some(vec!["amazon".to_string()]));
        assert_eq!(r.retention_keep, Some(3));
        assert!(r.ephemeral);
        assert_eq!(r.credentials.len(), 1);
    }

    fn cloud(networking: Option<crate::value::Value>) -> crate::value::Map {
        let mut m = map(&[
            ("name", plain("aws")),
            ("type", plain("aws")),
            ("default_machine_type", plain("t3.small")),
            ("region", plain("eu-west-1")),
        ]);
        if let Some(n) = networking {
            m.insert("networking".into(), n);
        }
        m
    }

    #[test]
    fn cloud_networking_reads_and_picks_defaults() {
        let n = mapv(&[
            ("network", plain("vpc-1")),
            ("subnets", seq(&[subnet("s-1", false), subnet("s-2", true)])),
            (
                "availability_zones",
                seq(&[mapv(&[("name", plain("a")), ("is_default", plain("true"))])]),
            ),
        ]);
        let (c, diags) = read(&cloud(Some(n)), CloudBuilderModel::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(c.region, "eu-west-1");
        assert_eq!(c.networking.name, "vpc-1");
        assert_eq!(c.networking.subnets[0].name, "s-1");
        assert_eq!(
            c.networking.default_subnet().map(|s| s.subnet_id.as_str()),
            Some("s-2")
        );
        assert_eq!(c.networking.default_availability_zone(), Some("a"));
        assert_eq!(c.networking.default_zone().as_deref(), Some("a"));
        let json = serde_json::to_value(crate::models::BaseBuilder::Cloud(c)).unwrap_or_default();
        assert_eq!(json["type"], "aws");
        assert_eq!(json["default_machine_type"], "t3.small");
        assert_eq!(json["networking"]["subnets"][1]["is_default"], true);
    }

    #[test]
    fn cloud_networking_refusals() {
        let (_, diags) = read(&cloud(None), CloudBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e("Owner 'x': field 'networking' is required", "things[0]")]
        );

        let n = mapv(&[("network", quoted(""))]);
        let (_, diags) = read(&cloud(Some(n)), CloudBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "RuntimeNetworkingModel must have a network specified.",
                    "things[0].networking.network"
                ),
                e("Network  has no subnets defined.", "things[0].networking"),
            ]
        );

        let n = mapv(&[
            ("network", plain("vpc-1")),
            ("subnets", seq(&[subnet("s-1", false)])),
        ]);
        let (_, diags) = read(&cloud(Some(n)), CloudBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "No default subnet defined for network vpc-1.",
                "things[0].networking.subnets"
            )]
        );

        let n = mapv(&[
            ("network", plain("vpc-1")),
            ("subnets", seq(&[subnet("s-1", true), subnet("s-2", true)])),
        ]);
        let (_, diags) = read(&cloud(Some(n)), CloudBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "Multiple default subnets defined for network vpc-1.",
                "things[0].networking.subnets"
            )]
        );
    }

    #[test]
    fn networking_unknown_keys_are_refused_in_place() {
        let n = mapv(&[
            ("network", plain("vpc-1")),
            ("subnets", seq(&[subnet("s-1", true)])),
            ("vpc", plain("x")),
        ]);
        let (_, diags) = read(&cloud(Some(n)), CloudBuilderModel::read);
        let errs = errors(&diags);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].1, "things[0].networking.vpc");
    }

    #[test]
    fn container_networking_defaults_to_local() {
        let m = map(&[
            ("name", plain("docker")),
            ("type", plain("container")),
            ("default_machine_type", plain("small")),
            ("networking", mapv(&[])),
        ]);
        let (c, diags) = read(&m, ContainerBuilderModel::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(
            c.networking.map(|n| n.network_id),
            Some("local".to_string())
        );
    }
}
