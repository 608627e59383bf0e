//! The `apply_<lifecycle>` rule (`config.apply_identity`, `apply_storage`,
//! `apply_instances`, `apply_release`): which terraform roots of a
//! lifecycle apply. One rule, read by the tofu builders at generation (a
//! root not allowed stops after its plan and gate), by `csis apply-check`
//! at execution (the flag still on now) and by the run's apply scope.

use crate::fields::parse_bool;
use crate::value::{Map, Value};

/// What one flag says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyFlag {
    /// `true`: every root of the lifecycle applies.
    All,
    /// false, unset or an empty list: plan and gate only.
    Off,
    /// Only the roots whose builder name or runtime is listed (a string is
    /// a one-element list; entries are stripped).
    Only(Vec<String>),
}

/// The config key of a lifecycle's flag, for the lifecycles that have one.
pub fn flag_for_lifecycle(lifecycle: &str) -> Option<&'static str> {
    match lifecycle {
        "identity" => Some("apply_identity"),
        "storage" => Some("apply_storage"),
        "instance-image" => Some("apply_instances"),
        "release" => Some("apply_release"),
        _ => None,
    }
}

/// The flag `key` as the tree's `config:` states it.
pub fn apply_flag(config: &Map, key: &str) -> ApplyFlag {
    match config.get(key) {
        Some(v @ Value::Scalar { .. }) => {
            let text = v.as_str().unwrap_or_default();
            match parse_bool(text) {
                Some(true) => ApplyFlag::All,
                Some(false) => ApplyFlag::Off,
                None if text.trim().is_empty() => ApplyFlag::Off,
                None => ApplyFlag::Only(vec![text.trim().to_string()]),
            }
        }
        Some(Value::Seq(items)) => {
            let names: Vec<String> = items
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if names.is_empty() {
                ApplyFlag::Off
            } else {
                ApplyFlag::Only(names)
            }
        }
        _ => ApplyFlag::Off,
    }
}

impl ApplyFlag {
    /// Whether the root of builder `builder` on runtime `runtime` applies.
    pub fn allows(&self, builder: &str, runtime: Option<&str>) -> bool {
        match self {
            ApplyFlag::All => true,
            ApplyFlag::Off => false,
            ApplyFlag::Only(names) => names
                .iter()
                .any(|n| n == builder || Some(n.as_str()) == runtime),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(key: &str, v: Value) -> Map {
        let mut m = Map::default();
        m.insert(key.into(), v);
        m
    }

    #[test]
    fn the_rule_reads_bools_strings_and_lists() {
        let k = "apply_instances";
        assert_eq!(apply_flag(&Map::default(), k), ApplyFlag::Off);
        assert_eq!(
            apply_flag(&config(k, Value::str("true")), k),
            ApplyFlag::All
        );
        assert_eq!(apply_flag(&config(k, Value::str("off")), k), ApplyFlag::Off);
        let one = apply_flag(&config(k, Value::str(" aws ")), k);
        assert_eq!(one, ApplyFlag::Only(vec!["aws".into()]));
        assert!(one.allows("tofu-aws", Some("aws")));
        assert!(!one.allows("tofu-gce", Some("gce")));
        let list = apply_flag(&config(k, Value::Seq(vec![Value::str("tofu-gce")])), k);
        assert!(list.allows("tofu-gce", Some("gce")));
        assert!(!list.allows("tofu-aws", Some("aws")));
        assert_eq!(
            apply_flag(&config(k, Value::Seq(vec![])), k),
            ApplyFlag::Off
        );
        assert_eq!(flag_for_lifecycle("storage"), Some("apply_storage"));
        assert_eq!(flag_for_lifecycle("base-image"), None);
    }
}
