//! ExecutableModel (cfg/executables.yml, key `executables`).

use crate::Map;
use serde::Serialize;

use crate::fields::Fields;
use crate::models::common::NameTyped;
use crate::naming::reserved_word;

/// One tool a builder runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutableModel {
    #[serde(flatten)]
    pub named: NameTyped,
    /// A PEP 440 specifier, checked at validation.
    pub version: Option<String>,
    /// Path or command to run; the name when not declared.
    pub binary: String,
    pub prepended_arguments: Vec<String>,
    pub appended_arguments: Vec<String>,
    pub args: Vec<String>,
    pub config: Map,
    pub working_directory: Option<String>,
}

impl ExecutableModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let mut named = NameTyped::read_opts(f, Some("executable"), false);
        if f.has("name") && reserved_word(&named.display_name).is_some() {
            let msg = format!(
                "Executable name cannot be a default placeholder: {}",
                named.display_name
            );
            f.error_at("name", msg);
        } else if crate::naming::control_char(&named.display_name).is_some() {
            // The reserved-word rule above is this model's own; the
            // control-character one is every name's.
            let why = crate::naming::name_problem(&named.display_name).unwrap_or_default();
            let msg = format!("{}: name {why}", f.owner());
            f.error_at("name", msg);
        } else if named.display_name.contains(['/', '\\']) {
            let msg = format!("{}: name may not contain '/' or '\\'", f.owner());
            f.error_at("name", msg);
        }
        // The type selects the version checker; `default` means the name.
        if named.type_ == "default" {
            named.type_ = named.name.clone();
        }
        let binary = f
            .opt_str("binary")
            .unwrap_or_else(|| named.name.to_string());
        ExecutableModel {
            version: f.opt_str("version"),
            binary,
            prepended_arguments: f.str_list("prepended_arguments"),
            appended_arguments: f.str_list("appended_arguments"),
            args: f.str_list("args"),
            config: f.any_map("config"),
            working_directory: f.opt_path("working_directory", "path"),
            named,
        }
    }

    pub fn name(&self) -> &str {
        &self.named.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;

    #[test]
    fn defaults_binary_is_the_name_type_is_executable() {
        let m = map(&[("name", plain("Packer")), ("version", quoted(">=1.14"))]);
        let (x, diags) = read(&m, ExecutableModel::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(x.named.name, "packer");
        assert_eq!(x.named.type_, "executable");
        assert_eq!(x.binary, "packer");
        assert_eq!(x.version.as_deref(), Some(">=1.14"));
        assert!(x.args.is_empty() && x.working_directory.is_none());
    }

    #[test]
    fn type_default_becomes_the_name() {
        let m = map(&[
            ("name", plain("tofu")),
            ("type", plain("default")),
            ("binary", plain("/usr/bin/tofu")),
        ]);
        let (x, _) = read(&m, ExecutableModel::read);
        assert_eq!(x.named.type_, "tofu");
        assert_eq!(x.binary, "/usr/bin/tofu");
    }

    #[test]
    fn a_reserved_name_is_refused_once() {
        let m = map(&[("name", plain("None"))]);
        let (_, diags) = read(&m, ExecutableModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "Executable name cannot be a default placeholder: None",
                "things[0].name"
            )]
        );
    }
}
