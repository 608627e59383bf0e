//! The `gce` plugin: runtime `gce`, Compute Engine in one project and
//! region, as the `packer` image builder bakes on it (Packer's
//! `googlecompute` source) and the tofu builders launch on it.
//!
//! Declared under `runtime_builders:` with the cloud base model (`region`;
//! `networking.network` is the VPC network, `subnets[].subnet_id` the
//! subnetwork name) and its own fields: `project` (required), `zone` (else
//! the default availability zone, else `<region>-a`), `default_disk_size`
//! (GiB; the bake disk of every image on this runtime and part of their
//! fingerprints), `ssh_username` (the bake user), `session` (`iap`),
//! `use_iap` (Packer reaches the bake instance through IAP TCP
//! forwarding), `bake_network_tags` (the network tags a firewall rule
//! admitting SSH to bake instances targets; `csis-bake`).
//!
//! Labels follow Compute Engine's rules ("Requirements for labels",
//! <https://cloud.google.com/compute/docs/labeling-resources#requirements>):
//! keys and values have at most 63 characters of lowercase letters,
//! digits, underscores and dashes (international characters allowed); a
//! key starts with a lowercase letter and has at least one character.

use csis_hcl::{Block, Expr};
use csis_model::models::{BaseModelKind, CloudBuilderModel};
use csis_model::{Diagnostic, Fields, ItemKind, Map, Value, Vct};
use csis_plugin_api::runtime_fields::{read_bool, read_disk_size, read_string_list, read_strings};
use csis_plugin_api::{
    Builder, BuilderDecl, HookResult, ModelSpec, PackerBake, PackerParent, PackerPlugin,
    PackerValue, Plugin,
};
use std::sync::Arc;

mod machine;
mod sessions;

pub struct GcePlugin;

/// The model name `type:` selects.
pub const MODEL: &str = "gce";

/// The bake user when the tree declares none. Compute Engine images have
/// no fixed login: the guest environment creates the account an SSH key in
/// the instance metadata names, and the googlecompute builder puts its
/// temporary key there for `ssh_username` (its documentation's examples
/// use `packer`). One name, whatever the family.
pub const DEFAULT_BAKE_USER: &str = "packer";

/// The Packer local that turns the run id into label and image-name
/// characters (`2026_12_02T15_53_24` -> `2026-12-02t15-53-24`).
pub const RUN_LOCAL: &str = "csis_run_label";

struct GceRuntime {
    decl: Arc<BuilderDecl>,
}

fn label_char(c: char) -> bool {
    c.is_ascii_lowercase()
        || c.is_ascii_digit()
        || c == '_'
        || c == '-'
        || (!c.is_ascii() && !c.is_uppercase())
}

/// Why `key` cannot be a Compute Engine label key.
pub fn label_key_problem(key: &str) -> Option<String> {
    let n = key.chars().count();
    if n == 0 || n > 63 {
        return Some(format!(
            "a GCE label key has 1 to 63 characters ('{key}' has {n})"
        ));
    }
    let first = key.chars().next()?;
    if !(first.is_ascii_lowercase() || (!first.is_ascii() && first.is_lowercase())) {
        return Some("a label key must start with a lowercase letter".to_string());
    }
    key.chars().find(|c| !label_char(*c)).map(|c| {
        format!(
            "a GCE label key has lowercase letters, digits, underscores and dashes only ('{c}' is not one)"
        )
    })
}

/// A value as a label takes it: lowercased, every other character an
/// underscore (so `unix,posix` is `unix_posix` and `series:web` is
/// `series_web`), at most 63 characters.
pub fn label_value(value: &str) -> String {
    value
        .to_lowercase()
        .chars()
        .map(|c| if label_char(c) { c } else { '_' })
        .take(63)
        .collect()
}

/// A key as a label takes it: [`label_value`], and a leading character that
/// is not a lowercase letter gets a `k` before it. Declared keys are
/// refused at validate by [`label_key_problem`]; this only keeps csis's own
/// keys safe.
pub fn label_key(key: &str) -> String {
    let v = label_value(key);
    if v.starts_with(|c: char| c.is_lowercase()) {
        v
    } else {
        label_value(&format!("k{v}"))
    }
}

/// A name as Compute Engine takes it for a resource or a device (image
/// names and families, instances, disks, device names:
/// `[a-z]([-a-z0-9]*[a-z0-9])?`): lowercase, every other character a dash
/// (GCE forbids underscores in device names, and a disk is mounted under
/// the name it is attached as), `csis-` before a name that does not start
/// with a letter, at most `max` characters, no dash at the end. The one
/// rule the packer bakes and the tofu-gce roots name things by, so an
/// instance finds its series' image family.
pub fn resource_name(name: &str, max: usize) -> String {
    let mut s: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        s.insert_str(0, "csis-");
    }
    s.truncate(max);
    while s.ends_with('-') {
        s.pop();
    }
    s
}

/// Whether `s` has the shape of a Compute Engine name: a lowercase letter
/// first, then lowercase letters, digits and dashes, 63 characters at
/// most.
fn is_name_shaped(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// [`resource_name`] at Compute Engine's longest, 63 characters.
pub fn name(name: &str) -> String {
    resource_name(name, 63)
}

/// The image family a series' builds belong to in a tree: the newest
/// build of a series is the family's newest image. The tree's id comes
/// first (at most [`FAMILY_TREE_MAX`] characters), so two trees in one
/// project never share a family; the series part has the rest of the 63.
pub fn image_family(tree: &str, series: &str) -> String {
    format!(
        "{}-{}",
        resource_name(tree, FAMILY_TREE_MAX),
        resource_name(series, 62 - FAMILY_TREE_MAX)
    )
}

/// The characters of an image family the tree's id gives.
pub const FAMILY_TREE_MAX: usize = 20;

/// The characters of a bake's image name its series gives: the rest of
/// the 63 is `-` and the run label (19 characters).
pub const IMAGE_NAME_SERIES_MAX: usize = 40;

/// The Compute Engine names csis derives from item `name` of `kind`, each
/// with what it names: an image's family and the series part of its image
/// names, an instance's name, a storage's disk name. What validation
/// compares, so two declarations that [`resource_name`] maps to one name
/// are refused before a bake or an apply makes one overwrite the other.
pub fn derived_names(kind: ItemKind, item: &str) -> Vec<(&'static str, String)> {
    if kind == ItemKind::IMAGES {
        vec![
            (
                "GCE image family",
                format!("<tree>-{}", resource_name(item, 62 - FAMILY_TREE_MAX)),
            ),
            (
                "GCE image name",
                format!("{}-<run>", resource_name(item, IMAGE_NAME_SERIES_MAX)),
            ),
        ]
    } else if kind == ItemKind::INSTANCES {
        vec![("GCE instance name", name(item))]
    } else if kind == ItemKind::STORAGES {
        vec![("GCE disk name", name(item))]
    } else {
        Vec::new()
    }
}

/// `project` of a gce runtime.
pub fn project(runtime: &BuilderDecl) -> Option<&str> {
    runtime.extra_str("project")
}

/// The zone a gce runtime's bakes and machines land in when they name
/// none: `zone`, else the default availability zone, else the default
/// subnet's, else `<region>-a`.
pub fn zone(runtime: &BuilderDecl) -> Option<String> {
    if let Some(z) = runtime.extra_str("zone") {
        return Some(z.to_string());
    }
    let cloud = runtime.cloud()?;
    Some(
        cloud
            .networking
            .default_zone()
            .unwrap_or_else(|| format!("{}-a", cloud.region.trim())),
    )
}

impl GceRuntime {
    fn cloud(&self) -> Option<&CloudBuilderModel> {
        self.decl.cloud()
    }

    fn project(&self) -> &str {
        project(&self.decl).unwrap_or_default()
    }

    /// The zone bakes run in ([`zone`]).
    fn zone(&self) -> String {
        zone(&self.decl).unwrap_or_default()
    }

    /// The `googlecompute` source of one bake. Arguments as the Google
    /// Cloud Platform plugin's builder documents them
    /// (<https://developer.hashicorp.com/packer/integrations/hashicorp/googlecompute/latest/components/builder/googlecompute>).
    fn source(&self, bake: &PackerBake) -> HookResult<Block> {
        let me = self.decl.name();
        let Some(cloud) = self.cloud() else {
            return Err(vec![Diagnostic::error(format!(
                "runtime '{me}' is not a cloud runtime"
            ))]);
        };
        let mut b = Block::new("source", ["googlecompute", bake.source_name.as_str()])
            .attr("project_id", self.project())
            .attr("zone", self.zone())
            .attr("machine_type", bake.machine_type.as_str());
        match &bake.parent {
            PackerParent::Vendor {
                image_id,
                query,
                owners,
            } => {
                let unknown: Vec<&str> = query
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !matches!(*k, "family" | "name" | "project"))
                    .collect();
                if !unknown.is_empty() {
                    return Err(vec![Diagnostic::error(format!(
                        "image '{}' on runtime '{me}': a GCE vendor image query takes family, name and project (not {})",
                        bake.series,
                        unknown.join(", ")
                    ))]);
                }
                let mut projects: Vec<String> = query.get("project").into_iter().cloned().collect();
                projects.extend(owners.iter().cloned());
                projects.dedup();
                match (
                    image_id
                        .as_deref()
                        .or(query.get("name").map(String::as_str)),
                    query.get("family"),
                ) {
                    (Some(image), _) => b = b.attr("source_image", image),
                    (None, Some(family)) => b = b.attr("source_image_family", family.as_str()),
                    (None, None) => {
                        return Err(vec![Diagnostic::error(format!(
                            "image '{}' on runtime '{me}': the OS builder entry names no vendor image -- set image_id (an image name) or query.family with owners (the image project, such as debian-cloud)",
                            bake.series
                        ))]);
                    }
                }
                if !projects.is_empty() {
                    b = b.attr(
                        "source_image_project_id",
                        Expr::strs(projects.iter().map(String::as_str)),
                    );
                }
            }
            PackerParent::Build(image) => {
                b = b
                    .attr("source_image", image.as_str())
                    .attr("source_image_project_id", Expr::strs([self.project()]));
            }
            PackerParent::Series(parent) => {
                b = b
                    .attr("source_image_family", image_family(&bake.tree, parent))
                    .attr("source_image_project_id", Expr::strs([self.project()]));
            }
        }
        // 63 characters: the series part leaves room for `-` and the run
        // label ([`IMAGE_NAME_SERIES_MAX`]).
        b = b
            .attr(
                "image_name",
                Expr::template(format!(
                    "{}-${{local.{RUN_LOCAL}}}",
                    resource_name(&bake.series, IMAGE_NAME_SERIES_MAX)
                )),
            )
            .attr("image_family", image_family(&bake.tree, &bake.series));
        if let Some(size) = bake.disk_size {
            b = b.attr("disk_size", size);
        }
        b = b.attr("network", cloud.networking.network.as_str());
        if let Some(subnet) = cloud.networking.default_subnet() {
            b = b.attr("subnetwork", subnet.subnet_id.as_str());
        }
        // Only the default network lets SSH in from anywhere
        // (default-allow-ssh); on any other, a firewall rule must admit
        // port 22 from the Packer host (or from IAP's range with
        // `use_iap`), and these network tags are what it targets.
        b = b.attr("tags", Expr::strs(bake_network_tags(&self.decl)));
        if let Some(iap) = self.decl.extra_str("use_iap") {
            b = b.attr("use_iap", iap == "true");
        }
        let mut labels: Vec<(String, Expr)> = bake
            .tags
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    PackerValue::Literal(s) => Expr::str(label_value(s)),
                    PackerValue::Run => Expr::raw(format!("local.{RUN_LOCAL}")),
                };
                (label_key(k), value)
            })
            .collect();
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        labels.dedup_by(|a, b| a.0 == b.0);
        Ok(b.attr("ssh_username", bake.ssh_username.as_str())
            .attr("image_labels", Expr::Object(labels)))
    }
}

impl Builder for GceRuntime {
    fn default_bake_user(&self, _family: &str) -> Option<String> {
        Some(
            self.decl
                .extra_str("ssh_username")
                .unwrap_or(DEFAULT_BAKE_USER)
                .to_string(),
        )
    }

    /// Every image of a chain bakes as its chain root's user: the account
    /// the guest environment created at the root's bake (home directory,
    /// keys) is in every image baked from it.
    fn one_bake_user_per_chain(&self) -> bool {
        true
    }

    fn label_key_problem(&self, key: &str) -> Option<String> {
        label_key_problem(key)
    }

    fn derived_names(&self, kind: ItemKind, item: &str) -> Vec<(&'static str, String)> {
        derived_names(kind, item)
    }

    /// Compute Engine names live in a project: two runtimes on one
    /// project share them.
    fn name_scope(&self) -> Option<String> {
        Some(format!("GCE project '{}'", self.project()))
    }

    /// `iap` (the default): csis reaches instances through Identity-Aware
    /// Proxy TCP forwarding, with no external address and access governed
    /// by IAM -- Compute Engine's counterpart of Session Manager.
    fn session_mechanism(&self) -> Option<&str> {
        Some(self.decl.extra_str("session").unwrap_or("iap"))
    }

    /// Not asked yet: validate notes the pinned image as unchecked rather
    /// than guess.
    fn vendor_image_known(
        &self,
        _image: &csis_plugin_api::VendorImage<'_>,
    ) -> Result<Option<bool>, String> {
        Err("this runtime cannot look vendor images up yet".into())
    }

    /// The machine is checked through gcloud, its commands through an IAP
    /// tunnel (`machine.rs`), in the instance's zone, else the runtime's.
    fn verify_instance(
        &self,
        ctx: &dyn csis_plugin_api::HookContext,
        _root: &std::path::Path,
        req: &csis_plugin_api::VerifyRequest,
    ) -> Result<csis_plugin_api::Verdict, String> {
        let zone = ctx
            .item(csis_model::ItemKind::INSTANCES, &req.instance)
            .and_then(|v| match v.item.as_ref() {
                csis_model::models::Item::Instance(i) => i.availability_zone.clone(),
                _ => None,
            })
            .unwrap_or_else(|| self.zone());
        let mut machine = machine::GceMachine::new(self.project(), &zone, &name(&req.instance));
        csis_plugin_api::machine_verify::verify(&mut machine, req)
    }

    fn packer_plugin(&self) -> Option<PackerPlugin> {
        Some(PackerPlugin {
            name: "googlecompute",
            source: "github.com/hashicorp/googlecompute",
            version: ">= 1.1, < 2.0.0",
        })
    }

    fn packer_source(&self, bake: &PackerBake) -> HookResult<Option<Block>> {
        self.source(bake).map(Some)
    }

    /// The googlecompute artifact id is the image name.
    fn build_id_from_artifact(&self, artifact_id: &str) -> Option<String> {
        let id = artifact_id.trim();
        is_name_shaped(id).then(|| id.to_string())
    }

    /// cloud-init, when the image has it, forgets this machine so an
    /// instance launched from the image runs its user-data afresh.
    fn bake_finalize_commands(&self) -> Vec<String> {
        vec![csis_plugin_api::cloud_config::CLOUD_INIT_CLEAN.to_string()]
    }

    /// Compute Engine hands `user-data` to the machine as an instance
    /// metadata attribute, which cloud-init's GCE datasource reads; but
    /// Debian's and RHEL's GCE images ship the guest agent, not cloud-init
    /// (Debian's cloud image build does not list it for GCE), and the
    /// agent runs only `startup-script`. So every base
    /// bake installs cloud-init and points it at the GCE datasource alone;
    /// Ubuntu's images already have it, and keep their own settings.
    fn base_bake_commands(&self) -> Vec<String> {
        [
            "# cloud-init (reads the instance's user-data), unless the vendor image ships it",
            "if ! command -v cloud-init >/dev/null 2>&1; then",
            "  if command -v apt-get >/dev/null 2>&1; then",
            "    apt-get update",
            "    DEBIAN_FRONTEND=noninteractive apt-get install -y cloud-init",
            "  elif command -v dnf >/dev/null 2>&1; then",
            "    dnf install -y cloud-init",
            "  else",
            "    yum install -y cloud-init",
            "  fi",
            "  install -d /etc/cloud/cloud.cfg.d",
            "  printf '%s\\n' 'datasource_list: [ GCE, None ]' > /etc/cloud/cloud.cfg.d/90-csis-datasource.cfg",
            "  systemctl enable cloud-init-local.service cloud-init.service cloud-config.service cloud-final.service",
            "fi",
        ]
        .iter()
        .map(|l| l.to_string())
        .collect()
    }
}

fn builder(decl: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(GceRuntime { decl: decl.clone() })
}

/// The network tags a bake instance carries: the runtime's
/// `bake_network_tags`, else `csis-bake`.
pub fn bake_network_tags(runtime: &BuilderDecl) -> Vec<&str> {
    let declared = runtime.extra_strs("bake_network_tags");
    if declared.is_empty() {
        vec![DEFAULT_BAKE_NETWORK_TAG]
    } else {
        declared
    }
}

/// The network tag of every bake instance when the runtime names none.
pub const DEFAULT_BAKE_NETWORK_TAG: &str = "csis-bake";

/// `project` (required), `zone`, `default_disk_size`, `ssh_username`,
/// `session` (iap or os-login), `use_iap`, `bake_network_tags`.
fn runtime_extra(f: &mut Fields<'_>) -> Map {
    let mut m = Map::default();
    let project = f.req_str("project");
    m.insert("project".into(), Value::str(project));
    read_strings(f, &mut m, &["zone", "ssh_username"]);
    read_disk_size(f, &mut m, 10, " on GCE");
    read_bool(f, &mut m, "use_iap");
    for t in &read_string_list(f, &mut m, "bake_network_tags") {
        // Compute Engine network tags: RFC 1035 labels, 1 to 63
        // characters ("Add network tags").
        if !is_name_shaped(t) || t.ends_with('-') {
            f.error_at(
                "bake_network_tags",
                format!("network tag '{t}' is not one Compute Engine accepts -- 1 to 63 lowercase letters, digits and dashes, starting with a letter and not ending with a dash"),
            );
        }
    }
    let session = f.str_or("session", "iap");
    if !matches!(session.as_str(), "iap" | "os-login") {
        f.error_at(
            "session",
            format!("runtime gce knows the session mechanisms iap and os-login (not '{session}') -- write one of them"),
        );
    }
    m.insert("session".into(), Value::str(session));
    m
}

impl Plugin for GcePlugin {
    fn name(&self) -> &'static str {
        "gce"
    }

    fn models(&self) -> Vec<ModelSpec> {
        vec![ModelSpec {
            read_extra: runtime_extra,
            ..ModelSpec::plain(MODEL, Vct::CloudBuilderModel, BaseModelKind::Cloud, builder)
        }]
    }

    fn sessions(
        &self,
        runtimes: &[csis_plugin_api::sessions::RawRuntime],
        env: &csis_plugin_api::sessions::SessionEnv,
    ) -> Vec<csis_plugin_api::sessions::Session> {
        sessions::sessions(runtimes, env)
    }
}

#[cfg(test)]
mod tests;
