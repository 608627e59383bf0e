//! The operations on recorded builds and pins, as the cli's `upgrade`,
//! `forget`, `release`, `dispose` and `lineage bind-instance` commands run
//! them: each reads the meta-state files it changes, refuses with the
//! spec's message when it must, and writes each file whole.
//!
//! - `pins.rs`: `lineage bind-instance`, `upgrade`, `forget` (and the
//!   ephemeral instances a real apply forgets).
//! - `release.rs`: `release` and `release --declared`, with the refusals.
//! - `builds.rs`: `dispose` (with the retention policy) and
//!   `lineage restamp`, on lineage's build records.
//! - `verify.rs`: `verify instance` and `verify assert`, the verdicts in
//!   verifications.yaml and image-tests.yaml (which `release` reads).
//! - `mod_tests.rs`: `test-mods`, the modifications tested twice by their
//!   runtime, into mod-tests.yaml (which `release` reads).

mod builds;
mod import;
pub mod mod_tests;
mod pins;
mod relabel;
mod release;
mod release_tags;
mod runtimes;
pub mod verify;

use csis_model::models::Item;
use csis_model::{ItemKind, Vct};

use crate::db::system::System;
use crate::load::builders::builders;
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;
use crate::state::lineage::{Lineage, PinMove, Pins, read_json};
use crate::workspace::Workspace;

/// What an operation needs: the loaded tree, the door to the disk and the
/// run it belongs to (for the journal).
pub struct Ops<'a> {
    pub ws: &'a Workspace,
    pub system: &'a dyn System,
    pub run: String,
}

impl Ops<'_> {
    /// A runtime's hooks, by the runtime's name as declared or resolved
    /// (`default`); the error names it, after `what` (the command).
    fn runtime_hooks(
        &self,
        what: &str,
        runtime: &str,
    ) -> Result<(String, Box<dyn csis_plugin_api::Builder>), String> {
        use crate::db::Db;
        let b = builders(&self.ws.db, self.ws.tree);
        let decl = b
            .resolve(Vct::RuntimeBuilderModel, runtime)
            .ok_or_else(|| format!("{what}: unknown runtime '{runtime}'"))?;
        let spec = self
            .ws
            .db
            .registry()
            .model(decl.classification, decl.model)
            .ok_or_else(|| format!("{what}: runtime '{runtime}' has no builder"))?;
        Ok((decl.name().to_string(), (spec.builder)(decl)))
    }

    fn lineage(&self) -> Result<Lineage, String> {
        read_json(self.system, &self.ws.root, "lineage.yaml")
    }

    fn pins(&self) -> Result<Pins, String> {
        read_json(self.system, &self.ws.root, "pins.yaml")
    }

    fn image(&self, name: &str) -> Option<std::sync::Arc<Item>> {
        let db = &self.ws.db;
        let id = ItemId::new(
            db,
            self.ws.tree,
            ItemKind::IMAGES,
            csis_model::naming::as_safe_name(name),
        );
        structured_item(db, id).item.clone()
    }

    /// The runtimes an image bakes on, in its declared order.
    fn image_runtimes(&self, name: &str) -> Vec<String> {
        let b = builders(&self.ws.db, self.ws.tree);
        let mut out: Vec<String> = Vec::new();
        if let Some(Item::Image(img)) = self.image(name).as_deref() {
            for e in &img.runtimes {
                if let Some(rt) = b
                    .resolve(Vct::ImageBuilderModel, &e.image_builder)
                    .and_then(|d| d.base.runtime().map(str::to_string))
                    && !out.contains(&rt)
                {
                    out.push(rt);
                }
            }
        }
        out
    }

    fn journal(
        &self,
        pins: &mut Pins,
        kind: &str,
        name: &str,
        from: Option<String>,
        to: Option<String>,
        op: &str,
    ) {
        pins.upgrades.push(PinMove {
            kind: kind.into(),
            name: name.into(),
            from,
            to,
            run: self.run.clone(),
            op: op.into(),
        });
    }
}
