//! Tag keys that become provider labels: a key on an image, instance or
//! storage that its runtime cannot take as a label is refused at validate,
//! named with the item that declared it, instead of failing at apply.

use csis_model::models::Item;
use csis_model::{Diagnostic, Origin, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;

pub(crate) fn label_keys_of<'db>(db: &'db dyn Db, tree: Tree, id: ItemId<'db>) -> Vec<Diagnostic> {
    let (kind, name) = (id.kind(db), id.name(db));
    let b = builders(db, tree);
    let registry = db.registry();
    // The runtime an item's builder applies on.
    let runtime_of = |vct: Vct, reference: &str| -> Option<String> {
        b.resolve(vct, reference)
            .and_then(|d| d.base.runtime().map(str::to_string))
    };
    let problem = |runtime: &str, key: &str| -> Option<(String, String)> {
        let d = b.resolve(Vct::RuntimeBuilderModel, runtime)?;
        let builder = (registry.model(d.classification, d.model)?.builder)(d);
        builder
            .label_key_problem(key)
            .map(|p| (d.name().to_string(), p))
    };
    let mut out = Vec::new();
    let si = structured_item(db, id);
    let (tags, runtimes) = match si.item.as_deref() {
        Some(Item::Image(img)) => (
            &img.root.tags,
            img.runtimes
                .iter()
                .filter_map(|e| runtime_of(Vct::ImageBuilderModel, &e.image_builder))
                .collect::<Vec<_>>(),
        ),
        Some(Item::Instance(inst)) => (
            &inst.root.tags,
            runtime_of(Vct::InstanceBuilderModel, &inst.root.named.type_)
                .into_iter()
                .collect(),
        ),
        Some(Item::Storage(st)) => (&st.tags, vec![st.runtime.clone()]),
        _ => return out,
    };
    for key in tags.keys() {
        for rt in &runtimes {
            if let Some((runtime, why)) = problem(rt, key) {
                out.push(
                    Diagnostic::error(format!(
                        "{} '{name}': tag key '{key}' cannot be a label on runtime '{runtime}': {why} -- rename the tag key",
                        kind.singular()
                    ))
                    .at_opt(si.origin.as_ref().map(|o: &Origin| o.key("tags").key(key)))
                    .on_key(),
                );
            }
        }
    }
    out
}
