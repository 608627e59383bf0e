//! The instance root of a `tofu-aws` / `tofu-gce` instance builder
//! (instance-image lifecycle, instance-generation phase): the builder's
//! instances through `for_each` over `local.instances` keyed by instance
//! name, each booting the build its pin names (else the newest build of
//! its image's series, found by the `csis_series` tag on AWS and the image
//! family on GCE), with the cloud-config user-data written beside the
//! root; and the attachments of their storages, one resource with
//! `for_each` over `local.attachments` keyed `<instance>/<storage>`.

use csis_hcl::{Block, Body, Expr};
use csis_model::models::{Instance, Item, ItemView, Storage};
use csis_model::{Diagnostic, ItemKind, Vct};
use csis_plugin_api::cloud_config::UserData;
use csis_plugin_api::{BuilderDecl, ExecutionLifecyclePhase as P, HookContext, HookResult};

use crate::cloud::{Cloud, Runtime, runtime_of};
use crate::root::{Content, RootFiles};
use crate::user_data::{Launch, Mount, document};
use csis_plugin_gce::name as gce_name;

mod aws;
mod gce;

/// The EBS device names an instance's storages get, in declaration order.
const EBS_LETTERS: &str = "fghijklmnopqrstuvwxyz";

/// The token the launch script carries where an EBS volume's id (without
/// its dash) goes; the root replaces it by terraform reference.
fn volume_token(storage: &str) -> String {
    format!("@@csis-volume:{storage}@@")
}

fn refuse<T>(msg: String) -> HookResult<T> {
    Err(vec![Diagnostic::error(msg)])
}

/// The declared instances of builder `me`, in declared order.
fn declared(ctx: &dyn HookContext, me: &BuilderDecl) -> Vec<(Instance, ItemView)> {
    ctx.items(ItemKind::INSTANCES)
        .into_iter()
        .filter_map(|v| match v.item.as_ref() {
            Item::Instance(i) => Some(((**i).clone(), v)),
            _ => None,
        })
        .filter(|(i, _)| launched_by(ctx, me, i))
        .collect()
}

/// Whether builder `me` launches instance `i`.
fn launched_by(ctx: &dyn HookContext, me: &BuilderDecl, i: &Instance) -> bool {
    ctx.builder(Vct::InstanceBuilderModel, &i.root.named.type_)
        .is_some_and(|b| b.name() == me.name())
}

/// One instance as its root launches it.
struct Planned {
    name: String,
    ephemeral: bool,
    /// The runner's verify step after the launch.
    verify: Vec<String>,
    series: String,
    pin: Option<String>,
    machine_type: String,
    zone: String,
    subnet: Option<String>,
    hostname: String,
    mounts: Vec<Mount>,
    user_data: UserData,
}

fn plan(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    cloud: Cloud,
    rt: &Runtime,
    inst: &Instance,
    view: &ItemView,
) -> HookResult<Planned> {
    let name = inst.root.name().to_string();
    let series = inst
        .image
        .as_deref()
        .map(csis_model::naming::safe_name)
        .unwrap_or_default();
    let group = ctx
        .item(ItemKind::IMAGES, &series)
        .and_then(|v| match v.item.as_ref() {
            Item::Image(i) => i.group.clone(),
            _ => None,
        });
    let zone = inst
        .availability_zone
        .clone()
        .unwrap_or_else(|| rt.zone.clone());
    let machine_type = if inst.machine_type.trim().is_empty() {
        rt.default_machine_type.clone()
    } else {
        inst.machine_type.clone()
    };
    let mut mounts = Vec::new();
    for (i, m) in view.storages.iter().enumerate() {
        let storage: Option<Storage> =
            ctx.item(ItemKind::STORAGES, &m.name)
                .and_then(|v| match v.item.as_ref() {
                    Item::Storage(s) => Some((**s).clone()),
                    _ => None,
                });
        let Some(storage) = storage else {
            return refuse(format!(
                "instance '{name}' attaches storage '{}', which is not declared",
                m.name
            ));
        };
        let builder = ctx.builder(Vct::StorageBuilderModel, &storage.named.type_);
        if builder.as_ref().map(|b| b.model) != Some(cloud.model()) {
            return refuse(format!(
                "instance '{name}' (instance builder '{}', type {}) attaches storage '{}' of storage builder '{}' (type {}); a {} instance attaches {} storages only",
                me.name(),
                cloud.model(),
                m.name,
                storage.named.type_,
                builder.as_ref().map_or("?", |b| b.model),
                cloud.model(),
                cloud.model()
            ));
        }
        let (device, by_id) = match cloud {
            Cloud::Aws => {
                let Some(letter) = EBS_LETTERS.chars().nth(i) else {
                    return refuse(format!(
                        "instance '{name}' attaches {} storages; an EBS instance takes at most {} (/dev/xvdf to /dev/xvdz)",
                        view.storages.len(),
                        EBS_LETTERS.len()
                    ));
                };
                (
                    format!("/dev/xvd{letter}"),
                    format!(
                        "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_{}",
                        volume_token(&m.name)
                    ),
                )
            }
            Cloud::Gce => {
                let path = format!("/dev/disk/by-id/google-{}", gce_name(&m.name));
                (path.clone(), path)
            }
        };
        mounts.push(Mount {
            storage: m.name.clone(),
            mount_point: m.mount_point.clone(),
            device,
            by_id,
            share_mode: storage.share_mode.clone(),
        });
    }
    let hostname = ctx.canonical_hostname(&name, inst.ephemeral);
    let user_data = document(
        ctx,
        &Launch {
            instance: &name,
            builder_model: cloud.model(),
            image: &series,
            group: group.as_deref(),
            hostname: &hostname,
            userdata: &inst.userdata,
            mounts: &mounts,
        },
    );
    Ok(Planned {
        subnet: rt.subnet_for(&zone).map(|s| s.id.clone()),
        pin: ctx.instance_pin(&name),
        ephemeral: inst.ephemeral,
        verify: csis_plugin_api::verify_step::verify_words(ctx, inst),
        name,
        series,
        machine_type,
        zone,
        hostname,
        mounts,
        user_data,
    })
}

/// The user-data instance `instance` boots with when `me` launches it.
pub fn user_data_of(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    cloud: Cloud,
    instance: &str,
) -> Option<UserData> {
    // The one instance, not every declared one: this is asked once per
    // instance (validate's user-data check), and collecting them all each
    // time was quadratic.
    let view = ctx.item(ItemKind::INSTANCES, instance)?;
    let Item::Instance(i) = view.item.as_ref() else {
        return None;
    };
    if !launched_by(ctx, me, i) {
        return None;
    }
    let inst = (**i).clone();
    let rt = runtime_of(ctx, me, cloud).ok()?;
    plan(ctx, me, cloud, &rt, &inst, &view)
        .ok()
        .map(|p| p.user_data)
}

fn instance_address(cloud: Cloud, name: &str) -> String {
    match cloud {
        Cloud::Aws => format!("aws_instance.instance[\"{name}\"]"),
        Cloud::Gce => format!("google_compute_instance.instance[\"{name}\"]"),
    }
}

fn attachments_address(cloud: Cloud) -> &'static str {
    match cloud {
        Cloud::Aws => "aws_volume_attachment.attach",
        Cloud::Gce => "google_compute_attached_disk.attach",
    }
}

/// Every instance of the root may be replaced (a moved pin: validation
/// has sanctioned it by now), and every attachment detached: a replaced
/// instance's attachments are destroyed with it, and `--require-unmounted`
/// still refuses a detach without an unmount receipt.
pub fn whitelist(ctx: &dyn HookContext, me: &BuilderDecl, cloud: Cloud) -> Vec<String> {
    if ctx.lifecycle() != "instance-image" {
        return Vec::new();
    }
    let declared = declared(ctx, me);
    let gone = ctx.undeclared_instances();
    let mut out: Vec<String> = declared
        .iter()
        .map(|(i, _)| i.root.name())
        .chain(gone.iter().map(String::as_str))
        .map(|n| instance_address(cloud, n))
        .collect();
    if !gone.is_empty() || declared.iter().any(|(_, v)| !v.storages.is_empty()) {
        out.push(attachments_address(cloud).to_string());
    }
    out.sort();
    out.dedup();
    out
}

fn set_of(items: &[String]) -> Expr {
    Expr::Call("toset".into(), vec![Expr::strs(items.iter().cloned())])
}

fn user_data_file(name: &str) -> String {
    format!("{name}.user-data")
}

/// `file("${path.module}/<name>.user-data")`, each EBS volume token
/// replaced by the volume's id without its dash (its NVMe by-id name).
fn user_data_expr(cloud: Cloud, p: &Planned) -> Expr {
    let mut e = Expr::Call(
        "file".into(),
        vec![Expr::template(format!(
            "${{path.module}}/{}",
            user_data_file(&p.name)
        ))],
    );
    if cloud == Cloud::Aws {
        for m in &p.mounts {
            e = Expr::Call(
                "replace".into(),
                vec![
                    e,
                    Expr::str(volume_token(&m.storage)),
                    Expr::Call(
                        "replace".into(),
                        vec![
                            Expr::raw(format!(
                                "data.aws_ebs_volume.storage[{}].id",
                                csis_hcl::literal(&m.storage)
                            )),
                            Expr::str("-"),
                            Expr::str(""),
                        ],
                    ),
                ],
            );
        }
    }
    e
}

fn series_ref(rt: &Runtime, cloud: Cloud, series: &str) -> String {
    match cloud {
        Cloud::Aws => format!("data.aws_ami.series[{}].id", csis_hcl::literal(series)),
        Cloud::Gce => format!(
            "data.google_compute_image.series[{}]",
            csis_hcl::literal(&csis_plugin_gce::image_family(&rt.tree, series))
        ),
    }
}

/// `local.attachments`: `<instance>/<storage>` to what attaches it.
fn attachments(planned: &[Planned], cloud: Cloud) -> Expr {
    let mut entries = Vec::new();
    for p in planned {
        for m in &p.mounts {
            let mut fields = vec![
                ("instance".to_string(), Expr::str(p.name.clone())),
                ("storage".to_string(), Expr::str(m.storage.clone())),
            ];
            match cloud {
                Cloud::Aws => fields.push(("device_name".into(), Expr::str(m.device.clone()))),
                Cloud::Gce => {
                    fields.push(("disk".into(), Expr::str(gce_name(&m.storage))));
                    fields.push(("zone".into(), Expr::str(p.zone.clone())));
                    fields.push(("device_name".into(), Expr::str(gce_name(&m.storage))));
                }
            }
            entries.push((format!("{}/{}", p.name, m.storage), Expr::Object(fields)));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Expr::Object(entries)
}

/// The instance root of builder `me`, or nothing when it launches no
/// instance.
pub fn root(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    cloud: Cloud,
) -> HookResult<Option<RootFiles>> {
    let declared = declared(ctx, me);
    // A decommissioned instance's destroy is planned by the root that
    // still holds it in its state (meta-state does not say which).
    let gone = ctx.undeclared_instances();
    if declared.is_empty() && gone.is_empty() {
        return Ok(None);
    }
    let rt = runtime_of(ctx, me, cloud)?;
    let mut planned = Vec::new();
    for (inst, view) in &declared {
        planned.push(plan(ctx, me, cloud, &rt, inst, view)?);
    }
    let header = format!(
        "Generated by csis: the instances of {} builder {} on runtime {}, each booting its pinned build (else its series' newest), and their storages' attachments (keyed <instance>/<storage>).",
        cloud.model(),
        me.name(),
        rt.name
    );
    let main = match cloud {
        Cloud::Aws => aws::aws_main(&rt, &planned, &header),
        Cloud::Gce => gce::gce_main(&rt, &planned, &header),
    };
    let value = match cloud {
        Cloud::Aws => {
            "{ for name, i in aws_instance.instance : name => { id = i.id, image = i.ami, private_ip = i.private_ip } }"
        }
        Cloud::Gce => {
            "{ for name, i in google_compute_instance.instance : name => { id = i.instance_id, image = local.instances[name].build, private_ip = i.network_interface[0].network_ip } }"
        }
    };
    let outputs = Body::new().block(
        Block::new("output", ["instances"])
            .attr(
                "description",
                "Each instance by name: its id, the build it booted and its private IP (read by csis lineage bind-instance --tofu-outputs).",
            )
            .attr("value", Expr::raw(value)),
    );
    let files = planned
        .iter()
        .map(|p| (user_data_file(&p.name), p.user_data.render()))
        .collect();
    let content = Content {
        main,
        outputs,
        files,
        whitelist: whitelist(ctx, me, cloud),
        require_unmounted: !gone.is_empty() || planned.iter().any(|p| !p.mounts.is_empty()),
        bind_instances: planned
            .iter()
            .map(|p| (p.name.clone(), p.verify.clone()))
            .collect(),
        teardown: planned
            .iter()
            .filter(|p| p.ephemeral)
            .map(|p| (p.name.clone(), instance_address(cloud, &p.name)))
            .collect(),
    };
    crate::root::build(ctx, me, cloud, &rt, P::InstanceGeneration, content).map(Some)
}
