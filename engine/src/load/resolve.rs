//! Template resolution for items: templated defaults filled in, then up to
//! five passes over every string that still holds `{{`, each rendered in
//! the item's SmartContext. A tag that cannot render stays as written; a
//! value whose template hits a limit (csis_string_stage::limits) is
//! refused, kept as written and not rendered again.

use std::borrow::Cow;
use std::collections::BTreeMap;

use csis_model::path::Step;
use csis_model::{DocPath, ItemKind, Map, Value, Vct};
use std::sync::{Arc, OnceLock};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value as JValue};

use crate::load::builders::Builders;
use csis_string_stage::{Refusal, Renderer, jinja_value};

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
                m.reserve(2);
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

    /// What a pass over `this` renders against. A mapping from the
    /// foreign keys, then the item under its kind's name, then the fixed
    /// names, each over what came before.
    fn context(
        &self,
        own: Cow<'static, str>,
        this: Arc<Value>,
        fks: &Arc<BTreeMap<String, JValue>>,
    ) -> JValue {
        JValue::from_object(ItemContext {
            own,
            me: TemplateItem::value(this),
            env: self.env.clone(),
            execution: self.execution.clone(),
            builder: self.builder.clone(),
            fks: fks.clone(),
        })
    }
}

/// The names a template of an item sees, looked up where they are rather
/// than copied into a map for every pass of every item.
#[derive(Debug)]
struct ItemContext {
    /// The item's kind, singular, without underscores (`image`).
    own: Cow<'static, str>,
    me: JValue,
    env: JValue,
    execution: JValue,
    builder: Option<JValue>,
    fks: Arc<BTreeMap<String, JValue>>,
}

/// The item's kind as its templates name it: singular, without
/// underscores (`image`, `baseimage` for `base_image`).
pub(crate) fn own_name(kind: ItemKind) -> Cow<'static, str> {
    match kind.singular() {
        s if s.contains('_') => Cow::Owned(s.replace('_', "")),
        s => Cow::Borrowed(s),
    }
}

/// Whether `name` is the item itself in its context (what
/// [`ItemContext`]'s lookup answers with the item), before the names
/// the context binds to something else.
fn names_item(name: &str, own: &str, has_builder: bool) -> bool {
    match name {
        // Sub-items (a modifications: or storages: entry) are resolved
        // with their item, which is the model that identifies them.
        "this" | "identified_model" => true,
        "ENV" | "execution" => false,
        "builder" if has_builder => false,
        k => k == own,
    }
}

impl Object for ItemContext {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        let key = key.as_str()?;
        if names_item(key, &self.own, self.builder.is_some()) {
            return Some(self.me.clone());
        }
        match key {
            "ENV" => Some(self.env.clone()),
            "execution" => Some(self.execution.clone()),
            "builder" if self.builder.is_some() => self.builder.clone(),
            k => self.fks.get(k).cloned(),
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: std::collections::BTreeSet<&str> =
            self.fks.keys().map(String::as_str).collect();
        keys.extend([
            self.own.as_ref(),
            "this",
            "identified_model",
            "ENV",
            "execution",
        ]);
        if self.builder.is_some() {
            keys.insert("builder");
        }
        let keys: Vec<JValue> = keys.into_iter().map(JValue::from).collect();
        Enumerator::Iter(Box::new(keys.into_iter()))
    }
}

/// An item (a mapping) as templates see it: what [`jinja_value`] makes
/// of it, a field converted when a template asks for it. A template
/// names one or two fields of its item (`{{ user.name }}`), and
/// converting every item whole for each pass was a twentieth of a cold
/// plan. Enumerating it (a loop over the item, `tojson`) converts it
/// whole, once, and answers as the converted mapping does.
#[derive(Debug)]
pub(crate) struct TemplateItem {
    value: Arc<Value>,
    whole: OnceLock<Arc<BTreeMap<String, JValue>>>,
}

impl TemplateItem {
    /// An item as its templates see it, or the foreign item a template
    /// names; [`jinja_value`] when it is not a mapping.
    pub(crate) fn value(item: Arc<Value>) -> JValue {
        if item.as_map().is_some() {
            JValue::from_object(TemplateItem {
                value: item,
                whole: OnceLock::new(),
            })
        } else {
            jinja_value(&item)
        }
    }

    fn whole(&self) -> &Arc<BTreeMap<String, JValue>> {
        self.whole.get_or_init(|| {
            let map = self.value.as_map().into_iter().flatten();
            Arc::new(map.map(|(k, v)| (k.clone(), jinja_value(v))).collect())
        })
    }
}

impl Object for TemplateItem {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        self.value.as_map()?.get(key.as_str()?).map(jinja_value)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.whole().enumerate()
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.value.as_map().map_or(0, |m| m.len()))
    }
}

/// Resolve every template of an item value, at most [`MAX_PASSES`] times;
/// the values refused, by their path inside the item. `value` holds a
/// template: its caller asks before it makes the context, so the first
/// pass is not asked again (a value without one would take one pass that
/// renders nothing).
pub fn resolve_item(
    kind: ItemKind,
    value: &mut Value,
    ctx: &SmartContext,
    r: &Renderer,
) -> Vec<(DocPath, Refusal)> {
    let mut refused = Vec::new();
    let fks = Arc::new(ctx.fks.clone());
    let own = own_name(kind);
    let mut kept = true;
    for _ in 0..MAX_PASSES {
        if !kept {
            break;
        }
        kept = false;
        // A pass renders against the item as the pass found it: the
        // context shares the value itself, and what the pass renders is
        // written back once the context is gone.
        let found = Arc::new(std::mem::take(value));
        let make = || ctx.context(own.clone(), found.clone(), &fks);
        let jctx = csis_string_stage::LazyContext::new(&make);
        // `{{ user.name }}` read from the item as the context would find
        // it (a string field, as `jinja_value` types it).
        let has_builder = ctx.builder.is_some();
        let direct = |first: &str, field: &str| {
            if !names_item(first, &own, has_builder) {
                return None;
            }
            match found.as_map()?.get(field)?.typed() {
                csis_model::value::Typed::Str(s) => Some(s),
                _ => None,
            }
        };
        let mut rendered = Vec::new();
        render_strings(
            &found,
            &mut Vec::new(),
            &mut 0,
            &Render {
                ctx: &jctx,
                direct: &direct,
                r,
            },
            &mut refused,
            &mut rendered,
            &mut kept,
        );
        drop(jctx);
        *value = Arc::try_unwrap(found).unwrap_or_else(|shared| (*shared).clone());
        if rendered.is_empty() {
            break;
        }
        write_back(value, &mut 0, &mut rendered.into_iter().peekable());
    }
    refused
}

/// What one pass renders each string with.
struct Render<'p> {
    ctx: &'p csis_string_stage::LazyContext<'p>,
    direct: csis_string_stage::Direct<'p>,
    r: &'p Renderer,
}

/// Every templated string of `v` rendered against `ctx`: each one that
/// changed, by its position among the strings of `v` (`seen` counts
/// them), into `rendered`; a pass that changed nothing is the last.
/// `kept`: whether a string holds a tag after the pass (one kept as
/// written, or rendered to another tag), which is what the next pass
/// renders; asked of the whole value again, that was a second walk of
/// every item for every pass.
fn render_strings<'a>(
    v: &'a Value,
    path: &mut Vec<Step<'a>>,
    seen: &mut usize,
    with: &Render<'_>,
    refused: &mut Vec<(DocPath, Refusal)>,
    rendered: &mut Vec<(usize, String)>,
    kept: &mut bool,
) {
    match v {
        Value::Scalar { text, .. } => {
            let at = *seen;
            *seen += 1;
            if !csis_model::value::has_template(text) {
                return;
            }
            if refused.iter().any(|(p, _)| p.is_at(path)) {
                *kept = true;
                return;
            }
            match with.r.render_tags_direct(text, with.ctx, with.direct) {
                Ok(t) if t != *text => {
                    *kept |= csis_model::value::has_template(&t);
                    rendered.push((at, t));
                }
                Ok(_) => *kept = true,
                Err(refusal) => {
                    *kept = true;
                    refused.push((DocPath::root().with_steps(path), refusal));
                }
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                render_strings(item, path, seen, with, refused, rendered, kept);
                path.pop();
            }
        }
        Value::Map(m) => {
            for (k, item) in m.iter() {
                path.push(Step::Key(k));
                render_strings(item, path, seen, with, refused, rendered, kept);
                path.pop();
            }
        }
        Value::Null => {}
    }
}

/// Each rendered string into its place in `v`, the strings counted in
/// the order [`render_strings`] counted them.
fn write_back(
    v: &mut Value,
    seen: &mut usize,
    rendered: &mut std::iter::Peekable<std::vec::IntoIter<(usize, String)>>,
) {
    if rendered.peek().is_none() {
        return;
    }
    match v {
        Value::Scalar { text, .. } => {
            if rendered.peek().is_some_and(|(at, _)| at == seen)
                && let Some((_, t)) = rendered.next()
            {
                *text = t;
            }
            *seen += 1;
        }
        Value::Seq(items) => items.iter_mut().for_each(|x| write_back(x, seen, rendered)),
        Value::Map(m) => m.values_mut().for_each(|x| write_back(x, seen, rendered)),
        Value::Null => {}
    }
}

/// The refusal of a templated value of an item: which field, which item,
/// which limit.
pub fn refusal_diagnostic(
    kind_label: &str,
    name: &str,
    origin: &csis_model::Origin,
    path: &DocPath,
    refusal: &Refusal,
) -> csis_model::Diagnostic {
    let mut at = origin.clone();
    at.path = at.path.joined(path.0.iter().cloned());
    csis_model::Diagnostic::error(format!(
        "template in field '{path}' of {kind_label} '{name}' {refusal}"
    ))
    .help(refusal.help())
    .at(at)
}
