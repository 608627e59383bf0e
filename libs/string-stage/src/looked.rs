//! What templates looked up of the environment and the clock.
//!
//! `ENV` and `execution` are handed to templates as objects that answer a
//! lookup and remember it, so that whoever rendered can say which
//! variables its result depends on, and whether it depends on the time of
//! the run at all: a cache that keeps a rendered value must know both
//! (the engine's `db::reads`).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value as JValue};

/// The lookups made through the objects [`env_value`] and
/// [`execution_value`] return.
#[derive(Debug, Default)]
pub struct Looked {
    vars: Mutex<BTreeSet<String>>,
    whole_env: AtomicBool,
    clock: AtomicBool,
}

impl Looked {
    pub fn new() -> Arc<Looked> {
        Arc::default()
    }

    /// The environment variables looked up, by name (set or not).
    pub fn vars(&self) -> Vec<String> {
        // A lookup is never lost, even past a panic elsewhere: a missing
        // one would key a cached result by too few inputs.
        let vars = self.vars.lock().unwrap_or_else(PoisonError::into_inner);
        vars.iter().cloned().collect()
    }

    /// Whether a template listed the whole environment.
    pub fn whole_env(&self) -> bool {
        self.whole_env.load(Ordering::Relaxed)
    }

    /// Whether a template looked at the clock (`execution.*`).
    pub fn clock(&self) -> bool {
        self.clock.load(Ordering::Relaxed)
    }

    fn var(&self, name: &str) {
        let mut vars = self.vars.lock().unwrap_or_else(PoisonError::into_inner);
        if !vars.contains(name) {
            vars.insert(name.to_string());
        }
    }
}

/// `ENV` as templates see it: a mapping of the environment.
pub fn env_value(env: Arc<BTreeMap<String, String>>, looked: Arc<Looked>) -> JValue {
    JValue::from_object(EnvObject { env, looked })
}

/// `execution` as templates see it: the run's start, formatted once
/// ([`crate::passes::execution_map`]) and shared by every context.
pub fn execution_value(execution: Arc<Execution>, looked: Arc<Looked>) -> JValue {
    JValue::from_object(ClockObject {
        inner: execution,
        looked,
    })
}

/// `execution.*` by field name.
pub type Execution = BTreeMap<&'static str, String>;

#[derive(Debug)]
struct EnvObject {
    env: Arc<BTreeMap<String, String>>,
    looked: Arc<Looked>,
}

impl Object for EnvObject {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        let key = key.as_str()?;
        self.looked.var(key);
        self.env.get(key).map(|v| JValue::from(v.as_str()))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.looked.whole_env.store(true, Ordering::Relaxed);
        Enumerator::Values(self.env.keys().map(|k| JValue::from(k.as_str())).collect())
    }
}

#[derive(Debug)]
struct ClockObject {
    inner: Arc<Execution>,
    looked: Arc<Looked>,
}

impl Object for ClockObject {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        self.looked.clock.store(true, Ordering::Relaxed);
        self.inner
            .get(key.as_str()?)
            .map(|v| JValue::from(v.as_str()))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.looked.clock.store(true, Ordering::Relaxed);
        Enumerator::Values(self.inner.keys().map(|k| JValue::from(*k)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, ctx: JValue) -> String {
        let env = minijinja::Environment::new();
        env.render_str(text, ctx).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn a_lookup_names_the_variable_and_nothing_else() {
        let looked = Looked::new();
        let env: BTreeMap<String, String> = [("USER", "ada"), ("HOME", "/home/ada")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ctx = minijinja::context! {
            ENV => env_value(Arc::new(env), looked.clone()),
            execution => execution_value(Arc::new(crate::passes::execution_map(0, "%Y")), looked.clone()),
        };
        assert_eq!(
            render("{{ ENV.USER }}-{{ ENV.UNSET }}", ctx.clone()),
            "ada-"
        );
        assert_eq!(looked.vars(), vec!["UNSET".to_string(), "USER".to_string()]);
        assert!(!looked.whole_env());
        assert!(!looked.clock());
        assert_eq!(render("{{ execution.timestamp }}", ctx.clone()), "1970");
        assert!(looked.clock());
        assert_eq!(
            render("{% for k in ENV %}{{ k }};{% endfor %}", ctx.clone()),
            "HOME;USER;"
        );
        assert!(looked.whole_env());
        // As the serialized maps these objects replaced: a length, and
        // the mapping printed whole.
        assert_eq!(
            render("{{ ENV | length }} {{ execution | length }}", ctx.clone()),
            "2 4"
        );
        assert_eq!(
            render("{{ ENV }}", ctx),
            r#"{"HOME": "/home/ada", "USER": "ada"}"#
        );
    }
}
