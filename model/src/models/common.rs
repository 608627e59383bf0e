//! The common bases: NameTyped, BuilderModel, RootItem, and small readers
//! the models share.

use crate::Map;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::fields::Fields;
use crate::naming::{name_problem, safe_name};
use crate::value::{Typed, Value};

/// `name`, `type`, `description`, `aliases`: the base of every builder
/// model, executable, storage and subconfig.
///
/// The name, its spelling and the type are compact strings: nearly all
/// are short enough to be held in the struct itself, and a large tree
/// has hundreds of thousands of items (docs/performance.md, issue 40).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NameTyped {
    /// The normalized name ([`safe_name`] of the declared one).
    pub name: compact_str::CompactString,
    /// The name as declared, for output.
    pub display_name: compact_str::CompactString,
    #[serde(rename = "type")]
    pub type_: compact_str::CompactString,
    pub description: Option<String>,
    /// Normalized, sorted, without the name itself.
    pub aliases: Vec<String>,
}

impl NameTyped {
    /// Read with `type` required (builder models).
    pub fn read(f: &mut Fields<'_>) -> Self {
        Self::read_opts(f, None, true)
    }

    /// Read with `type` defaulting to `type_default` (items).
    pub fn read_with_type(f: &mut Fields<'_>, type_default: &str) -> Self {
        Self::read_opts(f, Some(type_default), true)
    }

    /// `check_name: false` leaves the reserved-word check on the name to the
    /// caller (the executable words it its own way).
    pub(crate) fn read_opts(
        f: &mut Fields<'_>,
        type_default: Option<&str>,
        check_name: bool,
    ) -> Self {
        let present = f.raw("name").is_some();
        let display_name = f.req_str("name");
        if present
            && check_name
            && let Some(problem) = name_problem(&display_name)
        {
            let msg = format!("{}: name {problem}", f.owner());
            f.error_at("name", msg);
        }
        let name = safe_name(&display_name);
        let type_ = match type_default {
            Some(d) => f.str_or("type", d),
            None => f.req_str("type"),
        };
        let description = f.opt_str("description");
        let aliases = read_aliases(f, &name);
        NameTyped {
            name: name.into(),
            display_name: display_name.into(),
            type_: type_.into(),
            description,
            aliases,
        }
    }
}

/// `aliases:` normalized, each checked, the name itself dropped.
pub(crate) fn read_aliases(f: &mut Fields<'_>, name: &str) -> Vec<String> {
    let raw = f.str_list("aliases");
    let mut out = Vec::with_capacity(raw.len());
    for (i, alias) in raw.iter().enumerate() {
        if let Some(problem) = name_problem(alias) {
            let msg = format!("{}: alias '{alias}' {problem}", f.owner());
            let origin = f.origin_of("aliases").index(i);
            f.error(crate::diag::Diagnostic::error(msg).at(origin));
            continue;
        }
        let safe = safe_name(alias);
        if safe != name {
            out.push(safe);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The fields every builder model shares (NameTyped plus).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuilderModel {
    #[serde(flatten)]
    pub named: NameTyped,
    pub executable: Option<String>,
    pub is_default: bool,
    pub config: Map,
    pub gitignore: Vec<String>,
    pub tags: BTreeMap<String, String>,
    /// The state backend this builder's terraform roots keep their state
    /// on (storage, instance, group, user and runtime builders; with
    /// `config.use_state_backends`).
    pub state_configuration: Option<String>,
}

impl BuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let named = NameTyped::read(f);
        if f.has("parameters") {
            f.skip("parameters");
            let msg = format!(
                "{} declares 'parameters'; builder module inputs moved to 'variables:' -- use 'variables:'",
                f.owner()
            );
            f.error_at("parameters", msg);
        }
        BuilderModel {
            named,
            executable: f.opt_str("executable"),
            is_default: f.bool_or("is_default", false),
            config: f.any_map("config"),
            gitignore: f.str_list("gitignore"),
            tags: f.str_map("tags"),
            state_configuration: f.opt_str("state_configuration"),
        }
    }

    pub fn name(&self) -> &str {
        &self.named.name
    }
}

/// NameTyped plus `tags` and `config`: the base of images, instances,
/// groups and users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootItem {
    #[serde(flatten)]
    pub named: NameTyped,
    pub tags: BTreeMap<String, String>,
    pub config: crate::value::SparseMap,
}

impl RootItem {
    /// Read with `type` defaulting to `type_default` (items name their
    /// builder, `default` for the default one).
    pub fn read(f: &mut Fields<'_>, type_default: &str) -> Self {
        let named = NameTyped::read_with_type(f, type_default);
        RootItem {
            named,
            tags: f.str_map("tags"),
            config: f.any_map("config").into(),
        }
    }

    pub fn name(&self) -> &str {
        &self.named.name
    }
}

/// A raw list kept for a later stage (`modifications:`, `storages:`).
pub(crate) fn raw_list(f: &mut Fields<'_>, key: &'static str) -> Vec<Value> {
    let Some(v) = f.raw(key) else {
        return Vec::new();
    };
    match v.as_seq() {
        Some(items) => items.to_vec(),
        None => {
            let msg = format!(
                "{}: field '{key}' must be a list, got {}",
                f.owner(),
                v.described()
            );
            f.error_at(key, msg);
            Vec::new()
        }
    }
}

/// A list of strings that is `None` when absent or null.
pub(crate) fn opt_str_list(f: &mut Fields<'_>, key: &'static str) -> Option<Vec<String>> {
    f.raw(key)?;
    Some(f.str_list(key))
}

/// The Python type name of a value, for messages that quote one.
pub(crate) fn py_type_name(v: &Value) -> &'static str {
    match v.typed() {
        Typed::Null => "NoneType",
        Typed::Bool(_) => "bool",
        Typed::Int(_) => "int",
        Typed::Float(_) => "float",
        Typed::Str(_) => "str",
        Typed::Seq(_) => "list",
        Typed::Map(_) => "dict",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;

    #[test]
    fn name_is_normalized_and_aliases_dedup_and_drop_the_name() {
        let m = map(&[
            ("name", plain("My Builder")),
            ("type", plain("dummy")),
            ("aliases", strs(&["my builder", "Other", "other ", "x"])),
        ]);
        let (n, diags) = read(&m, NameTyped::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(n.name, "my_builder");
        assert_eq!(n.display_name, "My Builder");
        assert_eq!(n.type_, "dummy");
        assert_eq!(n.aliases, vec!["other".to_string(), "x".to_string()]);
    }

    #[test]
    fn reserved_names_and_aliases_are_refused_as_a_backstop() {
        let m = map(&[
            ("name", plain("Default")),
            ("type", plain("dummy")),
            ("aliases", strs(&["a/b", "ok"])),
        ]);
        let (_, diags) = read(&m, NameTyped::read);
        assert_eq!(
            errors(&diags),
            vec![
                e("Owner 'x': name may not be 'default'", "things[0].name"),
                e(
                    "Owner 'x': alias 'a/b' may not contain '/' or '\\'",
                    "things[0].aliases[0]"
                ),
            ]
        );
    }

    #[test]
    fn builder_type_is_required_item_type_defaults() {
        let m = map(&[("name", plain("a"))]);
        let (_, diags) = read(&m, NameTyped::read);
        assert_eq!(
            errors(&diags),
            vec![e("Owner 'x': field 'type' is required", "things[0]")]
        );
        let (r, diags) = read(&m, |f| RootItem::read(f, "default"));
        assert!(diags.is_empty());
        assert_eq!(r.named.type_, "default");
    }

    #[test]
    fn parameters_on_a_builder_is_refused_naming_variables() {
        let m = map(&[
            ("name", plain("a")),
            ("type", plain("t")),
            ("parameters", mapv(&[("x", plain("1"))])),
        ]);
        let (b, diags) = read(&m, BuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "Owner 'x' declares 'parameters'; builder module inputs moved to 'variables:' -- use 'variables:'",
                "things[0].parameters"
            )]
        );
        assert!(!b.is_default);
        assert!(b.config.is_empty());
    }

    #[test]
    fn builder_fields_and_serialization_flatten_type() {
        let m = map(&[
            ("name", plain("a")),
            ("type", plain("t")),
            ("is_default", plain("yes")),
            ("executable", plain("packer")),
            ("gitignore", strs(&["x"])),
            ("tags", mapv(&[("k", plain("1"))])),
        ]);
        let (b, diags) = read(&m, BuilderModel::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert!(b.is_default);
        assert_eq!(b.tags.get("k").map(String::as_str), Some("1"));
        let json = serde_json::to_value(&b).unwrap_or_default();
        assert_eq!(json["type"], "t");
        assert_eq!(json["name"], "a");
        assert_eq!(json["executable"], "packer");
    }
}
