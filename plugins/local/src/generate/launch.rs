//! The launch of a local instance: its spec, the launch script around its
//! `userdata` and the cloud-config it boots with, then the runner's steps
//! after it (the pin, the verification, an ephemeral's teardown).

use csis_model::models::Item;
use csis_model::{ItemKind, Vct};
use csis_plugin_api::{
    Asset, BuilderDecl, Command, ExecutionLifecyclePhase as P, HookContext, HookResult,
    path_for_phase,
};
use serde_json::json;

use super::{Step, names_builder, runtime_of, step, store_in_script, with_network};

/// instance-image, instance-generation: a launch spec, the launch script and
/// the user-data per instance of this builder.
pub fn launches(ctx: &dyn HookContext, me: &BuilderDecl) -> HookResult<Vec<Step>> {
    Ok(ctx
        .item_names(ItemKind::INSTANCES)
        .iter()
        .filter_map(|name| launch(ctx, me, name))
        .collect())
}

/// `item` as an instance, when this builder launches it.
fn own_instance<'a>(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    item: &'a Item,
) -> Option<&'a csis_model::models::Instance> {
    let Item::Instance(inst) = item else {
        return None;
    };
    names_builder(
        ctx,
        Vct::InstanceBuilderModel,
        &inst.root.named.type_,
        me.name(),
    )
    .then_some(inst)
}

/// The launch of one instance, when this builder launches it.
pub fn launch(ctx: &dyn HookContext, me: &BuilderDecl, name: &str) -> Option<Step> {
    let view = ctx.item(ItemKind::INSTANCES, name)?;
    let inst = own_instance(ctx, me, &view.item)?;
    let (runtime, store) = runtime_of(ctx, me);
    let name = inst.root.name();
    let launch = launch_of(ctx, inst);
    let ud_path = path_for_phase(me.name(), P::InstanceGeneration, Some(name), ".user-data");
    let doc_path = path_for_phase(
        me.name(),
        P::InstanceGeneration,
        Some(name),
        ".cloud-config",
    );
    let spec = json!({
        "name": name,
        "runtime": runtime,
        "store": store,
        "image": launch.image,
        "build": ctx.instance_pin(name),
        "group": launch.group,
        "hostname": launch.hostname,
        "storages": view.storages.iter().map(|s| json!({"name": s.name, "mount_point": s.mount_point})).collect::<Vec<_>>(),
        "cloud_config": doc_path,
    });
    let spec = with_network(ctx, me, spec);
    let cloud_config = user_data_document(ctx, name, &launch).render();
    let user_data = launch.script;
    let mut st = step(me.name(), P::InstanceGeneration, name, spec, "launch");
    st.extra_assets.push(Asset::text(ud_path, user_data));
    st.extra_assets.push(Asset::text(doc_path, cloud_config));
    let launched = format!("{}/instances/{name}/instance.json", store_in_script(&store));
    st.commands.push(Command::csis([
        "--root-dir",
        "${CSIS_ROOT}",
        "lineage",
        "bind-instance",
        "--instance",
        name,
        "--launched",
        launched.as_str(),
    ]));
    // Verified as it launches (csis_plugin_api::verify_step).
    let mut verify = vec!["--root-dir".to_string(), "${CSIS_ROOT}".into()];
    verify.extend(csis_plugin_api::verify_step::verify_words(ctx, inst));
    st.commands.push(Command::csis(verify));
    if inst.ephemeral {
        let spec_path = path_for_phase(me.name(), P::InstanceGeneration, Some(name), ".json");
        st.commands.push(Command::csis([
            "local",
            "teardown",
            "--spec",
            spec_path.as_str(),
        ]));
    }
    Some(st)
}

/// What one instance launches with: its image, the image's group, its
/// canonical hostname and the launch script around its `userdata` lines.
struct Launch {
    image: String,
    group: Option<String>,
    hostname: String,
    script: String,
}

fn launch_of(ctx: &dyn HookContext, inst: &csis_model::models::Instance) -> Launch {
    let name = inst.root.name();
    let image = inst
        .image
        .as_deref()
        .map(csis_model::naming::safe_name)
        .unwrap_or_default();
    let group = ctx
        .item_model(ItemKind::IMAGES, &image)
        .and_then(|item| match item.as_ref() {
            Item::Image(i) => i.group.clone(),
            _ => None,
        });
    let hostname = ctx.canonical_hostname(name, inst.ephemeral);
    let script = format!(
        "#!/usr/bin/env bash\n# csis launch script of instance {name} on the local runtime: the image's csis-launch unit runs it once at first boot, inside its own root\nset -euo pipefail\nexport CSIS_INSTANCE_DIR=\n{}{}mkdir -p /var/lib/csis\ntouch /var/lib/csis/launch-applied\n",
        inst.userdata,
        if inst.userdata.is_empty() || inst.userdata.ends_with('\n') {
            ""
        } else {
            "\n"
        }
    );
    Launch {
        image,
        group,
        hostname,
        script,
    }
}

/// The cloud-config document instance `instance` boots with when `me`
/// launches it: exactly what [`launches`] emits as its `.cloud-config`.
pub fn instance_user_data(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    instance: &str,
) -> Option<csis_plugin_api::cloud_config::UserData> {
    // The model alone: the check asks this of every instance, and the
    // whole view copies its storages.
    let item = ctx.item_model(ItemKind::INSTANCES, instance)?;
    let inst = own_instance(ctx, me, &item)?;
    let launch = launch_of(ctx, inst);
    Some(user_data_document(ctx, inst.root.name(), &launch))
}

/// The instance's user-data as cloud-config: its hostname, the image
/// group's accounts (admins with a sudo grant), the group, the launch
/// script and the csis marker. Encrypted names stay markers here; the
/// private mirror carries the plaintext.
fn user_data_document(
    ctx: &dyn HookContext,
    name: &str,
    launch: &Launch,
) -> csis_plugin_api::cloud_config::UserData {
    use csis_plugin_api::cloud_config::{UserData, WriteFile};
    let Launch {
        image,
        group,
        hostname,
        script,
    } = launch;
    let mut doc = UserData {
        hostname: hostname.clone(),
        accounts: ctx.group_accounts(group.as_deref()),
        ..UserData::default()
    };
    doc.write_files = vec![
        WriteFile {
            path: "/var/lib/csis/launch.sh".into(),
            content: script.clone(),
            permissions: "0755".into(),
        },
        WriteFile {
            path: "/var/lib/csis/instance".into(),
            content: format!("instance {name}\nimage {image}\nhostname {hostname}\n"),
            permissions: "0644".into(),
        },
    ];
    doc
}
