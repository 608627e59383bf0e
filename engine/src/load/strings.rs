//! The string stage over the tree: the merged cfg/ document with every
//! overlay's `config:`, run through the registry's resolution passes
//! (csis-string-stage holds the passes and the renderer).

use std::sync::Arc;

use csis_model::{Map, Value};
use csis_string_stage::Renderer;
use csis_string_stage::passes::{DEFAULT_DATEFORMAT, StageEnv};

use crate::db::{Db, Tree};
use crate::load::cfg::cfg_document;
use crate::load::overlay::overlay_config;

/// The merged cfg/ document after the string stage, with every overlay's
/// `config:` merged over the tree's first.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct RenderedCfg {
    pub value: Arc<Value>,
}

#[salsa::tracked(returns(ref))]
pub fn rendered_cfg(db: &dyn Db, tree: Tree) -> RenderedCfg {
    let mut doc = (*cfg_document(db, tree).value).clone();
    if let Some(extra) = overlay_config(db, tree)
        && let Value::Map(top) = &mut doc
    {
        let config = top
            .entry("config".to_string())
            .or_insert_with(|| Value::Map(Map::new()));
        if !matches!(config, Value::Map(_)) {
            *config = Value::Map(Map::new());
        }
        if let Value::Map(c) = config {
            for (k, v) in extra {
                c.insert(k.clone(), v.clone());
            }
        }
    }
    let dateformat = doc
        .get("dateformat")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_DATEFORMAT)
        .to_string();
    let config = doc
        .get("config")
        .and_then(Value::as_map)
        .cloned()
        .unwrap_or_default();
    let st = StageEnv::new(
        tree.env(db).as_ref(),
        tree.start_unix(db),
        &dateformat,
        config,
    );
    let r = Renderer::new();
    for pass in db.registry().resolution_passes() {
        (pass.run)(&mut doc, &st, &r);
    }
    RenderedCfg {
        value: Arc::new(doc),
    }
}
