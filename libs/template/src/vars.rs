//! `${name}` substitution: values from a flat YAML mapping and `k=v`
//! pairs (a pair set later wins over the file). Only `${name}` with a
//! name `[A-Za-z_][A-Za-z0-9_]*` is a variable; any other `${...}` (a
//! shell's `${p:-MISSING}` or `${VAR#x}` in a configuration command) is
//! left as written.

use std::path::Path;
use std::sync::OnceLock;

use csis_model::Value;
use indexmap::IndexMap;
use regex::Regex;

use crate::Problem;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Variables {
    values: IndexMap<String, String>,
}

fn reference() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        #[allow(clippy::unwrap_used)]
        Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}").unwrap()
    })
}

impl Variables {
    pub fn new() -> Self {
        Variables::default()
    }

    /// A flat mapping of names to scalars.
    pub fn from_yaml(file: &Path, text: &str) -> Result<Self, Problem> {
        let (v, pos) = csis_yaml::parse(text)
            .map_err(|e| Problem::error(file, e.span.line, e.span.col, e.message))?;
        let mut out = Variables::new();
        match v {
            Value::Null => {}
            Value::Map(m) => {
                for (k, x) in *m {
                    let path = csis_model::DocPath::root().key(&k);
                    match x {
                        Value::Scalar { text, .. } => {
                            out.values.insert(k, text);
                        }
                        Value::Null => {
                            out.values.insert(k, String::new());
                        }
                        other => {
                            let (line, col) =
                                pos.value(&path).map(|s| (s.line, s.col)).unwrap_or((0, 0));
                            return Err(Problem::error(
                                file,
                                line,
                                col,
                                format!(
                                    "variable '{k}' must be a scalar, not a {} (a variables file is a flat mapping)",
                                    other.kind_name()
                                ),
                            ));
                        }
                    }
                }
            }
            other => {
                return Err(Problem::error(
                    file,
                    1,
                    1,
                    format!(
                        "a variables file is a flat mapping of names to values, not a {}",
                        other.kind_name()
                    ),
                ));
            }
        }
        Ok(out)
    }

    pub fn set(&mut self, k: &str, v: &str) {
        self.values.insert(k.to_string(), v.to_string());
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.values.get(k).map(String::as_str)
    }

    /// `text` with every `${name}` replaced; the first unknown name is an
    /// error.
    pub fn expand(&self, text: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut last = 0;
        for c in reference().captures_iter(text) {
            let (Some(whole), Some(name)) = (c.get(0), c.get(1)) else {
                continue;
            };
            let Some(v) = self.values.get(name.as_str()) else {
                return Err(format!(
                    "unknown variable '${{{}}}': give it with --var {}=VALUE or in a variables file",
                    name.as_str(),
                    name.as_str()
                ));
            };
            out.push_str(&text[last..whole.start()]);
            out.push_str(v);
            last = whole.end();
        }
        out.push_str(&text[last..]);
        Ok(out)
    }
}
