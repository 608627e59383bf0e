//! Loading the whole tree: every load-time refusal, gathered in reading
//! order, then the validate-time checks ([`super::validate`]).

use csis_model::Diagnostic;

use crate::check::groups::check_groups;
use crate::check::released_pins::check_released_pins;
use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::cfg::cfg_document;
use crate::load::items::item_index;
use crate::load::overlay::overlay_document;
use crate::load::reserved::is_reserved_refusal;

/// The diagnostics of a load, in reading order: cfg/, the builders, the
/// item files, each item, then the checks across items; what only follows
/// from an earlier refusal is folded under it (csis_model::cause).
#[salsa::tracked(returns(ref))]
pub fn load_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = cfg_document(db, tree).diags.clone();
    if out.iter().any(Diagnostic::is_error)
        && cfg_document(db, tree).map().is_none_or(|m| m.is_empty())
    {
        return out;
    }
    for file in tree.overlays(db) {
        out.extend(overlay_document(db, *file).diags.iter().cloned());
    }
    out.extend(builders(db, tree).diags.iter().cloned());
    out.extend(
        crate::check::builder_lists::missing_builder_lists(db, tree)
            .iter()
            .cloned(),
    );
    out.extend(crate::check::item_checks::entries_diagnostics(db, tree));
    let index = item_index(db, tree);
    out.extend(index.diags.iter().cloned());
    out.extend(crate::check::item_checks::each_item(
        db,
        tree,
        crate::check::item_checks::ItemCheck::Structure,
    ));
    out.extend(check_groups(db, tree).iter().cloned());
    for record in [
        &crate::state::lineage::lineage(db, tree).diags,
        &crate::state::lineage::pins(db, tree).diags,
    ] {
        out.extend(record.iter().cloned());
    }
    out.extend(check_released_pins(db, tree).iter().cloned());
    out.extend(
        crate::check::unfilled::unfilled_values(db, tree)
            .iter()
            .cloned(),
    );
    out.extend(
        crate::check::validate::validation_diagnostics(db, tree)
            .iter()
            .cloned(),
    );
    csis_model::cause::fold_consequences(drop_backstop_repeats(once_per_missing_env(out)))
}

/// `--tolerate-missing-env` warns once per variable name, at its first use.
fn once_per_missing_env(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = std::collections::BTreeSet::new();
    diags
        .into_iter()
        .filter(|d| {
            d.is_error()
                || !d
                    .message
                    .starts_with(crate::load::interp::MISSING_ENV_WARNING)
                || seen.insert(d.message.clone())
        })
        .collect()
}

/// Drop the model backstop's repeat of a reserved-name refusal at the same
/// place.
fn drop_backstop_repeats(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let reserved: Vec<_> = diags
        .iter()
        .filter(|d| is_reserved_refusal(d))
        .filter_map(|d| d.origin.clone())
        .collect();
    diags
        .into_iter()
        .filter(|d| {
            is_reserved_refusal(d)
                || !d.is_error()
                || d.origin.as_ref().is_none_or(|o| !reserved.contains(o))
        })
        .collect()
}
