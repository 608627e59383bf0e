//! A structured item of any kind, as stages and hooks see it.

use serde::Serialize;

use crate::models::{
    BaseImage, Group, Image, Instance, ModItemModel, NameTyped, Storage, StorageMapping, User,
};
use crate::value::Map;

/// A structured item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Item {
    User(Box<User>),
    Group(Group),
    Storage(Storage),
    Image(Box<Image>),
    Instance(Instance),
    BaseImage(Box<BaseImage>),
    /// An item of a kind a plugin registered.
    Plugin(PluginItem),
}

/// An item of a plugin's kind: the common fields and the plugin's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PluginItem {
    #[serde(flatten)]
    pub named: NameTyped,
    #[serde(flatten)]
    pub fields: Map,
}

/// One `modifications:` entry: the core fields and the mod plugin's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModItem {
    #[serde(flatten)]
    pub model: ModItemModel,
    /// The mod builder it names.
    pub builder: String,
    #[serde(flatten)]
    pub extra: Map,
}

impl Item {
    /// The item's normalized name.
    pub fn name(&self) -> &str {
        match self {
            Item::User(u) => u.root.name(),
            Item::Group(g) => g.root.name(),
            Item::Storage(s) => &s.named.name,
            Item::Image(i) => i.root.name(),
            Item::Instance(i) => i.root.name(),
            Item::BaseImage(i) => i.root.name(),
            Item::Plugin(p) => &p.named.name,
        }
    }

    /// What the item's `type:` names (its builder).
    pub fn type_name(&self) -> &str {
        match self {
            Item::User(u) => &u.root.named.type_,
            Item::Group(g) => &g.root.named.type_,
            Item::Storage(s) => &s.named.type_,
            Item::Image(i) => &i.root.named.type_,
            Item::Instance(i) => &i.root.named.type_,
            Item::BaseImage(i) => &i.root.named.type_,
            Item::Plugin(p) => &p.named.type_,
        }
    }
}

/// An item with the sub-items structured late (deferred lists): an
/// image's modifications, an instance's storage mappings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemView {
    pub item: std::sync::Arc<Item>,
    pub mods: Vec<ModItem>,
    pub storages: Vec<StorageMapping>,
}
