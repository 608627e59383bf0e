//! Instances (instances/) and their `storages:` mappings: an instance
//! without an image is warned about and refused, and per-instance groups
//! are refused.

use serde::Serialize;

use super::at_key_or_map;
use crate::diag::Diagnostic;
use crate::fields::Fields;
use crate::models::common::{RootItem, raw_list};
use crate::naming::safe_name;
use crate::value::Value;

/// An instance (instances/, key `instances`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Instance {
    #[serde(flatten)]
    pub root: RootItem,
    /// fk IMAGE_MODEL; required to finalize.
    pub image: Option<String>,
    /// fk RUNTIME_BUILDER_MODEL.
    pub runtime: String,
    /// Deferred storage mappings, structured by the engine.
    pub storages: Vec<Value>,
    pub userdata: String,
    pub image_policy: String,
    pub ephemeral: bool,
    pub on_failure: Option<String>,
    pub teardown_after: Option<String>,
    /// Empty means the runtime's default.
    pub machine_type: String,
    pub availability_zone: Option<String>,
}

impl Instance {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        if f.has("groups") {
            f.skip("groups");
            let msg = format!(
                "Instance '{name}' declares 'groups'; V2 removed per-instance groups (ownership lives on the image). Set 'group:' on the image instead."
            );
            f.error_at("groups", msg);
        }
        let image = f.opt_str("image").filter(|s| !s.trim().is_empty());
        if image.is_none() {
            let at = at_key_or_map(f, "image");
            let warn = format!(
                "Instance '{name}' does not have an image specified; the load refuses it when the configuration finalizes."
            );
            f.error(Diagnostic::warning(warn).at(at.clone()));
            // The spec's warning and error both; the error says what to
            // write.
            let msg = format!("Instance '{name}' cannot be finalized without an image specified.");
            f.error(
                Diagnostic::error(msg)
                    .at(at)
                    .help("name the image it launches: `image: <name>`"),
            );
        }
        Instance {
            image,
            runtime: f.str_or("runtime", "default"),
            storages: raw_list(f, "storages"),
            userdata: f.str_or("userdata", ""),
            image_policy: f.str_or("image_policy", "pinned"),
            ephemeral: f.bool_or("ephemeral", false),
            on_failure: f.opt_str("on_failure"),
            teardown_after: f.opt_str("teardown_after"),
            machine_type: f.str_or("machine_type", ""),
            availability_zone: f.opt_str("availability_zone"),
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// One `storages:` entry of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StorageMapping {
    /// The storage's name (normalized).
    pub name: String,
    /// fk STORAGE_BUILDER_MODEL.
    #[serde(rename = "type")]
    pub type_: String,
    pub mount_point: String,
    pub min_size: i64,
}

impl StorageMapping {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let name = safe_name(&f.req_str("name"));
        if let Some(v) = f.raw("aliases")
            && !v.as_seq().is_some_and(<[Value]>::is_empty)
        {
            let msg = format!("StorageMapping '{name}' has aliases defined; Ignoring aliases.");
            let at = f.origin_of("aliases");
            f.error(Diagnostic::warning(msg).at(at));
        }
        let mount_point = f
            .opt_mount_point("mount_point")
            .unwrap_or_else(|| "/mnt/storage".to_string());
        if mount_point.trim().is_empty() {
            let msg = format!("StorageMapping '{name}' must have a mount_point specified.");
            f.error_at("mount_point", msg);
        }
        let min_size = f.opt_int("min_size").unwrap_or(100);
        if min_size <= 0 {
            let msg = format!(
                "StorageMapping '{name}' must have a positive min_size specified. Got: {min_size}"
            );
            f.error_at("min_size", msg);
        }
        StorageMapping {
            name,
            type_: f.str_or("type", "default"),
            mount_point,
            min_size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;

    #[test]
    fn instance_defaults() {
        let m = map(&[("name", plain("coops")), ("image", plain("web"))]);
        let (i, diags) = read(&m, Instance::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(i.runtime, "default");
        assert_eq!(i.userdata, "");
        assert_eq!(i.image_policy, "pinned");
        assert_eq!(i.machine_type, "");
        assert!(!i.ephemeral);
        assert_eq!(i.root.named.description, None);
    }

    #[test]
    fn instance_without_image_warns_and_refuses_and_groups_refused() {
        let m = map(&[("name", plain("coops")), ("groups", strs(&["g"]))]);
        let (_, diags) = read(&m, Instance::read);
        assert_eq!(
            warnings(&diags),
            vec![e(
                "Instance 'coops' does not have an image specified; the load refuses it when the configuration finalizes.",
                "things[0]"
            )]
        );
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "Instance 'coops' declares 'groups'; V2 removed per-instance groups (ownership lives on the image). Set 'group:' on the image instead.",
                    "things[0].groups"
                ),
                e(
                    "Instance 'coops' cannot be finalized without an image specified.",
                    "things[0]"
                ),
            ]
        );
    }

    #[test]
    fn storage_mapping_defaults_and_refusals() {
        let (s, diags) = read(&map(&[("name", plain("data"))]), StorageMapping::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(s.mount_point, "/mnt/storage");
        assert_eq!(s.min_size, 100);
        assert_eq!(s.type_, "default");

        let m = map(&[
            ("name", plain("data")),
            ("mount_point", quoted("")),
            ("min_size", plain("0")),
            ("aliases", strs(&["d"])),
        ]);
        let (_, diags) = read(&m, StorageMapping::read);
        assert_eq!(
            warnings(&diags),
            vec![e(
                "StorageMapping 'data' has aliases defined; Ignoring aliases.",
                "things[0].aliases"
            )]
        );
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "StorageMapping 'data' must have a mount_point specified.",
                    "things[0].mount_point"
                ),
                e(
                    "StorageMapping 'data' must have a positive min_size specified. Got: 0",
                    "things[0].min_size"
                ),
            ]
        );
    }

    #[test]
    fn a_mount_point_with_a_control_character_is_refused_at_its_value() {
        let m = map(&[
            ("name", plain("data")),
            ("mount_point", quoted("/srv/da\rta")),
        ]);
        let (s, diags) = read(&m, StorageMapping::read);
        assert_eq!(s.mount_point, "/srv/da\rta");
        assert_eq!(
            errors(&diags),
            vec![e(
                "Owner 'x': mount point '/srv/da\\rta' holds a control character (U+000D); write it without control characters",
                "things[0].mount_point"
            )]
        );
    }
}
