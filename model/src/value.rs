//! The YAML value tree the engine compares between revisions.
//!
//! Positions are deliberately absent: a [`Value`] equal to the previous
//! revision's lets salsa backdate, so moving a line or editing a comment
//! re-executes nothing below the parse. Positions live in a separate map
//! keyed by [`DocPath`](crate::path::DocPath).

use indexmap::IndexMap;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A mapping in document order. Hashed with foldhash rather than the
/// standard SipHash: structuring looks keys up about 1.5 million times in a
/// cold plan of the reference tree, and SipHash was a tenth of its
/// instructions (docs/performance.md). The order is the insertion order
/// whatever the hasher.
pub type Map = IndexMap<String, Value, foldhash::fast::RandomState>;

/// A [`Map`] most holders leave empty (an item's `config:`): 8 bytes
/// inline instead of 64, and no allocation while empty (issue 40). Reads
/// as a `Map` through `Deref`; serializes as one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparseMap(Option<Box<Map>>);

static EMPTY_MAP: std::sync::LazyLock<Map> = std::sync::LazyLock::new(Map::default);

impl From<Map> for SparseMap {
    fn from(map: Map) -> SparseMap {
        SparseMap((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl std::ops::Deref for SparseMap {
    type Target = Map;
    fn deref(&self) -> &Map {
        self.0.as_deref().unwrap_or(&EMPTY_MAP)
    }
}

impl Serialize for SparseMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// One YAML node. Scalars keep their source text; what a scalar *means*
/// (a string, a number, a boolean) is decided by the field that reads it,
/// so `family_version: 10` is the string "10" and `enabled: yes` is true.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Value {
    /// `~`, `null`, or an empty value.
    #[default]
    Null,
    /// A scalar's text and whether it was written plain (unquoted).
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Value>),
    /// Boxed: a map is 64 bytes inline, and every node of a tree (most of
    /// them scalars) would pay for it; boxed, a node is 32 (issue 40).
    Map(Box<Map>),
}

impl Value {
    pub fn map(map: Map) -> Value {
        Value::Map(Box::new(map))
    }

    pub fn str(text: impl Into<String>) -> Value {
        Value::Scalar {
            text: text.into(),
            plain: false,
        }
    }

    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// A scalar's text as one item, a sequence's scalars' texts in order;
    /// nothing for null and mappings.
    pub fn texts(&self) -> Vec<&str> {
        match self {
            Value::Scalar { text, .. } => vec![text],
            Value::Seq(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// The scalar's text; `None` for null, sequences and mappings.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map().and_then(|m| m.get(key))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// What YAML calls this node's kind, for messages.
    /// The value as a message names what was written: a scalar by its
    /// text (quoted, cut after 40 characters), else what kind it is.
    pub fn described(&self) -> String {
        match self {
            Value::Null => "nothing".to_string(),
            Value::Scalar { text, .. } => {
                let shown: String = text.chars().take(40).collect();
                let cut = if shown.len() < text.len() { "..." } else { "" };
                format!("'{shown}{cut}'")
            }
            Value::Seq(_) => "a list".to_string(),
            Value::Map(_) => "a mapping".to_string(),
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Scalar { .. } => "scalar",
            Value::Seq(_) => "list",
            Value::Map(_) => "mapping",
        }
    }

    /// Whether any scalar below (or this one) contains a template tag.
    pub fn contains_template(&self) -> bool {
        match self {
            Value::Scalar { text, .. } => has_template(text),
            Value::Seq(s) => s.iter().any(Value::contains_template),
            Value::Map(m) => m.values().any(Value::contains_template),
            Value::Null => false,
        }
    }

    /// Merge `other` over `self` key by key (mappings only; anything else
    /// replaces).
    pub fn merge_over(&mut self, other: &Value) {
        match (self, other) {
            (Value::Map(mine), Value::Map(theirs)) => {
                for (k, v) in theirs.iter() {
                    mine.insert(k.clone(), v.clone());
                }
            }
            (me, other) => *me = other.clone(),
        }
    }

    /// The typed reading of a plain scalar, as YAML 1.2's core schema reads
    /// it; quoted scalars are always strings.
    pub fn typed(&self) -> Typed<'_> {
        match self {
            Value::Null => Typed::Null,
            Value::Scalar { text, plain: false } => Typed::Str(text),
            Value::Scalar { text, plain: true } => {
                if let Ok(i) = text.parse::<i64>() {
                    Typed::Int(i)
                } else if let Some(b) = parse_core_bool(text) {
                    Typed::Bool(b)
                } else if is_float(text) {
                    text.parse::<f64>().map_or(Typed::Str(text), Typed::Float)
                } else {
                    Typed::Str(text)
                }
            }
            Value::Seq(s) => Typed::Seq(s),
            Value::Map(m) => Typed::Map(m),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        match self.typed() {
            Typed::Null => serde_json::Value::Null,
            Typed::Bool(b) => serde_json::Value::Bool(b),
            Typed::Int(i) => serde_json::Value::from(i),
            Typed::Float(f) => serde_json::Value::from(f),
            Typed::Str(s) => serde_json::Value::String(s.to_string()),
            Typed::Seq(s) => serde_json::Value::Array(s.iter().map(Value::to_json).collect()),
            Typed::Map(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }
}

/// A value read with YAML 1.2 core-schema types.
#[derive(Debug, PartialEq)]
pub enum Typed<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    Seq(&'a [Value]),
    Map(&'a Map),
}

fn parse_core_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn is_float(text: &str) -> bool {
    let t = text.trim_start_matches(['+', '-']);
    !t.is_empty()
        && t.chars().any(|c| c.is_ascii_digit())
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
}

/// Whether a string holds a Jinja tag.
pub fn has_template(text: &str) -> bool {
    // Most scalars hold no `{` at all: one byte search rules them out
    // (every scalar of the tree is asked, see docs/performance.md).
    text.contains('{')
        && text
            .as_bytes()
            .windows(2)
            .any(|w| w[0] == b'{' && (w[1] == b'{' || w[1] == b'%'))
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.typed() {
            Typed::Null => s.serialize_unit(),
            Typed::Bool(b) => s.serialize_bool(b),
            Typed::Int(i) => s.serialize_i64(i),
            Typed::Float(f) => s.serialize_f64(f),
            Typed::Str(t) => s.serialize_str(t),
            Typed::Seq(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Typed::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_map_reads_and_serializes_as_the_map_it_holds() {
        let empty = SparseMap::from(Map::default());
        assert!(empty.is_empty());
        assert_eq!(empty, SparseMap::default());
        let mut m = Map::default();
        m.insert("zone".into(), Value::str("a"));
        let held = SparseMap::from(m.clone());
        assert_eq!(held.get("zone"), Some(&Value::str("a")));
        assert_eq!(*held, m);
        assert_eq!(
            serde_json::to_string(&held).unwrap(),
            serde_json::to_string(&m).unwrap()
        );
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
    }

    #[test]
    fn plain_scalars_read_typed_quoted_ones_stay_strings() {
        let plain = |t: &str| Value::Scalar {
            text: t.into(),
            plain: true,
        };
        assert_eq!(plain("10").typed(), Typed::Int(10));
        assert_eq!(plain("9.4").typed(), Typed::Float(9.4));
        assert_eq!(plain("true").typed(), Typed::Bool(true));
        assert_eq!(plain("yes").typed(), Typed::Str("yes"));
        assert_eq!(Value::str("10").typed(), Typed::Str("10"));
    }
}
