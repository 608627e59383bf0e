//! The `dummy` plugin: a model and a builder under every classification,
//! type name `dummy`. It exists to exercise the plugin contract in tests and
//! makes no claim about any real provider.
//!
//! Its builders answer every hook with a small deterministic asset, and
//! each during-hook defers `csis dummy apply --spec FILE`, a step that only
//! reads the generated tree.

pub mod exec;

use csis_model::models::{BaseModelKind, Item};
use csis_model::{ItemKind, Vct};
use csis_plugin_api::{
    Asset, AssetSet, Builder, BuilderDecl, CfExecutables, Command, ExecutionLifecyclePhase as P,
    HookContext, HookResult, ItemModelSpec, ModelSpec, Plugin, path_for_phase,
};
use serde_json::json;
use std::sync::Arc;

pub struct DummyPlugin;

/// Group and storage builders answer with the `dummy` identity and storage
/// types; a `dummy-roster` group builder keeps its groups where no machine
/// reads them and answers with none.
struct DummyBuilder {
    classification: Vct,
    name: String,
    roster: bool,
}

impl DummyBuilder {
    fn note(&self, phase: P, ctx: &dyn HookContext, when: &str) -> AssetSet {
        vec![Asset::text(
            path_for_phase(&self.name, phase, Some(when), ".txt"),
            format!(
                "dummy {} '{}': {when} {} of {}\n",
                self.classification,
                self.name,
                phase.as_str(),
                ctx.lifecycle()
            ),
        )]
    }

    /// The items this builder generates for: those whose builder reference
    /// resolves to it.
    fn owned(&self, ctx: &dyn HookContext) -> Vec<String> {
        let kinds: &[ItemKind] = match self.classification.sanitize() {
            Vct::ImageBuilderModel => &[ItemKind::IMAGES],
            Vct::InstanceBuilderModel => &[ItemKind::INSTANCES],
            Vct::StorageBuilderModel => &[ItemKind::STORAGES],
            Vct::UserBuilderModel => &[ItemKind::USERS],
            Vct::GroupBuilderModel => &[ItemKind::GROUPS],
            _ => &[],
        };
        let mine = |reference: &str| {
            ctx.builder(self.classification, reference)
                .is_some_and(|b| b.name() == self.name)
        };
        let mut out = Vec::new();
        for kind in kinds {
            for view in ctx.items(*kind) {
                let owned = match view.item.as_ref() {
                    Item::Image(img) => img.runtimes.iter().any(|e| mine(&e.image_builder)),
                    other => mine(other.type_name()),
                };
                if owned {
                    out.push(view.emit(view.item.name()));
                }
            }
        }
        out
    }

    fn spec_path(&self, phase: P) -> String {
        path_for_phase(&self.name, phase, None, ".json")
    }
}

impl Builder for DummyBuilder {
    fn generate_items_before(&self, phase: P, ctx: &dyn HookContext) -> HookResult<AssetSet> {
        Ok(self.note(phase, ctx, "before"))
    }

    fn generate_items_during(&self, phase: P, ctx: &dyn HookContext) -> HookResult<AssetSet> {
        let spec = json!({
            "builder": self.name,
            "classification": self.classification.as_str(),
            "lifecycle": ctx.lifecycle(),
            "phase": phase.as_str(),
            "items": self.owned(ctx),
        });
        let text = serde_json::to_string_pretty(&spec).unwrap_or_default();
        Ok(vec![Asset::text(
            self.spec_path(phase),
            format!("{text}\n"),
        )])
    }

    fn get_commands_to_run_during(
        &self,
        phase: P,
        _ctx: &dyn HookContext,
    ) -> HookResult<CfExecutables> {
        Ok(CfExecutables::deferred(
            P::Execution,
            Command::csis(["dummy", "apply", "--spec", self.spec_path(phase).as_str()]),
        ))
    }

    fn generate_items_after(&self, phase: P, ctx: &dyn HookContext) -> HookResult<AssetSet> {
        Ok(self.note(phase, ctx, "after"))
    }

    fn identity_type(&self) -> Option<&str> {
        (self.classification == Vct::GroupBuilderModel && !self.roster).then_some("dummy")
    }
    fn capability_type(&self) -> Option<&str> {
        (self.classification == Vct::StorageBuilderModel).then_some("dummy")
    }
    /// The dummy identity provider knows lowercase attribute keys only, so
    /// the identity-item check has something to refuse in tests.
    fn validate_identity_item(&self, item: &Item) -> Vec<String> {
        let attributes = match item {
            Item::User(u) => u.attributes.as_deref(),
            Item::Group(g) => g.attributes.as_deref(),
            _ => None,
        };
        attributes
            .into_iter()
            .flat_map(|a| a.keys())
            .filter(|k| k.chars().any(|c| c.is_ascii_uppercase()))
            .map(|k| {
                format!(
                    "attribute '{k}' is not one the dummy provider knows (its keys are lowercase)"
                )
            })
            .collect()
    }
    /// Like GCE: one bake user per chain, and no family default, so the
    /// bake-user checks have a runtime to refuse on in tests.
    fn one_bake_user_per_chain(&self) -> bool {
        matches!(
            self.classification,
            Vct::RuntimeBuilderModel | Vct::CloudBuilderModel
        )
    }
    fn is_zonal(&self) -> bool {
        self.classification == Vct::StorageBuilderModel
    }
    /// Dummy roots stand for terraform ones: each keeps state.
    fn keeps_state(&self) -> bool {
        matches!(
            self.classification,
            Vct::StorageBuilderModel
                | Vct::InstanceBuilderModel
                | Vct::GroupBuilderModel
                | Vct::UserBuilderModel
                | Vct::RuntimeBuilderModel
                | Vct::CloudBuilderModel
        )
    }
    fn session_mechanism(&self) -> Option<&str> {
        (self.classification == Vct::CloudBuilderModel).then_some("dummy-session")
    }
    /// The dummy group's server registry is a file the tests write, as a
    /// provider would hold it: `<root>/.dummy-registry/<group>.json` maps a
    /// hostname to its registered servers; `<group>.down` makes the
    /// registry not answer.
    #[allow(clippy::disallowed_methods)] // the provider side: it owns its files
    fn registered_servers(
        &self,
        root: &std::path::Path,
        group: &str,
        hostname: &str,
    ) -> Option<Result<Vec<String>, String>> {
        if self.classification != Vct::GroupBuilderModel {
            return None;
        }
        let dir = root.join(".dummy-registry");
        if dir.join(format!("{group}.down")).exists() {
            return Some(Err("no answer within its timeout".into()));
        }
        let Ok(text) = std::fs::read_to_string(dir.join(format!("{group}.json"))) else {
            return Some(Ok(Vec::new()));
        };
        Some(
            serde_json::from_str::<std::collections::BTreeMap<String, Vec<String>>>(&text)
                .map(|m| m.get(hostname).cloned().unwrap_or_default())
                .map_err(|e| format!("the registry answered garbage: {e}")),
        )
    }
    /// The dummy runtime takes labels as GCE does, so the label-key check
    /// has a runtime to refuse on in tests.
    fn label_key_problem(&self, key: &str) -> Option<String> {
        let runtime = matches!(
            self.classification,
            Vct::RuntimeBuilderModel | Vct::CloudBuilderModel
        );
        (runtime && !key.starts_with(|c: char| c.is_ascii_lowercase()))
            .then(|| "a label key must start with a lowercase letter".to_string())
    }
}

fn builder(decl: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(DummyBuilder {
        classification: decl.classification,
        name: decl.name().to_string(),
        roster: decl.model == ROSTER,
    })
}

/// The group builder model whose groups carry no identity type.
const ROSTER: &str = "dummy-roster";

const KINDS: [(Vct, BaseModelKind); 9] = [
    (Vct::CloudBuilderModel, BaseModelKind::Cloud),
    (Vct::ImageBuilderModel, BaseModelKind::Image),
    (Vct::InstanceBuilderModel, BaseModelKind::Instance),
    (Vct::StorageBuilderModel, BaseModelKind::Storage),
    (Vct::OsBuilderModel, BaseModelKind::Os),
    (Vct::ModBuilderModel, BaseModelKind::Mod),
    (Vct::GroupBuilderModel, BaseModelKind::Group),
    (Vct::UserBuilderModel, BaseModelKind::User),
    (Vct::StateBackendModel, BaseModelKind::State),
];

impl Plugin for DummyPlugin {
    fn name(&self) -> &'static str {
        "dummy"
    }

    fn models(&self) -> Vec<ModelSpec> {
        let mut models: Vec<ModelSpec> = KINDS
            .iter()
            .map(|(vct, base)| ModelSpec {
                name: "dummy",
                aliases: &[],
                classification: *vct,
                base: *base,
                read_extra: csis_plugin_api::no_extra,
                builder,
            })
            .collect();
        models.push(ModelSpec {
            name: ROSTER,
            aliases: &[],
            classification: Vct::GroupBuilderModel,
            base: BaseModelKind::Group,
            read_extra: csis_plugin_api::no_extra,
            builder,
        });
        models
    }

    fn item_models(&self) -> Vec<ItemModelSpec> {
        vec![ItemModelSpec {
            classification: Vct::ModBuilderItemModel,
            builder_model: "dummy",
            read_extra: csis_plugin_api::no_extra,
        }]
    }
}
