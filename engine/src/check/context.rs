//! What the validate-time rules share: the collector each rule writes its
//! refusals into, in the order it finds them, and the lookups they all
//! make (a builder by reference, an item by name, the place an item is
//! declared). Each rule family adds its methods to [`Checks`] in a file of
//! its own; [`super::validate`] runs them in order.

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Origin, Subject, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::{Builders, builders};
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;

pub(super) struct Checks<'a> {
    pub(super) db: &'a dyn Db,
    pub(super) tree: Tree,
    pub(super) b: &'a Builders,
    pub(super) out: Vec<Diagnostic>,
}

impl<'a> Checks<'a> {
    pub(super) fn new(db: &'a dyn Db, tree: Tree) -> Checks<'a> {
        Checks {
            db,
            tree,
            b: builders(db, tree),
            out: Vec::new(),
        }
    }

    pub(super) fn err(&mut self, msg: String, at: Option<Origin>) {
        self.out.push(Diagnostic::error(msg).at_opt(at));
    }

    /// An error that is a consequence when `cause` was refused.
    pub(super) fn err_following(&mut self, msg: String, at: Option<Origin>, cause: Subject) {
        self.out
            .push(Diagnostic::error(msg).at_opt(at).following(cause));
    }

    pub(super) fn builder_of(
        &self,
        vct: Vct,
        reference: &str,
    ) -> Option<Box<dyn csis_plugin_api::Builder>> {
        let d = self.b.resolve(vct, reference)?;
        let spec = self.db.registry().model(d.classification, d.model)?;
        Some((spec.builder)(d))
    }

    /// The item a reference names (as written: its safe name is the key).
    fn named(&self, kind: ItemKind, name: &str) -> &'a crate::load::items_model::StructuredItem {
        let id = ItemId::new(
            self.db,
            self.tree,
            kind,
            csis_model::naming::as_safe_name(name),
        );
        structured_item(self.db, id)
    }

    pub(super) fn origin_of(&self, kind: ItemKind, name: &str) -> Option<Origin> {
        self.named(kind, name).origin.clone()
    }

    pub(super) fn structured(&self, kind: ItemKind, name: &str) -> Option<std::sync::Arc<Item>> {
        self.named(kind, name).item.clone()
    }

    /// A storage by name, when it structured: the structured item itself,
    /// shared, not a copy (asked once per attachment of every instance).
    /// Read it with `let Item::Storage(st) = &*item`.
    pub(super) fn storage(&self, name: &str) -> Option<std::sync::Arc<Item>> {
        self.structured(ItemKind::STORAGES, name)
    }
}
