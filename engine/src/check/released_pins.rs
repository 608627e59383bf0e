//! Released pins (the spec's validate row "released pins"): with
//! `config.require_released_builds`, no instance stands on a build that
//! was not released, unless it is under the release grace (the series head
//! on its runtime, verified in bake), which is a warning. A pin to a build
//! lineage does not record is refused too: nothing could say it was
//! released.

use csis_model::Diagnostic;

use crate::db::{Db, Tree};

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
