//! The items of images/, instances/, groups/ and storages/ (and the
//! synthesized base images), with their sub-items.

use crate::Map;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::{Diagnostic, Origin};
use crate::fields::Fields;
use crate::models::common::{NameTyped, RootItem, opt_str_list, raw_list, read_aliases};
use crate::naming::safe_name;
use crate::value::Value;

/// Where a refusal about `key` lands: the key's value when declared, else
/// the mapping.
fn at_key_or_map(f: &Fields<'_>, key: &str) -> Origin {
    if f.has(key) {
        f.origin_of(key)
    } else {
        f.origin().clone()
    }
}

fn refuse(f: &mut Fields<'_>, key: &str, msg: String) {
    let at = at_key_or_map(f, key);
    f.error(Diagnostic::error(msg).at(at));
}

/// A value quoted the way Python's repr() would in a message.
fn py_repr(v: Option<&str>) -> String {
    match v {
        None => "None".to_string(),
        Some(s) => format!("'{s}'"),
    }
}

// ---------------------------------------------------------------- images

/// An image (images/, key `images`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Image {
    #[serde(flatten)]
    pub root: RootItem,
    /// Required: the parent image or base image name.
    pub source_image: Option<String>,
    pub auto_update: Option<bool>,
    /// pinned or follow (validated later).
    pub parent_policy: String,
    /// `{keep: N}`, validated later.
    pub retention: Option<Map>,
    /// `{model: name}`, validated later.
    pub release: Option<Map>,
    pub is_default: bool,
    /// Templated later; `default` until then.
    pub architecture: String,
    /// Templated later; `default` until then.
    pub primary_disk_size: String,
    pub auto_generate_storage: bool,
    pub variables: Map,
    /// Deferred mod items, structured by the engine.
    pub modifications: Vec<Value>,
    pub group: Option<String>,
    pub tests: Map,
    pub default_groups: Vec<String>,
    pub runtimes: Vec<ImageImageBuilderSubconfig>,
}

impl Image {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        let source_image = f.opt_str("source_image").filter(|s| !s.trim().is_empty());
        if source_image.is_none() {
            let msg = format!("Image {name} must have either 'os' or 'source_image' specified.");
            refuse(f, "source_image", msg);
        }
        let mut runtimes = Vec::new();
        for (i, (m, origin)) in f.map_list("runtimes").into_iter().enumerate() {
            let owner = format!("{} runtimes[{i}]", f.owner());
            runtimes.push(f.nested(m, origin, owner, ImageImageBuilderSubconfig::read));
        }
        if runtimes.is_empty() {
            let msg = format!(
                "Image {name} must have at least one runtime specified in the 'runtimes' field"
            );
            refuse(f, "runtimes", msg);
        }
        Image {
            source_image,
            auto_update: f.opt_bool("auto_update"),
            parent_policy: f.str_or("parent_policy", "pinned"),
            retention: f.opt_any_map("retention"),
            release: f.opt_any_map("release"),
            is_default: f.bool_or("is_default", false),
            architecture: f.str_or("architecture", "default"),
            primary_disk_size: f.str_or("primary_disk_size", "default"),
            auto_generate_storage: f.bool_or("auto_generate_storage", false),
            variables: f.any_map("variables"),
            modifications: raw_list(f, "modifications"),
            group: f.opt_str("group"),
            tests: f.any_map("tests"),
            default_groups: f.str_list("default_groups"),
            runtimes,
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// One `runtimes:` entry of an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageImageBuilderSubconfig {
    /// fk IMAGE_BUILDER_MODEL; `default` is the default image builder.
    pub image_builder: String,
    /// The image builder when not declared.
    pub name: String,
    /// Templated later when not declared.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub description: Option<String>,
    pub aliases: Vec<String>,
    pub ssh_username: String,
    pub image_identifier: Option<String>,
    /// Templated later (the runtime's default machine type).
    pub machine_type: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub owners: Vec<String>,
}

impl ImageImageBuilderSubconfig {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let image_builder = f.str_or("image_builder", "default");
        let name = safe_name(&f.opt_str("name").unwrap_or_else(|| image_builder.clone()));
        let aliases = read_aliases(f, &name);
        let owners = if f.raw("owners").is_some() {
            f.str_list("owners")
        } else {
            vec!["self".to_string()]
        };
        ImageImageBuilderSubconfig {
            image_builder,
            name,
            type_: f.opt_str("type"),
            description: f.opt_str("description"),
            aliases,
            ssh_username: f.str_or("ssh_username", "default"),
            image_identifier: f.opt_str("image_identifier"),
            machine_type: f.opt_str("machine_type"),
            tags: f.str_map("tags"),
            owners,
        }
    }
}

/// A base image, synthesized from an OS builder (key `base_images`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseImage {
    #[serde(flatten)]
    pub root: RootItem,
    /// fk OS_BUILDER_MODEL.
    pub os: Option<String>,
    pub source_image: Option<String>,
    pub auto_update: Option<bool>,
    pub is_default: bool,
    /// Templated later; `default` until then.
    pub primary_disk_size: String,
    pub variables: Map,
    pub runtimes: Vec<BaseImageImageBuilderSubconfig>,
    pub identity_types: Vec<String>,
    pub storage_types: Vec<String>,
    pub admin_user: String,
    pub admin_public_keys: Option<Vec<String>>,
    pub tests: Map,
}

impl BaseImage {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        let os = f.opt_str("os").filter(|s| !s.trim().is_empty());
        let source_image = f.opt_str("source_image").filter(|s| !s.trim().is_empty());
        if os.is_some() == source_image.is_some() {
            let msg = format!("Image {name} must have either 'os' or 'source_image' specified.");
            let key = if os.is_some() { "source_image" } else { "os" };
            refuse(f, key, msg);
        }
        let mut runtimes = Vec::new();
        for (i, (m, origin)) in f.map_list("runtimes").into_iter().enumerate() {
            let owner = format!("{} runtimes[{i}]", f.owner());
            runtimes.push(f.nested(m, origin, owner, BaseImageImageBuilderSubconfig::read));
        }
        if runtimes.is_empty() {
            let msg = format!(
                "Image {name} must have at least one runtime specified in the 'runtimes' field"
            );
            refuse(f, "runtimes", msg);
        }
        BaseImage {
            os,
            source_image,
            auto_update: f.opt_bool("auto_update"),
            is_default: f.bool_or("is_default", false),
            primary_disk_size: f.str_or("primary_disk_size", "default"),
            variables: f.any_map("variables"),
            runtimes,
            identity_types: f.str_list("identity_types"),
            storage_types: f.str_list("storage_types"),
            admin_user: f.str_or("admin_user", "csisadmin"),
            admin_public_keys: opt_str_list(f, "admin_public_keys"),
            tests: f.any_map("tests"),
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// One `runtimes:` entry of a base image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseImageImageBuilderSubconfig {
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub description: Option<String>,
    /// fk RUNTIME_BUILDER_MODEL.
    pub runtime: String,
    /// fk IMAGE_BUILDER_MODEL.
    pub image_builder: String,
    pub ssh_username: String,
    pub tests: Option<Map>,
    pub auto_update: Option<bool>,
    pub image_identifier: Option<String>,
    /// Templated later.
    pub machine_type: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub owners: Vec<String>,
}

impl BaseImageImageBuilderSubconfig {
    pub fn read(f: &mut Fields<'_>) -> Self {
        BaseImageImageBuilderSubconfig {
            name: f.opt_str("name").map(|n| safe_name(&n)),
            type_: f.opt_str("type"),
            description: f.opt_str("description"),
            runtime: f.str_or("runtime", "default"),
            image_builder: f.str_or("image_builder", "default"),
            ssh_username: f.str_or("ssh_username", "default"),
            tests: f.opt_any_map("tests"),
            auto_update: f.opt_bool("auto_update"),
            image_identifier: f.opt_str("image_identifier"),
            machine_type: f.opt_str("machine_type"),
            tags: f.str_map("tags"),
            owners: f.str_list("owners"),
        }
    }
}

/// One `modifications:` entry of an image. A plugin item reads its own
/// fields from the same reader after this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModItemModel {
    /// `type` is fk MOD_BUILDER_MODEL, default `default`.
    #[serde(flatten)]
    pub named: NameTyped,
    pub tags: BTreeMap<String, String>,
    pub config: Map,
}

impl ModItemModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let named = NameTyped::read_with_type(f, "default");
        ModItemModel {
            named,
            tags: f.str_map("tags"),
            config: f.any_map("config"),
        }
    }
}

// ------------------------------------------------------------- instances

/// An instance (instances/, key `instances`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Instance {
    #[serde(flatten)]
    pub root: RootItem,
    /// fk IMAGE_MODEL; required to finalize.
    pub image: Option<String>,
    /// fk RUNTIME_BUILDER_MODEL.
    pub runtime: String,
    /// Deferred storage mappings, structured by the engine.
    pub storages: Vec<Value>,
    pub userdata: String,
    pub image_policy: String,
    pub ephemeral: bool,
    pub on_failure: Option<String>,
    pub teardown_after: Option<String>,
    /// Empty means the runtime's default.
    pub machine_type: String,
    pub availability_zone: Option<String>,
}

impl Instance {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        if f.has("groups") {
            f.skip("groups");
            let msg = format!(
                "Instance '{name}' declares 'groups'; V2 removed per-instance groups (ownership lives on the image). Set 'group:' on the image instead."
            );
            f.error_at("groups", msg);
        }
        let image = f.opt_str("image").filter(|s| !s.trim().is_empty());
        if image.is_none() {
            let at = at_key_or_map(f, "image");
            let warn = format!(
                "Instance '{name}' does not have an image specified; the load refuses it when the configuration finalizes."
            );
            f.error(Diagnostic::warning(warn).at(at.clone()));
            let msg = format!("Instance '{name}' cannot be finalized without an image specified.");
            f.error(Diagnostic::error(msg).at(at));
        }
        Instance {
            image,
            runtime: f.str_or("runtime", "default"),
            storages: raw_list(f, "storages"),
            userdata: f.str_or("userdata", ""),
            image_policy: f.str_or("image_policy", "pinned"),
            ephemeral: f.bool_or("ephemeral", false),
            on_failure: f.opt_str("on_failure"),
            teardown_after: f.opt_str("teardown_after"),
            machine_type: f.str_or("machine_type", ""),
            availability_zone: f.opt_str("availability_zone"),
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// One `storages:` entry of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StorageMapping {
    /// The storage's name (normalized).
    pub name: String,
    /// fk STORAGE_BUILDER_MODEL.
    #[serde(rename = "type")]
    pub type_: String,
    pub mount_point: String,
    pub min_size: i64,
}

impl StorageMapping {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let name = safe_name(&f.req_str("name"));
        if let Some(v) = f.raw("aliases")
            && !v.as_seq().is_some_and(<[Value]>::is_empty)
        {
            let msg = format!("StorageMapping '{name}' has aliases defined; Ignoring aliases.");
            let at = f.origin_of("aliases");
            f.error(Diagnostic::warning(msg).at(at));
        }
        let mount_point = f.str_or("mount_point", "/mnt/storage");
        if mount_point.trim().is_empty() {
            let msg = format!("StorageMapping '{name}' must have a mount_point specified.");
            f.error_at("mount_point", msg);
        }
        let min_size = f.opt_int("min_size").unwrap_or(100);
        if min_size <= 0 {
            let msg = format!(
                "StorageMapping '{name}' must have a positive min_size specified. Got: {min_size}"
            );
            f.error_at("min_size", msg);
        }
        StorageMapping {
            name,
            type_: f.str_or("type", "default"),
            mount_point,
            min_size,
        }
    }
}

// ---------------------------------------------------------------- groups

/// A group (groups/, key `groups`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    #[serde(flatten)]
    pub root: RootItem,
    pub is_default: bool,
    pub is_root: bool,
    /// Sorted; `in_both` applied.
    pub members: Vec<String>,
    pub admins: Vec<String>,
    /// None defers the gid to the provider; otherwise at least 1024.
    pub gid: Option<i64>,
    pub include_root_group_in_admins: bool,
    pub unmanaged: bool,
    pub attributes: Option<Map>,
    pub in_both: Option<bool>,
}

impl Group {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        let mut members = f.str_set("members");
        let admins = f.str_set("admins");
        let in_both = f.opt_bool("in_both");
        match in_both {
            Some(true) => {
                members.extend(admins.iter().cloned());
                members.sort();
                members.dedup();
            }
            Some(false) => members.retain(|m| !admins.contains(m)),
            None => {}
        }
        let gid = read_gid(f, &name);
        Group {
            is_default: f.bool_or("is_default", false),
            is_root: f.bool_or("is_root", false),
            members,
            admins,
            gid,
            include_root_group_in_admins: f.bool_or("include_root_group_in_admins", true),
            unmanaged: f.bool_or("unmanaged", false),
            attributes: f.opt_any_map("attributes"),
            in_both,
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// The largest gid: Unix ids are 32 bits, and 4294967295 is `(gid_t) -1`,
/// "no group".
pub const MAX_GID: i64 = 4_294_967_294;

/// `gid:` normalised: None, 0, "0" and "default" defer; otherwise an
/// integer from 1024 to [`MAX_GID`].
fn read_gid(f: &mut Fields<'_>, name: &str) -> Option<i64> {
    let v = f.raw("gid")?;
    let text = match v {
        Value::Scalar { text, .. } => text.trim().to_string(),
        other => other.kind_name().to_string(),
    };
    if text.eq_ignore_ascii_case("default") {
        return None;
    }
    match (v.as_str(), text.parse::<i64>()) {
        (Some(_), Ok(0)) => None,
        (Some(_), Ok(n)) if (1024..=MAX_GID).contains(&n) => Some(n),
        _ => {
            let msg = format!(
                "Group {name} has gid {text}; gid must be an integer from 1024 to 4294967294, a string representing one, or 'default'/0/None to defer it."
            );
            f.error_at("gid", msg);
            None
        }
    }
}

// ----------------------------------------------------------------- users

/// A user (groups/, key `users`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct User {
    #[serde(flatten)]
    pub root: RootItem,
    /// The account an instance gives the user: the name as declared, or,
    /// when its builder sets `email_as_username`, the login derived from
    /// its email ([`crate::login::from_email`]); set by the engine, which
    /// knows the builder.
    pub login: String,
    pub first_name: String,
    pub last_name: String,
    pub middle_name: Option<String>,
    /// Templated later from the builder's email template.
    pub email: Option<String>,
    pub is_service_account: bool,
    pub is_enabled: bool,
    /// None means the builder's default.
    pub managed: Option<bool>,
    pub attributes: Option<Map>,
    pub public_keys: Vec<String>,
    /// The profile fields, `mobile_phone:` to `manager:`.
    #[serde(flatten)]
    pub profile: Profile,
}

/// A user's profile fields (`mobile_phone:` to `manager:`): one box, absent
/// when none is set. Most users set none, and as 26 fields inline they
/// were three quarters of a user's size (a tree holds tens of thousands of
/// users). Serialized as every field, in [`PROFILE`] order, null when
/// unset, whether or not the box is there.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Profile(Option<Box<[Option<String>; PROFILE.len()]>>);

/// Each profile field: its key in the configuration and its name in the
/// resolved view (`display_name:` is `profile_display_name`, as
/// NameTyped's `display_name` is the name's original spelling).
pub const PROFILE: [(&str, &str); 26] = [
    ("mobile_phone", "mobile_phone"),
    ("honorific_prefix", "honorific_prefix"),
    ("honorific_suffix", "honorific_suffix"),
    ("title", "title"),
    ("display_name", "profile_display_name"),
    ("nick_name", "nick_name"),
    ("profile_url", "profile_url"),
    ("second_email", "second_email"),
    ("primary_phone", "primary_phone"),
    ("street_address", "street_address"),
    ("city", "city"),
    ("state", "state"),
    ("zip_code", "zip_code"),
    ("country_code", "country_code"),
    ("postal_address", "postal_address"),
    ("preferred_language", "preferred_language"),
    ("locale", "locale"),
    ("timezone", "timezone"),
    ("user_type", "user_type"),
    ("employee_number", "employee_number"),
    ("cost_center", "cost_center"),
    ("organization", "organization"),
    ("division", "division"),
    ("department", "department"),
    ("manager_id", "manager_id"),
    ("manager", "manager"),
];

impl Profile {
    fn read(f: &mut Fields<'_>) -> Profile {
        let keys = PROFILE.map(|(key, _)| key);
        // Most users set none: one pass over the user's own keys rather
        // than 26 lookups that miss.
        if !f.any_present(&keys) {
            return Profile(None);
        }
        let values = keys.map(|key| f.opt_str(key));
        Profile(values.iter().any(Option::is_some).then(|| Box::new(values)))
    }
}

impl Serialize for Profile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(PROFILE.len()))?;
        for (at, (_, name)) in PROFILE.iter().enumerate() {
            let value = self.0.as_ref().and_then(|v| v[at].as_deref());
            map.serialize_entry(name, &value)?;
        }
        map.end()
    }
}

impl User {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        if f.raw("aliases")
            .is_some_and(|v| !v.as_seq().is_some_and(<[Value]>::is_empty))
        {
            f.error_at("aliases", "Aliases are not allowed for User items.");
        }
        let first_name = required_name_part(f, &name, "first_name");
        let last_name = required_name_part(f, &name, "last_name");
        User {
            login: root.named.display_name.trim().to_string(),
            first_name,
            last_name,
            middle_name: f.opt_str("middle_name"),
            email: f.opt_str("email"),
            is_service_account: f.bool_or("is_service_account", false),
            is_enabled: f.bool_or("is_enabled", true),
            managed: f.opt_bool("managed"),
            attributes: f.opt_any_map("attributes"),
            public_keys: f.str_list("public_keys"),
            profile: Profile::read(f),
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// first_name / last_name: required, non-blank, never derived.
fn required_name_part(f: &mut Fields<'_>, user: &str, key: &'static str) -> String {
    let v = f.opt_str(key);
    match v {
        Some(s) if !s.trim().is_empty() => s,
        other => {
            let msg = format!(
                "User {user} requires a non-blank {key} (got {}); names are never derived from the user name.",
                py_repr(other.as_deref())
            );
            refuse(f, key, msg);
            other.unwrap_or_default()
        }
    }
}

// -------------------------------------------------------------- storages

/// The share modes a storage may declare.
pub const SHARE_MODES: [&str; 2] = ["2770", "2775"];

/// The requested states of a storage.
pub const STORAGE_STATES: [&str; 3] = ["active", "archived", "destroyed"];

/// A storage (storages/, key `storages`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Storage {
    /// `type` is fk STORAGE_BUILDER_MODEL, default `default`.
    #[serde(flatten)]
    pub named: NameTyped,
    /// fk RUNTIME_BUILDER_MODEL.
    pub runtime: String,
    pub groups: Vec<String>,
    pub public_read: bool,
    pub share_mode: String,
    pub state: String,
    pub availability_zone: Option<String>,
    pub source: BTreeMap<String, String>,
    pub ephemeral: bool,
    pub generative: bool,
    pub singleton: bool,
    pub is_default: bool,
    pub mount_point: Option<String>,
    pub bucket_name: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub config: Map,
    pub lifecycle: Option<Map>,
}

impl Storage {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let named = NameTyped::read_with_type(f, "default");
        let name = named.name.clone();
        if named.type_.trim().is_empty() {
            f.error_at(
                "type",
                format!("Storage '{name}' must have a type specified"),
            );
        }
        let runtime = f.str_or("runtime", "default");
        if runtime.trim().is_empty() {
            f.error_at(
                "runtime",
                format!("Storage '{name}' must have a runtime specified"),
            );
        }
        let groups = f.str_list("groups");
        for (i, g) in groups.iter().enumerate() {
            if g == "ALL" {
                let msg = format!(
                    "Storage '{name}' uses the retired 'ALL' group value; declare the specific allowed groups, or 'public_read: true'"
                );
                let at = f.origin_of("groups").index(i);
                f.error(Diagnostic::error(msg).at(at));
            }
        }
        let share_mode = f.str_or("share_mode", "2770");
        if !SHARE_MODES.contains(&share_mode.as_str()) {
            let msg = format!(
                "Storage '{name}' has share_mode {share_mode}; expected one of ('2770', '2775')"
            );
            f.error_at("share_mode", msg);
        }
        let state = f.str_or("state", "active");
        if !STORAGE_STATES.contains(&state.as_str()) {
            f.error_at(
                "state",
                format!("Storage '{name}' has unknown state {state}"),
            );
        }
        Storage {
            named,
            runtime,
            groups,
            public_read: f.bool_or("public_read", false),
            share_mode,
            state,
            availability_zone: f.opt_str("availability_zone"),
            source: f.str_map("source"),
            ephemeral: f.bool_or("ephemeral", false),
            generative: f.bool_or("generative", false),
            singleton: f.bool_or("singleton", false),
            is_default: f.bool_or("is_default", false),
            mount_point: f.opt_str("mount_point"),
            bucket_name: f.opt_str("bucket_name"),
            tags: f.str_map("tags"),
            config: f.any_map("config"),
            lifecycle: f.opt_any_map("lifecycle"),
        }
    }

    pub fn name(&self) -> &str {
        &self.named.name
    }

    /// public_read or the group is listed.
    pub fn allows_group(&self, group: &str) -> bool {
        self.public_read || self.groups.iter().any(|g| g == group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;
    use crate::value::Map;

    fn with(base: &[(&str, Value)], extra: &[(&str, Value)]) -> Map {
        let mut m = map(base);
        for (k, v) in extra {
            m.insert(k.to_string(), v.clone());
        }
        m
    }

    // -- images

    fn image(extra: &[(&str, Value)]) -> Map {
        with(
            &[
                ("name", plain("web")),
                ("source_image", plain("rhel9")),
                (
                    "runtimes",
                    seq(&[mapv(&[("image_builder", plain("packer"))])]),
                ),
            ],
            extra,
        )
    }

    #[test]
    fn image_defaults() {
        let (i, diags) = read(&image(&[]), Image::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(i.root.named.type_, "default");
        assert_eq!(i.parent_policy, "pinned");
        assert_eq!(i.architecture, "default");
        assert_eq!(i.primary_disk_size, "default");
        assert_eq!(i.retention, None);
        assert_eq!(i.release, None);
        assert!(i.modifications.is_empty());
        let r = &i.runtimes[0];
        assert_eq!(r.name, "packer");
        assert_eq!(r.ssh_username, "default");
        assert_eq!(r.owners, vec!["self".to_string()]);
        assert_eq!(r.type_, None);
    }

    #[test]
    fn image_keeps_deferred_fields_raw() {
        let mods = seq(&[mapv(&[
            ("type", plain("ansible")),
            ("playbooks", strs(&["a.yml"])),
        ])]);
        let (i, diags) = read(
            &image(&[
                ("modifications", mods.clone()),
                ("retention", mapv(&[("keep", plain("3"))])),
                ("primary_disk_size", plain("50")),
                ("parent_policy", plain("sometimes")),
            ]),
            Image::read,
        );
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(Value::Seq(i.modifications), mods);
        assert_eq!(i.retention.map(|r| r.len()), Some(1));
        assert_eq!(i.primary_disk_size, "50");
        assert_eq!(i.parent_policy, "sometimes");
    }

    #[test]
    fn image_refusals() {
        let mut m = image(&[("runtimes", seq(&[]))]);
        m.shift_remove("source_image");
        let (_, diags) = read(&m, Image::read);
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "Image web must have either 'os' or 'source_image' specified.",
                    "things[0]"
                ),
                e(
                    "Image web must have at least one runtime specified in the 'runtimes' field",
                    "things[0].runtimes"
                ),
            ]
        );
        let (_, diags) = read(&image(&[("os", plain("rhel9"))]), Image::read);
        assert_eq!(errors(&diags)[0].1, "things[0].os");
    }

    #[test]
    fn base_image_needs_exactly_one_of_os_and_source_image() {
        let rt = seq(&[mapv(&[
            ("runtime", plain("aws")),
            ("image_builder", plain("packer")),
        ])]);
        let (b, diags) = read(
            &map(&[
                ("name", plain("rhel9")),
                ("os", plain("rhel9")),
                ("runtimes", rt.clone()),
            ]),
            BaseImage::read,
        );
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(b.admin_user, "csisadmin");
        assert_eq!(b.runtimes[0].runtime, "aws");
        let (_, diags) = read(
            &map(&[
                ("name", plain("rhel9")),
                ("os", plain("rhel9")),
                ("source_image", plain("x")),
                ("runtimes", rt),
            ]),
            BaseImage::read,
        );
        assert_eq!(
            errors(&diags),
            vec![e(
                "Image rhel9 must have either 'os' or 'source_image' specified.",
                "things[0].source_image"
            )]
        );
    }

    #[test]
    fn mod_item_reads_its_base_and_leaves_the_rest_to_the_plugin() {
        let m = map(&[("name", plain("Harden")), ("playbooks", strs(&["a.yml"]))]);
        let (x, diags) = read(&m, |f| {
            let base = ModItemModel::read(f);
            let playbooks = f.str_list("playbooks");
            (base, playbooks)
        });
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(x.0.named.name, "harden");
        assert_eq!(x.0.named.type_, "default");
        assert_eq!(x.1, vec!["a.yml".to_string()]);
    }

    // -- instances

    #[test]
    fn instance_defaults() {
        let m = map(&[("name", plain("coops")), ("image", plain("web"))]);
        let (i, diags) = read(&m, Instance::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(i.runtime, "default");
        assert_eq!(i.userdata, "");
        assert_eq!(i.image_policy, "pinned");
        assert_eq!(i.machine_type, "");
        assert!(!i.ephemeral);
        assert_eq!(i.root.named.description, None);
    }

    #[test]
    fn instance_without_image_warns_and_refuses_and_groups_refused() {
        let m = map(&[("name", plain("coops")), ("groups", strs(&["g"]))]);
        let (_, diags) = read(&m, Instance::read);
        assert_eq!(
            warnings(&diags),
            vec![e(
                "Instance 'coops' does not have an image specified; the load refuses it when the configuration finalizes.",
                "things[0]"
            )]
        );
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "Instance 'coops' declares 'groups'; V2 removed per-instance groups (ownership lives on the image). Set 'group:' on the image instead.",
                    "things[0].groups"
                ),
                e(
                    "Instance 'coops' cannot be finalized without an image specified.",
                    "things[0]"
                ),
            ]
        );
    }

    #[test]
    fn storage_mapping_defaults_and_refusals() {
        let (s, diags) = read(&map(&[("name", plain("data"))]), StorageMapping::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(s.mount_point, "/mnt/storage");
        assert_eq!(s.min_size, 100);
        assert_eq!(s.type_, "default");

        let m = map(&[
            ("name", plain("data")),
            ("mount_point", quoted("")),
            ("min_size", plain("0")),
            ("aliases", strs(&["d"])),
        ]);
        let (_, diags) = read(&m, StorageMapping::read);
        assert_eq!(
            warnings(&diags),
            vec![e(
                "StorageMapping 'data' has aliases defined; Ignoring aliases.",
                "things[0].aliases"
            )]
        );
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "StorageMapping 'data' must have a mount_point specified.",
                    "things[0].mount_point"
                ),
                e(
                    "StorageMapping 'data' must have a positive min_size specified. Got: 0",
                    "things[0].min_size"
                ),
            ]
        );
    }

    // -- groups

    #[test]
    fn group_in_both_and_gid() {
        let m = map(&[
            ("name", plain("devs")),
            ("members", strs(&["b", "a"])),
            ("admins", strs(&["c", "a"])),
            ("in_both", plain("true")),
            ("gid", plain("2000")),
        ]);
        let (g, diags) = read(&m, Group::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(g.members, vec!["a", "b", "c"]);
        assert_eq!(g.gid, Some(2000));
        assert!(g.include_root_group_in_admins);

        let m = map(&[
            ("name", plain("devs")),
            ("members", strs(&["b", "a"])),
            ("admins", strs(&["a"])),
            ("in_both", plain("false")),
            ("gid", quoted("default")),
        ]);
        let (g, diags) = read(&m, Group::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(g.members, vec!["b"]);
        assert_eq!(g.gid, None);

        for ok in [plain("0"), quoted("0"), Value::Null] {
            let (g, diags) = read(&map(&[("name", plain("g")), ("gid", ok)]), Group::read);
            assert!(diags.is_empty() && g.gid.is_none());
        }
        for (bad, shown) in [
            (plain("500"), "500"),
            (quoted("abc"), "abc"),
            (plain("4294967295"), "4294967295"),
            (plain("4294967296"), "4294967296"),
            (plain("9223372036854775807"), "9223372036854775807"),
            (plain("99999999999999999999"), "99999999999999999999"),
        ] {
            let (_, diags) = read(&map(&[("name", plain("g")), ("gid", bad)]), Group::read);
            assert_eq!(
                errors(&diags),
                vec![e(
                    &format!(
                        "Group g has gid {shown}; gid must be an integer from 1024 to 4294967294, a string representing one, or 'default'/0/None to defer it."
                    ),
                    "things[0].gid"
                )]
            );
        }
    }

    // -- users

    #[test]
    fn a_user_without_profile_fields_has_no_profile_box_and_serializes_them_null() {
        let m = map(&[
            ("name", plain("carol")),
            ("first_name", plain("Carol")),
            ("last_name", plain("Jones")),
        ]);
        let (u, diags) = read(&m, User::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert!(u.profile.0.is_none());
        let json = serde_json::to_value(&u).unwrap_or_default();
        let keys: Vec<&str> = json
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys.last(), Some(&"manager"));
        assert!(keys.contains(&"mobile_phone"));
        assert_eq!(json["city"], serde_json::Value::Null);
        assert_eq!(json["profile_display_name"], serde_json::Value::Null);

        // One profile key alone is read; a misspelt one is refused with
        // the profile keys among those it could have meant.
        for (key, name) in PROFILE {
            let m = map(&[
                ("name", plain("carol")),
                ("first_name", plain("Carol")),
                ("last_name", plain("Jones")),
                (key, plain("x")),
            ]);
            let (u, diags) = read(&m, User::read);
            assert!(diags.is_empty(), "{key}: {diags:?}");
            let json = serde_json::to_value(&u).unwrap_or_default();
            assert_eq!(json[name], "x", "{key}");
        }
        let m = map(&[
            ("name", plain("carol")),
            ("first_name", plain("Carol")),
            ("last_name", plain("Jones")),
            ("citty", plain("Oslo")),
        ]);
        let (_, diags) = read(&m, User::read);
        assert_eq!(
            errors(&diags),
            [(
                "Owner 'x': unknown key 'citty' (Extra inputs are not permitted)".to_string(),
                "things[0].citty".to_string()
            )]
        );
        let help = diags[0].help.as_deref().unwrap_or_default();
        assert!(help.ends_with("did you mean 'city'?"), "{help}");
        assert!(help.contains("manager_id"), "{help}");
    }

    #[test]
    fn user_reads_and_refuses() {
        let m = map(&[
            ("name", plain("alice@example.invalid")),
            ("first_name", plain("Alice")),
            ("last_name", plain("Smith")),
            ("display_name", plain("Alice S.")),
            ("city", plain("Oslo")),
        ]);
        let (u, diags) = read(&m, User::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert!(u.is_enabled);
        assert_eq!(u.managed, None);
        assert!(u.profile.0.is_some());
        assert_eq!(u.email, None);
        let json = serde_json::to_value(&u).unwrap_or_default();
        assert_eq!(json["name"], "alice@example.invalid");
        assert_eq!(json["type"], "default");
        assert_eq!(json["display_name"], "alice@example.invalid");
        assert_eq!(json["profile_display_name"], "Alice S.");
        assert_eq!(json["city"], "Oslo");
        assert_eq!(json["is_enabled"], true);

        let m = map(&[
            ("name", plain("bob")),
            ("last_name", quoted(" ")),
            ("aliases", strs(&["robert"])),
        ]);
        let (_, diags) = read(&m, User::read);
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "Aliases are not allowed for User items.",
                    "things[0].aliases"
                ),
                e(
                    "User bob requires a non-blank first_name (got None); names are never derived from the user name.",
                    "things[0]"
                ),
                e(
                    "User bob requires a non-blank last_name (got ' '); names are never derived from the user name.",
                    "things[0].last_name"
                ),
            ]
        );
    }

    // -- storages

    #[test]
    fn storage_defaults() {
        let (s, diags) = read(&map(&[("name", plain("data"))]), Storage::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(s.named.type_, "default");
        assert_eq!(s.runtime, "default");
        assert_eq!(s.share_mode, "2770");
        assert_eq!(s.state, "active");
        assert!(!s.allows_group("devs"));
        assert_eq!(s.lifecycle, None);
    }

    #[test]
    fn storage_refusals() {
        let m = map(&[
            ("name", plain("data")),
            ("groups", strs(&["devs", "ALL"])),
            ("share_mode", plain("0777")),
            ("state", plain("gone")),
            ("runtime", quoted("")),
            ("type", quoted("")),
        ]);
        let (s, diags) = read(&m, Storage::read);
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "Storage 'data' must have a type specified",
                    "things[0].type"
                ),
                e(
                    "Storage 'data' must have a runtime specified",
                    "things[0].runtime"
                ),
                e(
                    "Storage 'data' uses the retired 'ALL' group value; declare the specific allowed groups, or 'public_read: true'",
                    "things[0].groups[1]"
                ),
                e(
                    "Storage 'data' has share_mode 0777; expected one of ('2770', '2775')",
                    "things[0].share_mode"
                ),
                e("Storage 'data' has unknown state gone", "things[0].state"),
            ]
        );
        assert!(s.allows_group("devs"));
    }
}
