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
        J::Object(m) => Value::map(
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

/// Where a dotenv file is malformed (1-based line and column, in
/// characters) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotenvError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// KEY=VALUE lines as dotenv files have them: `#` comments, blank lines,
/// an optional `export `, values in single quotes (kept as written) or
/// double quotes, unquoted values trimmed and cut at ` #`. A leading
/// byte-order mark is not part of the first key.
///
/// In double quotes `\n`, `\t`, `\r`, `\"`, `\\`, `\'`, `\$` and
/// `\uXXXX` (four hex digits, as python-dotenv decodes them) are
/// escapes; any other backslash, and a quote left open, is refused with
/// its line and column rather than read as something else.
pub fn parse_dotenv(text: &str) -> Result<BTreeMap<String, String>, DotenvError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = BTreeMap::new();
    for (n, raw) in text.lines().enumerate() {
        let err = |at: &str, message: String| {
            // `at` is a slice of `raw`: its column is what comes before.
            let off = (at.as_ptr() as usize).saturating_sub(raw.as_ptr() as usize);
            DotenvError {
                line: n + 1,
                col: raw.get(..off).map_or(0, |b| b.chars().count()) + 1,
                message,
            }
        };
        let line = raw.trim();
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
            double_quoted(rest).map_err(|(at, m)| err(at.unwrap_or(v), m))?
        } else if let Some(rest) = v.strip_prefix('\'') {
            match rest.split_once('\'') {
                Some((inside, _)) => inside.to_string(),
                None => {
                    return Err(err(
                        v,
                        format!(
                            "the single quote opened here is not closed on this line -- close it: {k}='...'"
                        ),
                    ));
                }
            }
        } else {
            v.split(" #").next().unwrap_or_default().trim().to_string()
        };
        out.insert(k.to_string(), value);
    }
    Ok(out)
}

/// The value of a double-quoted dotenv string whose text after the
/// opening quote is `rest`; or where it is wrong (a suffix of `rest`,
/// `None` for the opening quote), and why.
fn double_quoted(rest: &str) -> Result<String, (Option<&str>, String)> {
    let mut s = String::new();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok(s),
            '\\' => match chars.next() {
                Some((_, 'n')) => s.push('\n'),
                Some((_, 't')) => s.push('\t'),
                Some((_, 'r')) => s.push('\r'),
                Some((_, o @ ('"' | '\\' | '\'' | '$'))) => s.push(o),
                Some((_, 'u')) => {
                    let hex = rest.get(i + 2..i + 6).unwrap_or_default();
                    let decoded = (hex.len() == 4 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                        .then(|| u32::from_str_radix(hex, 16).ok())
                        .flatten()
                        .and_then(char::from_u32);
                    let Some(d) = decoded else {
                        return Err((
                            rest.get(i..),
                            "'\\u' is followed by four hex digits naming a character (\\u0041 is A) -- write \\\\u for a backslash and a u".to_string(),
                        ));
                    };
                    s.push(d);
                    for _ in 0..4 {
                        chars.next();
                    }
                }
                Some((_, o)) => {
                    return Err((
                        rest.get(i..),
                        format!(
                            "'\\{o}' is not an escape csis knows (\\n \\t \\r \\\" \\\\ \\' \\$ \\uXXXX) -- write \\\\ for a backslash"
                        ),
                    ));
                }
                None => {
                    return Err((
                        rest.get(i..),
                        "a backslash ends the line inside double quotes -- write \\\\ for a backslash and close the quote".to_string(),
                    ));
                }
            },
            o => s.push(o),
        }
    }
    Err((
        None,
        "the double quote opened on this line is not closed -- close it (a value spans one line; write \\n for a line break)".to_string(),
    ))
}
