//! The string stage of spec 000: Jinja tags in configuration strings
//! rendered per tag by ordered resolution passes, before anything is
//! structured. Pure: no salsa, no engine, no I/O; the engine runs the
//! passes its registry holds over the merged cfg/ document.
//!
//! Rendering is per tag: every `{{ ... }}` that renders is replaced, and a
//! tag that cannot render (an unknown name, an unset variable) is kept as
//! written for a later stage. A string with `{% ... %}` blocks renders
//! whole or is kept whole.

pub mod clock;
pub mod passes;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{Map, Value};
use minijinja::value::{Enumerator, Object, ObjectRepr, Value as JValue};
use minijinja::{AutoEscape, Environment, Template, UndefinedBehavior};

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
