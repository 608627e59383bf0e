//! The main.tf of an AWS instance root.

use csis_hcl::{Block, Body, Expr};

use super::{Planned, attachments, series_ref, set_of, user_data_expr};
use crate::cloud::{Cloud, Runtime};

pub(super) fn aws_main(rt: &Runtime, planned: &[Planned], header: &str) -> Body {
    let mut body = Body::new().comment(header);
    let mut unpinned: Vec<String> = planned
        .iter()
        .filter(|p| p.pin.is_none())
        .map(|p| p.series.clone())
        .collect();
    unpinned.sort();
    unpinned.dedup();
    if !unpinned.is_empty() {
        body = body.block(
            Block::new("data", ["aws_ami", "series"])
                .attr("for_each", set_of(&unpinned))
                .attr("most_recent", true)
                .attr("owners", Expr::strs(["self"]))
                .block(
                    Block::new("filter", Vec::<String>::new())
                        .attr("name", "tag:csis_series")
                        .attr("values", Expr::raw("[each.key]")),
                )
                .block(
                    Block::new("filter", Vec::<String>::new())
                        .attr("name", "tag:csis_tree")
                        .attr("values", Expr::strs([rt.tree.as_str()])),
                ),
        );
    }
    let mut storages: Vec<String> = planned
        .iter()
        .flat_map(|p| p.mounts.iter().map(|m| m.storage.clone()))
        .collect();
    storages.sort();
    storages.dedup();
    if !storages.is_empty() {
        body = body.block(
            Block::new("data", ["aws_ebs_volume", "storage"])
                .attr("for_each", set_of(&storages))
                .attr("most_recent", true)
                .block(
                    Block::new("filter", Vec::<String>::new())
                        .attr("name", "tag:csis_storage")
                        .attr("values", Expr::raw("[each.key]")),
                ),
        );
    }
    let instances = planned
        .iter()
        .map(|p| {
            let ami = match &p.pin {
                Some(b) => Expr::str(b.clone()),
                None => Expr::raw(series_ref(rt, Cloud::Aws, &p.series)),
            };
            (
                p.name.clone(),
                Expr::Object(vec![
                    ("ami".into(), ami),
                    ("instance_type".into(), Expr::str(p.machine_type.clone())),
                    (
                        "subnet_id".into(),
                        p.subnet.clone().map_or(Expr::Null, Expr::str),
                    ),
                    ("availability_zone".into(), Expr::str(p.zone.clone())),
                    ("user_data".into(), user_data_expr(Cloud::Aws, p)),
                    (
                        "tags".into(),
                        Expr::string_map([
                            ("Name", p.name.as_str()),
                            ("csis_instance", p.name.as_str()),
                            ("csis_series", p.series.as_str()),
                            ("csis_hostname", p.hostname.as_str()),
                            ("csis_runtime", rt.name.as_str()),
                        ]),
                    ),
                ]),
            )
        })
        .collect();
    body = body.block(
        Block::new("locals", Vec::<String>::new())
            .attr("instances", Expr::Object(instances))
            .attr("attachments", attachments(planned, Cloud::Aws)),
    );
    let profile = match &rt.instance_profile {
        Some(name) => Expr::str(name.clone()),
        None => {
            body = session_profile(body);
            Expr::raw("aws_iam_instance_profile.session.name")
        }
    };
    body = body.block(
        Block::new("resource", ["aws_instance", "instance"])
            .attr("for_each", Expr::raw("local.instances"))
            .attr("ami", Expr::raw("each.value.ami"))
            .attr("instance_type", Expr::raw("each.value.instance_type"))
            .attr("subnet_id", Expr::raw("each.value.subnet_id"))
            .attr(
                "availability_zone",
                Expr::raw("each.value.availability_zone"),
            )
            .attr("iam_instance_profile", profile)
            .attr("user_data", Expr::raw("each.value.user_data"))
            // A running machine never reads its user-data again (cloud-init
            // runs users and write_files once per instance), and the
            // provider would stop and start it to change the attribute:
            // a changed user-data is a new machine, a replacement the
            // plan names and the gate's whitelist admits (aws provider,
            // aws_instance: user_data_replace_on_change).
            .attr("user_data_replace_on_change", true)
            .attr("tags", Expr::raw("each.value.tags"))
            // IMDSv2 only: the instance's credentials (the session role's)
            // are served to token-holding callers, never to a plain GET.
            .block(
                Block::new("metadata_options", Vec::<String>::new())
                    .attr("http_endpoint", "enabled")
                    .attr("http_tokens", "required"),
            ),
    );
    if !storages.is_empty() {
        body = body.block(
            Block::new("resource", ["aws_volume_attachment", "attach"])
                .attr("for_each", Expr::raw("local.attachments"))
                .attr("device_name", Expr::raw("each.value.device_name"))
                .attr(
                    "volume_id",
                    Expr::raw("data.aws_ebs_volume.storage[each.value.storage].id"),
                )
                .attr(
                    "instance_id",
                    Expr::raw("aws_instance.instance[each.value.instance].id"),
                ),
        );
    }
    body
}

/// The instance profile the root's machines run with when the runtime
/// names none: a role EC2 may assume, with AWS's managed policy for the
/// Systems Manager agent (`AmazonSSMManagedInstanceCore`: the agent
/// registers and takes session and Run Command requests, which `csis
/// verify instance` sends), and the profile that hands it to an instance.
/// Named by prefix, so two trees' roots in one account never collide.
/// The policy ARN is the `aws` partition's (GovCloud and China name the
/// profile of their own partition in `session_instance_profile`).
fn session_profile(body: Body) -> Body {
    const ASSUME: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    body.block(
        Block::new("resource", ["aws_iam_role", "session"])
            .attr("name_prefix", "csis-ssm-")
            .attr(
                "description",
                "Assumed by the machines of this csis instance root: the Systems Manager agent's session (csis verify instance).",
            )
            .attr("assume_role_policy", ASSUME),
    )
    .block(
        Block::new("resource", ["aws_iam_role_policy_attachment", "session"])
            .attr("role", Expr::raw("aws_iam_role.session.name"))
            .attr(
                "policy_arn",
                "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
            ),
    )
    .block(
        Block::new("resource", ["aws_iam_instance_profile", "session"])
            .attr("name_prefix", "csis-ssm-")
            .attr("role", Expr::raw("aws_iam_role.session.name")),
    )
}
