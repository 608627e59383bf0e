//! Capabilities (the spec's validate row "capabilities"): an image whose
//! group's identity type, or an attached storage's type, its chain's root
//! base does not carry is refused, read through the pins to the stamped
//! build, else the declaration: a machine baked without the capability
//! could not take the identity or mount the storage. An image's group
//! whose builder provides no identity type is reported once per group.
//! One query per image, so an edit re-runs the checks of the images it
//! reaches only.

use std::collections::BTreeSet;

use csis_model::models::{BaseBuilder, Item};
use csis_model::{Diagnostic, ItemKind, Subject, Vct};

use crate::check::context::Checks;
use crate::check::kept_capabilities::{Carries, Parts, kept_image, kept_storage};
use crate::db::{Db, SourceFile, Tree};
use crate::load::items::{ItemId, indexed_of_kind};
use crate::load::items_model::structured_item;
use crate::load::kept_instances::{
    InstanceLinks, InstanceRef, KeptInstances, every_instance_but, file_instances, kept_instances,
};

/// Every image's capability findings, in name order; a group without an
/// identity builder is reported once, at the first image that meets it.
pub(super) fn capability_report(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut no_identity: BTreeSet<&str> = BTreeSet::new();
    for id in indexed_of_kind(db, tree, ItemKind::IMAGES) {
        let Some(found) = image_findings(db, id) else {
            continue;
        };
        if let Some(g) = found.group_without_identity.as_deref()
            && no_identity.insert(g)
        {
            let origin = structured_item(
                db,
                ItemId::new(
                    db,
                    tree,
                    ItemKind::GROUPS,
                    csis_model::naming::as_safe_name(g),
                ),
            )
            .origin
            .clone();
            out.push(
                Diagnostic::error(format!("group '{g}' has no identity builder"))
                    .at_opt(origin)
                    .following(Subject::Builder(Vct::GroupBuilderModel.sanitize(), None)),
            );
        }
        out.extend(found.diagnostics.iter().cloned());
    }
    out
}

/// What one image's capability check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CapabilityFindings {
    /// The image's group, when no identity builder serves it.
    group_without_identity: Option<String>,
    diagnostics: Vec<Diagnostic>,
}

/// One image's capability findings; `None`, without a query, for an image
/// whose own part the cache kept as finding nothing and that no instance
/// left to check launches (after an instances edit, every image but the
/// edited file's): its check would find nothing.
pub(crate) fn image_findings<'db>(
    db: &'db dyn Db,
    id: ItemId<'db>,
) -> Option<&'db CapabilityFindings> {
    let tree = id.tree(db);
    let name = id.name(db).as_str();
    if kept_image(db, tree, name).is_some()
        && !checked_instances_by_image(db, tree).contains_key(name)
    {
        return None;
    }
    Some(capability_diagnostics(db, id))
}

/// One image's capability findings: its own part (`image_part`), or what
/// the persisted cache kept of it (`check::kept_capabilities`), then the
/// storages its instances attach.
#[salsa::tracked(returns(ref))]
fn capability_diagnostics<'db>(db: &'db dyn Db, id: ItemId<'db>) -> CapabilityFindings {
    let tree = id.tree(db);
    let mut v = Checks::new(db, tree);
    let (group_without_identity, carries) = match kept_image(db, tree, id.name(db).as_str()) {
        Some(carries) => (None, carries),
        None => {
            let own = image_part(db, id);
            v.out.extend(own.diagnostics.iter().cloned());
            (own.group_without_identity.clone(), own.carries.as_ref())
        }
    };
    if let Some(carries) = carries {
        v.instances_storages(id, carries);
    }
    CapabilityFindings {
        group_without_identity,
        diagnostics: v.out,
    }
}

/// What an image's capability check reads of the world alone: its group
/// and its chain (`Checks::image_capabilities`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ImagePart {
    /// The image's group, when no identity builder serves it.
    group_without_identity: Option<String>,
    diagnostics: Vec<Diagnostic>,
    /// What its chain carries; `None` when its instances' storages are not
    /// checked.
    carries: Option<Carries>,
}

#[salsa::tracked(returns(ref))]
fn image_part<'db>(db: &'db dyn Db, id: ItemId<'db>) -> ImagePart {
    let mut v = Checks::new(db, id.tree(db));
    let mut group_without_identity = None;
    let carries = v.image_capabilities(id, &mut group_without_identity);
    ImagePart {
        group_without_identity,
        diagnostics: v.out,
        carries,
    }
}

/// What the persisted cache may keep of the tree's capabilities
/// (`check::kept_capabilities`): each image whose own part found nothing,
/// and each storage's capability type. Asked by the cache's writer.
pub fn to_keep(db: &dyn Db, tree: Tree) -> Parts {
    let images = indexed_of_kind(db, tree, ItemKind::IMAGES)
        .iter()
        .filter_map(|id| {
            let own = image_part(db, *id);
            (own.group_without_identity.is_none() && own.diagnostics.is_empty())
                .then(|| (id.name(db).to_string(), own.carries.clone()))
        })
        .collect();
    let v = Checks::new(db, tree);
    let storages = indexed_of_kind(db, tree, ItemKind::STORAGES)
        .iter()
        .map(|id| {
            let item = structured_item(db, *id).item.clone();
            (id.name(db).to_string(), v.type_of_storage(item))
        })
        .collect();
    (images, storages)
}

/// Whether every storage `file`'s instances attach is of a type their
/// image's chain carries, or is not checked: what the cache keeps with
/// the file's checks (`KeptInstances::storages_carried`). While the file
/// and the world are as they were, its instances add nothing to any
/// image's findings, and the check does not read them.
pub fn storages_carried(db: &dyn Db, file: SourceFile) -> bool {
    let tree = file.tree(db);
    let v = Checks::new(db, tree);
    let images = crate::load::items::item_index(db, tree)
        .items
        .get(&ItemKind::IMAGES);
    file_instances(db, file).iter().all(|inst| {
        let Some(links) = inst.links(db, tree) else {
            return true;
        };
        // An instance of no image the index holds is in no image's check.
        let Some(image) = links.image().map(csis_model::naming::as_safe_name) else {
            return true;
        };
        if !images.is_some_and(|names| names.contains_key(&*image)) {
            return true;
        }
        let image = ItemId::new(db, tree, ItemKind::IMAGES, image);
        carries_of(db, image).is_none_or(|carries| v.uncarried(&links, carries).is_empty())
    })
}

/// What image `id`'s chain carries, against which its instances'
/// storages are checked: kept, or its own part's; `None` when they are
/// not checked.
fn carries_of<'db>(db: &'db dyn Db, id: ItemId<'db>) -> Option<&'db Carries> {
    match kept_image(db, id.tree(db), id.name(db).as_str()) {
        Some(carries) => carries,
        None => image_part(db, id).carries.as_ref(),
    }
}

/// Instances by the (safe) name of the image they launch, each list in
/// index order, whose storages the check reads: all but those of a file
/// the cache kept with its storages carried ([`storages_carried`]). By
/// name and place (`InstanceRef`), so that a kept file's instances are
/// neither structured nor interned.
#[salsa::tracked(returns(ref))]
fn checked_instances_by_image(db: &dyn Db, tree: Tree) -> InstancesByImage {
    let mut out = InstancesByImage::default();
    let carried = |file| kept_instances(db, file).is_some_and(KeptInstances::storages_carried);
    for instance in every_instance_but(db, tree, carried) {
        if let Some(links) = instance.links(db, tree)
            && let Some(image) = links.image()
        {
            out.entry(csis_model::naming::safe_name(image))
                .or_default()
                .push(instance.clone());
        }
    }
    out
}

/// Instances by image: looked up by image only, so hashed (by std's
/// hasher: a memo must be a `salsa::SalsaValue`, which foldhash's state
/// is not).
type InstancesByImage = std::collections::HashMap<String, Vec<InstanceRef>>;

/// The instances of one image whose storages are checked: its own query,
/// so an instance edit that moves no instance between images re-runs no
/// image's checks.
#[salsa::tracked(returns(ref))]
fn image_instances<'db>(db: &'db dyn Db, image: ItemId<'db>) -> Vec<InstanceRef> {
    checked_instances_by_image(db, image.tree(db))
        .get(image.name(db).as_str())
        .cloned()
        .unwrap_or_default()
}

impl<'a> Checks<'a> {
    /// An image whose group's identity type its chain's root base does not
    /// carry: through the pins to the stamped build, else the declaration.
    /// Sets `group_without_identity` when no identity builder serves the
    /// image's group. Returns what the chain carries, against which its
    /// instances' storages are checked; `None` when they are not.
    fn image_capabilities(
        &mut self,
        image: ItemId<'a>,
        group_without_identity: &mut Option<String>,
    ) -> Option<Carries> {
        let name = image.name(self.db).as_str();
        let pins = &crate::state::lineage::pins(self.db, self.tree).value;
        let image_item = structured_item(self.db, image).item.clone()?;
        let Item::Image(img) = &*image_item else {
            return None;
        };
        let (root, chain) = crate::plan::fingerprint::chain_root(self.db, self.tree, name)?;
        let b = self.b;
        let Some(BaseBuilder::Os(os)) = b.resolve(Vct::OsBuilderModel, &root).map(|d| &d.base)
        else {
            return None;
        };
        // A pinned build's stamp governs: walk the pins toward the root.
        // A series' pins are the keys from `<series>@` on, in order: the
        // first is found by the ordered map, not by reading every pin.
        let stamped = chain.iter().skip(1).find_map(|s| {
            let prefix = format!("{s}@");
            let pin = pins
                .images
                .range(prefix.clone()..)
                .next()
                .filter(|(k, _)| k.starts_with(&prefix))?
                .1;
            let rec = crate::state::lineage::build_of(self.db, self.tree, pin)?;
            Some((rec.capabilities.clone(), format!("pin:{pin}")))
        });
        let (ids, sts, source) = match stamped {
            Some((c, src)) => (c.identity_types, c.storage_types, src),
            None => (
                os.identity_types.clone(),
                os.storage_types.clone(),
                "declaration".to_string(),
            ),
        };
        if let Some(g) = img.group.as_deref() {
            let group_item = self.structured(ItemKind::GROUPS, g)?;
            let Item::Group(group) = &*group_item else {
                return None;
            };
            let identity = self
                .builder_of(Vct::GroupBuilderModel, &group.root.named.type_)
                .and_then(|b| b.identity_type().map(str::to_string));
            match identity {
                None => *group_without_identity = Some(g.to_string()),
                Some(t) if !ids.contains(&t) => {
                    // A chain not baked yet needs the declaration only; a
                    // baked one carries the types it was baked with.
                    let remedy = if source == "declaration" {
                        format!("add '{t}' to identity_types of OS builder '{root}'")
                    } else {
                        format!(
                            "add '{t}' to identity_types of OS builder '{root}' and re-bake the chain (its pinned build was baked without it)"
                        )
                    };
                    self.err(
                        format!(
                            "image '{name}' uses an identity type its base '{root}' does not declare: '{t}' (declared: [{}], via {source}) -- {remedy}",
                            ids.join(", ")
                        ),
                        structured_item(self.db, image).origin.as_ref().map(|o| o.key("group")),
                    );
                }
                Some(_) => {}
            }
        }
        Some(Carries {
            root,
            source,
            storage_types: sts,
        })
    }

    /// An attached storage whose type the image's chain does not carry,
    /// once per storage.
    fn instances_storages(&mut self, image: ItemId<'a>, carries: &Carries) {
        let name = image.name(self.db).as_str();
        let Carries {
            root,
            source,
            storage_types: sts,
        } = carries;
        let mut reported: BTreeSet<String> = BTreeSet::new();
        for inst in image_instances(self.db, image) {
            let Some(links) = inst.links(self.db, self.tree) else {
                continue;
            };
            for (storage, t) in self.uncarried(&links, carries) {
                if reported.insert(storage.to_string()) {
                    // Where, only for a refusal: a kept instance is not
                    // structured otherwise.
                    let at =
                        structured_item(self.db, inst.id(self.db, self.tree)).origin_of("storages");
                    self.err(
                        format!(
                            "image '{name}' attaches storage '{storage}' of type '{t}' which base '{root}' does not declare (declared: [{}], via {source}) -- declare the type on the OS builder and re-bake the chain",
                            sts.join(", ")
                        ),
                        at,
                    );
                }
            }
        }
    }

    /// Each storage the instance attaches whose capability type the
    /// chain does not carry, with that type.
    fn uncarried<'l>(
        &self,
        links: &'l InstanceLinks<'_>,
        carries: &Carries,
    ) -> Vec<(&'l str, String)> {
        links
            .storages()
            .into_iter()
            .filter_map(|storage| {
                let t = self.storage_type(storage)?;
                (!carries.storage_types.contains(&t)).then_some((storage, t))
            })
            .collect()
    }

    /// The capability type storage `name`'s builder asks its machines to
    /// carry: kept, or read from the structured storage.
    fn storage_type(&self, name: &str) -> Option<String> {
        let safe = csis_model::naming::as_safe_name(name);
        match kept_storage(self.db, self.tree, &safe) {
            Some(kept) => kept.map(str::to_string),
            None => self.structured_storage_type(name),
        }
    }

    fn structured_storage_type(&self, name: &str) -> Option<String> {
        self.type_of_storage(self.storage(name))
    }

    fn type_of_storage(&self, item: Option<std::sync::Arc<Item>>) -> Option<String> {
        let item = item?;
        let Item::Storage(st) = &*item else {
            return None;
        };
        self.builder_of(Vct::StorageBuilderModel, &st.named.type_)
            .and_then(|b| b.capability_type().map(str::to_string))
    }
}
