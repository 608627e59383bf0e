//! Foreign keys (the spec's validate rows "foreign keys", "a reference
//! written `none`", "image chains" and "image groups"): every field of an
//! image, instance or storage that names a builder or an item names one
//! that is declared. An image's `source_image` chains to a base image or
//! another image, and its owning group is declared; an instance's image
//! has an owning group (Q4); a storage's allowed groups are declared.
//! These are an item's own checks: each reads the one item and the names
//! it points at, so they run per item (see `own_checks::item_diagnostics`).

use csis_model::models::{Image, Instance, Item, Storage, StorageMapping};
use csis_model::{Diagnostic, ItemKind, Origin, Subject, Vct};

use crate::check::context::Checks;
use crate::load::builder_labels::label_in_sentence;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;

impl Checks<'_> {
    /// A foreign key to a builder: `default` resolves to the registered
    /// default, `none` names nothing.
    fn fk_builder(
        &mut self,
        class: &str,
        obj: &str,
        field: &str,
        value: &str,
        vct: Vct,
        at: impl FnOnce() -> Option<Origin>,
    ) {
        let referrer = format!("{} '{obj}' ({field})", class.to_lowercase());
        if csis_model::naming::reserved_word(value) == Some("none") {
            self.err(
                format!(
                    "{referrer} names '{value}', which names nothing and is not this field's default -- leave the field out, or write default, for the default"
                ),
                at(),
            );
        } else if self.b.resolve(vct, value).is_none() {
            let what = label_in_sentence(vct);
            self.out.push(
                Diagnostic::error(csis_model::suggest::undeclared(
                    &referrer,
                    &what,
                    value,
                    self.b.names(vct),
                ))
                .at_opt(at())
                .following(Subject::builder(vct, value)),
            );
        }
    }

    /// A foreign key to an item; `referrer` says in plain words who holds
    /// it ("instance 'box' (storages[0])").
    #[allow(clippy::too_many_arguments)]
    fn fk_item(
        &mut self,
        class: &str,
        obj: &str,
        field: &str,
        value: &str,
        kind: ItemKind,
        at: impl FnOnce() -> Option<Origin>,
        referrer: impl FnOnce() -> String,
    ) {
        let index = item_index(self.db, self.tree);
        let safe = csis_model::naming::safe_name(value);
        if csis_model::naming::reserved_word(value) == Some("none") {
            self.err(
                format!(
                    "{class} '{obj}': field '{field}' names '{value}', which names nothing -- name a declared {}",
                    kind.singular()
                ),
                at(),
            );
        } else if !index.contains(kind, &safe) {
            let declared = index.names(kind);
            self.out.push(
                Diagnostic::error(csis_model::suggest::undeclared(
                    &referrer(),
                    kind.singular(),
                    value,
                    declared,
                ))
                .at_opt(at())
                .following(Subject::item(kind, value)),
            );
        }
    }

    /// An image's keys: each runtime entry's image builder, the source
    /// image it chains to, its owning group.
    pub(super) fn image_keys(&mut self, img: &Image, origin: Option<&Origin>) {
        let at = |k: &str| origin.map(|o| o.key(k));
        let name = img.root.name();
        for (i, e) in img.runtimes.iter().enumerate() {
            let place = || origin.map(|o| o.key("runtimes").index(i).key("image_builder"));
            self.fk_builder(
                "Image",
                name,
                "image_builder",
                &e.image_builder,
                Vct::ImageBuilderModel,
                place,
            );
        }
        if let Some(parent) = img.source_image.as_deref() {
            let safe = csis_model::naming::safe_name(parent);
            let is_base = self.b.resolve(Vct::OsBuilderModel, &safe).is_some();
            let index = item_index(self.db, self.tree);
            if !is_base && !index.contains(ItemKind::IMAGES, &safe) {
                let mut declared: Vec<&str> = index
                    .names(ItemKind::IMAGES)
                    .chain(self.b.names(Vct::OsBuilderModel))
                    .collect();
                declared.sort_unstable();
                self.out.push(
                    Diagnostic::error(format!(
                        "image '{name}' does not chain to a base image (source_image={parent})"
                    ))
                    .at_opt(at("source_image"))
                    .help(csis_model::suggest::undeclared(
                        &format!("image '{name}' (source_image)"),
                        "image or OS builder",
                        parent,
                        declared,
                    ))
                    .following(Subject::item(ItemKind::IMAGES, parent))
                    .following(Subject::builder(Vct::OsBuilderModel, parent)),
                );
            }
        }
        let index = item_index(self.db, self.tree);
        if let Some(g) = img.group.as_deref()
            && !index.contains(ItemKind::GROUPS, &csis_model::naming::safe_name(g))
        {
            self.out.push(
                Diagnostic::error(format!("image '{name}' names unknown owning group '{g}'"))
                    .at_opt(at("group"))
                    .help(csis_model::suggest::undeclared(
                        &format!("image '{name}' (group)"),
                        "group",
                        g,
                        index.names(ItemKind::GROUPS),
                    ))
                    .following(Subject::item(ItemKind::GROUPS, g)),
            );
        }
    }

    /// An instance's keys: its image (which has an owning group), its
    /// runtime, the storages it maps.
    pub(super) fn instance_keys(
        &mut self,
        inst: &Instance,
        storages: &[StorageMapping],
        origin: Option<&Origin>,
    ) {
        let at = |k: &str| origin.map(|o| o.key(k));
        let name = inst.root.name();
        if let Some(image) = inst.image.as_deref() {
            self.fk_item(
                "Instance",
                name,
                "image",
                image,
                ItemKind::IMAGES,
                || at("image"),
                || format!("instance '{name}'"),
            );
            let id = ItemId::new(
                self.db,
                self.tree,
                ItemKind::IMAGES,
                csis_model::naming::as_safe_name(image),
            );
            if let Some(Item::Image(img)) = structured_item(self.db, id).item.as_deref()
                && img.group.is_none()
            {
                self.err(
                    format!(
                        "instance '{name}' uses image '{}' which has no owning group; every instance image belongs to exactly one group (Q4)",
                        img.root.name()
                    ),
                    at("image"),
                );
            }
        }
        self.fk_builder(
            "Instance",
            name,
            "runtime",
            &inst.runtime,
            Vct::RuntimeBuilderModel,
            || at("runtime"),
        );
        for (i, m) in storages.iter().enumerate() {
            let place = || origin.map(|o| o.key("storages").index(i).key("name"));
            self.fk_item(
                "StorageMapping",
                &m.name,
                "name",
                &m.name,
                ItemKind::STORAGES,
                place,
                || format!("instance '{name}' (storages[{i}])"),
            );
        }
    }

    /// A storage's keys: its runtime, the groups it allows.
    pub(super) fn storage_keys(&mut self, s: &Storage, origin: Option<&Origin>) {
        let at = |k: &str| origin.map(|o| o.key(k));
        let name = s.named.name.clone();
        if !s.runtime.is_empty() {
            self.fk_builder(
                "Storage",
                &name,
                "runtime",
                &s.runtime,
                Vct::RuntimeBuilderModel,
                || at("runtime"),
            );
        }
        let index = item_index(self.db, self.tree);
        for g in &s.groups {
            // ALL is refused at load already.
            if g != "ALL" && !index.contains(ItemKind::GROUPS, &csis_model::naming::safe_name(g)) {
                self.err_following(
                    format!("storage '{name}' allows unknown group '{g}'"),
                    at("groups"),
                    Subject::item(ItemKind::GROUPS, g),
                );
            }
        }
    }
}
