//! What exists on an `aws` runtime, as `csis state query` asks it, and the
//! disposal of a build: the AMIs this account owns that carry the lineage
//! tag `csis_series`, the instances carrying the runtime's launch tags,
//! the EBS volumes carrying `csis_storage`; `dispose_image` deregisters an
//! AMI and deletes the snapshots behind it (an AMI's snapshots outlive its
//! deregistration and are billed until deleted).
//!
//! API references: EC2 DescribeImages (Owners `self`, filter `tag-key`),
//! DescribeInstances (filters `tag:<key>`, `instance-state-name`),
//! DescribeVolumes (filter `tag-key`), DeregisterImage, DeleteSnapshot.
//! Every Describe call is paged by NextToken.

use aws_sdk_ec2::types::Filter;
use csis_plugin_api::{Observed, ObservedImage, ObservedInstance, VendorImage};

use crate::sdk::{Clients, said};

fn tag<'a>(tags: &'a [aws_sdk_ec2::types::Tag], key: &str) -> Option<&'a str> {
    tags.iter()
        .find(|t| t.key() == Some(key))
        .and_then(|t| t.value())
}

pub(crate) fn filter(name: &str, values: &[&str]) -> Filter {
    Filter::builder()
        .name(name)
        .set_values(Some(values.iter().map(|v| v.to_string()).collect()))
        .build()
}

/// The instances that stand, running or not: every state but
/// shutting-down and terminated.
pub(crate) fn standing() -> Filter {
    filter(
        "instance-state-name",
        &["pending", "running", "stopping", "stopped"],
    )
}

/// Every item of a paged Describe call: `page` sends one request with the
/// given NextToken and returns its items and the next token.
fn paged<T>(
    mut page: impl FnMut(Option<String>) -> Result<(Vec<T>, Option<String>), String>,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let (items, next) = page(token.take())?;
        out.extend(items);
        match next {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(out),
        }
    }
}

/// Every AMI this account owns in the region that carries `csis_series`
/// and the tree's `csis_tree`.
pub fn images(clients: &Clients, tree: &str) -> Result<Vec<ObservedImage>, String> {
    let mut out = paged(|token| {
        let page = clients
            .block_on(
                clients
                    .ec2
                    .describe_images()
                    .owners("self")
                    .filters(filter("tag-key", &["csis_series"]))
                    .filters(filter("tag:csis_tree", &[tree]))
                    .set_next_token(token)
                    .send(),
            )
            .map_err(|e| format!("EC2 DescribeImages: {}", said(e)))?;
        let items = page
            .images()
            .iter()
            .filter_map(|image| {
                Some(ObservedImage {
                    build_id: image.image_id()?.to_string(),
                    series: tag(image.tags(), "csis_series")?.to_string(),
                    tags: image
                        .tags()
                        .iter()
                        .filter_map(|t| Some((t.key()?, t.value()?)))
                        .filter(|(k, _)| k.starts_with("csis_"))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                })
            })
            .collect();
        Ok((items, page.next_token().map(str::to_string)))
    })?;
    out.sort_by(|a, b| a.build_id.cmp(&b.build_id));
    Ok(out)
}

/// Every instance launched on `runtime` that is not terminated, by its
/// `csis_instance` name: its id, power state and the AMI it booted.
pub fn instances(clients: &Clients, runtime: &str) -> Result<Vec<ObservedInstance>, String> {
    let mut out = paged(|token| {
        let page = clients
            .block_on(
                clients
                    .ec2
                    .describe_instances()
                    .filters(filter("tag:csis_runtime", &[runtime]))
                    .filters(standing())
                    .set_next_token(token)
                    .send(),
            )
            .map_err(|e| format!("EC2 DescribeInstances: {}", said(e)))?;
        let items = page
            .reservations()
            .iter()
            .flat_map(|r| r.instances())
            .filter_map(|i| {
                Some(ObservedInstance {
                    name: tag(i.tags(), "csis_instance")?.to_string(),
                    instance_id: i.instance_id().map(str::to_string),
                    power: i.state().and_then(|s| s.name()).map(|s| power(s.as_str())),
                    boot_image: i.image_id().map(str::to_string),
                })
            })
            .collect();
        Ok((items, page.next_token().map(str::to_string)))
    })?;
    out.sort_by(|a, b| (&a.name, &a.instance_id).cmp(&(&b.name, &b.instance_id)));
    Ok(out)
}

/// EC2's instance state as csis's power vocabulary: a machine starting
/// is running, one stopping is stopped.
fn power(state: &str) -> String {
    match state {
        "pending" | "running" => "running",
        "stopping" | "stopped" => "stopped",
        other => other,
    }
    .to_string()
}

/// The storage names (`csis_storage`) of every EBS volume in the region.
pub fn volumes(clients: &Clients) -> Result<Vec<String>, String> {
    let mut out = paged(|token| {
        let page = clients
            .block_on(
                clients
                    .ec2
                    .describe_volumes()
                    .filters(filter("tag-key", &["csis_storage"]))
                    .set_next_token(token)
                    .send(),
            )
            .map_err(|e| format!("EC2 DescribeVolumes: {}", said(e)))?;
        let items = page
            .volumes()
            .iter()
            .filter_map(|v| tag(v.tags(), "csis_storage").map(str::to_string))
            .collect();
        Ok((items, page.next_token().map(str::to_string)))
    })?;
    out.sort();
    out.dedup();
    Ok(out)
}

pub fn observe(clients: &Clients, runtime: &str, tree: &str) -> Result<Observed, String> {
    Ok(Observed {
        images: images(clients, tree)?,
        storages: volumes(clients)?,
        instances: instances(clients, runtime)?,
        debris: Vec::new(),
    })
}

/// The EBS snapshots behind the AMI `build_id` this account owns; `None`
/// when EC2 has no such AMI.
fn own_image_snapshots(clients: &Clients, build_id: &str) -> Result<Option<Vec<String>>, String> {
    let image = found_by_id(
        &format!("EC2 DescribeImages {build_id}"),
        clients.block_on(
            clients
                .ec2
                .describe_images()
                .image_ids(build_id)
                .owners("self")
                .send(),
        ),
        |o| o.images().first().cloned(),
    )?;
    Ok(image.map(|image| {
        image
            .block_device_mappings()
            .iter()
            .filter_map(|m| m.ebs().and_then(|e| e.snapshot_id()))
            .map(str::to_string)
            .collect()
    }))
}

/// Deregister `build_id` (an AMI this account owns), then delete the EBS
/// snapshots its block devices were registered from. An AMI EC2 no
/// longer knows is already gone: nothing to do.
pub fn dispose(clients: &Clients, build_id: &str) -> Result<(), String> {
    let Some(snapshots) = own_image_snapshots(clients, build_id)? else {
        return Ok(());
    };
    clients
        .block_on(clients.ec2.deregister_image().image_id(build_id).send())
        .map_err(|e| format!("EC2 DeregisterImage {build_id}: {}", said(e)))?;
    for snap in snapshots {
        clients
            .block_on(clients.ec2.delete_snapshot().snapshot_id(&snap).send())
            .map_err(|e| {
                format!(
                    "EC2 DeleteSnapshot {snap} (of the deregistered {build_id}): {}",
                    said(e)
                )
            })?;
    }
    Ok(())
}

/// Set `tags` on the AMI `build_id` and the snapshots behind it (EC2
/// CreateTags overwrites a key and keeps the others; an empty value is
/// a DeleteTags of that key). An AMI that is not
/// this account's is an error: a relabel or a release never passes one by.
pub fn retag(
    clients: &Clients,
    build_id: &str,
    tags: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    let snapshots = own_image_snapshots(clients, build_id)?
        .ok_or_else(|| format!("EC2 has no image {build_id} owned by this account"))?;
    let mut resources = vec![build_id.to_string()];
    resources.extend(snapshots);
    let tag = |k: &String, v: &String| aws_sdk_ec2::types::Tag::builder().key(k).value(v).build();
    let (gone, set): (Vec<_>, Vec<_>) = tags.iter().partition(|(_, v)| v.is_empty());
    if !set.is_empty() {
        clients
            .block_on(
                clients
                    .ec2
                    .create_tags()
                    .set_resources(Some(resources.clone()))
                    .set_tags(Some(set.into_iter().map(|(k, v)| tag(k, v)).collect()))
                    .send(),
            )
            .map_err(|e| format!("EC2 CreateTags {build_id}: {}", said(e)))?;
    }
    if !gone.is_empty() {
        let keys = gone
            .into_iter()
            .map(|(k, _)| aws_sdk_ec2::types::Tag::builder().key(k).build());
        clients
            .block_on(
                clients
                    .ec2
                    .delete_tags()
                    .set_resources(Some(resources))
                    .set_tags(Some(keys.collect()))
                    .send(),
            )
            .map_err(|e| format!("EC2 DeleteTags {build_id}: {}", said(e)))?;
    }
    Ok(())
}

/// What `csis runtime describe` shows of an aws runtime: its region, the
/// account its credentials act in (STS GetCallerIdentity), and whether
/// the VPC and each subnet it declares exist there (DescribeVpcs,
/// DescribeSubnets, one id at a time so a missing one is named).
pub fn describe(
    clients: &Clients,
    runtime: &csis_plugin_api::BuilderDecl,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    if let Some(cloud) = runtime.cloud() {
        out.push(format!("region: {}", cloud.region.trim()));
    }
    let me = clients
        .block_on(clients.sts.get_caller_identity().send())
        .map_err(|e| format!("STS GetCallerIdentity: {}", said(e)))?;
    out.push(format!("account: {}", me.account().unwrap_or("?")));
    out.push(format!("caller: {}", me.arn().unwrap_or("?")));
    let found = |ok: bool| if ok { "found" } else { "NOT FOUND" };
    if let Some(vpc) = runtime.extra_str("vpc_id") {
        let ok = found_by_id(
            &format!("EC2 DescribeVpcs {vpc}"),
            clients.block_on(clients.ec2.describe_vpcs().vpc_ids(vpc).send()),
            |o| o.vpcs().first().cloned(),
        )?
        .is_some();
        out.push(format!("vpc {vpc}: {}", found(ok)));
    }
    for subnet in runtime
        .cloud()
        .map(|c| c.networking.subnets.as_slice())
        .unwrap_or_default()
    {
        let id = subnet.subnet_id.as_str();
        let ok = found_by_id(
            &format!("EC2 DescribeSubnets {id}"),
            clients.block_on(clients.ec2.describe_subnets().subnet_ids(id).send()),
            |o| o.subnets().first().cloned(),
        )?
        .is_some();
        let zone = subnet
            .availability_zone
            .as_deref()
            .map(|z| format!(" ({z})"))
            .unwrap_or_default();
        out.push(format!("subnet {id}{zone}: {}", found(ok)));
    }
    Ok(out)
}

/// Whether EC2 knows the vendor AMI an OS builder entry names: by id
/// (DescribeImages by id: the AMIs the account may launch, its own,
/// shared or public; an id it cannot parse is as unknown as one it has
/// never seen), or by its query (DescribeImages with the owners and each
/// query key as an EC2 image filter, as Packer's `source_ami_filter`
/// reads them: at least one image matches).
pub fn vendor_image_known(clients: &Clients, image: &VendorImage<'_>) -> Result<bool, String> {
    match image {
        VendorImage::Id(image_id) => {
            let call = format!("EC2 DescribeImages {image_id}");
            match clients.block_on(clients.ec2.describe_images().image_ids(*image_id).send()) {
                Err(e) if said(&e).contains("InvalidAMIID.Malformed") => Ok(false),
                answer => {
                    Ok(found_by_id(&call, answer, |o| o.images().first().cloned())?.is_some())
                }
            }
        }
        VendorImage::Query { query, owners } => {
            let filters = query.iter().map(|(k, v)| filter(k, &v.texts())).collect();
            let found = clients
                .block_on(
                    clients
                        .ec2
                        .describe_images()
                        .set_owners(Some(owners.to_vec()))
                        .set_filters(Some(filters))
                        .send(),
                )
                .map_err(|e| format!("EC2 DescribeImages: {}", said(e)))?;
            Ok(!found.images().is_empty())
        }
    }
}

/// What a Describe call by id found: EC2 answers an id it does not know
/// with an `...NotFound` error (InvalidVpcID.NotFound,
/// InvalidSubnetID.NotFound, InvalidAMIID.NotFound), which is `None`, not
/// a failure.
fn found_by_id<O, E: std::error::Error, T>(
    call: &str,
    answer: Result<O, E>,
    pick: impl FnOnce(O) -> Option<T>,
) -> Result<Option<T>, String> {
    match answer {
        Ok(o) => Ok(pick(o)),
        Err(e) => {
            let e = said(e);
            if e.contains("NotFound") {
                Ok(None)
            } else {
                Err(format!("{call}: {e}"))
            }
        }
    }
}
