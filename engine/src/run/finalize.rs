//! The finalize hooks around each phase of a real apply: every builder's
//! pre/post_finalize_phase, in hook order.

use csis_plugin_api::{Builder, ExecutionLifecyclePhase};

use crate::db::Db;
use crate::load::builders::builders;
use crate::run::hook_order::decls_in_hook_order;
use crate::workspace::Workspace;

/// Every builder, constructed, in hook order (for the finalize hooks).
pub(super) fn builders_in_hook_order(ws: &Workspace) -> Vec<Box<dyn Builder>> {
    decls_in_hook_order(builders(&ws.db, ws.tree))
        .into_iter()
        .filter_map(|d| {
            let spec = ws.db.registry().model(d.classification, d.model)?;
            Some((spec.builder)(d))
        })
        .collect()
}

pub(super) fn finalize_hooks(
    builders: &[Box<dyn Builder>],
    phase: ExecutionLifecyclePhase,
    pre: bool,
) -> Result<(), String> {
    for b in builders {
        let r = if pre {
            b.pre_finalize_phase(phase)
        } else {
            b.post_finalize_phase(phase)
        };
        if let Err(diags) = r {
            let msgs: Vec<String> = diags.into_iter().map(|d| d.message).collect();
            let which = if pre { "pre" } else { "post" };
            return Err(format!(
                "{which}_finalize_phase failed: {}",
                msgs.join("; ")
            ));
        }
    }
    Ok(())
}
