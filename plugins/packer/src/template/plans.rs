//! What each bake of a lifecycle is: base images from the OS builder
//! entries that name this image builder, else the images it bakes,
//! parents first; for each its parent, bake user, machine type, disk,
//! lineage tags, variables and provisioners, handed to `document.rs`.

use std::collections::BTreeMap;

use csis_hcl::{Block, Expr};
use csis_model::models::{BaseBuilder, Item, OsBuilderModel};
use csis_model::{ItemKind, Map, Value, Vct};
use csis_plugin_api::builder::{base_bake_entries, parent_bakes};
use csis_plugin_api::{
    BuilderDecl, HookContext, HookResult, PackerBake, PackerParent, PackerValue,
};

use super::document::{render, template_path, up_to_root};
use super::provisioners::{
    admin_setup, closing, first_boot_install, mod_provisioners, runtime_prerequisites,
};
use super::runtime::{chain_root, entry_on, os_bake_user, runtime_of, set};
use super::{Bake, refuse};

fn names_me(ctx: &dyn HookContext, reference: &str, me: &BuilderDecl) -> bool {
    ctx.builder(Vct::ImageBuilderModel, reference)
        .is_some_and(|b| b.name() == me.name())
}

/// A source block's label: the series with every character that is not a
/// letter, digit, `_` or `-` as `_`.
fn source_name(series: &str) -> String {
    series
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn admin_keys(os: &OsBuilderModel, config: &Map) -> Vec<String> {
    match &os.admin_public_keys {
        Some(keys) => keys.clone(),
        None => match config.get("admin_public_keys") {
            Some(Value::Seq(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(v) => v.as_str().map(str::to_string).into_iter().collect(),
            None => Vec::new(),
        },
    }
}

fn lineage_tags(
    ctx: &dyn HookContext,
    series: &str,
    runtime: &str,
    parent: &str,
    declared: &[&BTreeMap<String, String>],
) -> Vec<(String, PackerValue)> {
    let mut tags: BTreeMap<String, PackerValue> = BTreeMap::new();
    for m in declared {
        for (k, v) in *m {
            tags.insert(k.clone(), PackerValue::Literal(v.clone()));
        }
    }
    let (ids, sts) = ctx.capabilities(series);
    let fp: String = ctx
        .fingerprint(series, runtime)
        .unwrap_or_default()
        .chars()
        .take(16)
        .collect();
    for (k, v) in [
        ("csis_tree", PackerValue::Literal(ctx.tree_id())),
        ("csis_series", PackerValue::Literal(series.to_string())),
        ("csis_parent", PackerValue::Literal(parent.to_string())),
        ("csis_run", PackerValue::Run),
        ("csis_fingerprint", PackerValue::Literal(fp)),
        ("csis_identity_types", PackerValue::Literal(ids.join(","))),
        ("csis_storage_types", PackerValue::Literal(sts.join(","))),
    ] {
        tags.insert(k.to_string(), v);
    }
    tags.into_iter().collect()
}

/// What one template needs besides the source.
pub(super) struct Plan {
    pub(super) bake: PackerBake,
    pub(super) variables: Vec<(String, Value)>,
    pub(super) provisioners: Vec<Block>,
    /// The build's parent as custom_data records it.
    pub(super) parent_record: Expr,
    /// What its in-bake verification checks, for the build's record.
    pub(super) in_bake_checks: Vec<String>,
    /// The bakes of this run it waits for: its parent's, when the parent
    /// bakes too and this bake starts from the parent series' newest
    /// build.
    pub(super) after: Vec<String>,
}

fn is_identifier(s: &str) -> bool {
    csis_hcl::is_identifier(s) && !s.contains('-')
}

/// The image's `variables:` as packer variables (names must be
/// identifiers).
fn image_variables(image: &str, vars: &Map) -> HookResult<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for (k, v) in vars {
        if !is_identifier(k) || k == "csis_run" {
            return refuse(format!(
                "image '{image}': variable '{k}' cannot be a packer variable -- name it with letters, digits and underscores, starting with a letter (csis_run is csis's own)"
            ));
        }
        out.push((k.clone(), v.clone()));
    }
    Ok(out)
}

/// Every bake of this builder in the lifecycle: base images (`base`) from
/// the OS builder entries naming it, else the images it bakes, parents
/// first.
pub fn bakes(ctx: &dyn HookContext, me: &BuilderDecl, base: bool) -> HookResult<Vec<Bake>> {
    let rt = runtime_of(ctx, me)?;
    let runtime = rt.decl.name().to_string();
    let default_machine = |entry: Option<&str>| -> String {
        entry
            .map(str::to_string)
            .or_else(|| match &me.base {
                BaseBuilder::Image(m) => m.default_machine_type.clone(),
                _ => None,
            })
            .or_else(|| {
                rt.decl
                    .base
                    .runtime_model()
                    .map(|m| m.default_machine_type.clone())
            })
            .unwrap_or_default()
    };
    let config = ctx.config();
    let mut plans = Vec::new();
    if base {
        for (os_decl, entry) in base_bake_entries(ctx, me, &runtime) {
            let BaseBuilder::Os(os) = &os_decl.base else {
                continue;
            };
            let series = os_decl.name();
            let mut query: BTreeMap<String, String> = BTreeMap::new();
            for (k, v) in os.query.iter().chain(entry.query.iter()) {
                let Some(s) = v.as_str() else {
                    return refuse(format!(
                        "OS builder '{series}': query '{k}' must be a string to become a vendor image filter"
                    ));
                };
                query.insert(k.clone(), s.to_string());
            }
            let mut owners = os.owners.clone();
            owners.extend(
                rt.decl
                    .base
                    .runtime_model()
                    .and_then(|m| m.default_owners.clone())
                    .unwrap_or_default(),
            );
            owners.extend(entry.owners.clone());
            let Some(user) = os_bake_user(os, &entry.ssh_username, &rt) else {
                return refuse(format!(
                    "OS builder '{series}' on runtime '{runtime}': no bake user -- set ssh_username on the entry, config_username on the OS builder, or default_config_username on the runtime"
                ));
            };
            let keys = admin_keys(os, &config);
            let tests = entry.tests.clone().unwrap_or_else(|| os.tests.clone());
            let mut provisioners: Vec<Block> = runtime_prerequisites(&rt)
                .into_iter()
                .chain(admin_setup(&os.admin_user, &keys))
                .collect();
            // Only here, in the base: its children inherit the unit.
            provisioners.push(first_boot_install());
            let (closing, in_bake_checks) = closing(&rt, &os.admin_user, &keys, &tests);
            provisioners.extend(closing);
            let tags = lineage_tags(
                ctx,
                series,
                &runtime,
                "vendor",
                &[&os.builder.tags, &entry.tags],
            );
            plans.push(Plan {
                bake: PackerBake {
                    series: series.to_string(),
                    tree: ctx.tree_id(),
                    source_name: source_name(series),
                    parent: PackerParent::Vendor {
                        image_id: entry.image_id.clone(),
                        query,
                        owners,
                    },
                    family: os.family.clone(),
                    machine_type: default_machine(entry.default_machine_type.as_deref()),
                    disk_size: ctx
                        .bake_disk_size(series, &runtime)
                        .and_then(|s| s.trim().parse().ok()),
                    ssh_username: user,
                    tags,
                },
                variables: Vec::new(),
                provisioners,
                parent_record: Expr::str("vendor"),
                in_bake_checks,
                after: Vec::new(),
            });
        }
    } else {
        for name in ctx.images_in_bake_order() {
            let Some(view) = ctx.item(ItemKind::IMAGES, &name) else {
                continue;
            };
            let Item::Image(img) = view.item.as_ref() else {
                continue;
            };
            let Some(entry) = img
                .runtimes
                .iter()
                .find(|e| names_me(ctx, &e.image_builder, me))
            else {
                continue;
            };
            if !ctx.bake_decision(&name, &runtime).bake {
                continue;
            }
            let Some(root_decl) = chain_root(ctx, &name) else {
                return refuse(format!("image '{name}': its chain reaches no OS builder"));
            };
            let BaseBuilder::Os(root) = &root_decl.base else {
                continue;
            };
            let root_user = entry_on(ctx, root, &runtime)
                .and_then(|e| os_bake_user(root, &e.ssh_username, &rt))
                .or_else(|| os_bake_user(root, "default", &rt));
            let user = if rt.hooks.one_bake_user_per_chain() {
                root_user
            } else {
                set(&entry.ssh_username).or(root_user)
            };
            let Some(user) = user else {
                return refuse(format!(
                    "image '{name}' on runtime '{runtime}': no bake user -- set ssh_username on the image's runtimes entry or on its chain root's OS builder entry"
                ));
            };
            let parent = img
                .source_image
                .as_deref()
                .map(csis_model::naming::safe_name)
                .unwrap_or_default();
            let pinned = ctx.pinned_parent(&name, &runtime);
            let after = parent_bakes(ctx, &parent, pinned.as_deref(), &runtime);
            let (packer_parent, parent_record, parent_tag) = match pinned {
                Some(build) => (
                    PackerParent::Build(build.clone()),
                    Expr::str(build.as_str()),
                    build,
                ),
                None => {
                    let record = match rt.hooks.packer_parent_expression() {
                        Some(e) => Expr::template(e),
                        None => Expr::str(format!("series:{parent}")),
                    };
                    (
                        PackerParent::Series(parent.clone()),
                        record,
                        format!("series:{parent}"),
                    )
                }
            };
            let variables = image_variables(&name, &img.variables)?;
            let asset_path = template_path(me.name(), &name);
            let mut provisioners =
                mod_provisioners(ctx, &name, &view, &up_to_root(&asset_path), &variables)?;
            let keys = admin_keys(root, &config);
            let (closing, in_bake_checks) = closing(&rt, &root.admin_user, &keys, &img.tests);
            provisioners.extend(closing);
            let tags = lineage_tags(
                ctx,
                &name,
                &runtime,
                &parent_tag,
                &[&img.root.tags, &entry.tags],
            );
            plans.push(Plan {
                bake: PackerBake {
                    series: name.clone(),
                    tree: ctx.tree_id(),
                    source_name: source_name(&name),
                    parent: packer_parent,
                    family: root.family.clone(),
                    machine_type: default_machine(entry.machine_type.as_deref()),
                    disk_size: ctx
                        .bake_disk_size(&name, &runtime)
                        .and_then(|s| s.trim().parse().ok()),
                    ssh_username: user,
                    tags,
                },
                variables,
                provisioners,
                parent_record,
                in_bake_checks,
                after,
            });
        }
    }
    plans.into_iter().map(|p| render(ctx, me, &rt, p)).collect()
}
