//! Images (images/) and base images (synthesized from OS builders): what
//! each requires, their `runtimes:` entries, and an image's
//! `modifications:` entry as far as the core reads it.

use crate::Map;
use std::collections::BTreeMap;

use serde::Serialize;

use super::refuse;
use crate::fields::Fields;
use crate::models::common::{NameTyped, RootItem, opt_str_list, raw_list, read_aliases};
use crate::naming::safe_name;
use crate::value::Value;

/// An image (images/, key `images`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Image {
    #[serde(flatten)]
    pub root: RootItem,
    /// Required: the parent image or base image name.
    pub source_image: Option<String>,
    pub auto_update: Option<bool>,
    /// pinned or follow (validated later).
    pub parent_policy: String,
    /// `{keep: N}`, validated later.
    pub retention: Option<Map>,
    /// `{model: name}`, validated later.
    pub release: Option<Map>,
    pub is_default: bool,
    /// Templated later; `default` until then.
    pub architecture: String,
    /// Templated later; `default` until then.
    pub primary_disk_size: String,
    pub auto_generate_storage: bool,
    pub variables: Map,
    /// Deferred mod items, structured by the engine.
    pub modifications: Vec<Value>,
    pub group: Option<String>,
    pub tests: Map,
    pub default_groups: Vec<String>,
    pub runtimes: Vec<ImageImageBuilderSubconfig>,
}

impl Image {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        let source_image = f.opt_str("source_image").filter(|s| !s.trim().is_empty());
        if source_image.is_none() && !f.misspells("source_image") {
            let msg = format!("Image {name} must have either 'os' or 'source_image' specified.");
            refuse(f, "source_image", msg);
        }
        // Collected, not pushed: a list of one grown by a push keeps room
        // for four, and every image keeps its list (issue 40).
        let runtimes: Vec<_> = f
            .map_list("runtimes")
            .into_iter()
            .enumerate()
            .map(|(i, (m, origin))| {
                let owner = format!("{} runtimes[{i}]", f.owner());
                f.nested(m, origin, owner, ImageImageBuilderSubconfig::read)
            })
            .collect();
        // A `runtimes:` that is not a list was refused as such already.
        let not_a_list = f.raw("runtimes").is_some_and(|v| v.as_seq().is_none());
        if runtimes.is_empty() && !not_a_list {
            let msg = format!(
                "Image {name} must have at least one runtime specified in the 'runtimes' field"
            );
            refuse(f, "runtimes", msg);
        }
        Image {
            source_image,
            auto_update: f.opt_bool("auto_update"),
            parent_policy: f.str_or("parent_policy", "pinned"),
            retention: f.opt_any_map("retention"),
            release: f.opt_any_map("release"),
            is_default: f.bool_or("is_default", false),
            architecture: f.str_or("architecture", "default"),
            primary_disk_size: f.str_or("primary_disk_size", "default"),
            auto_generate_storage: f.bool_or("auto_generate_storage", false),
            variables: f.any_map("variables"),
            modifications: raw_list(f, "modifications"),
            group: f.opt_str("group"),
            tests: f.any_map("tests"),
            default_groups: f.str_list("default_groups"),
            runtimes,
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// One `runtimes:` entry of an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageImageBuilderSubconfig {
    /// fk IMAGE_BUILDER_MODEL; `default` is the default image builder.
    pub image_builder: String,
    /// The image builder when not declared.
    pub name: String,
    /// Templated later when not declared.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub description: Option<String>,
    pub aliases: Vec<String>,
    pub ssh_username: String,
    pub image_identifier: Option<String>,
    /// Templated later (the runtime's default machine type).
    pub machine_type: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub owners: Vec<String>,
}

impl ImageImageBuilderSubconfig {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let image_builder = f.str_or("image_builder", "default");
        let name = safe_name(&f.opt_str("name").unwrap_or_else(|| image_builder.clone()));
        let aliases = read_aliases(f, &name);
        let owners = if f.raw("owners").is_some() {
            f.str_list("owners")
        } else {
            vec!["self".to_string()]
        };
        ImageImageBuilderSubconfig {
            image_builder,
            name,
            type_: f.opt_str("type"),
            description: f.opt_str("description"),
            aliases,
            ssh_username: f.str_or("ssh_username", "default"),
            image_identifier: f.opt_str("image_identifier"),
            machine_type: f.opt_str("machine_type"),
            tags: f.str_map("tags"),
            owners,
        }
    }
}

/// A base image, synthesized from an OS builder (key `base_images`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseImage {
    #[serde(flatten)]
    pub root: RootItem,
    /// fk OS_BUILDER_MODEL.
    pub os: Option<String>,
    pub source_image: Option<String>,
    pub auto_update: Option<bool>,
    pub is_default: bool,
    /// Templated later; `default` until then.
    pub primary_disk_size: String,
    pub variables: Map,
    pub runtimes: Vec<BaseImageImageBuilderSubconfig>,
    pub identity_types: Vec<String>,
    pub storage_types: Vec<String>,
    pub admin_user: String,
    pub admin_public_keys: Option<Vec<String>>,
    pub tests: Map,
}

impl BaseImage {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        let os = f.opt_str("os").filter(|s| !s.trim().is_empty());
        let source_image = f.opt_str("source_image").filter(|s| !s.trim().is_empty());
        if os.is_some() == source_image.is_some() {
            let msg = format!("Image {name} must have either 'os' or 'source_image' specified.");
            let key = if os.is_some() { "source_image" } else { "os" };
            refuse(f, key, msg);
        }
        let mut runtimes = Vec::new();
        for (i, (m, origin)) in f.map_list("runtimes").into_iter().enumerate() {
            let owner = format!("{} runtimes[{i}]", f.owner());
            runtimes.push(f.nested(m, origin, owner, BaseImageImageBuilderSubconfig::read));
        }
        // A `runtimes:` that is not a list was refused as such already.
        let not_a_list = f.raw("runtimes").is_some_and(|v| v.as_seq().is_none());
        if runtimes.is_empty() && !not_a_list {
            let msg = format!(
                "Image {name} must have at least one runtime specified in the 'runtimes' field"
            );
            refuse(f, "runtimes", msg);
        }
        BaseImage {
            os,
            source_image,
            auto_update: f.opt_bool("auto_update"),
            is_default: f.bool_or("is_default", false),
            primary_disk_size: f.str_or("primary_disk_size", "default"),
            variables: f.any_map("variables"),
            runtimes,
            identity_types: f.str_list("identity_types"),
            storage_types: f.str_list("storage_types"),
            admin_user: f.login_or("admin_user", "csisadmin"),
            admin_public_keys: opt_str_list(f, "admin_public_keys"),
            tests: f.any_map("tests"),
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// One `runtimes:` entry of a base image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseImageImageBuilderSubconfig {
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub description: Option<String>,
    /// fk RUNTIME_BUILDER_MODEL.
    pub runtime: String,
    /// fk IMAGE_BUILDER_MODEL.
    pub image_builder: String,
    pub ssh_username: String,
    pub tests: Option<Map>,
    pub auto_update: Option<bool>,
    pub image_identifier: Option<String>,
    /// Templated later.
    pub machine_type: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub owners: Vec<String>,
}

impl BaseImageImageBuilderSubconfig {
    pub fn read(f: &mut Fields<'_>) -> Self {
        BaseImageImageBuilderSubconfig {
            name: f.opt_str("name").map(|n| safe_name(&n)),
            type_: f.opt_str("type"),
            description: f.opt_str("description"),
            runtime: f.str_or("runtime", "default"),
            image_builder: f.str_or("image_builder", "default"),
            ssh_username: f.str_or("ssh_username", "default"),
            tests: f.opt_any_map("tests"),
            auto_update: f.opt_bool("auto_update"),
            image_identifier: f.opt_str("image_identifier"),
            machine_type: f.opt_str("machine_type"),
            tags: f.str_map("tags"),
            owners: f.str_list("owners"),
        }
    }
}

/// One `modifications:` entry of an image. A plugin item reads its own
/// fields from the same reader after this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModItemModel {
    /// `type` is fk MOD_BUILDER_MODEL, default `default`.
    #[serde(flatten)]
    pub named: NameTyped,
    pub tags: BTreeMap<String, String>,
    pub config: Map,
}

impl ModItemModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let named = NameTyped::read_with_type(f, "default");
        ModItemModel {
            named,
            tags: f.str_map("tags"),
            config: f.any_map("config"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;
    use crate::value::Map;

    fn with(base: &[(&str, Value)], extra: &[(&str, Value)]) -> Map {
        let mut m = map(base);
        for (k, v) in extra {
            m.insert(k.to_string(), v.clone());
        }
        m
    }

    fn image(extra: &[(&str, Value)]) -> Map {
        with(
            &[
                ("name", plain("web")),
                ("source_image", plain("rhel9")),
                (
                    "runtimes",
                    seq(&[mapv(&[("image_builder", plain("packer"))])]),
                ),
            ],
            extra,
        )
    }

    #[test]
    fn image_defaults() {
        let (i, diags) = read(&image(&[]), Image::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(i.root.named.type_, "default");
        assert_eq!(i.parent_policy, "pinned");
        assert_eq!(i.architecture, "default");
        assert_eq!(i.primary_disk_size, "default");
        assert_eq!(i.retention, None);
        assert_eq!(i.release, None);
        assert!(i.modifications.is_empty());
        let r = &i.runtimes[0];
        assert_eq!(r.name, "packer");
        assert_eq!(r.ssh_username, "default");
        assert_eq!(r.owners, vec!["self".to_string()]);
        assert_eq!(r.type_, None);
    }

    #[test]
    fn image_keeps_deferred_fields_raw() {
        let mods = seq(&[mapv(&[
            ("type", plain("ansible")),
            ("playbooks", strs(&["a.yml"])),
        ])]);
        let (i, diags) = read(
            &image(&[
                ("modifications", mods.clone()),
                ("retention", mapv(&[("keep", plain("3"))])),
                ("primary_disk_size", plain("50")),
                ("parent_policy", plain("sometimes")),
            ]),
            Image::read,
        );
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(Value::Seq(i.modifications), mods);
        assert_eq!(i.retention.map(|r| r.len()), Some(1));
        assert_eq!(i.primary_disk_size, "50");
        assert_eq!(i.parent_policy, "sometimes");
    }

    #[test]
    fn image_refusals() {
        let mut m = image(&[("runtimes", seq(&[]))]);
        m.shift_remove("source_image");
        let (_, diags) = read(&m, Image::read);
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "Image web must have either 'os' or 'source_image' specified.",
                    "things[0]"
                ),
                e(
                    "Image web must have at least one runtime specified in the 'runtimes' field",
                    "things[0].runtimes"
                ),
            ]
        );
        let (_, diags) = read(&image(&[("os", plain("rhel9"))]), Image::read);
        assert_eq!(errors(&diags)[0].1, "things[0].os");
    }

    #[test]
    fn base_image_needs_exactly_one_of_os_and_source_image() {
        let rt = seq(&[mapv(&[
            ("runtime", plain("aws")),
            ("image_builder", plain("packer")),
        ])]);
        let (b, diags) = read(
            &map(&[
                ("name", plain("rhel9")),
                ("os", plain("rhel9")),
                ("runtimes", rt.clone()),
            ]),
            BaseImage::read,
        );
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(b.admin_user, "csisadmin");
        assert_eq!(b.runtimes[0].runtime, "aws");
        let (_, diags) = read(
            &map(&[
                ("name", plain("rhel9")),
                ("os", plain("rhel9")),
                ("source_image", plain("x")),
                ("runtimes", rt),
            ]),
            BaseImage::read,
        );
        assert_eq!(
            errors(&diags),
            vec![e(
                "Image rhel9 must have either 'os' or 'source_image' specified.",
                "things[0].source_image"
            )]
        );
    }

    #[test]
    fn mod_item_reads_its_base_and_leaves_the_rest_to_the_plugin() {
        let m = map(&[("name", plain("Harden")), ("playbooks", strs(&["a.yml"]))]);
        let (x, diags) = read(&m, |f| {
            let base = ModItemModel::read(f);
            let playbooks = f.str_list("playbooks");
            (base, playbooks)
        });
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(x.0.named.name, "harden");
        assert_eq!(x.0.named.type_, "default");
        assert_eq!(x.1, vec!["a.yml".to_string()]);
    }
}
