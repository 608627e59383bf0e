//! The plugin registry: built once at start from the plugins the cli links,
//! immutable afterwards, passed explicitly (no process-wide singleton).
//!
//! The lowest layer: it runs no query and reads no file, and knows no
//! plugin by name.

pub mod lifecycles;

use std::collections::BTreeMap;

use csis_model::{ItemKind, Vct};

use csis_plugin_api::{ItemKindPlugin, ItemModelSpec, LifecycleSpec, ModelSpec, Plugin, RunHooks};
use csis_string_stage::passes::{ResolutionPass, builtin_passes};

use crate::registry::lifecycles::{builtin_lifecycles, register_lifecycle};
use indexmap::IndexMap;

#[derive(Default)]
pub struct Registry {
    /// Models by (sanitized) classification, then canonical name (hashed
    /// with foldhash: the checks ask for an item's builder's model for
    /// every item).
    models: BTreeMap<Vct, IndexMap<&'static str, Registered, foldhash::fast::RandomState>>,
    /// Alias to canonical name, per classification.
    aliases: BTreeMap<Vct, BTreeMap<&'static str, &'static str>>,
    item_models: Vec<ItemModelSpec>,
    /// Item kinds plugins added, after the core ones.
    item_kinds: Vec<ItemKindPlugin>,
    plugins: Vec<&'static str>,
    /// A digest of the plugins' sources, when the binary names one: the
    /// persisted cache's key holds it (`db::cache::key`).
    plugin_sources: Option<&'static str>,
    /// The string stage's passes, sorted by order.
    passes: Vec<ResolutionPass>,
    /// Every lifecycle in run order.
    lifecycles: Vec<LifecycleSpec>,
    /// Sections plugins made interpolatable, besides the core ones.
    interpolatable: Vec<String>,
    /// Run hooks in plugin order.
    hooks: Vec<&'static dyn RunHooks>,
    /// The plugins themselves, for the hooks asked of the plugin that owns
    /// a model (`state_reader`).
    linked: Vec<&'static dyn Plugin>,
}

#[derive(Clone, Copy)]
struct Registered {
    spec: ModelSpec,
    plugin: &'static str,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("plugins", &self.plugins)
            .finish()
    }
}

impl Registry {
    /// Register every plugin's models. A second registration of a name (or
    /// alias) under one classification is the seed's "Type Collision".
    pub fn build(plugins: &[&'static dyn Plugin]) -> Result<Registry, String> {
        let mut reg = Registry {
            passes: builtin_passes(),
            lifecycles: builtin_lifecycles(),
            ..Registry::default()
        };
        for plugin in plugins {
            reg.plugins.push(plugin.name());
            reg.linked.push(*plugin);
            for spec in plugin.models() {
                reg.register(spec, plugin.name())?;
            }
            reg.item_models.extend(plugin.item_models());
            for k in plugin.item_kinds() {
                reg.register_item_kind(k, plugin.name())?;
            }
            for section in plugin.interpolatable_sections() {
                reg.register_interpolatable_section(section);
            }
            if let Some(hooks) = plugin.run_hooks() {
                for spec in hooks.lifecycles() {
                    register_lifecycle(&mut reg.lifecycles, spec)?;
                }
                reg.hooks.push(hooks);
            }
        }
        Ok(reg)
    }

    fn register(&mut self, spec: ModelSpec, plugin: &'static str) -> Result<(), String> {
        let vct = spec.classification.sanitize();
        let models = self.models.entry(vct).or_default();
        let aliases = self.aliases.entry(vct).or_default();
        let taken = |name: &str| {
            models.get(name).map(|r| r.plugin).or_else(|| {
                aliases
                    .get(name)
                    .and_then(|c| models.get(c))
                    .map(|r| r.plugin)
            })
        };
        for name in std::iter::once(spec.name).chain(spec.aliases.iter().copied()) {
            if let Some(other) = taken(name) {
                return Err(format!(
                    "Type Collision: {vct} '{name}' is registered by plugin '{other}' and by plugin '{plugin}'"
                ));
            }
        }
        models.insert(spec.name, Registered { spec, plugin });
        for alias in spec.aliases {
            aliases.insert(alias, spec.name);
        }
        Ok(())
    }

    /// The model a `type:` value selects, aliases canonicalized first.
    pub fn model(&self, vct: Vct, type_name: &str) -> Option<&ModelSpec> {
        let vct = vct.sanitize();
        let models = self.models.get(&vct)?;
        let canonical = self
            .aliases
            .get(&vct)
            .and_then(|a| a.get(type_name).copied())
            .unwrap_or(type_name);
        models.get(canonical).map(|r| &r.spec)
    }

    /// The plugin that registered `type_name` (or an alias of it) under
    /// `vct`.
    pub fn owner(&self, vct: Vct, type_name: &str) -> Option<&'static dyn Plugin> {
        let vct = vct.sanitize();
        let canonical = self
            .aliases
            .get(&vct)
            .and_then(|a| a.get(type_name).copied())
            .unwrap_or(type_name);
        let owner = self.models.get(&vct)?.get(canonical)?.plugin;
        self.linked.iter().find(|p| p.name() == owner).copied()
    }

    /// The canonical names registered under a classification, sorted.
    pub fn model_names(&self, vct: Vct) -> Vec<&'static str> {
        let mut v: Vec<_> = self
            .models
            .get(&vct.sanitize())
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        v.sort_unstable();
        v
    }

    /// The item sub-model a builder model contributes for a classification.
    pub fn item_model(&self, vct: Vct, builder_model: &str) -> Option<&ItemModelSpec> {
        self.item_models
            .iter()
            .find(|m| m.classification == vct && m.builder_model == builder_model)
    }

    fn register_item_kind(&mut self, k: ItemKindPlugin, plugin: &str) -> Result<(), String> {
        let key = k.kind.key();
        if self
            .item_kinds()
            .iter()
            .any(|o| o.key() == key || o.singular() == k.kind.singular())
        {
            return Err(format!(
                "Type Collision: item kind '{key}' of plugin '{plugin}' is already registered"
            ));
        }
        self.item_kinds.push(k);
        Ok(())
    }

    /// Every item kind in reading order: the core kinds, then the plugins'.
    pub fn item_kinds(&self) -> Vec<ItemKind> {
        let mut v = ItemKind::CORE.to_vec();
        v.extend(self.item_kinds.iter().map(|k| k.kind));
        v
    }

    /// A plugin item kind's reader and validation.
    pub fn item_kind_plugin(&self, kind: ItemKind) -> Option<&ItemKindPlugin> {
        self.item_kinds.iter().find(|k| k.kind == kind)
    }

    /// The item directories the loader reads, sorted.
    pub fn item_dirs(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self
            .item_kinds()
            .into_iter()
            .filter(|k| k.is_read())
            .map(|k| k.dir())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Add a string-stage pass; passes run in `order`, ties in registration
    /// order. A name may be registered once.
    pub fn register_resolution_pass(&mut self, pass: ResolutionPass) -> Result<(), String> {
        if self.passes.iter().any(|p| p.name == pass.name) {
            return Err(format!(
                "resolution pass '{}' is already registered",
                pass.name
            ));
        }
        self.passes.push(pass);
        self.passes.sort_by_key(|p| p.order);
        Ok(())
    }

    pub fn resolution_passes(&self) -> &[ResolutionPass] {
        &self.passes
    }

    /// Make a top-level section's entries interpolatable (spec 003's
    /// "an Extension registers additional sections").
    pub fn register_interpolatable_section(&mut self, section: &str) {
        if !self.interpolatable.iter().any(|s| s == section) {
            self.interpolatable.push(section.to_string());
        }
    }

    /// The sections `${env.*}` and `${terraform.*}` are resolved in: the
    /// item collections, the builder lists of cfg/, and what plugins added.
    pub fn interpolatable_sections(&self) -> Vec<String> {
        let mut out: Vec<String> = ["users", "groups", "storages", "images", "instances"]
            .iter()
            .chain(csis_model::vct::BUILDER_KEYS.iter().map(|(k, _)| k))
            .map(|s| s.to_string())
            .collect();
        for s in &self.interpolatable {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        out
    }

    pub fn lifecycles(&self) -> &[LifecycleSpec] {
        &self.lifecycles
    }

    pub fn run_hooks(&self) -> &[&'static dyn RunHooks] {
        &self.hooks
    }

    pub fn plugins(&self) -> &[&'static str] {
        &self.plugins
    }

    /// The registry, its plugins built from sources of digest `digest`
    /// (the binary's build script makes it).
    pub fn with_plugin_sources(mut self, digest: &'static str) -> Registry {
        self.plugin_sources = Some(digest);
        self
    }

    /// The digest of the plugins' sources, when the binary named one.
    pub fn plugin_sources(&self) -> Option<&'static str> {
        self.plugin_sources
    }

    /// How to read `object`, the state of a workspace on state backend
    /// `backend`, for a `${terraform.KEY}` source: the answer of the
    /// plugin that registered the backend's type (`Plugin::state_reader`).
    pub fn state_reader(
        &self,
        backend: &csis_plugin_api::BuilderDecl,
        object: &csis_plugin_api::state_object::StateObject,
    ) -> Option<csis_plugin_api::state_object::StateRead> {
        let owner = self
            .models
            .get(&backend.classification.sanitize())?
            .get(backend.model)?
            .plugin;
        self.linked
            .iter()
            .find(|p| p.name() == owner)?
            .state_reader(backend, object)
    }
}

#[cfg(test)]
mod tests {
    use csis_model::models::BaseModelKind;
    use csis_model::{Fields, Map, Value};
    use csis_plugin_api::{Builder, BuilderDecl, ModelSpec, Plugin};

    use super::*;

    struct Nothing;
    impl Builder for Nothing {}

    fn no_extra(_: &mut Fields<'_>) -> Map {
        Map::default()
    }
    fn nothing(_: &std::sync::Arc<BuilderDecl>) -> Box<dyn Builder> {
        Box::new(Nothing)
    }

    struct Named(&'static str, &'static str, Vct, &'static [&'static str]);
    impl Plugin for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn models(&self) -> Vec<ModelSpec> {
            vec![ModelSpec {
                name: self.1,
                aliases: self.3,
                classification: self.2,
                base: BaseModelKind::Image,
                read_extra: no_extra,
                builder: nothing,
            }]
        }
    }

    #[test]
    fn a_second_registration_of_a_name_is_a_type_collision() {
        let a: &dyn Plugin = Box::leak(Box::new(Named("a", "packer", Vct::ImageBuilderModel, &[])));
        let b: &dyn Plugin = Box::leak(Box::new(Named("b", "packer", Vct::ImageBuilderModel, &[])));
        let err = Registry::build(&[a, b]).unwrap_err();
        assert_eq!(
            err,
            "Type Collision: image_builder_model 'packer' is registered by plugin 'a' and by plugin 'b'"
        );
        // An alias collides with a name too; another classification does not.
        let c: &dyn Plugin = Box::leak(Box::new(Named(
            "c",
            "hashicorp",
            Vct::ImageBuilderModel,
            &["packer"],
        )));
        assert!(Registry::build(&[a, c]).is_err());
        let d: &dyn Plugin = Box::leak(Box::new(Named(
            "d",
            "packer",
            Vct::InstanceBuilderModel,
            &[],
        )));
        assert!(Registry::build(&[a, d]).is_ok());
    }

    #[test]
    fn aliases_canonicalize_and_cloud_models_file_under_runtimes() {
        let a: &dyn Plugin = Box::leak(Box::new(Named(
            "a",
            "hashicorp",
            Vct::ImageBuilderModel,
            &["packer"],
        )));
        let cloud: &dyn Plugin =
            Box::leak(Box::new(Named("c", "aws", Vct::CloudBuilderModel, &[])));
        let reg = Registry::build(&[a, cloud]).unwrap();
        assert_eq!(
            reg.model(Vct::ImageBuilderModel, "packer").map(|m| m.name),
            Some("hashicorp")
        );
        assert_eq!(
            reg.model(Vct::RuntimeBuilderModel, "aws").map(|m| m.name),
            Some("aws")
        );
        assert_eq!(reg.model_names(Vct::CloudBuilderModel), ["aws"]);
    }

    fn mark_seen(
        doc: &mut Value,
        _: &csis_string_stage::passes::StageEnv,
        _: &csis_string_stage::Renderer,
    ) {
        if let Value::Map(m) = doc {
            m.insert("seen".into(), Value::str("yes"));
        }
    }

    #[test]
    fn passes_run_in_order_and_register_once() {
        let mut reg = Registry::build(&[]).unwrap();
        let pass = |name, order| ResolutionPass {
            name,
            order,
            run: mark_seen,
        };
        reg.register_resolution_pass(pass("late", 40)).unwrap();
        reg.register_resolution_pass(pass("early", 5)).unwrap();
        let names: Vec<_> = reg.resolution_passes().iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "early",
                "interpolate",
                "scope-this",
                "interpolate-external",
                "late"
            ]
        );
        assert!(
            reg.register_resolution_pass(pass("interpolate", 1))
                .is_err()
        );
    }
}
