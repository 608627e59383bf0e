//! The string stage over the tree: the merged cfg/ document with every
//! overlay's `config:`, run through the registry's resolution passes
//! (csis-string-stage holds the passes and the renderer).

use std::sync::Arc;

use csis_model::vct::BUILDER_KEYS;
use csis_model::{Diagnostic, DocPath, Map, Seg, Value};
use csis_string_stage::passes::{DEFAULT_DATEFORMAT, LAST_JINJA_ORDER, StageEnv};
use csis_string_stage::{Refusal, Renderer};

use crate::db::{Db, Tree};
use crate::load::builder_labels::label_in_sentence;
use crate::load::cfg::{CfgDocument, cfg_document};
use crate::load::overlay::overlay_config;

/// The merged cfg/ document after the string stage, with every overlay's
/// `config:` merged over the tree's first.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct RenderedCfg {
    pub value: Arc<Value>,
    /// The values the passes refused (a template over its limits).
    pub diags: Vec<Diagnostic>,
    /// What interpolation substituted in the builder lists.
    pub interpolated: Vec<csis_string_stage::interp::Used>,
}

#[salsa::tracked(returns(ref))]
pub fn rendered_cfg(db: &dyn Db, tree: Tree) -> RenderedCfg {
    let cfg = cfg_document(db, tree);
    let mut doc = (*cfg.value).clone();
    if let Some(extra) = overlay_config(db, tree)
        && let Value::Map(top) = &mut doc
    {
        let config = top
            .entry("config".to_string())
            .or_insert_with(|| Value::map(Map::default()));
        if !matches!(config, Value::Map(_)) {
            *config = Value::map(Map::default());
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
    let looked = csis_string_stage::looked::Looked::new();
    let st = StageEnv::new(
        crate::db::reads::env_for_templates(db, tree).clone(),
        crate::db::reads::start_for_templates(db, tree),
        &dateformat,
        config,
        looked.clone(),
    );
    let mut st = st;
    let r = Renderer::new();
    for pass in db.registry().resolution_passes() {
        if pass.order > LAST_JINJA_ORDER && st.external.is_none() {
            // After the Jinja passes: what interpolation reads, only when
            // a builder entry mentions it (else no file is read).
            st.external = crate::load::interp::external_for_cfg(db, tree, &doc);
        }
        (pass.run)(&mut doc, &st, &r);
    }
    // What the passes substituted was marked as data so that no later
    // pass rendered it; the marks go once all passes are done. A field
    // rendered again per item keeps its data as data there.
    csis_string_stage::data::unmark_document(&mut doc, &rendered_per_item);
    crate::db::reads::note_looked(db, &looked);
    let mut diags: Vec<Diagnostic> = st
        .take_refusals()
        .iter()
        .map(|(path, refusal)| refusal_diagnostic(cfg, &doc, path, refusal))
        .collect();
    let interpolated =
        crate::load::interp::report(st.take_interpolation(), |p| cfg.origin(p), false);
    diags.extend(interpolated.diags);
    RenderedCfg {
        value: Arc::new(doc),
        diags,
        interpolated: interpolated.used,
    }
}

/// Whether a cfg/ key's value is rendered again for each item: a
/// builder's `*_template` fields, and `email_domain`, which the user
/// builder folds into its email template.
fn rendered_per_item(key: &str) -> bool {
    key.ends_with("_template") || key == "email_domain"
}

/// The refusal of a templated cfg/ value: in a builder or executable
/// entry, which field of which entry; elsewhere, its path.
fn refusal_diagnostic(
    cfg: &CfgDocument,
    doc: &Value,
    path: &DocPath,
    refusal: &Refusal,
) -> Diagnostic {
    let owner = match &path.0[..] {
        [Seg::Key(list), Seg::Index(i), rest @ ..] if !rest.is_empty() => {
            let label = if &**list == "executables" {
                Some("executable".to_string())
            } else {
                BUILDER_KEYS
                    .iter()
                    .find(|(k, _)| **k == **list)
                    .map(|(_, vct)| label_in_sentence(*vct))
            };
            let name = doc
                .get(list)
                .and_then(Value::as_seq)
                .and_then(|entries| entries.get(*i))
                .and_then(|e| e.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            label.map(|l| (DocPath(rest.into()), format!(" of {l} '{name}'")))
        }
        _ => None,
    };
    let (field, owner) = owner.unwrap_or_else(|| (path.clone(), String::new()));
    Diagnostic::error(format!("template in field '{field}'{owner} {refusal}"))
        .help(refusal.help())
        .at_opt(cfg.origin(path))
}
