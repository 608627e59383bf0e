//! The `dummy` plugin: a model and a builder under every classification,
//! type name `dummy`. It exists to exercise the plugin contract in tests and
//! makes no claim about any real provider.

use csis_model::models::BaseModelKind;
use csis_model::{Fields, Map, Vct};
use csis_plugin_api::{Builder, BuilderDecl, ItemModelSpec, ModelSpec, Plugin};

pub struct DummyPlugin;

/// A builder that generates nothing; group and storage builders answer with
/// the `dummy` identity and storage types.
struct DummyBuilder {
    classification: Vct,
}

impl Builder for DummyBuilder {
    fn identity_type(&self) -> Option<&str> {
        (self.classification == Vct::GroupBuilderModel).then_some("dummy")
    }
    fn capability_type(&self) -> Option<&str> {
        (self.classification == Vct::StorageBuilderModel).then_some("dummy")
    }
    fn session_mechanism(&self) -> Option<&str> {
        (self.classification == Vct::CloudBuilderModel).then_some("dummy-session")
    }
}

fn no_extra(_: &mut Fields<'_>) -> Map {
    Map::new()
}

fn builder(decl: &BuilderDecl) -> Box<dyn Builder> {
    Box::new(DummyBuilder {
        classification: decl.classification,
    })
}

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
        KINDS
            .iter()
            .map(|(vct, base)| ModelSpec {
                name: "dummy",
                aliases: &[],
                classification: *vct,
                base: *base,
                read_extra: no_extra,
                builder,
            })
            .collect()
    }

    fn item_models(&self) -> Vec<ItemModelSpec> {
        vec![ItemModelSpec {
            classification: Vct::ModBuilderItemModel,
            builder_model: "dummy",
            read_extra: no_extra,
        }]
    }
}
