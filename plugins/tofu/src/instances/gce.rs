//! The main.tf of a GCE instance root.

use csis_hcl::{Block, Body, Expr};

use super::{Planned, attachments, series_ref, set_of, user_data_expr};
use crate::cloud::{Cloud, Runtime};
use csis_plugin_gce::{label_value, name as gce_name};

pub(super) fn gce_main(rt: &Runtime, planned: &[Planned], header: &str) -> Body {
    let mut body = Body::new().comment(header);
    let mut families: Vec<String> = planned
        .iter()
        .filter(|p| p.pin.is_none())
        .map(|p| csis_plugin_gce::image_family(&rt.tree, &p.series))
        .collect();
    families.sort();
    families.dedup();
    if !families.is_empty() {
        body = body.block(
            Block::new("data", ["google_compute_image", "series"])
                .attr("for_each", set_of(&families))
                .attr("family", Expr::raw("each.key"))
                .attr("project", Expr::raw("var.project")),
        );
    }
    let project = rt.project.clone().unwrap_or_default();
    let instances = planned
        .iter()
        .map(|p| {
            let (image, build) = match &p.pin {
                Some(b) => (
                    Expr::str(format!("projects/{project}/global/images/{b}")),
                    Expr::str(b.clone()),
                ),
                None => (
                    Expr::raw(format!(
                        "{}.self_link",
                        series_ref(rt, Cloud::Gce, &p.series)
                    )),
                    Expr::raw(format!("{}.name", series_ref(rt, Cloud::Gce, &p.series))),
                ),
            };
            (
                p.name.clone(),
                Expr::Object(vec![
                    ("name".into(), Expr::str(gce_name(&p.name))),
                    ("image".into(), image),
                    ("build".into(), build),
                    ("machine_type".into(), Expr::str(p.machine_type.clone())),
                    ("zone".into(), Expr::str(p.zone.clone())),
                    ("network".into(), Expr::str(rt.network.clone())),
                    (
                        "subnetwork".into(),
                        p.subnet.clone().map_or(Expr::Null, Expr::str),
                    ),
                    ("user_data".into(), user_data_expr(Cloud::Gce, p)),
                    (
                        "labels".into(),
                        Expr::string_map([
                            ("csis_instance", label_value(&p.name).as_str()),
                            ("csis_series", label_value(&p.series).as_str()),
                        ]),
                    ),
                ]),
            )
        })
        .collect();
    body = body.block(
        Block::new("locals", Vec::<String>::new())
            .attr("instances", Expr::Object(instances))
            .attr("attachments", attachments(planned, Cloud::Gce)),
    );
    // What the instance's replacement follows: the digest of its
    // user-data (OpenTofu's built-in terraform_data; a change of `input`
    // is an update, which replace_triggered_by turns into a replacement).
    body = body.block(
        Block::new("resource", ["terraform_data", "user_data"])
            .attr("for_each", Expr::raw("local.instances"))
            .attr("input", Expr::raw("sha256(each.value.user_data)")),
    );
    body = body.block(
        Block::new("resource", ["google_compute_instance", "instance"])
            .attr("for_each", Expr::raw("local.instances"))
            .attr("name", Expr::raw("each.value.name"))
            .attr("machine_type", Expr::raw("each.value.machine_type"))
            // The provider changes a running machine's type only when it
            // may stop it first; without this, a plan the gate passed
            // fails at apply (google provider, compute_instance:
            // allow_stopping_for_update).
            .attr("allow_stopping_for_update", true)
            .attr("zone", Expr::raw("each.value.zone"))
            .attr("labels", Expr::raw("each.value.labels"))
            .attr(
                "metadata",
                Expr::Object(vec![(
                    "user-data".into(),
                    Expr::raw("each.value.user_data"),
                )]),
            )
            .block(
                Block::new("boot_disk", Vec::<String>::new()).block(
                    Block::new("initialize_params", Vec::<String>::new())
                        .attr("image", Expr::raw("each.value.image")),
                ),
            )
            .block(
                Block::new("network_interface", Vec::<String>::new())
                    .attr("network", Expr::raw("each.value.network"))
                    .attr("subnetwork", Expr::raw("each.value.subnetwork")),
            )
            // google_compute_attached_disk owns the attachments. A
            // changed user-data replaces the machine, as on AWS: the
            // provider would change the metadata in place, and cloud-init
            // never reads it again on a running machine.
            .block(
                Block::new("lifecycle", Vec::<String>::new())
                    .attr("ignore_changes", Expr::raw("[attached_disk]"))
                    .attr(
                        "replace_triggered_by",
                        Expr::raw("[terraform_data.user_data[each.key]]"),
                    ),
            ),
    );
    if planned.iter().any(|p| !p.mounts.is_empty()) {
        body = body.block(
            Block::new("resource", ["google_compute_attached_disk", "attach"])
                .attr("for_each", Expr::raw("local.attachments"))
                .attr("disk", Expr::raw("each.value.disk"))
                .attr(
                    "instance",
                    Expr::raw("google_compute_instance.instance[each.value.instance].id"),
                )
                .attr("zone", Expr::raw("each.value.zone"))
                .attr("device_name", Expr::raw("each.value.device_name")),
        );
    }
    body
}
