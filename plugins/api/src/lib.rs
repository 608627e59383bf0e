//! csis-plugin-api: the contract between csis and its plugins.
//!
//! A plugin is a value implementing [`Plugin`]. It declares the models it
//! registers per classification ([`ModelSpec`]: a canonical `type:` name,
//! aliases, the core base model it extends and a reader for its own
//! fields), the item sub-models it adds ([`ItemModelSpec`]), and the builder
//! that generates from each model ([`Builder`]). Plugins are linked at
//! compile time and listed explicitly by the cli; they depend on this crate
//! and csis-model, never on the engine.
//!
//! Hooks receive a read-only [`HookContext`] and return assets, commands and
//! diagnostics; they never write files and never reach a global.

pub mod bash_mods;
pub mod builder;
pub mod cloud_config;
pub mod first_boot;
pub mod image_tests;
pub mod lifecycle;
pub mod machine_verify;
pub mod phase;
pub mod runtime_fields;
pub mod sessions;
pub mod state_object;
pub mod stdout;
pub mod verify_step;

use csis_model::models::{BaseBuilder, BaseModelKind, CloudBuilderModel};
use csis_model::{Fields, ItemKind, Map, Value, Vct};

pub use builder::{
    Asset, AssetSet, BakeDecision, BakeStep, BaseTemplate, Builder, CfExecutables, CheckResult,
    Command, Deferred, Emitted, HookContext, HookResult, ModTestOutcome, Observed, ObservedImage,
    ObservedInstance, OwnedDirectory, PackerBake, PackerParent, PackerPlugin, PackerValue, Program,
    StateRoot, VendorImage, Verdict, VerifyRequest, is_template_artifact, path_for_phase,
    template_private_file, template_work_dir,
};
pub use lifecycle::{Contribution, LifecycleSpec, RunHooks};
pub use phase::ExecutionLifecyclePhase;

/// Reads a plugin model's own fields from the reader its base model already
/// read from, returning them by key. Unread keys are refused afterwards.
pub type ExtraReader = fn(&mut Fields<'_>) -> Map;

/// Makes the builder for one declared builder model.
pub type BuilderFactory = fn(&std::sync::Arc<BuilderDecl>) -> Box<dyn Builder>;

/// A model class a `type:` value can select.
#[derive(Clone, Copy)]
pub struct ModelSpec {
    /// The canonical name (`csis_name()`): what `type:` names.
    pub name: &'static str,
    /// Other spellings `type:` accepts; canonicalized before structuring.
    pub aliases: &'static [&'static str],
    /// The classification it registers under (a cloud runtime registers as
    /// `CloudBuilderModel`; `Vct::sanitize` files it under runtimes).
    pub classification: Vct,
    /// The core model it extends.
    pub base: BaseModelKind,
    /// Its own fields beyond the base model's.
    pub read_extra: ExtraReader,
    /// Its builder (one builder per model).
    pub builder: BuilderFactory,
}

/// The reader of a model with no fields of its own.
pub fn no_extra(_: &mut Fields<'_>) -> Map {
    Map::default()
}

impl ModelSpec {
    /// A model with no aliases and no fields of its own.
    pub fn plain(
        name: &'static str,
        classification: Vct,
        base: BaseModelKind,
        builder: BuilderFactory,
    ) -> ModelSpec {
        ModelSpec {
            name,
            aliases: &[],
            classification,
            base,
            read_extra: no_extra,
            builder,
        }
    }

    /// A builder declaration of this model read from its mapping: the base
    /// model's fields, then the model's own, then the unknown keys refused.
    pub fn declare(&self, mut f: Fields<'_>) -> BuilderDecl {
        let base = self.base.read(&mut f);
        let extra = (self.read_extra)(&mut f);
        f.finish();
        BuilderDecl {
            model: self.name,
            classification: self.classification,
            base,
            extra,
        }
    }
}

impl std::fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSpec")
            .field("name", &self.name)
            .field("classification", &self.classification)
            .finish()
    }
}

/// An item sub-model a builder contributes: the fields one
/// `modifications:` entry takes when its `type:` names a mod builder of
/// model `builder_model`.
#[derive(Clone, Copy)]
pub struct ItemModelSpec {
    pub classification: Vct,
    pub builder_model: &'static str,
    pub read_extra: ExtraReader,
}

/// A domain-item collection a plugin adds (register_item_kind): the
/// kind's directory, key and classifications are in its [`ItemKind`]; the
/// item's own fields beyond `name`, `type`, `description` and `aliases`
/// are read by `read`, and `validate` may refuse an item at load.
#[derive(Clone, Copy)]
pub struct ItemKindPlugin {
    pub kind: ItemKind,
    pub read: ExtraReader,
    pub validate: Option<fn(&Map) -> Vec<String>>,
}

/// A plugin: what it registers.
pub trait Plugin: Send + Sync {
    /// A short name for messages (`dummy`, `local`).
    fn name(&self) -> &'static str;
    fn models(&self) -> Vec<ModelSpec>;
    fn item_models(&self) -> Vec<ItemModelSpec> {
        Vec::new()
    }
    fn item_kinds(&self) -> Vec<ItemKindPlugin> {
        Vec::new()
    }
    /// Top-level sections (item collections or cfg/ lists) whose entries
    /// `${env.*}` / `${terraform.*}` interpolation reaches, besides the
    /// core ones (docs/interpolation.md).
    fn interpolatable_sections(&self) -> Vec<&'static str> {
        Vec::new()
    }
    /// The plugin's run hooks, if it has any.
    fn run_hooks(&self) -> Option<&dyn RunHooks> {
        None
    }
    /// How to read `object`, the state of one workspace on `backend` (a
    /// state backend of one of this plugin's models), for a
    /// `${terraform.KEY}` source (docs/interpolation.md): a file below the
    /// root, or a command printing the state JSON on stdout. The engine
    /// asks only the plugin that registered the backend's type; `None`:
    /// this type's state cannot be read as a source.
    fn state_reader(
        &self,
        _backend: &BuilderDecl,
        _object: &state_object::StateObject,
    ) -> Option<state_object::StateRead> {
        None
    }
    /// The credential sessions behind `runtimes` (declarations of this
    /// plugin's runtime types, read raw before the load), read from the
    /// credential caches only: never a credential value.
    fn sessions(
        &self,
        _runtimes: &[sessions::RawRuntime],
        _env: &sessions::SessionEnv,
    ) -> Vec<sessions::Session> {
        Vec::new()
    }
    /// Who `runtime`'s credentials are, asked of its provider (on AWS,
    /// STS GetCallerIdentity): `None` when this plugin cannot ask.
    fn caller_identity(
        &self,
        _runtime: &sessions::RawRuntime,
        _env: &sessions::SessionEnv,
    ) -> Option<Result<String, String>> {
        None
    }
}

/// One builder declaration from cfg/, structured: the core base model plus
/// the plugin's own fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuilderDecl {
    /// The canonical model name its `type:` selected.
    pub model: &'static str,
    pub classification: Vct,
    pub base: BaseBuilder,
    /// The plugin's own fields, by key, as read by its [`ExtraReader`].
    pub extra: Map,
}

impl BuilderDecl {
    pub fn name(&self) -> &str {
        self.base.common().name()
    }

    /// `<classification>::<model>::<name>`, unique across the registry.
    pub fn global_id(&self) -> String {
        format!(
            "{}::{}::{}",
            self.classification.sanitize(),
            self.model,
            self.name()
        )
    }

    /// One of the plugin's own fields as text, trimmed; `None` when absent
    /// or empty.
    pub fn extra_str(&self, key: &str) -> Option<&str> {
        non_empty(self.extra.get(key))
    }

    /// One of the plugin's own fields that is a list of text; empty when
    /// absent.
    pub fn extra_strs(&self, key: &str) -> Vec<&str> {
        self.extra.get(key).map(Value::texts).unwrap_or_default()
    }

    /// One key of the builder's `config:` as text, trimmed; `None` when
    /// absent or empty.
    pub fn config_str(&self, key: &str) -> Option<&str> {
        non_empty(self.base.common().config.get(key))
    }

    /// The Cloud base model (region, networking) of a cloud runtime.
    pub fn cloud(&self) -> Option<&CloudBuilderModel> {
        match &self.base {
            BaseBuilder::Cloud(c) => Some(c),
            _ => None,
        }
    }
}

fn non_empty(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}
