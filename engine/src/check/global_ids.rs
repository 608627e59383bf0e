//! Unique global ids (the spec's check_name_uniquness): the OS builders
//! (each names a base image series), their runtime configurations and the
//! images are identified by name in the dependency tree, in lineage and in
//! the pins (`<series>@<runtime>`), so no two may share one id.
//!
//! Two OS builders or two images with one name are refused at load already
//! (`Duplicate name ... found in list for key ...`); what is left for
//! validate is an image named like an OS builder, which would read as the
//! base image itself, and two `runtimes` entries of one OS builder with one
//! `name` (a runtime configuration's id is its OS builder's and its own).

use std::collections::BTreeMap;

use csis_model::models::BaseBuilder;
use csis_model::{Diagnostic, ItemKind, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;

/// Every id two objects share, in declaration order.
pub fn global_id_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let b = builders(db, tree);
    let mut out = Vec::new();
    let os_builders = b.by_class.get(&Vct::OsBuilderModel);
    for d in os_builders.into_iter().flat_map(|m| m.values()) {
        let BaseBuilder::Os(os) = &d.base else {
            continue;
        };
        let here = b.origins.get(&(Vct::OsBuilderModel, d.name().to_string()));
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, entry) in os.runtimes.iter().enumerate() {
            let Some(name) = entry.name.as_deref() else {
                continue;
            };
            if seen.insert(name, i).is_some() {
                out.push(
                    Diagnostic::error(format!(
                        "Duplicate OS runtime configuration name found: {name} in OS builder {}. Runtime configuration names must be unique within an OS builder.",
                        d.name()
                    ))
                    .at_opt(here.map(|o| o.key("runtimes").index(i).key("name"))),
                );
            }
        }
    }
    for name in item_index(db, tree).names(ItemKind::IMAGES) {
        // As the chain walk resolves a source_image: by name or alias.
        let Some(os) = b.resolve(Vct::OsBuilderModel, name) else {
            continue;
        };
        let si = structured_item(db, ItemId::new(db, tree, ItemKind::IMAGES, name));
        out.push(
            Diagnostic::error(format!(
                "Duplicate image name found: {name}. Global ids must be unique across all builders: OS builder '{}' names the base image series '{name}' -- rename the image",
                os.name()
            ))
            .at_opt(si.origin_of("name")),
        );
    }
    out
}
