//! The storage root of a `tofu-aws` / `tofu-gce` storage builder (storage
//! lifecycle, storage-generation phase): one `aws_ebs_volume` /
//! `google_compute_disk` per declared, not destroyed storage of the
//! builder, through `for_each` over `local.storages` keyed by the
//! storage's name. A storage whose declaration is gone, or that asks for
//! `state: destroyed`, leaves the map, so the plan destroys it; its
//! address is on the gate's whitelist, and the root is still emitted when
//! nothing else is left in it.

use std::collections::{BTreeMap, HashMap};

use csis_hcl::{Block, Body, Expr};
use csis_model::models::{Item, Storage};
use csis_model::{ItemKind, Value, Vct};
use csis_plugin_api::{BuilderDecl, ExecutionLifecyclePhase as P, HookContext, HookResult};

use crate::cloud::{Cloud, runtime_of};
use crate::root::{Content, RootFiles};
use csis_plugin_gce::{label_value, name as gce_name};

/// The size a storage gets when neither its `config.size` nor an
/// attaching instance's `min_size` says.
pub const DEFAULT_SIZE: i64 = 100;

/// The storages of builder `me`, in declared order.
pub fn declared(ctx: &dyn HookContext, me: &BuilderDecl) -> Vec<Storage> {
    ctx.items(ItemKind::STORAGES)
        .into_iter()
        .filter_map(|v| match v.item.as_ref() {
            Item::Storage(s) => Some((**s).clone()),
            _ => None,
        })
        .filter(|s| {
            ctx.builder(Vct::StorageBuilderModel, &s.named.type_)
                .is_some_and(|b| b.name() == me.name())
        })
        .collect()
}

/// The storages of `me` whose destroy this root plans: undeclared ones
/// (from meta-state's record) and declared ones asking for `destroyed`.
fn leaving(ctx: &dyn HookContext, me: &BuilderDecl) -> Vec<String> {
    let mut out: Vec<String> = ctx.undeclared_storages(me.name());
    out.extend(
        declared(ctx, me)
            .into_iter()
            .filter(|s| s.state == "destroyed")
            .map(|s| s.named.name.to_string()),
    );
    out.sort();
    out.dedup();
    out
}

/// The resource address of storage `name` in a storage root.
pub fn address(cloud: Cloud, name: &str) -> String {
    match cloud {
        Cloud::Aws => format!("aws_ebs_volume.storage[\"{name}\"]"),
        Cloud::Gce => format!("google_compute_disk.storage[\"{name}\"]"),
    }
}

pub fn whitelist(ctx: &dyn HookContext, me: &BuilderDecl, cloud: Cloud) -> Vec<String> {
    if ctx.lifecycle() != "storage" {
        return Vec::new();
    }
    leaving(ctx, me).iter().map(|n| address(cloud, n)).collect()
}

fn config_str(s: &Storage, key: &str) -> Option<String> {
    s.config
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// The largest `min_size` each storage is mapped with, over every
/// instance: read once per root (read per storage, every instance was
/// read once for each storage).
fn min_sizes(ctx: &dyn HookContext) -> HashMap<String, i64> {
    let mut out: HashMap<String, i64> = HashMap::new();
    for view in ctx.items(ItemKind::INSTANCES) {
        for m in &view.storages {
            out.entry(m.name.clone())
                .and_modify(|size| *size = (*size).max(m.min_size))
                .or_insert(m.min_size);
        }
    }
    out
}

/// A storage's size in GiB: its `config.size`, else the largest
/// `min_size` an instance maps it with ([`min_sizes`]), else
/// [`DEFAULT_SIZE`].
fn size_of(s: &Storage, min_sizes: &HashMap<String, i64>) -> HookResult<i64> {
    if let Some(text) = config_str(s, "size") {
        return match text.parse::<i64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(vec![csis_model::Diagnostic::error(format!(
                "storage '{}': config.size must be a positive number of GiB, got '{text}'",
                s.named.name
            ))]),
        };
    }
    Ok(min_sizes
        .get(s.named.name.as_str())
        .copied()
        .unwrap_or(DEFAULT_SIZE))
}

/// The storage root of builder `me`, or nothing when it has no storage
/// to keep or destroy.
pub fn root(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    cloud: Cloud,
) -> HookResult<Option<RootFiles>> {
    let kept: Vec<Storage> = declared(ctx, me)
        .into_iter()
        .filter(|s| s.state != "destroyed")
        .collect();
    let leaving = leaving(ctx, me);
    if kept.is_empty() && leaving.is_empty() {
        return Ok(None);
    }
    let rt = runtime_of(ctx, me, cloud)?;
    let min_sizes = min_sizes(ctx);
    let mut entries = Vec::new();
    for s in &kept {
        let name = s.named.name.to_string();
        let zone = s
            .availability_zone
            .clone()
            .unwrap_or_else(|| rt.zone.clone());
        let size = size_of(s, &min_sizes)?;
        let entry = match cloud {
            Cloud::Aws => {
                let mut tags: BTreeMap<&str, &str> = s
                    .tags
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                tags.insert("Name", &name);
                tags.insert("csis_storage", &name);
                Expr::Object(vec![
                    ("availability_zone".into(), Expr::str(zone)),
                    ("size".into(), Expr::Int(size)),
                    (
                        "type".into(),
                        Expr::str(config_str(s, "volume_type").unwrap_or_else(|| "gp3".into())),
                    ),
                    ("tags".into(), Expr::string_map(tags)),
                ])
            }
            Cloud::Gce => Expr::Object(vec![
                ("name".into(), Expr::str(gce_name(&name))),
                ("zone".into(), Expr::str(zone)),
                ("size".into(), Expr::Int(size)),
                (
                    "type".into(),
                    Expr::str(config_str(s, "disk_type").unwrap_or_else(|| "pd-balanced".into())),
                ),
                (
                    "labels".into(),
                    Expr::string_map([("csis_storage", label_value(&name).as_str())]),
                ),
            ]),
        };
        entries.push((name, entry));
    }
    let header = format!(
        "Generated by csis: the storages of {} builder {} on runtime {}. A storage that leaves local.storages is destroyed by the apply (whitelisted at the gate).",
        cloud.model(),
        me.name(),
        rt.name
    );
    let locals = Block::new("locals", Vec::<String>::new()).attr("storages", Expr::Object(entries));
    let resource = match cloud {
        Cloud::Aws => Block::new("resource", ["aws_ebs_volume", "storage"])
            .attr("for_each", Expr::raw("local.storages"))
            .attr(
                "availability_zone",
                Expr::raw("each.value.availability_zone"),
            )
            .attr("size", Expr::raw("each.value.size"))
            .attr("type", Expr::raw("each.value.type"))
            .attr("tags", Expr::raw("each.value.tags")),
        Cloud::Gce => Block::new("resource", ["google_compute_disk", "storage"])
            .attr("for_each", Expr::raw("local.storages"))
            .attr("name", Expr::raw("each.value.name"))
            .attr("zone", Expr::raw("each.value.zone"))
            .attr("size", Expr::raw("each.value.size"))
            .attr("type", Expr::raw("each.value.type"))
            .attr("labels", Expr::raw("each.value.labels")),
    };
    let main = Body::new().comment(&header).block(locals).block(resource);
    let id = match cloud {
        Cloud::Aws => "{ for name, v in aws_ebs_volume.storage : name => v.id }",
        Cloud::Gce => "{ for name, d in google_compute_disk.storage : name => d.id }",
    };
    let outputs = Body::new().block(
        Block::new("output", ["storages"])
            .attr("description", "The id of each storage, by name.")
            .attr("value", Expr::raw(id)),
    );
    let content = Content {
        main,
        outputs,
        files: Vec::new(),
        whitelist: leaving.iter().map(|n| address(cloud, n)).collect(),
        require_unmounted: false,
        bind_instances: Vec::new(),
        teardown: Vec::new(),
    };
    crate::root::build(ctx, me, cloud, &rt, P::StorageGeneration, content).map(Some)
}
