//! A parsed document read straight into a typed record (`T::deserialize(&value)`),
//! with the types [`Value::to_json`] gives, without building the JSON copy
//! first: meta-state records are megabytes, and the copy was a third of
//! their peak memory. Fields a record does not declare are skipped unread.

use serde::de::value::{Error, MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

use crate::value::{Typed, Value};

impl<'de> serde::Deserializer<'de> for &'de Value {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.typed() {
            Typed::Null => visitor.visit_unit(),
            Typed::Bool(b) => visitor.visit_bool(b),
            Typed::Int(i) => visitor.visit_i64(i),
            Typed::Float(f) => visitor.visit_f64(f),
            Typed::Str(s) => visitor.visit_borrowed_str(s),
            Typed::Seq(items) => visitor.visit_seq(SeqDeserializer::new(items.iter())),
            Typed::Map(m) => {
                visitor.visit_map(MapDeserializer::new(m.iter().map(|(k, v)| (k.as_str(), v))))
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    /// A unit variant is its name; another variant a one-entry mapping.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.typed() {
            Typed::Str(s) => visitor.visit_enum(s.into_deserializer()),
            Typed::Map(m) => visitor.visit_enum(MapAccessDeserializer::new(MapDeserializer::new(
                m.iter().map(|(k, v)| (k.as_str(), v)),
            ))),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier
    }
}

impl<'de> IntoDeserializer<'de, Error> for &'de Value {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;

    /// A document as the YAML parser builds it: numbers and booleans
    /// plain scalars, strings quoted.
    fn from_json(j: &serde_json::Value) -> Value {
        use serde_json::Value as J;
        let plain = |text: String| Value::Scalar { text, plain: true };
        match j {
            J::Null => Value::Null,
            J::Bool(b) => plain(b.to_string()),
            J::Number(n) => plain(n.to_string()),
            J::String(s) => Value::str(s.as_str()),
            J::Array(a) => Value::Seq(a.iter().map(from_json).collect()),
            J::Object(o) => Value::map(o.iter().map(|(k, v)| (k.clone(), from_json(v))).collect()),
        }
    }

    fn value(json: &str) -> Value {
        from_json(&serde_json::from_str(json).unwrap())
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Record {
        #[serde(default)]
        name: String,
        #[serde(default)]
        count: u32,
        #[serde(default)]
        ratio: f64,
        #[serde(default)]
        on: bool,
        #[serde(default)]
        parent: Option<String>,
        #[serde(default)]
        items: BTreeMap<String, Vec<serde_json::Value>>,
    }

    #[test]
    fn reads_what_the_json_copy_reads() {
        for text in [
            r#"{"name": "web", "count": 3, "ratio": 2, "on": true, "parent": null, "items": {"a": [1, "x", null, {"k": 1.5}]}, "unknown": {"deep": [1]}}"#,
            r#"{"parent": "img"}"#,
            r#"{}"#,
        ] {
            let v = value(text);
            let direct = Record::deserialize(&v).unwrap();
            let copied: Record = serde_json::from_value(v.to_json()).unwrap();
            assert_eq!(direct, copied, "{text}");
        }
    }

    #[test]
    fn a_wrong_type_is_refused_with_serde_json_s_message() {
        let v = value(r#"{"count": "three"}"#);
        let direct = Record::deserialize(&v).unwrap_err().to_string();
        let copied = serde_json::from_value::<Record>(v.to_json())
            .unwrap_err()
            .to_string();
        assert_eq!(direct, copied);
        assert_eq!(direct, "invalid type: string \"three\", expected u32");
    }
}
