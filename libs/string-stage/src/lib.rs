//! The string stage of spec 000: Jinja tags in configuration strings
//! rendered per tag by ordered resolution passes, before anything is
//! structured. Pure: no salsa, no engine, no I/O; the engine runs the
//! passes its registry holds over the merged cfg/ document.
//!
//! Rendering is per tag: every `{{ ... }}` that renders is replaced, and a
//! tag that cannot render (an unknown name, an unset variable) is kept as
//! written for a later stage. A string with `{% ... %}` blocks renders
//! whole or is kept whole.
//!
//! Rendering is bounded ([`limits`]): a render that runs out of its
//! instruction budget, writes more than a value may hold or calls a
//! function templates do not have is refused ([`Refusal`]), never kept.

pub mod clock;
pub mod data;
pub mod interp;
pub mod limits;
pub mod looked;
pub mod passes;

pub use limits::{MAX_VALUE_BYTES, Refusal, TEMPLATE_FUEL};

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
    /// What [`Renderer::referenced_names`] found, by template text:
    /// minijinja parses a template's source again for each question, and
    /// 20,000 users ask it of one email template.
    names: RefCell<std::collections::HashMap<String, Arc<[String]>, foldhash::fast::RandomState>>,
    limits: limits::Limits,
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
    /// A renderer with the fixed limits ([`TEMPLATE_FUEL`],
    /// [`MAX_VALUE_BYTES`]).
    pub fn new() -> Renderer {
        Renderer::with_limits(limits::Limits::DEFAULT)
    }

    /// A renderer with other limits (tests and the fuzz target use smaller
    /// ones to stay fast).
    pub fn with_limits(limits: limits::Limits) -> Renderer {
        Renderer {
            env: RefCell::new(Renderer::environment(&limits)),
            names: RefCell::default(),
            limits,
        }
    }

    /// The limits every render of this renderer is held to.
    pub fn limits(&self) -> limits::Limits {
        self.limits
    }

    /// Runs `f` with this thread's renderer.
    pub fn shared<T>(f: impl FnOnce(&Renderer) -> T) -> T {
        SHARED.with(f)
    }

    fn environment(limits: &limits::Limits) -> Environment<'static> {
        let mut env = Environment::new();
        // `debug()` prints the whole context (every item a template can
        // name): megabytes per call. Configuration has no use for it.
        env.remove_global("debug");
        env.set_fuel(Some(limits.fuel));
        limits::guard(&mut env);
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        // Templates are named by their text; no name may turn escaping on.
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env
    }

    /// `f` over the compiled `text`; nothing when it does not compile, or
    /// when minijinja panics compiling or running it (the fuzz target
    /// found `{% import 'x' as y-1 %}` reaching an `unreachable!` in its
    /// code generator): such a template is one that does not compile.
    fn with_template<T>(&self, text: &str, f: impl FnOnce(&Template) -> T) -> Option<T> {
        let caught = quiet_unwind(|| self.with_template_unguarded(text, f));
        caught.unwrap_or_else(|| {
            // Whatever the panic left half-done goes with the environment.
            if let Ok(mut env) = self.env.try_borrow_mut() {
                *env = Renderer::environment(&self.limits);
            }
            None
        })
    }

    fn with_template_unguarded<T>(&self, text: &str, f: impl FnOnce(&Template) -> T) -> Option<T> {
        {
            // Compiled before: the common case, one lookup.
            let env = self.env.borrow();
            if let Ok(template) = env.get_template(text) {
                return Some(f(&template));
            }
        }
        {
            let mut env = self.env.borrow_mut();
            if env.templates().count() >= MAX_TEMPLATES {
                *env = Renderer::environment(&self.limits);
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
    pub fn referenced_names(&self, text: &str) -> Arc<[String]> {
        if let Some(names) = self.names.borrow().get(text) {
            return names.clone();
        }
        let mut names: Vec<String> = self
            .with_template(text, |t| t.undeclared_variables(false))
            .unwrap_or_default()
            .into_iter()
            .collect();
        names.sort();
        let names: Arc<[String]> = names.into();
        let mut known = self.names.borrow_mut();
        if known.len() >= MAX_TEMPLATES {
            known.clear();
        }
        known.insert(text.to_string(), names.clone());
        names
    }

    /// `text` rendered whole into at most `room` bytes: `Ok(None)` when it
    /// does not compile or fails in a way a later stage may mend (an
    /// unknown name), `Err` when it hit a limit.
    fn render(&self, text: &str, ctx: &JValue, room: usize) -> Result<Option<String>, Refusal> {
        self.with_template(text, |t| {
            let mut out = limits::Bounded::new(room);
            limits::start(self.limits.fuel);
            let result = t.render_captured_to(ctx, &mut out).map(|_| ());
            match result {
                Ok(()) => Ok(out.into_string()),
                Err(e) => match limits::refusal(&e, &out, &self.limits) {
                    Some(refusal) => Err(refusal),
                    None => Ok(None),
                },
            }
        })
        .unwrap_or(Ok(None))
    }

    /// `text` with every tag that renders against `ctx` replaced; refused
    /// when a tag hits a limit (the whole value is then held to
    /// [`limits::Limits::max_bytes`]).
    pub fn render_tags(&self, text: &str, ctx: &JValue) -> Result<String, Refusal> {
        self.render_tags_with(text, ctx, Some(&|_, _| None))
    }

    /// [`Renderer::render_tags`], a tag of two names (`{{ user.name }}`)
    /// first asked of `direct`: the string minijinja would find there,
    /// read where it is instead of through `ctx`'s objects (one string
    /// made per lookup, most of what rendering a large tree's templated
    /// defaults cost), or nothing to look it up in `ctx`, which is made
    /// only then.
    pub fn render_tags_direct(
        &self,
        text: &str,
        ctx: &LazyContext<'_>,
        direct: Direct<'_>,
    ) -> Result<String, Refusal> {
        self.render_tags_with(text, ctx, Some(direct))
    }

    /// [`Renderer::render_tags`]; `lookups`: a tag that only names a
    /// string (`{{ group.name }}`) is looked up without minijinja (tests
    /// compare both ways).
    fn render_tags_with(
        &self,
        text: &str,
        ctx: &dyn Context,
        lookups: Option<Direct<'_>>,
    ) -> Result<String, Refusal> {
        if !csis_model::value::has_template(text) {
            return Ok(text.to_string());
        }
        let cap = self.limits.max_bytes;
        // Most texts hold no `%`: one byte search before the pair scan.
        if text.contains('%') && text.as_bytes().windows(2).any(|w| w == b"{%") {
            return Ok(self
                .render(text, ctx.value(), cap)?
                .unwrap_or_else(|| text.to_string()));
        }
        let mut out = String::with_capacity(text.len().min(cap));
        let mut rest = text;
        while let Some(start) = find_pair(rest, b'{') {
            let Some(len) = find_pair(&rest[start..], b'}') else {
                break;
            };
            let tag = &rest[start..start + len + 2];
            out.push_str(&rest[..start]);
            let room = cap.saturating_sub(out.len());
            if let Some(direct) = lookups
                && let Some(found) = looked_up(tag, ctx, direct)
                && let Some(found) = found.written()
                && found.len() <= room
            {
                out.push_str(&found);
                rest = &rest[start + len + 2..];
                continue;
            }
            match self.render(tag, ctx.value(), room)? {
                Some(r) => out.push_str(&r),
                None => out.push_str(tag),
            }
            rest = &rest[start + len + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// What templates render against.
trait Context {
    fn value(&self) -> &JValue;
}

impl Context for JValue {
    fn value(&self) -> &JValue {
        self
    }
}

/// A context made the first time a tag needs it: a pass whose tags all
/// name the item's own fields (a user's templated defaults) makes none.
pub struct LazyContext<'a> {
    made: std::cell::OnceCell<JValue>,
    make: &'a dyn Fn() -> JValue,
}

impl<'a> LazyContext<'a> {
    pub fn new(make: &'a dyn Fn() -> JValue) -> LazyContext<'a> {
        LazyContext {
            made: std::cell::OnceCell::new(),
            make,
        }
    }
}

impl Context for LazyContext<'_> {
    fn value(&self) -> &JValue {
        self.made.get_or_init(self.make)
    }
}

/// What a caller answers for a tag of two names (`{{ user.name }}`,
/// the names as written): the string minijinja would find, or nothing
/// for minijinja's lookup to find it.
pub type Direct<'a> = &'a dyn Fn(&str, &str) -> Option<&'a str>;

/// What a tag that is only a dotted name found: a string the caller
/// answered, or minijinja's value.
enum Found<'a> {
    Direct(&'a str),
    Looked(JValue),
}

impl Found<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Found::Direct(s) => Some(s),
            Found::Looked(v) => v.as_str(),
        }
    }

    /// What the tag writes, as the formatter writes it: a template of
    /// the user's as it is, any other string marked as data.
    fn written(&self) -> Option<std::borrow::Cow<'_, str>> {
        let template = match self {
            Found::Direct(s) => data::is_template_text(s),
            Found::Looked(v) => v.is_safe(),
        };
        let s = self.as_str()?;
        Some(if template {
            std::borrow::Cow::Borrowed(s)
        } else {
            data::mark(s)
        })
    }
}

/// Where the ASCII `c` twice in a row (`{{`, `}}`) first starts in `s`: a
/// plain scan of a short string. `str::find` with a two-byte pattern sets
/// up a substring searcher on every call, a third of the cost of
/// rendering a tree's tags.
fn find_pair(s: &str, c: u8) -> Option<usize> {
    s.as_bytes().windows(2).position(|w| w == [c, c])
}

/// The string value a tag that is only a dotted name (`{{ user.name }}`) renders
/// to, looked up as minijinja looks it up (the context, then each
/// attribute); nothing for any other tag, or when the name is not a
/// string, which minijinja renders (or refuses) itself. Most tags of a
/// tree are such names, rendered tens of thousands of times (a user
/// builder's email template, once per user), and minijinja's setup of
/// a render was a sixth of a cold plan.
fn looked_up<'a>(tag: &str, ctx: &dyn Context, direct: Direct<'a>) -> Option<Found<'a>> {
    let inner = tag.strip_prefix("{{")?.strip_suffix("}}")?.trim();
    let identifier = |n: &str| {
        n.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    // One pass: each name checked as it is looked up (a lookup has no
    // effect, so stopping at a name that is not one is as good as
    // checking them all first). Split at a one-char set, which scans
    // these few bytes plainly where a lone `'.'` calls a byte search.
    let mut names = inner.split(['.']);
    let first = names.next()?;
    // Names a template reads as literals or as its own, not the context's.
    let reserved = matches!(
        first,
        "true"
            | "false"
            | "none"
            | "True"
            | "False"
            | "None"
            | "self"
            | "loop"
            | "super"
            | "caller"
            | "varargs"
            | "kwargs"
    );
    if !identifier(first) || reserved {
        return None;
    }
    let mut two = names.clone();
    if let (Some(second), None) = (two.next(), two.next())
        && identifier(second)
        && let Some(found) = direct(first, second)
    {
        return Some(Found::Direct(found));
    }
    let mut value = ctx.value().get_attr(first).ok()?;
    for name in names {
        if !identifier(name) || value.is_undefined() {
            return None;
        }
        value = value.get_attr(name).ok()?;
    }
    value.as_str().is_some().then_some(Found::Looked(value))
}

thread_local! {
    /// Whether this thread is inside [`quiet_unwind`].
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `f()`, or `None` when it panicked; the panic is not printed (the hook
/// installed once here passes every other panic to the one before it).
fn quiet_unwind<T>(f: impl FnOnce() -> T) -> Option<T> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    QUIET.with(|q| q.set(was));
    out
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
        // A template of the user's is handed on as one (a tag printing it
        // writes it unmarked, for the next pass); any other string is
        // data (crate::data).
        Typed::Str(s) if data::is_template_text(s) => JValue::from_safe_string(s.to_string()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    #[test]
    fn find_pair_finds_what_str_find_finds() {
        for s in [
            "", "{", "{{", "a{b{{c", "{{{", "x}}", "é{é{{", "} }}", "{ {",
        ] {
            assert_eq!(find_pair(s, b'{'), s.find("{{"), "{s:?}");
            assert_eq!(find_pair(s, b'}'), s.find("}}"), "{s:?}");
        }
    }

    fn render(text: &str) -> Result<String, Refusal> {
        Renderer::new().render_tags(text, &minijinja::context! { name => "web" })
    }

    #[test]
    fn a_lazy_context_is_made_once_and_only_for_a_tag_not_answered_directly() {
        let r = Renderer::new();
        let made = std::cell::Cell::new(0);
        let make = || {
            made.set(made.get() + 1);
            minijinja::context! { group => minijinja::context! { name => "ops" } }
        };
        let ctx = LazyContext::new(&make);
        let direct: Direct<'_> =
            &|first, field| (first == "user" && field == "name").then_some("ann");
        assert_eq!(
            r.render_tags_direct("{{ user.name }}@x", &ctx, direct),
            Ok("ann@x".to_string())
        );
        assert_eq!(made.get(), 0);
        assert_eq!(
            r.render_tags_direct(
                "{{ group.name }} {{ user.name }} {{ group.name | upper }}",
                &ctx,
                direct
            ),
            Ok("ops ann OPS".to_string())
        );
        assert_eq!(made.get(), 1);
    }

    #[test]
    fn a_name_looked_up_renders_as_minijinja_renders_it() {
        let mut group = Map::default();
        group.insert("name".into(), Value::str("ops"));
        group.insert(
            "gid".into(),
            Value::Scalar {
                text: "42".into(),
                plain: true,
            },
        );
        group.insert("none".into(), Value::str("a key named none"));
        let ctx = minijinja::context! {
            group => Scope::value(&group, None),
            user => minijinja::context! { name => "ann", tags => vec!["a"] },
            empty => "",
            none => "shadowed?",
            n => 7,
        };
        let r = Renderer::new();
        for text in [
            "{{ group.name }}",
            "{{group.name}}@{{ user.name }}",
            "{{  user.name\n}}",
            "{{ group.gid }}",
            "{{ group.none }}",
            "{{ group.missing }}",
            "{{ missing.name }}",
            "{{ user.tags }}",
            "{{ user.name.first }}",
            "{{ empty }}",
            "{{ none }}",
            "{{ n }}",
            "{{ group . name }}",
            "{{- group.name -}}",
            "{{ group.name | upper }}",
            "{{ range }}",
            "x {{ 1name }} y",
        ] {
            assert_eq!(
                r.render_tags_with(text, &ctx, Some(&|_, _| None)),
                r.render_tags_with(text, &ctx, None),
                "{text}"
            );
        }
        let nothing: Direct<'_> = &|_, _| None;
        let found = looked_up("{{ group.name }}", &ctx, nothing);
        assert_eq!(found.as_ref().and_then(Found::as_str), Some("ops"));
        assert!(looked_up("{{ none }}", &ctx, nothing).is_none());
        // Past the room a value has, minijinja refuses it.
        let small = Renderer::with_limits(Limits {
            fuel: TEMPLATE_FUEL,
            max_bytes: 2,
        });
        assert_eq!(
            small.render_tags_with("{{ group.name }}", &ctx, Some(&|_, _| None)),
            small.render_tags_with("{{ group.name }}", &ctx, None)
        );
    }

    #[test]
    fn debug_is_not_a_function_of_configuration_templates() {
        assert_eq!(
            render("{{ debug() }}"),
            Err(Refusal::UnknownFunction("debug".into()))
        );
        assert_eq!(
            render("{% if true %}{{ debug() }}{% endif %}"),
            Err(Refusal::UnknownFunction("debug".into()))
        );
        assert_eq!(
            Refusal::UnknownFunction("debug".into()).to_string(),
            "calls 'debug()', a function configuration templates do not have"
        );
    }

    #[test]
    fn three_nested_loops_run_out_of_fuel() {
        let text = "{% for a in range(10000) %}{% for b in range(10000) %}{% for c in range(10000) %}x{% endfor %}{% endfor %}{% endfor %}";
        let r = Renderer::with_limits(Limits {
            fuel: TEMPLATE_FUEL,
            max_bytes: usize::MAX,
        });
        assert_eq!(
            r.render_tags(text, &JValue::UNDEFINED),
            Err(Refusal::Fuel(TEMPLATE_FUEL))
        );
        assert_eq!(
            Refusal::Fuel(TEMPLATE_FUEL).to_string(),
            "ran out of its budget of 1,000,000 instructions (a loop too large?)"
        );
    }

    #[test]
    fn walking_a_huge_lazy_list_spends_the_budget() {
        let spent = Err(Refusal::Fuel(TEMPLATE_FUEL));
        for text in [
            "{{ [1] * 1000000000000 }}",
            "{{ [[1] * 1000000000000] }}",
            "{{ ([1] * 1000000000000)|join }}",
            "{{ ([1] * 1000000000000)|select('eq', 2)|list }}",
            "{{ (range(100000) * 100000)|sum }}",
            "{% for i in range(100000) %}{% set x = range(100000)|sum %}{% endfor %}",
        ] {
            assert_eq!(render(text), spent, "{text}");
        }
        // A sized sequence's length costs nothing.
        assert_eq!(
            render("{{ ([1] * 1000000000000)|length }}").as_deref(),
            Ok("1000000000000")
        );
        // The guarded filters still take their arguments.
        assert_eq!(
            render("{{ [3, 1, 2]|sort(reverse=true)|join('-') }} {{ {'b': 1, 'a': 2}|dictsort|first }} {{ [1, 2]|length }}").as_deref(),
            Ok("3-2-1 [\"a\", 2] 2")
        );
    }

    #[test]
    fn a_loop_within_the_budget_renders() {
        assert_eq!(
            render("{% for i in range(3) %}{{ name }}{{ i }} {% endfor %}").as_deref(),
            Ok("web0 web1 web2 ")
        );
    }

    #[test]
    fn an_oversized_value_is_refused_before_it_is_kept() {
        let over = Err(Refusal::Size(MAX_VALUE_BYTES));
        assert_eq!(render("{{ 'x' * 2000000 }}"), over);
        // Each tag fits; the value does not.
        assert_eq!(render("a {{ 'x' * 600000 }} b {{ 'y' * 600000 }}"), over);
        assert_eq!(
            render("{% for i in range(100000) %}0123456789abcdef{% endfor %}"),
            over
        );
        assert_eq!(
            Refusal::Size(MAX_VALUE_BYTES).to_string(),
            "rendered more than the 1 MiB a value may hold"
        );
        // Exactly the cap is allowed.
        let r = Renderer::with_limits(Limits {
            fuel: TEMPLATE_FUEL,
            max_bytes: 8,
        });
        assert_eq!(
            r.render_tags("{{ 'x' * 8 }}", &JValue::UNDEFINED)
                .as_deref(),
            Ok("xxxxxxxx")
        );
        assert_eq!(
            r.render_tags("{{ 'x' * 9 }}", &JValue::UNDEFINED),
            Err(Refusal::Size(8))
        );
    }

    #[test]
    fn range_and_repetition_keep_minijinjas_own_caps() {
        // range() refuses more than 100,000 items and a string repeated
        // past 100 MB: an error a later stage cannot mend either, kept.
        assert_eq!(
            render("{{ range(1000000000) }}").as_deref(),
            Ok("{{ range(1000000000) }}")
        );
        assert_eq!(
            render("{{ 'x' * 1000000000 }}").as_deref(),
            Ok("{{ 'x' * 1000000000 }}")
        );
    }

    #[test]
    fn a_template_minijinja_cannot_compile_is_kept_as_written() {
        for text in [
            "{% import 'x' as yrange(10000) %}",
            "{%- import 'x' as y-1 %}",
        ] {
            assert_eq!(render(text), Ok(text.to_string()));
            assert!(Renderer::new().referenced_names(text).is_empty());
        }
        assert_eq!(render("{{ 1 + 1 }}"), Ok("2".to_string()));
    }

    #[test]
    fn an_unknown_name_is_still_kept_for_a_later_stage() {
        assert_eq!(
            render("{{ name }} {{ later.name }}").as_deref(),
            Ok("web {{ later.name }}")
        );
    }
}
