//! The vendor images OS builders pin by `image_id`, asked of each
//! runtime's provider at validate (and at a run's head unless
//! `--no-state-query`): an id the region does not know is refused at the
//! entry, where a bake would otherwise fail minutes in. A provider that
//! cannot be asked is a note, never a refusal. It reaches the network,
//! so it is no query: validate and every run call it afresh.

use std::collections::BTreeMap;

use csis_model::models::BaseBuilder;
use csis_model::{Diagnostic, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::builders;

/// (notes, refusals).
pub fn check(db: &dyn Db, tree: Tree) -> (Vec<String>, Vec<Diagnostic>) {
    let b = builders(db, tree);
    let mut hooks: BTreeMap<String, Option<Box<dyn csis_plugin_api::Builder>>> = BTreeMap::new();
    let mut asked: BTreeMap<(String, String), Result<Option<bool>, String>> = BTreeMap::new();
    let mut notes = Vec::new();
    let mut refusals = Vec::new();
    for decl in b
        .by_class
        .get(&Vct::OsBuilderModel)
        .into_iter()
        .flat_map(|m| m.values())
    {
        let BaseBuilder::Os(os) = &decl.base else {
            continue;
        };
        for entry in &os.runtimes {
            let Some(id) = entry.image_id.as_deref() else {
                continue;
            };
            let Some(rt) = b
                .resolve(Vct::ImageBuilderModel, &entry.image_builder)
                .and_then(|d| d.base.runtime().map(str::to_string))
            else {
                continue;
            };
            let Some(rt_decl) = b.resolve(Vct::RuntimeBuilderModel, &rt) else {
                continue;
            };
            let hook = hooks.entry(rt.clone()).or_insert_with(|| {
                db.registry()
                    .model(rt_decl.classification, rt_decl.model)
                    .map(|spec| (spec.builder)(rt_decl))
            });
            let Some(hook) = hook else {
                continue;
            };
            let mut owners = os.owners.clone();
            if let Some(r) = rt_decl.base.runtime_model() {
                owners.extend(r.default_owners.clone().unwrap_or_default());
            }
            owners.extend(entry.owners.clone());
            let answer = asked
                .entry((rt.clone(), id.to_string()))
                .or_insert_with(|| hook.vendor_image_known(id, &owners));
            match answer {
                Ok(Some(false)) => refusals.push(
                    Diagnostic::error(format!(
                        "OS builder {}: image_id '{id}' on runtime {rt} is not known to the provider -- pin an image the runtime's region has (an id from another region or a deregistered one is not), or find it with query: and owners",
                        os.name()
                    ))
                    .at_opt(entry.origin.as_ref().map(|o| o.key("image_id"))),
                ),
                Err(why) => notes.push(format!(
                    "OS builder {}: image_id '{id}' on runtime {rt} not checked: {why}",
                    os.name()
                )),
                Ok(_) => {}
            }
        }
    }
    notes.sort();
    notes.dedup();
    (notes, refusals)
}
