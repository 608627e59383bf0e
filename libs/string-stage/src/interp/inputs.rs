//! The texts the engine hands over, parsed: a terraform state file's
//! outputs and a dotenv file's variables.

use std::collections::BTreeMap;

use csis_model::{Map, Value};

/// One output of a state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub value: Value,
    pub sensitive: bool,
}

/// The outputs of a terraform.tfstate (version 4), by name.
pub type Outputs = BTreeMap<String, Output>;

/// A JSON value as a configuration value: scalars plain (numbers and
/// booleans keep their type), arrays and objects native.
pub fn value_of_json(j: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match j {
        J::Null => Value::Null,
        J::Bool(b) => Value::Scalar {
            text: b.to_string(),
            plain: true,
        },
        J::Number(n) => Value::Scalar {
            text: n.to_string(),
            plain: true,
        },
        J::String(s) => Value::str(s.clone()),
        J::Array(a) => Value::Seq(a.iter().map(value_of_json).collect()),
        J::Object(m) => Value::Map(
            m.iter()
                .map(|(k, v)| (k.clone(), value_of_json(v)))
                .collect::<Map>(),
        ),
    }
}

/// The outputs of a state file's text: `outputs.<key>.value` and
/// `.sensitive` of a version 4 state.
pub fn tfstate_outputs(text: &str) -> Result<Outputs, String> {
    let j: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not a terraform state (JSON): {e}"))?;
    match j.get("version").and_then(serde_json::Value::as_i64) {
        Some(4) => {}
        Some(v) => return Err(format!("state version {v}; csis reads version 4")),
        None => return Err("no 'version' key; not a terraform state".into()),
    }
    let mut out = Outputs::new();
    if let Some(outputs) = j.get("outputs").and_then(serde_json::Value::as_object) {
        for (k, o) in outputs {
            let value = o.get("value").map(value_of_json).unwrap_or(Value::Null);
            let sensitive = o
                .get("sensitive")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            out.insert(k.clone(), Output { value, sensitive });
        }
    }
    Ok(out)
}

/// KEY=VALUE lines as dotenv files have them: `#` comments, blank lines,
/// an optional `export `, values in single quotes (kept as written) or
/// double quotes (`\n`, `\"`, `\\` escaped), unquoted values trimmed and
/// cut at ` #`.
pub fn parse_dotenv(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let k = k.trim();
        if k.is_empty() {
            continue;
        }
        let v = v.trim();
        let value = if let Some(rest) = v.strip_prefix('"') {
            let mut s = String::new();
            let mut chars = rest.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => s.push('\n'),
                        Some('t') => s.push('\t'),
                        Some(o) => s.push(o),
                        None => {}
                    },
                    o => s.push(o),
                }
            }
            s
        } else if let Some(rest) = v.strip_prefix('\'') {
            rest.split('\'').next().unwrap_or_default().to_string()
        } else {
            v.split(" #").next().unwrap_or_default().trim().to_string()
        };
        out.insert(k.to_string(), value);
    }
    out
}
