//! The runtime an image builder bakes on (with its hooks, refused when it
//! has no packer source), and who logs in to bake there: the bake-user
//! order of an OS builder entry, and the OS builder an image's chain
//! starts from.

use std::sync::Arc;

use csis_model::models::{Item, OsBuilderModel};
use csis_model::{ItemKind, Vct};
use csis_plugin_api::{Builder, BuilderDecl, HookContext, HookResult};

use super::refuse;

pub(super) fn set(name: &str) -> Option<String> {
    let n = name.trim();
    (!n.is_empty() && n != "default").then(|| n.to_string())
}

/// The runtime an image builder bakes on, and its hooks.
pub(super) struct Runtime {
    pub(super) decl: Arc<BuilderDecl>,
    pub(super) hooks: Box<dyn Builder>,
}

pub(super) fn runtime_of(ctx: &dyn HookContext, me: &BuilderDecl) -> HookResult<Runtime> {
    let reference = me.base.runtime().unwrap_or("default");
    let Some(decl) = ctx.builder(Vct::RuntimeBuilderModel, reference) else {
        return refuse(format!(
            "image builder '{}': runtime '{reference}' is not declared",
            me.name()
        ));
    };
    let Some(hooks) = ctx.builder_hooks(&decl) else {
        return refuse(format!(
            "image builder '{}': runtime '{}' has no registered model",
            me.name(),
            decl.name()
        ));
    };
    if let Some(problem) = runtime_problem(me, &decl, hooks.as_ref()) {
        return refuse(problem);
    }
    Ok(Runtime { decl, hooks })
}

/// Why image builder `me` cannot bake on `runtime`: it has no packer
/// source. Asked at load (`Builder::runtime_problem`) and again at
/// generation.
pub fn runtime_problem(
    me: &BuilderDecl,
    runtime: &BuilderDecl,
    hooks: &dyn Builder,
) -> Option<String> {
    hooks.packer_plugin().is_none().then(|| {
        format!(
            "image builder '{}' bakes with packer, but runtime '{}' (type {}) has no packer source -- point the image builder's runtime at an aws or gce runtime",
            me.name(),
            runtime.name(),
            runtime.model
        )
    })
}

/// The bake user of an OS builder on a runtime, in the bake-user order
/// from the entry on: the entry's ssh_username, the OS builder's
/// config_username, the runtime's default_config_username, the runtime's
/// default for the family.
pub(super) fn os_bake_user(os: &OsBuilderModel, entry_user: &str, rt: &Runtime) -> Option<String> {
    set(entry_user)
        .or_else(|| os.config_username.as_deref().and_then(set))
        .or_else(|| {
            rt.decl
                .base
                .runtime_model()
                .and_then(|m| m.default_config_username.as_deref())
                .and_then(set)
        })
        .or_else(|| rt.hooks.default_bake_user(&os.family))
}

/// The OS builder an image's chain starts from.
pub(super) fn chain_root(ctx: &dyn HookContext, image: &str) -> Option<Arc<BuilderDecl>> {
    let mut at = image.to_string();
    for _ in 0..64 {
        if let Some(os) = ctx.builder(Vct::OsBuilderModel, &at) {
            return Some(os);
        }
        let view = ctx.item(ItemKind::IMAGES, &at)?;
        let Item::Image(img) = view.item.as_ref() else {
            return None;
        };
        at = csis_model::naming::safe_name(img.source_image.as_deref()?);
    }
    None
}

/// The OS builder's entry whose image builder bakes on runtime `rt`.
pub(super) fn entry_on<'a>(
    ctx: &dyn HookContext,
    os: &'a OsBuilderModel,
    rt: &str,
) -> Option<&'a csis_model::models::OsBuilderBaseImageBuilderSubconfig> {
    os.runtimes.iter().find(|e| {
        ctx.builder(Vct::ImageBuilderModel, &e.image_builder)
            .and_then(|b| b.base.runtime().map(str::to_string))
            .and_then(|r| ctx.builder(Vct::RuntimeBuilderModel, &r))
            .is_some_and(|r| r.name() == rt)
    })
}
