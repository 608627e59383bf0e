//! The vendor images OS builders start their bases from, asked of each
//! runtime's provider at validate (and at a run's head unless
//! `--no-state-query`): an `image_id` the region does not know, or a
//! `query` that matches no image its owners publish, is refused at the
//! entry, where a bake would otherwise fail minutes in. A provider that
//! cannot be asked is a note, never a refusal. It reaches the network,
//! so it is no query: validate and every run call it afresh.

use std::collections::BTreeMap;

use csis_model::models::BaseBuilder;
use csis_model::{Diagnostic, Map, Vct};
use csis_plugin_api::VendorImage;

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
            let Some(rt) = b
                .resolve(Vct::ImageBuilderModel, &entry.image_builder)
                .and_then(|d| d.base.runtime().map(str::to_string))
            else {
                continue;
            };
            let Some(rt_decl) = b.resolve(Vct::RuntimeBuilderModel, &rt) else {
                continue;
            };
            let mut owners = os.owners.clone();
            if let Some(r) = rt_decl.base.runtime_model() {
                owners.extend(r.default_owners.clone().unwrap_or_default());
            }
            owners.extend(entry.owners.clone());
            let mut query = os.query.clone();
            query.extend(entry.query.iter().map(|(k, v)| (k.clone(), v.clone())));
            // What the entry names, as its message says it.
            let (image, named) = match entry.image_id.as_deref() {
                Some(id) => (VendorImage::Id(id), format!("image_id '{id}'")),
                None if !query.is_empty() => (
                    VendorImage::Query {
                        query: &query,
                        owners: &owners,
                    },
                    format!(
                        "query {} with owners [{}]",
                        query_text(&query),
                        owners.join(", ")
                    ),
                ),
                None => continue,
            };
            let hook = hooks.entry(rt.clone()).or_insert_with(|| {
                db.registry()
                    .model(rt_decl.classification, rt_decl.model)
                    .map(|spec| (spec.builder)(rt_decl))
            });
            let Some(hook) = hook else {
                continue;
            };
            let answer = asked
                .entry((rt.clone(), named.clone()))
                .or_insert_with(|| hook.vendor_image_known(&image));
            // The key that names it in the entry (a query may be the OS
            // builder's own, merged in: then the entry itself).
            let key = if entry.image_id.is_some() {
                "image_id"
            } else if !entry.query.is_empty() {
                "query"
            } else {
                "image_builder"
            };
            let at = entry.origin.as_ref().map(|o| o.key(key));
            match answer {
                Ok(Some(false)) if entry.image_id.is_some() => refusals.push(
                    Diagnostic::error(format!(
                        "OS builder {}: {named} on runtime {rt} is not known to the provider -- pin an image the runtime's region has (an id from another region or a deregistered one is not), or find it with query: and owners",
                        os.name()
                    ))
                    .at_opt(at),
                ),
                Ok(Some(false)) => refusals.push(
                    Diagnostic::error(format!(
                        "OS builder {}: {named} on runtime {rt} matches no image the provider knows -- check the name pattern and the owners (the account that publishes the image), or pin one with image_id:",
                        os.name()
                    ))
                    .at_opt(at),
                ),
                Err(why) => notes.push(format!(
                    "OS builder {}: {named} on runtime {rt} not checked: {why}",
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

/// A query as the message shows it: `{name: debian-12-amd64-*}`.
fn query_text(query: &Map) -> String {
    let parts: Vec<String> = query
        .iter()
        .map(|(k, v)| match v {
            csis_model::Value::Seq(_) => format!("{k}: [{}]", v.texts().join(", ")),
            other => format!("{k}: {}", other.as_str().unwrap_or_default()),
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}
