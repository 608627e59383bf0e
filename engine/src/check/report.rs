//! Loading the whole tree: every load-time refusal, gathered.

use std::collections::BTreeSet;

use csis_model::{Diagnostic, ItemKind};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::cfg::cfg_document;
use crate::load::items::{ItemId, item_file_entries, item_index};
use crate::load::items_model::structured_item;
use crate::load::overlay::overlay_document;
use crate::load::reserved::is_reserved_refusal;
use csis_model::models::Item;

/// The diagnostics of a load, in reading order: cfg/, the builders, the
/// item files, each item, then the checks across items.
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
    for f in tree.item_files(db) {
        out.extend(item_file_entries(db, tree, f.file).diags.iter().cloned());
    }
    let index = item_index(db, tree);
    out.extend(index.diags.iter().cloned());
    out.extend(crate::check::item_checks::each_item(
        db,
        tree,
        &db.registry().item_kinds(),
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
        crate::check::validate::validation_diagnostics(db, tree)
            .iter()
            .cloned(),
    );
    drop_backstop_repeats(out)
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

/// Exactly one root group; every member and admin a declared user.
#[salsa::tracked(returns(ref))]
pub fn check_groups(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let index = item_index(db, tree);
    let mut out = Vec::new();
    let users: BTreeSet<&str> = index.names(ItemKind::USERS).map(String::as_str).collect();
    let mut roots = 0;
    let mut any_group = false;
    for name in index.names(ItemKind::GROUPS) {
        let id = ItemId::new(db, ItemKind::GROUPS, name.clone());
        let si = structured_item(db, tree, id);
        let Some(Item::Group(g)) = si.item.as_deref() else {
            continue;
        };
        any_group = true;
        if g.is_root {
            roots += 1;
        }
        for member in g.members.iter().chain(g.admins.iter()) {
            let m = csis_model::naming::safe_name(member);
            if !users.contains(m.as_str()) {
                out.push(
                    Diagnostic::error(format!(
                        "Group {} has member {member} which is not in the list of defined users.",
                        g.root.name()
                    ))
                    .at_opt(si.origin.clone().map(|o| o.key("members"))),
                );
            }
        }
    }
    if any_group && roots != 1 {
        out.push(
            Diagnostic::error(format!(
                "Expected exactly one root group (is_root: true), found {roots}"
            ))
            .help("mark exactly one group is_root: true"),
        );
    }
    out
}

/// With `config.require_released_builds`, every instance must be pinned to
/// a released build of its image, or stand under the release grace: its
/// pin is the series head on its runtime, verified in bake, with no failed
/// post-bake record.
#[salsa::tracked(returns(ref))]
pub fn check_released_pins(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    use csis_model::Value;
    let b = crate::load::builders::builders(db, tree);
    let required = b
        .config_map()
        .get("require_released_builds")
        .and_then(Value::as_str)
        .and_then(csis_model::fields::parse_bool)
        .unwrap_or(false);
    if !required {
        return Vec::new();
    }
    let pins = &crate::state::lineage::pins(db, tree).value;
    let lineage = &crate::state::lineage::lineage(db, tree).value;
    let releases = &crate::state::lineage::releases(db, tree).value;
    let mut out = Vec::new();
    for (instance, build) in &pins.instances {
        let Some(rec) = lineage.build(build) else {
            out.push(Diagnostic::error(format!(
                "instance '{instance}' is pinned to build {build}, which is not recorded in lineage (config.require_released_builds) -- forget instance for a record that outlived its instance"
            )));
            continue;
        };
        let image = &rec.series;
        if releases
            .current
            .values()
            .any(|m| m.get(image) == Some(build))
        {
            continue;
        }
        let head = lineage
            .head(image, &rec.runtime)
            .is_some_and(|h| h.build_id == *build);
        let verified = rec
            .tests
            .get("in_bake")
            .and_then(serde_json::Value::as_bool)
            == Some(true);
        let why = if !head {
            Some("it is not the head of its series".to_string())
        } else if !verified {
            Some("it carries no in-bake verification".to_string())
        } else {
            None
        };
        match why {
            None => out.push(Diagnostic::warning(format!(
                "instance '{instance}' stands on unreleased build {build} of '{image}' under the release grace (the series head, verified in bake)"
            ))),
            Some(why) => out.push(Diagnostic::error(format!(
                "instance '{instance}' is pinned to build {build} of '{image}', which is not a released build (config.require_released_builds; no grace: {why}) -- release it, upgrade instance back, or forget instance for a record that outlived its instance"
            ))),
        }
    }
    out
}
