//! OS builders (cfg/os-builders.yml, key `os_builders`): OsBuilderModel, its
//! `runtimes:` entries and the update policy.

use crate::Map;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::{Diagnostic, Origin};
use crate::fields::Fields;
use crate::models::common::{BuilderModel, opt_str_list, py_type_name};
use crate::naming::safe_name;
use crate::value::Value;

/// The RHEL majors an OS builder may declare.
pub const SUPPORTED_RHEL_MAJORS: [u32; 3] = [8, 9, 10];

/// The update policies (`update.policy`).
pub const UPDATE_POLICIES: [&str; 4] = ["none", "security", "packages", "full"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OsBuilderModel {
    #[serde(flatten)]
    pub builder: BuilderModel,
    pub family: String,
    pub family_version: String,
    pub architecture: String,
    /// str | int in the spec; kept as text.
    pub default_primary_disk_size: String,
    pub owners: Vec<String>,
    pub query: Map,
    pub runtimes: Vec<OsBuilderBaseImageBuilderSubconfig>,
    pub config_username: Option<String>,
    pub auto_update: bool,
    pub update: Option<UpdatePolicy>,
    pub identity_types: Vec<String>,
    pub storage_types: Vec<String>,
    pub admin_user: String,
    pub admin_public_keys: Option<Vec<String>>,
    pub local_test_image: Option<String>,
    pub tests: Map,
}

impl OsBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let builder = BuilderModel::read(f);
        let name = builder.name().to_string();
        let family = f.req_str("family");
        let family_version = f.req_str("family_version");
        if family.trim().eq_ignore_ascii_case("rhel") && f.raw("family_version").is_some() {
            check_rhel_version(f, &name, &family_version);
        }

        let runtimes_present = f.raw("runtimes").is_some();
        let mut runtimes: Vec<OsBuilderBaseImageBuilderSubconfig> = Vec::new();
        for (i, (m, origin)) in f.map_list("runtimes").into_iter().enumerate() {
            let owner = format!("{} runtimes[{i}]", f.owner());
            let entry_origin = origin.clone();
            let entry = f.nested(m, origin, owner, |g| {
                OsBuilderBaseImageBuilderSubconfig::read(g, &name)
            });
            if runtimes
                .iter()
                .any(|r| r.image_builder == entry.image_builder)
            {
                let msg = format!(
                    "OS builder {name}: two `runtimes` entries name image builder {}; one entry per image builder",
                    entry.image_builder
                );
                let at = if m.contains_key("image_builder") {
                    entry_origin.key("image_builder")
                } else {
                    entry_origin
                };
                f.error(Diagnostic::error(msg).at(at));
            }
            runtimes.push(entry);
        }
        if runtimes.is_empty() {
            let msg = format!("OS builder {name} must have at least one runtime configuration.");
            let at = if runtimes_present {
                f.origin_of("runtimes")
            } else {
                f.origin().clone()
            };
            f.error(Diagnostic::error(msg).at(at));
        }

        let update = match f.raw("update") {
            None => None,
            Some(Value::Map(m)) => {
                let owner = format!("{} update", f.owner());
                let origin = f.origin_of("update");
                Some(f.nested(m, origin, owner, UpdatePolicy::read))
            }
            Some(other) => {
                let msg = format!(
                    "base image '{name}': update: must be a mapping (`update: {{policy: <name>}}`), got {}",
                    py_type_name(other)
                );
                f.error_at("update", msg);
                None
            }
        };

        OsBuilderModel {
            family,
            family_version,
            architecture: f.str_or("architecture", "default"),
            default_primary_disk_size: f.str_or("default_primary_disk_size", "200"),
            owners: f.str_list("owners"),
            query: f.any_map("query"),
            runtimes,
            config_username: f.opt_str("config_username"),
            auto_update: f.bool_or("auto_update", false),
            update,
            identity_types: f.str_list("identity_types"),
            storage_types: f.str_list("storage_types"),
            admin_user: f.login_or("admin_user", "csisadmin"),
            admin_public_keys: opt_str_list(f, "admin_public_keys"),
            local_test_image: f.opt_str("local_test_image"),
            tests: f.any_map("tests"),
            builder,
        }
    }

    pub fn name(&self) -> &str {
        self.builder.name()
    }

    /// The policy in force: `update:` when declared, else `auto_update`
    /// (an alias for `policy: full`), else `none`.
    pub fn effective_update(&self) -> UpdatePolicy {
        match &self.update {
            Some(u) => u.clone(),
            None if self.auto_update => UpdatePolicy {
                policy: "full".into(),
                ..UpdatePolicy::default()
            },
            None => UpdatePolicy::default(),
        }
    }

    /// The runtimes entry for an image builder.
    pub fn entry_for(&self, image_builder: &str) -> Option<&OsBuilderBaseImageBuilderSubconfig> {
        self.runtimes
            .iter()
            .find(|r| r.image_builder == image_builder)
    }
}

/// A rhel OS builder's family_version major must be 8, 9 or 10.
fn check_rhel_version(f: &mut Fields<'_>, name: &str, version: &str) {
    let major = version
        .trim()
        .split('.')
        .next()
        .and_then(|m| m.trim().parse::<u32>().ok());
    let msg = match major {
        None => format!(
            "Could not determine RHEL version from family_version '{version}' in OS builder {name}"
        ),
        Some(m) if SUPPORTED_RHEL_MAJORS.contains(&m) => return,
        Some(_) => format!(
            "Unsupported RHEL version '{version}' in OS builder {name} (supported: 8, 9, 10)"
        ),
    };
    f.error_at("family_version", msg);
}

/// One `runtimes:` entry of an OS builder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OsBuilderBaseImageBuilderSubconfig {
    /// fk IMAGE_BUILDER_MODEL.
    pub image_builder: String,
    pub name: Option<String>,
    /// The OS builder's name when not declared.
    #[serde(rename = "type")]
    pub type_: String,
    /// Templated later when not declared.
    pub description: Option<String>,
    pub image_id: Option<String>,
    pub auto_update: Option<bool>,
    pub default_machine_type: Option<String>,
    pub default_primary_disk_size: Option<i64>,
    pub tags: BTreeMap<String, String>,
    pub owners: Vec<String>,
    pub query: Map,
    pub ssh_username: String,
    pub tests: Option<Map>,
    pub config: Map,
    /// An image template (spec 001) the base image is composed from, a
    /// path relative to the root: read only by an OS builder type that
    /// composes from templates (`ict`); any other type refuses it at load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// `${name}` values substituted into the template.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, String>,
    /// ICT's `config/osv` directory holding the OS defaults, relative to
    /// the root (overrides the OS builder's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults_dir: Option<String>,
    /// A Debian root built by mmdebstrap instead of a vendor image named
    /// by `image_id`: read only by an OS builder type that builds its
    /// roots from a distribution (`local`); any other refuses it at load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distribution: Option<DistributionRoot>,
    /// Where the entry was declared (for the template refusals).
    #[serde(skip)]
    pub origin: Option<Origin>,
}

/// mmdebstrap's variants, smallest first.
pub const DISTRIBUTION_VARIANTS: &[&str] = &[
    "extract",
    "custom",
    "essential",
    "apt",
    "required",
    "minbase",
    "buildd",
    "important",
    "debootstrap",
    "standard",
];

/// `distribution:` of a runtimes entry: the Debian (or derivative) root
/// mmdebstrap builds from the distribution's own archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DistributionRoot {
    /// A suite or codename the mirror serves (`bookworm`, `stable`).
    pub suite: String,
    /// One of [`DISTRIBUTION_VARIANTS`]; `apt` when not declared.
    pub variant: String,
    /// Packages installed on top of the variant's.
    pub packages: Vec<String>,
    /// Archive components; `main` when empty.
    pub components: Vec<String>,
    /// The archive (`http://deb.debian.org/debian` when not declared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirror: Option<String>,
}

impl DistributionRoot {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let suite = f.opt_str("suite").unwrap_or_default();
        if suite.trim().is_empty() {
            let msg = format!(
                "{}: `suite:` is required: the Debian suite or codename to build the root from (for example `suite: bookworm`)",
                f.owner()
            );
            let at = f.origin().clone();
            f.error(Diagnostic::error(msg).at(at));
        }
        let variant = f.str_or("variant", "apt");
        if !DISTRIBUTION_VARIANTS.contains(&variant.as_str()) {
            let msg = format!(
                "{}: variant '{variant}' is not one of mmdebstrap's: {}",
                f.owner(),
                DISTRIBUTION_VARIANTS.join(", ")
            );
            f.error_at("variant", msg);
        }
        let packages = words(
            f,
            "packages",
            "is not a package name (letters, digits and `.+-:=~_`, not starting with `-`)",
        );
        let components = words(
            f,
            "components",
            "is not an archive component name (for example main, contrib)",
        );
        let mirror = f.opt_str("mirror");
        if let Some(m) = &mirror
            && !["http://", "https://", "file:/"]
                .iter()
                .any(|p| m.starts_with(p))
        {
            let msg = format!(
                "{}: mirror '{m}' is not an archive URL (http://, https:// or file:/, for example http://deb.debian.org/debian)",
                f.owner()
            );
            f.error_at("mirror", msg);
        }
        DistributionRoot {
            suite,
            variant,
            packages,
            components,
            mirror,
        }
    }
}

/// The list under `key` (packages, components), each entry refused at
/// the key unless it is a [`valid_word`]: `<owner>: package 'x' <why>`.
fn words(f: &mut Fields<'_>, key: &'static str, why: &str) -> Vec<String> {
    let list = f.str_list(key);
    let noun = key.trim_end_matches('s');
    for w in list.iter().filter(|w| !valid_word(w)) {
        let msg = format!("{}: {noun} '{w}' {why}", f.owner());
        f.error_at(key, msg);
    }
    list
}

/// A package or component name as mmdebstrap takes it on its command
/// line: nothing a shell or a list separator would read.
fn valid_word(w: &str) -> bool {
    !w.is_empty()
        && !w.starts_with('-')
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+-:=~_".contains(c))
}

impl OsBuilderBaseImageBuilderSubconfig {
    /// `os_builder` is the owning OS builder's name (the type's default).
    pub fn read(f: &mut Fields<'_>, os_builder: &str) -> Self {
        if let Some(v) = f.raw("aliases") {
            let empty = v.as_seq().is_some_and(<[Value]>::is_empty);
            if !empty {
                f.error_at(
                    "aliases",
                    "Aliases are not allowed on OS builder runtimes entries",
                );
            }
        }
        OsBuilderBaseImageBuilderSubconfig {
            image_builder: f.str_or("image_builder", "default"),
            name: f.opt_str("name").map(|n| safe_name(&n)),
            type_: f.str_or("type", os_builder),
            description: f.opt_str("description"),
            image_id: f.opt_path("image_id", "image id"),
            auto_update: f.opt_bool("auto_update"),
            default_machine_type: f.opt_str("default_machine_type"),
            default_primary_disk_size: f.opt_int("default_primary_disk_size"),
            tags: f.str_map("tags"),
            owners: f.str_list("owners"),
            query: f.any_map("query"),
            ssh_username: f.str_or("ssh_username", "default"),
            tests: f.opt_any_map("tests"),
            config: f.any_map("config"),
            template: f.opt_str("template"),
            variables: f.str_map("variables"),
            defaults_dir: f.opt_path("defaults_dir", "path"),
            distribution: match f.sub_map("distribution") {
                Some((m, origin)) => {
                    let owner = format!("OS builder {os_builder} distribution");
                    Some(f.nested(m, origin, owner, DistributionRoot::read))
                }
                None => None,
            },
            origin: Some(f.origin().clone()),
        }
    }
}

/// `update:` of an OS builder (always a mapping).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdatePolicy {
    /// none, security, packages or full.
    pub policy: String,
    pub packages: Vec<String>,
    pub exclude: Vec<String>,
    pub pin: BTreeMap<String, String>,
    pub refresh_days: Option<i64>,
}

impl Default for UpdatePolicy {
    fn default() -> Self {
        UpdatePolicy {
            policy: "none".into(),
            packages: Vec::new(),
            exclude: Vec::new(),
            pin: BTreeMap::new(),
            refresh_days: None,
        }
    }
}

impl UpdatePolicy {
    pub fn read(f: &mut Fields<'_>) -> Self {
        UpdatePolicy {
            policy: f.str_or("policy", "none"),
            packages: f.str_list("packages"),
            exclude: f.str_list("exclude"),
            pin: f.str_map("pin"),
            refresh_days: f.opt_int("refresh_days"),
        }
    }

    /// The validation rules (validate_update_policies), checked at
    /// validation, not at load.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !UPDATE_POLICIES.contains(&self.policy.as_str()) {
            out.push(format!(
                "update.policy '{}' is not one of none, security, packages, full",
                self.policy
            ));
        }
        if self.policy == "packages" && self.packages.is_empty() && self.pin.is_empty() {
            out.push("update.policy 'packages' needs packages or pins".to_string());
        }
        let mut both: Vec<&str> = self
            .packages
            .iter()
            .map(String::as_str)
            .chain(self.pin.keys().map(String::as_str))
            .filter(|p| self.exclude.iter().any(|x| x == p))
            .collect();
        both.sort_unstable();
        both.dedup();
        for p in both {
            out.push(format!(
                "update: package '{p}' is both updated and excluded"
            ));
        }
        if self.refresh_days.is_some_and(|d| d <= 0) {
            out.push("update.refresh_days must be a positive number of days".to_string());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;
    use crate::value::Map;

    fn os(extra: &[(&str, Value)]) -> Map {
        let mut m = map(&[
            ("name", plain("rhel9")),
            ("type", plain("default-os")),
            ("family", plain("rhel")),
            ("family_version", plain("9")),
            (
                "runtimes",
                seq(&[mapv(&[("image_builder", plain("packer"))])]),
            ),
        ]);
        for (k, v) in extra {
            m.insert(k.to_string(), v.clone());
        }
        m
    }

    #[test]
    fn defaults() {
        let (o, diags) = read(&os(&[]), OsBuilderModel::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(o.architecture, "default");
        assert_eq!(o.default_primary_disk_size, "200");
        assert_eq!(o.admin_user, "csisadmin");
        assert_eq!(o.admin_public_keys, None);
        assert_eq!(o.update, None);
        assert_eq!(o.effective_update().policy, "none");
        let r = &o.runtimes[0];
        assert_eq!(r.type_, "rhel9");
        assert_eq!(r.ssh_username, "default");
        assert_eq!(r.default_primary_disk_size, None);
        assert_eq!(r.tests, None);
        assert_eq!(r.name, None);
    }

    #[test]
    fn rhel_versions() {
        let (o, diags) = read(
            &os(&[("family_version", plain("10"))]),
            OsBuilderModel::read,
        );
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(o.family_version, "10");
        let (_, diags) = read(
            &os(&[("family_version", plain("9.4"))]),
            OsBuilderModel::read,
        );
        assert!(diags.is_empty(), "{diags:?}");

        let (_, diags) = read(&os(&[("family_version", plain("7"))]), OsBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "Unsupported RHEL version '7' in OS builder rhel9 (supported: 8, 9, 10)",
                "things[0].family_version"
            )]
        );
        let (_, diags) = read(
            &os(&[("family_version", plain("latest"))]),
            OsBuilderModel::read,
        );
        assert_eq!(
            errors(&diags),
            vec![e(
                "Could not determine RHEL version from family_version 'latest' in OS builder rhel9",
                "things[0].family_version"
            )]
        );
        // Other families are not checked.
        let (_, diags) = read(
            &os(&[
                ("family", plain("ubuntu")),
                ("family_version", plain("24.04")),
            ]),
            OsBuilderModel::read,
        );
        assert!(diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn runtimes_required_and_unique_per_image_builder() {
        let (_, diags) = read(&os(&[("runtimes", seq(&[]))]), OsBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "OS builder rhel9 must have at least one runtime configuration.",
                "things[0].runtimes"
            )]
        );
        let mut m = os(&[]);
        m.shift_remove("runtimes");
        let (_, diags) = read(&m, OsBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "OS builder rhel9 must have at least one runtime configuration.",
                "things[0]"
            )]
        );
        let rt = seq(&[
            mapv(&[("image_builder", plain("packer"))]),
            mapv(&[("image_builder", plain("packer"))]),
        ]);
        let (_, diags) = read(&os(&[("runtimes", rt)]), OsBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "OS builder rhel9: two `runtimes` entries name image builder packer; one entry per image builder",
                "things[0].runtimes[1].image_builder"
            )]
        );
    }

    #[test]
    fn entry_refuses_aliases_and_image_name() {
        let rt = seq(&[mapv(&[
            ("image_builder", plain("packer")),
            ("aliases", strs(&["x"])),
            ("image_name", plain("foo")),
        ])]);
        let (_, diags) = read(&os(&[("runtimes", rt)]), OsBuilderModel::read);
        let errs = errors(&diags);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(
            errs[0],
            e(
                "Aliases are not allowed on OS builder runtimes entries",
                "things[0].runtimes[0].aliases"
            )
        );
        assert_eq!(errs[1].1, "things[0].runtimes[0].image_name");
        assert!(errs[1].0.contains("unknown key 'image_name'"));
    }

    #[test]
    fn update_must_be_a_mapping() {
        let (_, diags) = read(&os(&[("update", plain("none"))]), OsBuilderModel::read);
        assert_eq!(
            errors(&diags),
            vec![e(
                "base image 'rhel9': update: must be a mapping (`update: {policy: <name>}`), got str",
                "things[0].update"
            )]
        );
        let (_, diags) = read(&os(&[("update", strs(&["full"]))]), OsBuilderModel::read);
        assert_eq!(
            errors(&diags)[0].0,
            "base image 'rhel9': update: must be a mapping (`update: {policy: <name>}`), got list"
        );
        let (_, diags) = read(&os(&[("update", plain("3"))]), OsBuilderModel::read);
        assert!(errors(&diags)[0].0.ends_with("got int"));
    }

    #[test]
    fn update_policy_reads_and_validates_later() {
        let u = mapv(&[
            ("policy", plain("packages")),
            ("refresh_days", plain("0")),
            ("exclude", strs(&["kernel"])),
            ("packages", strs(&["kernel"])),
        ]);
        let (o, diags) = read(&os(&[("update", u)]), OsBuilderModel::read);
        assert!(diags.is_empty(), "{diags:?}");
        let p = o.effective_update();
        assert_eq!(p.policy, "packages");
        assert_eq!(
            p.problems(),
            vec![
                "update: package 'kernel' is both updated and excluded".to_string(),
                "update.refresh_days must be a positive number of days".to_string(),
            ]
        );
        let empty = UpdatePolicy {
            policy: "packages".into(),
            ..UpdatePolicy::default()
        };
        assert_eq!(
            empty.problems(),
            vec!["update.policy 'packages' needs packages or pins".to_string()]
        );
        assert!(UpdatePolicy::default().problems().is_empty());

        let (o, _) = read(&os(&[("auto_update", plain("true"))]), OsBuilderModel::read);
        assert_eq!(o.effective_update().policy, "full");

        let bad = mapv(&[("policy", plain("none")), ("colour", plain("x"))]);
        let (_, diags) = read(&os(&[("update", bad)]), OsBuilderModel::read);
        assert_eq!(errors(&diags)[0].1, "things[0].update.colour");
    }
}
