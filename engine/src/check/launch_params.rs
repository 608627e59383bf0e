//! Launched instances are immutable (N26): a launched instance whose
//! launch parameters changed refuses validation unless the change is a
//! sanctioned exit (its pin moved: an upgrade or a follow target, which
//! replaces the machine) or only removes mounts (a detach). The record and
//! the parameters are state/launch_params.rs's; this is the rule.

use csis_model::{Diagnostic, ItemKind};

use crate::db::{Db, Tree};
use crate::load::items::{ItemId, item_index};
use crate::state::launch_params::{bound_only, changed_keys, compute, launch_record, replaced};

/// A launched instance whose parameters changed without a sanctioned exit.
pub fn immutability_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let record = launch_record(db, tree);
    let mut out = record.diags.clone();
    let index = item_index(db, tree);
    for (name, r) in &record.value.instances {
        if r.launched && index.contains(ItemKind::INSTANCES, name) {
            let id = ItemId::new(db, tree, ItemKind::INSTANCES, name.as_str());
            out.extend(immutability_of(db, id).iter().cloned());
        }
    }
    out
}

/// One launched instance's check: its own query, so an edit elsewhere does
/// not recompute every instance's parameters.
#[salsa::tracked(returns(ref))]
fn immutability_of<'db>(db: &'db dyn Db, id: ItemId<'db>) -> Option<Diagnostic> {
    let tree = id.tree(db);
    let record = &launch_record(db, tree).value;
    let name = id.name(db);
    let r = record.instances.get(name.as_str())?;
    let params = compute(db, tree, record, name)?;
    if replaced(&r.params, &params) {
        return None;
    }
    let mut keys = changed_keys(&r.params, &params);
    if bound_only(&r.params) {
        keys.retain(|k| k != "build");
    }
    if keys.is_empty() {
        return None;
    }
    Some(
        Diagnostic::error(format!(
            "instance '{name}' was launched (run {}) and its launch parameters changed ({}); launch parameters are immutable after launch -- replace the instance (upgrade instance, or decommission and redeclare) (N26)",
            r.launched_run.as_deref().unwrap_or(&r.run),
            keys.join(", ")
        ))
        .help(format!(
            "a running machine keeps what it was launched with: undo the change to {}, or let a new machine take it (`csis upgrade instance {name}`, or remove the instance, run, and declare it again)",
            keys.join(", ")
        )),
    )
}
