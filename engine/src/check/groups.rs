//! Groups across items (configuration.md's load-time refusals "across
//! items"): exactly one root group (`is_root: true`) when any group is
//! declared, and every member and admin of a group a declared user. And a
//! group meta-state/identity.yaml records as managed never leaves the YAML
//! (removing the entry would destroy the group). They
//! look across items, so they run once over the tree, after every item is
//! structured and before the validate-time checks. Which group an image or
//! storage names is its foreign keys' check; whether a group's builder
//! provides an identity, the capabilities'.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Subject, Value};
use serde::Deserialize;

use crate::db::{Db, Tree};
use crate::load::items::{indexed_of_kind, item_index, raw_item};
use crate::load::items_model::structured_item;
use crate::load::kept_world::{WorldCheck, quiet_check};
use crate::state::lineage::{Record, read_record};
use crate::state::read_models::IDENTITY;

/// Exactly one root group; every member and admin a declared user.
#[salsa::tracked(returns(ref))]
pub fn check_groups(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    // It reads groups and users only: kept when it found nothing
    // (load/kept_world.rs).
    if quiet_check(db, tree, WorldCheck::Groups) {
        return Vec::new();
    }
    let index = item_index(db, tree);
    let mut out = Vec::new();
    // Every user's name, sorted, for a message's suggestions: made only
    // when a member is unknown (a sorted set of a large tree's users was
    // most of this check, and a member is looked up in the index).
    let mut sorted_users: Option<Vec<&str>> = None;
    let mut roots = 0;
    let mut any_group = false;
    // A group whose is_root is no boolean was refused for it; counting
    // the roots again would only repeat that.
    let mut unreadable_root = false;
    for id in indexed_of_kind(db, tree, ItemKind::GROUPS) {
        let si = structured_item(db, id);
        let Some(Item::Group(g)) = si.item.as_deref() else {
            continue;
        };
        any_group = true;
        unreadable_root |= raw_item(db, tree, id).is_some_and(|r| {
            r.value
                .get("is_root")
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|v| csis_model::fields::parse_bool(v).is_none())
        });
        if g.is_root {
            roots += 1;
        }
        let listed = g
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| ("members", "member", i, m))
            .chain(
                g.admins
                    .iter()
                    .enumerate()
                    .map(|(i, m)| ("admins", "admin", i, m)),
            );
        for (key, role, i, member) in listed {
            let m = csis_model::naming::safe_name(member);
            if !index.contains(ItemKind::USERS, m.as_str()) {
                let users = sorted_users.get_or_insert_with(|| {
                    let mut names: Vec<&str> = index.names(ItemKind::USERS).collect();
                    names.sort_unstable();
                    names
                });
                // What follows from an account that is not there (its
                // user-data account, its login) is this error's.
                out.push(
                    Diagnostic::error(format!(
                        "Group {} has {role} {member} which is not in the list of defined users.",
                        g.root.name()
                    ))
                    .at_opt(si.origin.clone().map(|o| o.key(key).index(i)))
                    .help(csis_model::suggest::undeclared(
                        &format!("group '{}' ({key})", g.root.name()),
                        "user",
                        member,
                        users.iter().copied(),
                    ))
                    .refusing(Subject::item(ItemKind::USERS, member))
                    .following(Subject::item(ItemKind::USERS, member)),
                );
            }
        }
    }
    if any_group && roots != 1 && !unreadable_root {
        out.push(
            Diagnostic::error(format!(
                "Expected exactly one root group (is_root: true), found {roots}"
            ))
            .help("mark exactly one group is_root: true"),
        );
    }
    out
}

/// A group the read-model records as managed that the YAML no longer
/// declares.
pub fn managed_groups_missing(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let record = recorded_managed_groups(db, tree);
    let index = item_index(db, tree);
    let mut out = record.diags.clone();
    for name in &record.value {
        if !index.contains(ItemKind::GROUPS, &csis_model::naming::safe_name(name)) {
            out.push(Diagnostic::error(format!(
                "identity: group '{name}' was managed by the system but is missing from the YAML; groups never leave the configuration (keep the entry with 'unmanaged: true' to stop managing it without destroying it)"
            )));
        }
    }
    out
}

/// The groups meta-state/identity.yaml records as managed. A memo of its
/// own, so the load reads the file (megabytes on a large tree) while it
/// parses the item files (`workspace::prewarm`).
#[salsa::tracked(returns(ref))]
pub fn recorded_managed_groups(db: &dyn Db, tree: Tree) -> Record<Vec<String>> {
    let record = read_record::<Recorded>(db, tree, IDENTITY);
    Record {
        value: record
            .value
            .groups
            .into_iter()
            .filter(|(_, g)| g.managed)
            .map(|(name, _)| name)
            .collect(),
        diags: record.diags,
    }
}

/// What the managed-groups rule reads of meta-state/identity.yaml.
#[derive(Default, Deserialize)]
struct Recorded {
    #[serde(default)]
    groups: BTreeMap<String, RecordedGroup>,
}

#[derive(Default, Deserialize)]
struct RecordedGroup {
    #[serde(default)]
    managed: bool,
}
