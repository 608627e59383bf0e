//! The plugin registry: built once at start from the plugins the cli links,
//! immutable afterwards, passed explicitly (no process-wide singleton).

use std::collections::BTreeMap;

use csis_model::Vct;
use csis_plugin_api::{ItemModelSpec, ModelSpec, Plugin};
use indexmap::IndexMap;

#[derive(Default)]
pub struct Registry {
    /// Models by (sanitized) classification, then canonical name.
    models: BTreeMap<Vct, IndexMap<&'static str, Registered>>,
    /// Alias to canonical name, per classification.
    aliases: BTreeMap<Vct, BTreeMap<&'static str, &'static str>>,
    item_models: Vec<ItemModelSpec>,
    plugins: Vec<&'static str>,
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
    pub fn build(plugins: &[&dyn Plugin]) -> Result<Registry, String> {
        let mut reg = Registry::default();
        for plugin in plugins {
            reg.plugins.push(plugin.name());
            for spec in plugin.models() {
                reg.register(spec, plugin.name())?;
            }
            reg.item_models.extend(plugin.item_models());
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

    pub fn plugins(&self) -> &[&'static str] {
        &self.plugins
    }
}
