//! The string stage: Jinja tags in cfg/ rendered by ordered passes before
//! anything is structured.
//!
//! Rendering is per tag: every `{{ ... }}` that renders is replaced, and a
//! tag that cannot render (an unknown name, an unset variable) is kept as
//! written for a later stage. A string with `{% ... %}` blocks renders
//! whole or is kept whole.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{Map, Value};
use minijinja::value::{Enumerator, Object, ObjectRepr, Value as JValue};
use minijinja::{AutoEscape, Environment, Template, UndefinedBehavior};

use crate::cfg::cfg_document;
use crate::clock;
use crate::db::{Db, Tree};
use crate::overlay::overlay_config;

/// Renders tags with undefined names refused, so that an unrenderable tag
/// is detected and kept.
///
/// Every distinct template text is compiled once and kept: a tree repeats
/// the same few tags (a user builder's email template, once per user)
/// thousands of times. [`Renderer::shared`] is one renderer per thread.
pub struct Renderer {
    env: RefCell<Environment<'static>>,
}

/// Past this many distinct templates the cache starts over, so a
/// long-lived `csis watch` does not grow without bound.
const MAX_TEMPLATES: usize = 4096;

impl Default for Renderer {
    fn default() -> Self {
        Renderer::new()
    }
}

thread_local! {
    static SHARED: Renderer = Renderer::new();
}

impl Renderer {
    pub fn new() -> Renderer {
        Renderer {
            env: RefCell::new(Renderer::environment()),
        }
    }

    /// Runs `f` with this thread's renderer.
    pub fn shared<T>(f: impl FnOnce(&Renderer) -> T) -> T {
        SHARED.with(f)
    }

    fn environment() -> Environment<'static> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        // Templates are named by their text; no name may turn escaping on.
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env
    }

    /// `f` over the compiled `text`; nothing when it does not compile.
    fn with_template<T>(&self, text: &str, f: impl FnOnce(&Template) -> T) -> Option<T> {
        if self.env.borrow().get_template(text).is_err() {
            let mut env = self.env.borrow_mut();
            if env.templates().count() >= MAX_TEMPLATES {
                *env = Renderer::environment();
            }
            env.add_template_owned(text.to_string(), text.to_string())
                .ok()?;
        }
        let env = self.env.borrow();
        let template = env.get_template(text).ok()?;
        Some(f(&template))
    }

    /// The top-level names a template refers to (`image` in
    /// `{{ image.name }}`); empty when it does not compile.
    pub fn referenced_names(&self, text: &str) -> std::collections::HashSet<String> {
        self.with_template(text, |t| t.undeclared_variables(false))
            .unwrap_or_default()
    }

    fn render(&self, text: &str, ctx: &JValue) -> Option<String> {
        self.with_template(text, |t| t.render(ctx).ok()).flatten()
    }

    /// `text` with every tag that renders against `ctx` replaced.
    pub fn render_tags(&self, text: &str, ctx: &JValue) -> String {
        if !csis_model::value::has_template(text) {
            return text.to_string();
        }
        if text.contains("{%") {
            return self.render(text, ctx).unwrap_or_else(|| text.to_string());
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start..].find("}}") else {
                break;
            };
            let tag = &rest[start..start + len + 2];
            out.push_str(&rest[..start]);
            match self.render(tag, ctx) {
                Some(r) => out.push_str(&r),
                None => out.push_str(tag),
            }
            rest = &rest[start + len + 2..];
        }
        out.push_str(rest);
        out
    }
}

/// A configuration value as a template sees it: plain scalars typed,
/// mappings as objects.
pub fn jinja_value(v: &Value) -> JValue {
    use csis_model::value::Typed;
    match v.typed() {
        Typed::Null => JValue::from(()),
        Typed::Bool(b) => JValue::from(b),
        Typed::Int(i) => JValue::from(i),
        Typed::Float(f) => JValue::from(f),
        Typed::Str(s) => JValue::from(s),
        Typed::Seq(items) => JValue::from(items.iter().map(jinja_value).collect::<Vec<_>>()),
        Typed::Map(m) => JValue::from_object(
            m.iter()
                .map(|(k, v)| (k.clone(), jinja_value(v)))
                .collect::<BTreeMap<String, JValue>>(),
        ),
    }
}

/// `this` in the scope-this pass: a mapping that knows its parent.
#[derive(Debug)]
pub struct Scope {
    map: Map,
    parent: Option<JValue>,
}

impl Scope {
    pub fn value(map: &Map, parent: Option<JValue>) -> JValue {
        JValue::from_object(Scope {
            map: map.clone(),
            parent,
        })
    }
}

impl Object for Scope {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        let key = key.as_str()?;
        if key == "parent" && !self.map.contains_key("parent") {
            return self.parent.clone();
        }
        let me = JValue::from_dyn_object(self.clone());
        Some(match self.map.get(key)? {
            Value::Map(m) => Scope::value(m, Some(me)),
            Value::Seq(items) => JValue::from(
                items
                    .iter()
                    .map(|i| match i {
                        Value::Map(m) => Scope::value(m, Some(me.clone())),
                        other => jinja_value(other),
                    })
                    .collect::<Vec<_>>(),
            ),
            other => jinja_value(other),
        })
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let keys: Vec<JValue> = self.map.keys().map(|k| JValue::from(k.as_str())).collect();
        Enumerator::Iter(Box::new(keys.into_iter()))
    }
}

/// What every pass may read: the environment, the run's execution values
/// and the document's own `config:`.
pub struct StageEnv {
    pub env: JValue,
    pub execution: JValue,
    pub config: Map,
}

impl StageEnv {
    pub fn new(
        env: &BTreeMap<String, String>,
        start_unix: i64,
        dateformat: &str,
        config: Map,
    ) -> StageEnv {
        StageEnv {
            env: JValue::from_serialize(env),
            execution: execution_value(start_unix, dateformat),
            config,
        }
    }
}

/// `execution.timestamp`, `execution.date`, `execution.dateformat`.
pub fn execution_value(start_unix: i64, dateformat: &str) -> JValue {
    let mut m = BTreeMap::new();
    m.insert("timestamp", clock::strftime(start_unix, dateformat));
    m.insert("date", clock::iso_date(start_unix));
    m.insert("dateformat", dateformat.to_string());
    m.insert("iso", clock::iso_datetime(start_unix));
    JValue::from_serialize(m)
}

/// One string-stage pass over the merged cfg/ document.
#[derive(Clone, Copy)]
pub struct ResolutionPass {
    pub name: &'static str,
    pub order: u32,
    pub run: fn(&mut Value, &StageEnv, &Renderer),
}

/// The built-in passes, in order.
pub fn builtin_passes() -> Vec<ResolutionPass> {
    vec![
        ResolutionPass {
            name: "interpolate",
            order: 10,
            run: interpolate,
        },
        ResolutionPass {
            name: "scope-this",
            order: 20,
            run: scope_this,
        },
    ]
}

fn map_strings(v: &mut Value, f: &mut dyn FnMut(&str) -> String) {
    match v {
        Value::Scalar { text, .. } => {
            if csis_model::value::has_template(text) {
                *text = f(text);
            }
        }
        Value::Seq(items) => items.iter_mut().for_each(|i| map_strings(i, f)),
        Value::Map(m) => m.values_mut().for_each(|i| map_strings(i, f)),
        Value::Null => {}
    }
}

/// Pass 1: ENV, execution and the document's `config:`. Inside the builder
/// lists `config.*` tags are left to scope-this, where an entry's own
/// `config:` shadows the document's.
pub fn interpolate(doc: &mut Value, st: &StageEnv, r: &Renderer) {
    let full = minijinja::context! {
        ENV => st.env.clone(),
        execution => st.execution.clone(),
        config => jinja_value(&Value::Map(st.config.clone())),
    };
    let unscoped = minijinja::context! {
        ENV => st.env.clone(),
        execution => st.execution.clone(),
    };
    let Value::Map(top) = doc else { return };
    for (key, v) in top.iter_mut() {
        let ctx = if is_scoped_key(key) { &unscoped } else { &full };
        map_strings(v, &mut |t| r.render_tags(t, ctx));
    }
}

/// Pass 2: `this` (the nearest enclosing mapping), `this.parent`, and
/// `config` scoped: each mapping's own `config:` merged over the enclosing
/// one for its subtree.
pub fn scope_this(doc: &mut Value, st: &StageEnv, r: &Renderer) {
    let Value::Map(top) = doc else { return };
    let root = Scope::value(top, None);
    let keys: Vec<String> = top.keys().filter(|k| is_scoped_key(k)).cloned().collect();
    for key in keys {
        let Some(Value::Seq(items)) = top.get_mut(&key) else {
            continue;
        };
        for item in items.iter_mut() {
            scope_node(item, Some(root.clone()), &st.config, st, r);
        }
    }
}

fn is_scoped_key(k: &str) -> bool {
    k == "executables" || csis_model::vct::BUILDER_KEYS.iter().any(|(b, _)| *b == k)
}

/// Render the strings of one mapping with itself as `this`, recursing into
/// nested mappings with this one as their parent.
fn scope_node(node: &mut Value, parent: Option<JValue>, config: &Map, st: &StageEnv, r: &Renderer) {
    match node {
        Value::Map(m) => {
            let mut scoped = config.clone();
            if let Some(Value::Map(own)) = m.get("config") {
                for (k, v) in own {
                    scoped.insert(k.clone(), v.clone());
                }
            }
            let this = Scope::value(m, parent);
            let ctx = minijinja::context! {
                this => this.clone(),
                config => jinja_value(&Value::Map(scoped.clone())),
                ENV => st.env.clone(),
                execution => st.execution.clone(),
            };
            for v in m.values_mut() {
                render_in_scope(v, &this, &ctx, &scoped, st, r);
            }
        }
        Value::Seq(items) => {
            for i in items.iter_mut() {
                scope_node(i, parent.clone(), config, st, r);
            }
        }
        _ => {}
    }
}

/// A value directly under the mapping `this`: scalars (also inside lists)
/// render in its context; mappings open a scope of their own.
fn render_in_scope(
    v: &mut Value,
    this: &JValue,
    ctx: &JValue,
    scoped: &Map,
    st: &StageEnv,
    r: &Renderer,
) {
    match v {
        Value::Scalar { text, .. } => {
            if csis_model::value::has_template(text) {
                *text = r.render_tags(text, ctx);
            }
        }
        Value::Seq(items) => {
            for i in items.iter_mut() {
                render_in_scope(i, this, ctx, scoped, st, r);
            }
        }
        nested @ Value::Map(_) => scope_node(nested, Some(this.clone()), scoped, st, r),
        Value::Null => {}
    }
}

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

/// DEFAULT_DATEFORMAT.
pub const DEFAULT_DATEFORMAT: &str = "%Y%m%d_%H%M%S";

#[cfg(test)]
mod tests {
    use super::*;
    use csis_yaml::parse;

    fn stage(text: &str, env: &[(&str, &str)]) -> Value {
        let (mut doc, _) = parse(text).unwrap();
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let config = doc
            .get("config")
            .and_then(Value::as_map)
            .cloned()
            .unwrap_or_default();
        let st = StageEnv::new(&env, 1_796_226_804, DEFAULT_DATEFORMAT, config);
        let r = Renderer::new();
        for p in builtin_passes() {
            (p.run)(&mut doc, &st, &r);
        }
        doc
    }

    #[test]
    fn env_user_in_config_renders() {
        let doc = stage(
            "config:\n  systemuser: \"{{ ENV.USER }}\"\n",
            &[("USER", "avery")],
        );
        assert_eq!(
            doc.get("config")
                .unwrap()
                .get("systemuser")
                .unwrap()
                .as_str(),
            Some("avery")
        );
    }

    #[test]
    fn an_unset_variable_keeps_its_tag() {
        let doc = stage(
            "config:\n  a: \"x {{ ENV.NOPE }} {{ execution.timestamp }}\"\n",
            &[],
        );
        assert_eq!(
            doc.get("config").unwrap().get("a").unwrap().as_str(),
            Some("x {{ ENV.NOPE }} 20261202_155324")
        );
    }

    #[test]
    fn this_parent_reaches_the_os_builder() {
        let doc = stage(
            "os_builders:\n  - name: alma\n    family: alma-linux\n    tags:\n      OS: \"{{ this.parent.family }}\"\n",
            &[],
        );
        let os = &doc.get("os_builders").unwrap().as_seq().unwrap()[0];
        assert_eq!(
            os.get("tags").unwrap().get("OS").unwrap().as_str(),
            Some("alma-linux")
        );
    }

    #[test]
    fn list_items_render_with_their_mapping_as_this() {
        let doc = stage(
            "config:\n  team: ops\nos_builders:\n  - name: alma\n    owners: [\"{{ this.name }}\", \"{{ config.team }}\"]\n",
            &[],
        );
        let os = &doc.get("os_builders").unwrap().as_seq().unwrap()[0];
        let owners = os.get("owners").unwrap().as_seq().unwrap();
        assert_eq!(owners[0].as_str(), Some("alma"));
        assert_eq!(owners[1].as_str(), Some("ops"));
    }

    #[test]
    fn a_nested_entry_config_shadows_the_enclosing_config() {
        let doc = stage(
            "config:\n  flavour: doc\nos_builders:\n  - name: alma\n    config:\n      flavour: builder\n    description: \"{{ config.flavour }}\"\n    runtimes:\n      - image_builder: x\n        config:\n          flavour: entry\n        description: \"{{ config.flavour }} {{ this.parent.name }}\"\n      - image_builder: y\n        description: \"{{ config.flavour }}\"\n",
            &[],
        );
        let os = &doc.get("os_builders").unwrap().as_seq().unwrap()[0];
        assert_eq!(os.get("description").unwrap().as_str(), Some("builder"));
        let rts = os.get("runtimes").unwrap().as_seq().unwrap();
        assert_eq!(
            rts[0].get("description").unwrap().as_str(),
            Some("entry alma")
        );
        assert_eq!(rts[1].get("description").unwrap().as_str(), Some("builder"));
    }
}
