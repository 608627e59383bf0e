//! The typed configuration models of the spec's "The base models" and
//! "cfg/_config.yml key by key".
//!
//! Every model is read through [`Fields`](crate::fields::Fields): a base
//! model's `read` reads its own fields (and its bases', by calling their
//! `read` first) and never finishes the reader, so a plugin model that
//! extends it can read its own keys from the same reader before the caller
//! finishes and unknown keys are refused. Nested sub-models (a `runtimes:`
//! entry, `networking:`, `update:`) are read and finished in place.
//!
//! Refusals are gathered as diagnostics in the spec's wording; nothing
//! panics on input.

pub mod builders;
pub mod common;
pub mod config;
pub mod executable;
pub mod item;
pub mod items;
pub mod os;
pub mod runtime;

#[cfg(test)]
pub(crate) mod testutil;

pub use builders::{
    BaseBuilder, BaseModelKind, GroupBuilderModel, ImageBuilderModel, InstanceBuilderModel,
    ModBuilderModel, RuntimeEnabledBuilderModel, StateBuilderModel, StorageBuilderModel,
    UserBuilderModel,
};
pub use common::{BuilderModel, NameTyped, RootItem};
pub use config::{EncryptionConfig, IAConfig, PublicSafeConfig};
pub use executable::ExecutableModel;
pub use item::{Item, ItemView, ModItem, PluginItem, Secret, emit_with};
pub use items::{
    BaseImage, BaseImageImageBuilderSubconfig, Group, Image, ImageImageBuilderSubconfig, Instance,
    ModItemModel, Storage, StorageMapping, User,
};
pub use os::{OsBuilderBaseImageBuilderSubconfig, OsBuilderModel, UpdatePolicy};
pub use runtime::{
    CloudBuilderModel, ContainerBuilderModel, ContainerNetworkingModel,
    RuntimeAvailabilityZoneModel, RuntimeBuilderModel, RuntimeNetworkingModel, RuntimeSubnetModel,
};
