//! What more than one engine test file sets up: a plugin that adds an item
//! kind, `networks`. A test file that uses it says `mod common;`.

use csis_model::kinds::ItemKindSpec;
use csis_model::{Fields, ItemKind, Map, Value, Vct};
use csis_plugin_api::{ItemKindPlugin, ModelSpec, Plugin};

/// The item kind [`Networks`] adds: `networks/*.yml`, items with a `cidr`.
pub static NETWORKS: ItemKindSpec = ItemKindSpec {
    key: "networks",
    singular: "network",
    dir: "networks",
    model_vct: Vct::Unclassified,
    builder_vct: Vct::RuntimeBuilderModel,
    read: true,
};

fn read_network(f: &mut Fields<'_>) -> Map {
    let mut m = Map::default();
    m.insert("cidr".into(), Value::str(f.req_str("cidr")));
    m
}

fn validate_network(fields: &Map) -> Vec<String> {
    match fields.get("cidr").and_then(Value::as_str) {
        Some(c) if c.contains('/') => Vec::new(),
        Some(c) => vec![format!("cidr '{c}' needs a prefix length (/NN)")],
        None => Vec::new(),
    }
}

/// A plugin with the item kind [`NETWORKS`]. `validated`: its validation
/// refuses a cidr without a prefix length; `interpolated`: it registers
/// the kind's section as interpolatable.
pub struct Networks {
    pub validated: bool,
    pub interpolated: bool,
}

impl Plugin for Networks {
    fn name(&self) -> &'static str {
        "networks"
    }
    fn models(&self) -> Vec<ModelSpec> {
        Vec::new()
    }
    fn item_kinds(&self) -> Vec<ItemKindPlugin> {
        vec![ItemKindPlugin {
            kind: ItemKind::new(&NETWORKS),
            read: read_network,
            validate: self.validated.then_some(validate_network as _),
        }]
    }
    fn interpolatable_sections(&self) -> Vec<&'static str> {
        if self.interpolated {
            vec!["networks"]
        } else {
            Vec::new()
        }
    }
}
