//! Template resolution for items: templated defaults filled in, then up to
//! five passes over every string that still holds `{{`, each rendered in
//! the item's SmartContext. A tag that cannot render stays as written.

use std::collections::BTreeMap;

use csis_model::{ItemKind, Map, Value, Vct};
use minijinja::value::Value as JValue;

use crate::load::builders::Builders;
use csis_string_stage::{Renderer, jinja_value};

/// The most passes a value gets: enough for a default that names a field
/// that is itself a template (description → email → name).
pub const MAX_PASSES: usize = 5;

/// Fill the templated defaults an item kind declares.
pub fn fill_defaults(kind: ItemKind, value: &mut Value, builders: &Builders) {
    let Value::Map(m) = value else { return };
    let missing = |m: &Map, k: &str| m.get(k).is_none_or(Value::is_null);
    match kind {
        ItemKind::USERS => {
            let t = m.get("type").and_then(Value::as_str).unwrap_or("default");
            if let Some(decl) = builders.resolve(Vct::UserBuilderModel, t)
                && let csis_model::models::BaseBuilder::User(ub) = &decl.base
            {
                if missing(m, "email") {
                    m.insert("email".into(), Value::str(ub.email_template()));
                }
                if missing(m, "description") {
                    m.insert(
                        "description".into(),
                        Value::str(ub.default_user_description_template.clone()),
                    );
                }
            }
        }
        ItemKind::IMAGES if missing(m, "description") => {
            m.insert(
                "description".into(),
                Value::str("Image {{ image.name }} from source image {{ image.source_image }}"),
            );
        }
        ItemKind::INSTANCES if missing(m, "description") => {
            m.insert(
                "description".into(),
                Value::str("Instance from {{ image.name }}"),
            );
        }
        _ => {}
    }
}

/// The names a template sees besides the item itself.
pub struct SmartContext {
    pub env: JValue,
    pub execution: JValue,
    /// Foreign-key names to the objects they reference.
    pub fks: BTreeMap<String, JValue>,
    pub builder: Option<JValue>,
}

impl SmartContext {
    /// Names the context always binds.
    pub const FIXED: [&'static str; 5] =
        ["this", "ENV", "execution", "builder", "identified_model"];

    fn context(&self, kind: ItemKind, this: &Value) -> JValue {
        let mut m: BTreeMap<String, JValue> = self.fks.clone();
        let me = jinja_value(this);
        m.insert(kind.singular().replace('_', ""), me.clone());
        m.insert("this".into(), me.clone());
        // Sub-items (a modifications: or storages: entry) are resolved with
        // their item, which is the model that identifies them.
        m.insert("identified_model".into(), me);
        m.insert("ENV".into(), self.env.clone());
        m.insert("execution".into(), self.execution.clone());
        if let Some(b) = &self.builder {
            m.insert("builder".into(), b.clone());
        }
        JValue::from_object(m)
    }
}

/// Resolve every template of an item value, at most [`MAX_PASSES`] times.
pub fn resolve_item(kind: ItemKind, value: &mut Value, ctx: &SmartContext, r: &Renderer) {
    for _ in 0..MAX_PASSES {
        if !value.contains_template() {
            return;
        }
        let jctx = ctx.context(kind, value);
        let before = value.clone();
        render_strings(value, &jctx, r);
        if *value == before {
            return;
        }
    }
}

fn render_strings(v: &mut Value, ctx: &JValue, r: &Renderer) {
    match v {
        Value::Scalar { text, .. } => {
            if csis_model::value::has_template(text) {
                *text = r.render_tags(text, ctx);
            }
        }
        Value::Seq(items) => items.iter_mut().for_each(|i| render_strings(i, ctx, r)),
        Value::Map(m) => m.values_mut().for_each(|i| render_strings(i, ctx, r)),
        Value::Null => {}
    }
}
