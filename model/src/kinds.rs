//! Item kinds: the collections of domain items a tree holds (users, groups,
//! storages, images, instances, base images), and any a plugin adds.

use crate::vct::Vct;

/// What defines an item kind.
#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemKindSpec {
    /// The collection key in an item file or overlay (`images`).
    pub key: &'static str,
    /// The singular, as `--undeclare KIND:NAME` and messages use it.
    pub singular: &'static str,
    /// The directory under the root its files live in.
    pub dir: &'static str,
    /// The classification of its model.
    pub model_vct: Vct,
    /// The builder-model classification an item's `type:` names.
    pub builder_vct: Vct,
    /// Whether the loader reads it from disk (base images are synthesized).
    pub read: bool,
}

/// One item kind. Core kinds are the constants below; a plugin declares
/// its own `ItemKindSpec` as a static and registers `ItemKind::new(&SPEC)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ItemKind(&'static ItemKindSpec);

/// Hashed by its collection key alone, which the registry keeps unique (a
/// second kind with the same key is a type collision): equal kinds hash
/// equal as before, without hashing every field of the spec on each of a
/// plan's hundreds of thousands of lookups keyed by a kind.
impl std::hash::Hash for ItemKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.key.hash(state);
    }
}

macro_rules! core_kind {
    ($name:ident, $key:literal, $singular:literal, $dir:literal, $model:ident, $builder:ident, $read:literal) => {
        pub const $name: ItemKind = ItemKind(&ItemKindSpec {
            key: $key,
            singular: $singular,
            dir: $dir,
            model_vct: Vct::$model,
            builder_vct: Vct::$builder,
            read: $read,
        });
    };
}

impl ItemKind {
    core_kind!(
        USERS,
        "users",
        "user",
        "groups",
        UserModel,
        UserBuilderModel,
        true
    );
    core_kind!(
        GROUPS,
        "groups",
        "group",
        "groups",
        GroupModel,
        GroupBuilderModel,
        true
    );
    core_kind!(
        STORAGES,
        "storages",
        "storage",
        "storages",
        StorageModel,
        StorageBuilderModel,
        true
    );
    core_kind!(
        IMAGES,
        "images",
        "image",
        "images",
        ImageModel,
        ImageBuilderModel,
        true
    );
    core_kind!(
        INSTANCES,
        "instances",
        "instance",
        "instances",
        InstanceModel,
        InstanceBuilderModel,
        true
    );
    core_kind!(
        BASE_IMAGES,
        "base_images",
        "base_image",
        "base_images",
        BaseImageModel,
        ImageBuilderModel,
        false
    );

    /// The core kinds in the order the loader reads them: users before
    /// groups, so that group members can be checked.
    pub const CORE: [ItemKind; 6] = [
        ItemKind::USERS,
        ItemKind::GROUPS,
        ItemKind::STORAGES,
        ItemKind::IMAGES,
        ItemKind::INSTANCES,
        ItemKind::BASE_IMAGES,
    ];

    pub const fn new(spec: &'static ItemKindSpec) -> ItemKind {
        ItemKind(spec)
    }

    pub fn spec(self) -> &'static ItemKindSpec {
        self.0
    }

    pub fn key(self) -> &'static str {
        self.0.key
    }

    pub fn singular(self) -> &'static str {
        self.0.singular
    }

    pub fn dir(self) -> &'static str {
        self.0.dir
    }

    pub fn is_read(self) -> bool {
        self.0.read
    }

    pub fn model_vct(self) -> Vct {
        self.0.model_vct
    }

    pub fn builder_vct(self) -> Vct {
        self.0.builder_vct
    }

    pub fn is_core(self) -> bool {
        ItemKind::CORE.contains(&self)
    }

    /// A collection key or its singular among `kinds`.
    pub fn parse(word: &str, kinds: &[ItemKind]) -> Option<ItemKind> {
        kinds
            .iter()
            .copied()
            .find(|k| k.key() == word || k.singular() == word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_by_key_or_singular() {
        let k = &ItemKind::CORE;
        assert_eq!(ItemKind::parse("image", k), Some(ItemKind::IMAGES));
        assert_eq!(ItemKind::parse("storages", k), Some(ItemKind::STORAGES));
        assert_eq!(ItemKind::parse("box", k), None);
        assert!(!ItemKind::BASE_IMAGES.is_read());
        assert_eq!(ItemKind::USERS.dir(), ItemKind::GROUPS.dir());
    }
}
