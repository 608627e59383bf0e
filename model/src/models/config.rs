//! IAConfig: cfg/_config.yml after the builder lists and `executables` are
//! popped out.

use crate::Map;
use serde::Serialize;

use crate::fields::Fields;

/// The strftime format of the run's execution.timestamp (DEFAULT_DATEFORMAT).
pub const DEFAULT_DATEFORMAT: &str = "%Y%m%d_%H%M%S";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IAConfig {
    pub id: String,
    /// Accepted, not read: --root-dir is the working directory.
    pub working_directory: String,
    /// `generated` when absent or null.
    pub generation_directory: String,
    pub dateformat: String,
    pub gitignore: Vec<String>,
    /// Read, then ignored (a run says so only when the tree sets it; the
    /// spec's default, 1, applies when it does not).
    pub sleep_before_finalization: Option<i64>,
    pub encryption: EncryptionConfig,
    pub public_safe: PublicSafeConfig,
    pub config: Map,
}

/// `encryption: {recipients: [age1...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EncryptionConfig {
    pub recipients: Vec<String>,
}

impl EncryptionConfig {
    pub fn read(f: &mut Fields<'_>) -> Self {
        EncryptionConfig {
            recipients: f.str_list("recipients"),
        }
    }
}

/// `public_safe: {allow: [...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PublicSafeConfig {
    pub allow: Vec<String>,
}

impl PublicSafeConfig {
    pub fn read(f: &mut Fields<'_>) -> Self {
        PublicSafeConfig {
            allow: f.str_list("allow"),
        }
    }
}

impl IAConfig {
    /// Reads the top-level keys; the caller finishes (so `last_updated`, a
    /// leftover builder list or any other key is refused as unknown).
    pub fn read(f: &mut Fields<'_>) -> Self {
        let encryption = match f.sub_map("encryption") {
            Some((m, origin)) => {
                let owner = format!("{} encryption", f.owner());
                f.nested(m, origin, owner, EncryptionConfig::read)
            }
            None => EncryptionConfig::default(),
        };
        let public_safe = match f.sub_map("public_safe") {
            Some((m, origin)) => {
                let owner = format!("{} public_safe", f.owner());
                f.nested(m, origin, owner, PublicSafeConfig::read)
            }
            None => PublicSafeConfig::default(),
        };
        IAConfig {
            id: f.req_str("id"),
            working_directory: f
                .opt_path("working_directory", "path")
                .unwrap_or_else(|| "./workdir".to_string()),
            generation_directory: f
                .opt_path("generation_directory", "path")
                .unwrap_or_else(|| "generated".to_string()),
            dateformat: f.str_or("dateformat", DEFAULT_DATEFORMAT),
            gitignore: f.str_list("gitignore"),
            sleep_before_finalization: f.opt_int("sleep_before_finalization"),
            encryption,
            public_safe,
            config: f.any_map("config"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;
    use crate::value::Value;

    #[test]
    fn defaults() {
        let m = map(&[("id", plain("demo")), ("generation_directory", Value::Null)]);
        let (c, diags) = read(&m, IAConfig::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(c.id, "demo");
        assert_eq!(c.working_directory, "./workdir");
        assert_eq!(c.generation_directory, "generated");
        assert_eq!(c.dateformat, "%Y%m%d_%H%M%S");
        assert_eq!(c.sleep_before_finalization, None);
        assert!(c.encryption.recipients.is_empty());
        assert!(c.public_safe.allow.is_empty());
        assert!(c.config.is_empty());
    }

    #[test]
    fn nested_sections_and_unknown_keys() {
        let m = map(&[
            ("id", plain("demo")),
            ("encryption", mapv(&[("recipients", strs(&["age1abc"]))])),
            (
                "public_safe",
                mapv(&[("allow", strs(&["path:docs/*"])), ("deny", strs(&["x"]))]),
            ),
            ("config", mapv(&[("use_state_backends", plain("true"))])),
            ("last_updated", plain("2026-01-01")),
            ("sleep_before_finalization", plain("0")),
        ]);
        let (c, diags) = read(&m, IAConfig::read);
        assert_eq!(c.encryption.recipients, vec!["age1abc".to_string()]);
        assert_eq!(c.public_safe.allow, vec!["path:docs/*".to_string()]);
        assert_eq!(c.sleep_before_finalization, Some(0));
        let errs = errors(&diags);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].1, "things[0].public_safe.deny");
        assert_eq!(errs[1].1, "things[0].last_updated");
        assert!(errs[1].0.contains("unknown key 'last_updated'"));
    }

    #[test]
    fn id_is_required() {
        let (_, diags) = read(&map(&[]), IAConfig::read);
        assert_eq!(
            errors(&diags),
            vec![e("Owner 'x': field 'id' is required", "things[0]")]
        );
    }
}
