//! Storages (storages/, key `storages`): the share modes and requested
//! states a storage may declare, and who may attach it.

use crate::Map;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::fields::Fields;
use crate::models::common::NameTyped;

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
            mount_point: f.opt_mount_point("mount_point"),
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
