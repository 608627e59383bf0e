//! A structured item of any kind, as stages and hooks see it.

use serde::Serialize;

use crate::models::{
    BaseImage, Group, Image, Instance, ModItemModel, NameTyped, Storage, StorageMapping, User,
};
use crate::value::Map;

/// A structured item. Every model is boxed so that the enum is two words:
/// a tree holds tens of thousands of users, and each would otherwise take
/// the largest model's size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Item {
    User(Box<User>),
    Group(Box<Group>),
    Storage(Box<Storage>),
    Image(Box<Image>),
    Instance(Box<Instance>),
    BaseImage(Box<BaseImage>),
    /// An item of a kind a plugin registered.
    Plugin(Box<PluginItem>),
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
    /// The decrypted values of the item's encrypted fields, each with the
    /// marker it came from.
    #[serde(skip)]
    pub secrets: Vec<Secret>,
}

impl ItemView {
    /// A value as it may be emitted: a decrypted value (or a value built
    /// from one) with the plaintext replaced by its marker.
    pub fn emit(&self, value: &str) -> String {
        emit_with(&self.secrets, value)
    }
}

/// A decrypted value and the `ENC[age:...]` marker it came from. Debug and
/// logs never show the plaintext.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Secret {
    pub plaintext: String,
    pub marker: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decrypted('***')")
    }
}

/// `value` with every secret's plaintext replaced by its marker, longest
/// plaintext first (a derived value inherits the ciphertext of its pieces).
pub fn emit_with(secrets: &[Secret], value: &str) -> String {
    let mut sorted: Vec<&Secret> = secrets.iter().filter(|s| !s.plaintext.is_empty()).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.plaintext.len()));
    let mut out = value.to_string();
    for s in sorted {
        if out.contains(&s.plaintext) {
            out = out.replace(&s.plaintext, &s.marker);
        }
    }
    out
}
