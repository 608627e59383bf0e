//! The resolution passes: what each may read ([`StageEnv`]) and the two
//! built-in ones, `interpolate` and `scope-this`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{DocPath, Map, Seg, Value};
use minijinja::value::Value as JValue;

use crate::looked::Looked;
use crate::{Refusal, Renderer, Scope, clock, jinja_value};

/// What every pass may read: the environment, the run's execution values
/// and the document's own `config:`; and where a pass reports the values
/// it refused ([`StageEnv::refuse`]).
pub struct StageEnv {
    pub env: JValue,
    pub execution: JValue,
    pub config: Map,
    refusals: RefCell<Vec<(DocPath, Refusal)>>,
    /// What `interpolate-external` reads; without it the pass does nothing.
    pub external: Option<crate::interp::External>,
    outcome: RefCell<crate::interp::Outcome>,
}

impl StageEnv {
    /// What the passes read, remembering in `looked` which variables
    /// and whether the clock the templates looked up.
    pub fn new(
        env: Arc<BTreeMap<String, String>>,
        start_unix: i64,
        dateformat: &str,
        config: Map,
        looked: Arc<Looked>,
    ) -> StageEnv {
        StageEnv {
            env: crate::looked::env_value(env, looked.clone()),
            execution: crate::looked::execution_value(
                Arc::new(execution_map(start_unix, dateformat)),
                looked,
            ),
            config,
            refusals: RefCell::new(Vec::new()),
            external: None,
            outcome: RefCell::new(Default::default()),
        }
    }

    /// What `interpolate-external` substituted and refused.
    pub fn take_interpolation(&self) -> crate::interp::Outcome {
        std::mem::take(&mut *self.outcome.borrow_mut())
    }

    /// Record that the value at `path` (in the merged document) was
    /// refused; the value stays as written.
    pub fn refuse(&self, path: DocPath, refusal: Refusal) {
        self.refusals.borrow_mut().push((path, refusal));
    }

    /// The refusals the passes recorded, in the order they happened.
    pub fn take_refusals(&self) -> Vec<(DocPath, Refusal)> {
        std::mem::take(&mut *self.refusals.borrow_mut())
    }

    /// `text` rendered by `r` against `ctx`; refused (recorded at `path`,
    /// the text kept) when it hits a limit. A value refused once is not
    /// rendered again by a later pass.
    pub fn render(&self, r: &Renderer, text: &str, ctx: &JValue, path: &[Seg]) -> String {
        if self.refusals.borrow().iter().any(|(p, _)| *p.0 == *path) {
            return text.to_string();
        }
        match r.render_tags(text, ctx) {
            Ok(t) => t,
            Err(refusal) => {
                self.refuse(DocPath(path.into()), refusal);
                text.to_string()
            }
        }
    }
}

/// `execution.timestamp`, `execution.date`, `execution.dateformat`,
/// `execution.iso`.
pub fn execution_map(start_unix: i64, dateformat: &str) -> crate::looked::Execution {
    let mut m = BTreeMap::new();
    m.insert("timestamp", clock::strftime(start_unix, dateformat));
    m.insert("date", clock::iso_date(start_unix));
    m.insert("dateformat", dateformat.to_string());
    m.insert("iso", clock::iso_datetime(start_unix));
    m
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
        ResolutionPass {
            name: "interpolate-external",
            order: INTERPOLATE_EXTERNAL_ORDER,
            run: interpolate_external,
        },
    ]
}

/// The order of `interpolate-external`: after the Jinja passes. Passes
/// ordered above [`LAST_JINJA_ORDER`] also run on each item entry.
pub const INTERPOLATE_EXTERNAL_ORDER: u32 = 30;
/// The last Jinja pass's order (scope-this).
pub const LAST_JINJA_ORDER: u32 = 20;

/// Pass 3: `${env.NAME}` and `${terraform.KEY}` in the interpolatable
/// sections (spec 003), from what the engine read ([`StageEnv::external`]).
pub fn interpolate_external(doc: &mut Value, st: &StageEnv, _r: &Renderer) {
    let Some(ext) = &st.external else { return };
    let out = crate::interp::interpolate_document(doc, ext);
    let mut acc = st.outcome.borrow_mut();
    acc.used.extend(out.used);
    acc.failures.extend(out.failures);
    acc.missing_env.extend(out.missing_env);
}

/// Every templated string below `v` (at `path`) replaced by `f` of its
/// text and path.
fn map_strings(v: &mut Value, path: &mut Vec<Seg>, f: &mut dyn FnMut(&str, &[Seg]) -> String) {
    match v {
        Value::Scalar { text, .. } => {
            if csis_model::value::has_template(text) {
                *text = f(text, path);
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(Seg::Index(i));
                map_strings(item, path, f);
                path.pop();
            }
        }
        Value::Map(m) => {
            for (k, item) in m.iter_mut() {
                path.push(Seg::Key(k.as_str().into()));
                map_strings(item, path, f);
                path.pop();
            }
        }
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
        config => jinja_value(&Value::map(st.config.clone())),
    };
    let unscoped = minijinja::context! {
        ENV => st.env.clone(),
        execution => st.execution.clone(),
    };
    let Value::Map(top) = doc else { return };
    for (key, v) in top.iter_mut() {
        let ctx = if is_scoped_key(key) { &unscoped } else { &full };
        let mut path = vec![Seg::Key(key.as_str().into())];
        map_strings(v, &mut path, &mut |t, p| st.render(r, t, ctx, p));
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
        for (i, item) in items.iter_mut().enumerate() {
            let mut path = vec![Seg::Key(key.as_str().into()), Seg::Index(i)];
            scope_node(item, &mut path, Some(root.clone()), &st.config, st, r);
        }
    }
}

fn is_scoped_key(k: &str) -> bool {
    k == "executables" || csis_model::vct::BUILDER_KEYS.iter().any(|(b, _)| *b == k)
}

/// Render the strings of one mapping with itself as `this`, recursing into
/// nested mappings with this one as their parent.
fn scope_node(
    node: &mut Value,
    path: &mut Vec<Seg>,
    parent: Option<JValue>,
    config: &Map,
    st: &StageEnv,
    r: &Renderer,
) {
    match node {
        Value::Map(m) => {
            let mut scoped = config.clone();
            if let Some(Value::Map(own)) = m.get("config") {
                for (k, v) in own.iter() {
                    scoped.insert(k.clone(), v.clone());
                }
            }
            let this = Scope::value(m, parent);
            let ctx = minijinja::context! {
                this => this.clone(),
                config => jinja_value(&Value::map(scoped.clone())),
                ENV => st.env.clone(),
                execution => st.execution.clone(),
            };
            let scope = InScope {
                this: &this,
                ctx: &ctx,
                scoped: &scoped,
            };
            for (k, v) in m.iter_mut() {
                path.push(Seg::Key(k.as_str().into()));
                render_in_scope(v, path, &scope, st, r);
                path.pop();
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(Seg::Index(i));
                scope_node(item, path, parent.clone(), config, st, r);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The mapping a value sits directly under, as its templates see it.
struct InScope<'a> {
    this: &'a JValue,
    ctx: &'a JValue,
    scoped: &'a Map,
}

/// A value directly under the mapping `this`: scalars (also inside lists)
/// render in its context; mappings open a scope of their own.
fn render_in_scope(
    v: &mut Value,
    path: &mut Vec<Seg>,
    scope: &InScope,
    st: &StageEnv,
    r: &Renderer,
) {
    match v {
        Value::Scalar { text, .. } => {
            if csis_model::value::has_template(text) {
                *text = st.render(r, text, scope.ctx, path);
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(Seg::Index(i));
                render_in_scope(item, path, scope, st, r);
                path.pop();
            }
        }
        nested @ Value::Map(_) => {
            scope_node(nested, path, Some(scope.this.clone()), scope.scoped, st, r)
        }
        Value::Null => {}
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
        let st = StageEnv::new(
            Arc::new(env),
            1_796_226_804,
            DEFAULT_DATEFORMAT,
            config,
            Looked::new(),
        );
        let r = Renderer::new();
        for p in builtin_passes() {
            (p.run)(&mut doc, &st, &r);
        }
        crate::data::unmark_value(&mut doc);
        doc
    }

    #[test]
    fn an_environment_value_is_not_rendered_again_by_a_later_pass() {
        let doc = stage(
            "config:\n  a: \"{{ ENV.A }}\"\n  j: \"{{ ENV.A | safe }}{{ ENV.A | e }}{{ ENV.A ~ '' }}\"\n  p: \"{{ ENV.P }}\"\nos_builders:\n  - name: alma\n    d: \"{{ ENV.A }}\"\n    e: \"{{ ENV.E }}{ ENV.B }}\"\n    own: \"{{ this.name }}\"\n",
            &[
                ("A", "{{ ENV.B }}"),
                ("B", "secret"),
                ("E", "{"),
                ("P", "${env.B}"),
            ],
        );
        let config = doc.get("config").unwrap();
        assert_eq!(config.get("a").unwrap().as_str(), Some("{{ ENV.B }}"));
        assert_eq!(
            config.get("j").unwrap().as_str(),
            Some("{{ ENV.B }}{{ ENV.B }}{{ ENV.B }}")
        );
        assert_eq!(config.get("p").unwrap().as_str(), Some("${env.B}"));
        let os = &doc.get("os_builders").unwrap().as_seq().unwrap()[0];
        assert_eq!(os.get("d").unwrap().as_str(), Some("{{ ENV.B }}"));
        // A `{` of data does not make a tag with the text after it.
        assert_eq!(os.get("e").unwrap().as_str(), Some("{{ ENV.B }}"));
        assert_eq!(os.get("own").unwrap().as_str(), Some("alma"));
    }

    #[test]
    fn a_configured_template_read_by_another_still_renders() {
        let doc = stage(
            "config:\n  team: ops\nos_builders:\n  - name: alma\n    family: \"{{ ENV.T }}-x\"\n    d: \"{{ this.family }} {{ config.team }}\"\n",
            &[("T", "ops")],
        );
        let os = &doc.get("os_builders").unwrap().as_seq().unwrap()[0];
        assert_eq!(os.get("d").unwrap().as_str(), Some("ops-x ops"));
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

    #[test]
    fn a_refused_value_is_recorded_at_its_path_and_kept() {
        let (mut doc, _) = parse(
            "config:\n  big: \"{{ 'x' * 2000000 }}\"\nos_builders:\n  - name: alma\n    tags:\n      loop: \"{% for a in range(10000) %}{% for b in range(10000) %}{{ a }}{% endfor %}{% endfor %}\"\n",
        )
        .unwrap();
        let st = StageEnv::new(
            Arc::default(),
            0,
            DEFAULT_DATEFORMAT,
            Map::default(),
            Looked::new(),
        );
        let r = Renderer::new();
        for p in builtin_passes() {
            (p.run)(&mut doc, &st, &r);
        }
        let refused: Vec<(String, Refusal)> = st
            .take_refusals()
            .into_iter()
            .map(|(p, r)| (p.to_string(), r))
            .collect();
        assert_eq!(
            refused,
            [
                (
                    "config.big".to_string(),
                    Refusal::Size(crate::MAX_VALUE_BYTES)
                ),
                (
                    "os_builders[0].tags.loop".to_string(),
                    Refusal::Fuel(crate::TEMPLATE_FUEL)
                ),
            ]
        );
        assert_eq!(
            doc.get("config").unwrap().get("big").unwrap().as_str(),
            Some("{{ 'x' * 2000000 }}")
        );
    }
}
