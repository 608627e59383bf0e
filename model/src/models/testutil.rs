//! Hand-built values and a reader harness for the models' unit tests.

use crate::diag::{Diagnostic, Origin, Severity};
use crate::fields::Fields;
use crate::path::DocPath;
use crate::value::{Map, Value};

pub fn plain(t: &str) -> Value {
    Value::Scalar {
        text: t.into(),
        plain: true,
    }
}

pub fn quoted(t: &str) -> Value {
    Value::str(t)
}

pub fn seq(items: &[Value]) -> Value {
    Value::Seq(items.to_vec())
}

pub fn strs(items: &[&str]) -> Value {
    Value::Seq(items.iter().map(|s| plain(s)).collect())
}

pub fn map(pairs: &[(&str, Value)]) -> Map {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

pub fn mapv(pairs: &[(&str, Value)]) -> Value {
    Value::map(map(pairs))
}

/// Read `m` at `things[0]` of `f.yml` with `read`, then finish.
pub fn read<T>(m: &Map, read: impl FnOnce(&mut Fields<'_>) -> T) -> (T, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let origin = Origin::new("f.yml", DocPath::root().key("things").index(0));
    let mut f = Fields::new(m, origin, "Owner 'x'", &mut diags);
    let out = read(&mut f);
    f.finish();
    (out, diags)
}

/// The errors' (message, path) pairs.
pub fn errors(diags: &[Diagnostic]) -> Vec<(String, String)> {
    of(diags, Severity::Error)
}

pub fn warnings(diags: &[Diagnostic]) -> Vec<(String, String)> {
    of(diags, Severity::Warning)
}

fn of(diags: &[Diagnostic], sev: Severity) -> Vec<(String, String)> {
    diags
        .iter()
        .filter(|d| d.severity == sev)
        .map(|d| {
            (
                d.message.clone(),
                d.origin
                    .as_ref()
                    .map(|o| o.path.to_string())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Shorthand for an expected (message, path) pair.
pub fn e(msg: &str, path: &str) -> (String, String) {
    (msg.to_string(), path.to_string())
}
