//! The item collections a configuration tree holds.

use crate::vct::Vct;

/// One collection of domain items (an item kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemKind {
    Users,
    Groups,
    Storages,
    Images,
    Instances,
    BaseImages,
}

impl ItemKind {
    /// In the order the loader reads them: users before groups, so that
    /// group members can be checked.
    pub const ALL: [ItemKind; 6] = [
        ItemKind::Users,
        ItemKind::Groups,
        ItemKind::Storages,
        ItemKind::Images,
        ItemKind::Instances,
        ItemKind::BaseImages,
    ];

    /// The collection key in an item file or overlay.
    pub fn key(self) -> &'static str {
        match self {
            ItemKind::Users => "users",
            ItemKind::Groups => "groups",
            ItemKind::Storages => "storages",
            ItemKind::Images => "images",
            ItemKind::Instances => "instances",
            ItemKind::BaseImages => "base_images",
        }
    }

    pub fn singular(self) -> &'static str {
        match self {
            ItemKind::Users => "user",
            ItemKind::Groups => "group",
            ItemKind::Storages => "storage",
            ItemKind::Images => "image",
            ItemKind::Instances => "instance",
            ItemKind::BaseImages => "base_image",
        }
    }

    /// The directory under the root its files live in.
    pub fn dir(self) -> &'static str {
        match self {
            ItemKind::Users | ItemKind::Groups => "groups",
            ItemKind::Storages => "storages",
            ItemKind::Images => "images",
            ItemKind::Instances => "instances",
            ItemKind::BaseImages => "base_images",
        }
    }

    /// Base images are registered but never read from disk: the OS builders
    /// synthesize them.
    pub fn is_read(self) -> bool {
        self != ItemKind::BaseImages
    }

    pub fn model_vct(self) -> Vct {
        match self {
            ItemKind::Users => Vct::UserModel,
            ItemKind::Groups => Vct::GroupModel,
            ItemKind::Storages => Vct::StorageModel,
            ItemKind::Images => Vct::ImageModel,
            ItemKind::Instances => Vct::InstanceModel,
            ItemKind::BaseImages => Vct::BaseImageModel,
        }
    }

    /// The builder-model classification an item's `type:` names.
    pub fn builder_vct(self) -> Vct {
        match self {
            ItemKind::Users => Vct::UserBuilderModel,
            ItemKind::Groups => Vct::GroupBuilderModel,
            ItemKind::Storages => Vct::StorageBuilderModel,
            ItemKind::Images | ItemKind::BaseImages => Vct::ImageBuilderModel,
            ItemKind::Instances => Vct::InstanceBuilderModel,
        }
    }

    /// A collection key or its singular, as `--undeclare KIND:NAME` takes it.
    pub fn parse(word: &str) -> Option<ItemKind> {
        ItemKind::ALL
            .into_iter()
            .find(|k| k.key() == word || k.singular() == word)
    }

    /// The item kinds an item file under `dir` may hold.
    pub fn in_dir(dir: &str) -> Vec<ItemKind> {
        ItemKind::ALL
            .into_iter()
            .filter(|k| k.is_read() && k.dir() == dir)
            .collect()
    }
}
