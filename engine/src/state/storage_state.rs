//! The storage state machine. A storage's declared `state:` is the state
//! REQUESTED; meta-state/storage-state.yaml holds the current one, which
//! only a real storage apply moves. Legal moves: active to archived and
//! back, either to destroyed, and destroyed to active again (a new
//! generation of the name). A storage must be unattached to leave active.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Origin, Vct};
use serde::{Deserialize, Serialize};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, indexed_of_kind, item_index};
use crate::load::items_model::structured_item;
use crate::load::kept_instances::every_instance_links;
use crate::load::kept_world::{KeptStorage, kept_storage};

/// The record's file name inside meta-state/.
pub const FILE: &str = "storage-state.yaml";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageState {
    #[serde(default)]
    pub storages: BTreeMap<String, Recorded>,
}

/// One storage's current state and how it got there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    pub state: String,
    /// Starts at 1; a destroyed name made active again is the next one.
    #[serde(default)]
    pub generation: u64,
    /// The storage builder that realized it: what a destroy of an
    /// undeclared storage would go through.
    #[serde(default)]
    pub builder: Option<String>,
    #[serde(default)]
    pub history: Vec<Transition>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    pub from: Option<String>,
    pub to: String,
    pub run: String,
    pub generation: u64,
    /// create, archive, restore, destroy or regenerate.
    pub action: String,
}

/// A declared storage as the state machine sees it.
pub struct Declared {
    pub name: String,
    pub requested: String,
    /// The storage builder's name (the `type:` as written when none
    /// resolves).
    pub builder: String,
    pub supports_archive: bool,
    pub origin: Option<Origin>,
}

/// Which instances attach each storage: storage name to instance names,
/// both in name order.
pub fn attachments(db: &dyn Db, tree: Tree) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (instance, links) in every_instance_links(db, tree) {
        // A kept instances file answers without structuring its instances.
        let Some(links) = links else {
            continue;
        };
        for storage in links.storages() {
            out.entry(storage.to_string())
                .or_default()
                .push(instance.name.to_string());
        }
    }
    out
}

/// Every declared storage as the persisted cache kept it
/// (`load::kept_world`), in [`declared`]'s order and without where each is
/// declared: `None` unless it holds every storage. A check that finds
/// something in these asks [`declared`] for the positions.
pub fn kept_declared(db: &dyn Db, tree: Tree) -> Option<Vec<Declared>> {
    indexed_of_kind(db, tree, ItemKind::STORAGES)
        .iter()
        .map(|id| {
            let name = id.name(db).as_str();
            let kept = kept_storage(db, tree, name)?;
            Some(Declared {
                name: name.to_string(),
                requested: kept.requested.clone(),
                builder: kept.builder.clone(),
                supports_archive: kept.supports_archive,
                origin: None,
            })
        })
        .collect()
}

/// Every declared storage, in name order.
pub fn declared(db: &dyn Db, tree: Tree) -> Vec<Declared> {
    indexed_of_kind(db, tree, ItemKind::STORAGES)
        .iter()
        .filter_map(|id| declared_one(db, *id))
        .collect()
}

fn declared_one(db: &dyn Db, id: ItemId<'_>) -> Option<Declared> {
    let si = structured_item(db, id);
    let Some(Item::Storage(st)) = si.item.as_deref() else {
        return None;
    };
    let decl = builders(db, id.tree(db)).resolve(Vct::StorageBuilderModel, &st.named.type_);
    let supports_archive = decl
        .and_then(|d| {
            db.registry()
                .model(d.classification, d.model)
                .map(|spec| (spec.builder)(d))
        })
        .is_some_and(|builder| builder.supports_archive());
    Some(Declared {
        name: id.name(db).to_string(),
        requested: st.state.clone(),
        builder: decl.map_or(st.named.type_.to_string(), |d| d.name().to_string()),
        supports_archive,
        origin: si.origin.clone(),
    })
}

/// The runtime storage `id`'s builder applies on, as the storage's root
/// names the disk (else the runtime it names): what its cloud names are
/// derived on. Kept by the persisted cache (`load::kept_world`).
pub fn storage_runtime(db: &dyn Db, id: ItemId<'_>) -> Option<String> {
    let tree = id.tree(db);
    if let Some(kept) = kept_storage(db, tree, id.name(db).as_str()) {
        return Some(kept.runtime.clone());
    }
    let Some(Item::Storage(st)) = structured_item(db, id).item.as_deref() else {
        return None;
    };
    Some(
        builders(db, tree)
            .resolve(Vct::StorageBuilderModel, &st.named.type_)
            .and_then(|d| d.base.runtime().map(str::to_string))
            .unwrap_or_else(|| st.runtime.clone()),
    )
}

/// What the persisted cache keeps of storage `id` (`load::kept_world`),
/// computed from the structured storage. Asked by the cache's writer.
pub fn to_keep(db: &dyn Db, id: ItemId<'_>) -> Option<KeptStorage> {
    let Some(Item::Storage(st)) = structured_item(db, id).item.as_deref() else {
        return None;
    };
    let Declared {
        requested,
        builder,
        supports_archive,
        ..
    } = declared_one(db, id)?;
    Some(KeptStorage {
        runtime: storage_runtime(db, id)?,
        type_: st.named.type_.to_string(),
        builder,
        requested,
        supports_archive,
    })
}

pub fn legal(from: &str, to: &str) -> bool {
    from == to
        || matches!(
            (from, to),
            ("active", "archived")
                | ("archived", "active")
                | ("active" | "archived", "destroyed")
                | ("destroyed", "active")
        )
}

fn action(from: Option<&str>, to: &str) -> &'static str {
    match (from, to) {
        (None, _) => "create",
        (Some("destroyed"), _) => "regenerate",
        (_, "archived") => "archive",
        (_, "destroyed") => "destroy",
        _ => "restore",
    }
}

/// Every illegal transition the declarations request of the record.
/// `attached` maps a storage name to the instances that attach it.
pub fn check(
    declared: &[Declared],
    record: &StorageState,
    attached: &BTreeMap<String, Vec<String>>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut err = |msg: String, origin: Option<Origin>| {
        out.push(Diagnostic::error(msg).at_opt(origin));
    };
    for d in declared {
        let s = d.name.as_str();
        let req = d.requested.as_str();
        if !csis_model::models::items::STORAGE_STATES.contains(&req) {
            // Refused at load already ("has unknown state").
            continue;
        }
        let at = || d.origin.as_ref().map(|o| o.key("state"));
        let users = attached.get(s).filter(|u| !u.is_empty());
        if req == "archived" && !d.supports_archive {
            err(
                format!(
                    "storage: storage '{s}' requests archived, which its builder '{}' does not realize",
                    d.builder
                ),
                at(),
            );
        }
        match record.storages.get(s).map(|r| r.state.as_str()) {
            None if req != "active" => err(
                format!(
                    "storage: storage '{s}' has never been applied; a new storage must start 'active', not '{req}'"
                ),
                at(),
            ),
            Some(cur) if !legal(cur, req) => err(
                format!("storage: storage '{s}': transition {cur} -> {req} is not legal"),
                at(),
            ),
            Some("active") if req != "active" && users.is_some() => err(
                format!(
                    "storage: storage '{s}' cannot move active -> {req} while attached by [{}] (detach in one run, transition in the next; N21)",
                    users.map(|u| u.join(", ")).unwrap_or_default()
                ),
                at(),
            ),
            Some(cur) if cur == req && req != "active" && users.is_some() => err(
                format!(
                    "storage: storage '{s}' is {cur} but instances attach it: [{}]",
                    users.map(|u| u.join(", ")).unwrap_or_default()
                ),
                at(),
            ),
            _ if req != "active" && users.is_some() => err(
                format!(
                    "storage: instances [{}] attach storage '{s}' which is {req}",
                    users.map(|u| u.join(", ")).unwrap_or_default()
                ),
                at(),
            ),
            _ => {}
        }
    }
    // An instance attaching a storage nobody declares is the foreign
    // key's refusal, with its place; it is not said twice.
    for (s, r) in &record.storages {
        if r.state != "destroyed" && r.builder.is_none() && !declared.iter().any(|d| &d.name == s) {
            err(
                format!(
                    "storage: storage '{s}' is recorded {} but no longer declared, and its record names no storage builder: re-declare it (or record it with 'state import')",
                    r.state
                ),
                None,
            );
        }
    }
    out
}

/// meta-state/storage-state.yaml as the tree was loaded with it.
#[salsa::tracked(returns(ref))]
pub fn storage_record(db: &dyn Db, tree: Tree) -> crate::state::lineage::Record<StorageState> {
    crate::state::lineage::read_record(db, tree, FILE)
}

/// Storages recorded not destroyed, with the builder that realized them,
/// whose declaration is gone: their destroy is generated from the record.
pub fn undeclared(db: &dyn Db, tree: Tree) -> Vec<(String, String)> {
    let index = item_index(db, tree);
    storage_record(db, tree)
        .value
        .storages
        .iter()
        .filter(|(s, r)| r.state != "destroyed" && !index.contains(ItemKind::STORAGES, s))
        .filter_map(|(s, r)| r.builder.clone().map(|b| (s.clone(), b)))
        .collect()
}

/// The record after a real storage apply realized every declared
/// storage's requested state: the requested states become current, and
/// an undeclared storage with a recorded builder was destroyed (its
/// tombstone's action is `undeclared`).
pub fn applied(record: &StorageState, declared: &[Declared], run: &str) -> StorageState {
    let mut next = record.clone();
    for (name, r) in next.storages.iter_mut() {
        if r.state != "destroyed"
            && r.builder.is_some()
            && !declared.iter().any(|d| &d.name == name)
        {
            r.history.push(Transition {
                from: Some(r.state.clone()),
                to: "destroyed".into(),
                run: run.to_string(),
                generation: r.generation,
                action: "undeclared".into(),
            });
            r.state = "destroyed".into();
        }
    }
    for d in declared {
        let before = record.storages.get(&d.name);
        let from = before.map(|r| r.state.as_str());
        if from == Some(d.requested.as_str()) {
            continue;
        }
        let generation = match before {
            None => 1,
            Some(r) if r.state == "destroyed" => r.generation + 1,
            Some(r) => r.generation,
        };
        let entry = next
            .storages
            .entry(d.name.clone())
            .or_insert_with(|| Recorded {
                state: String::new(),
                generation,
                builder: None,
                history: Vec::new(),
            });
        entry.history.push(Transition {
            from: from.map(str::to_string),
            to: d.requested.clone(),
            run: run.to_string(),
            generation,
            action: action(from, &d.requested).to_string(),
        });
        entry.state = d.requested.clone();
        entry.generation = generation;
        entry.builder = Some(d.builder.clone());
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(name: &str, requested: &str) -> Declared {
        Declared {
            name: name.into(),
            requested: requested.into(),
            builder: "disk".into(),
            supports_archive: false,
            origin: None,
        }
    }

    fn recorded(pairs: &[(&str, &str)]) -> StorageState {
        StorageState {
            storages: pairs
                .iter()
                .map(|(n, s)| {
                    (
                        n.to_string(),
                        Recorded {
                            state: s.to_string(),
                            generation: 1,
                            builder: None,
                            history: Vec::new(),
                        },
                    )
                })
                .collect(),
        }
    }

    fn messages(
        declared: &[Declared],
        record: &StorageState,
        attached: &[(&str, &str)],
    ) -> Vec<String> {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (s, i) in attached {
            map.entry(s.to_string()).or_default().push(i.to_string());
        }
        check(declared, record, &map)
            .into_iter()
            .map(|d| d.message)
            .collect()
    }

    #[test]
    fn the_legal_moves() {
        for (a, b) in [
            ("active", "archived"),
            ("archived", "active"),
            ("active", "destroyed"),
            ("archived", "destroyed"),
            ("destroyed", "active"),
            ("active", "active"),
        ] {
            assert!(legal(a, b), "{a} -> {b}");
        }
        assert!(!legal("destroyed", "archived"));
    }

    #[test]
    fn each_refusal() {
        let archiving = Declared {
            supports_archive: true,
            ..decl("cold", "archived")
        };
        let got = messages(
            &[
                decl("fresh", "destroyed"),
                decl("gone", "archived"),
                archiving,
                decl("shelved", "destroyed"),
                decl("busy", "destroyed"),
            ],
            &recorded(&[
                ("gone", "destroyed"),
                ("cold", "archived"),
                ("shelved", "archived"),
                ("busy", "active"),
                ("orphan", "active"),
            ]),
            &[
                ("busy", "one"),
                ("busy", "two"),
                ("cold", "three"),
                ("shelved", "four"),
            ],
        );
        assert_eq!(
            got,
            vec![
                "storage: storage 'fresh' has never been applied; a new storage must start 'active', not 'destroyed'",
                "storage: storage 'gone' requests archived, which its builder 'disk' does not realize",
                "storage: storage 'gone': transition destroyed -> archived is not legal",
                "storage: storage 'cold' is archived but instances attach it: [three]",
                "storage: instances [four] attach storage 'shelved' which is destroyed",
                "storage: storage 'busy' cannot move active -> destroyed while attached by [one, two] (detach in one run, transition in the next; N21)",
                "storage: storage 'orphan' is recorded active but no longer declared, and its record names no storage builder: re-declare it (or record it with 'state import')",
            ]
        );
    }

    #[test]
    fn applying_records_transitions_and_regenerations() {
        let first = applied(&StorageState::default(), &[decl("data", "active")], "r1");
        let r = &first.storages["data"];
        assert_eq!((r.state.as_str(), r.generation), ("active", 1));
        assert_eq!(r.history[0].action, "create");
        let destroyed = applied(&first, &[decl("data", "destroyed")], "r2");
        assert_eq!(destroyed.storages["data"].history[1].action, "destroy");
        let again = applied(&destroyed, &[decl("data", "active")], "r3");
        let r = &again.storages["data"];
        assert_eq!((r.state.as_str(), r.generation), ("active", 2));
        assert_eq!(r.history[2].action, "regenerate");
        assert_eq!(r.history.len(), 3);
        // Nothing requested that is not already current: nothing recorded.
        assert_eq!(applied(&again, &[decl("data", "active")], "r4"), again);
    }
}
