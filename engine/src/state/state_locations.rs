//! Where each terraform root keeps its state, with
//! `config.use_state_backends`: every builder whose root keeps state
//! (`Builder::keeps_state`) resolves its backend from its own
//! `state_configuration`, else its runtime's, else the default state
//! backend. Validation refuses `none` (there is no "no backend"), an
//! undeclared backend, two roots on one state object, and a location that
//! moved while something stands in the root (unless `--migrate-state`
//! names it); meta-state/state-locations.yaml records the locations after
//! each run that generated, and every migration performed. The record, not
//! the emission, is what the move guard compares against.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{Diagnostic, ItemKind, Origin, Value, Vct};
use serde::{Deserialize, Serialize};

use crate::db::{Db, Tree};
use crate::load::builders::{Builders, builders};
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::state::lineage::{lineage, read_record};

pub const FILE: &str = "state-locations.yaml";

/// The classifications whose builders own terraform roots.
const ROOT_CLASSES: [Vct; 5] = [
    Vct::RuntimeBuilderModel,
    Vct::GroupBuilderModel,
    Vct::UserBuilderModel,
    Vct::StorageBuilderModel,
    Vct::InstanceBuilderModel,
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateLocations {
    #[serde(default)]
    pub workspaces: BTreeMap<String, Location>,
    #[serde(default)]
    pub migrations: Vec<Migration>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub backend: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub location: String,
    #[serde(default)]
    pub run: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    pub workspace: String,
    pub from: String,
    pub to: String,
    pub run: String,
}

/// One root's resolved location, or why it has none.
struct Root {
    workspace: String,
    /// `<class> '<name>'` of the builder that owns it.
    owner: (Vct, String),
    resolved: Result<Location, String>,
    origin: Option<Origin>,
}

pub fn enabled(b: &Builders) -> bool {
    b.config_map()
        .get("use_state_backends")
        .and_then(Value::as_str)
        .and_then(csis_model::fields::parse_bool)
        .unwrap_or(false)
}

/// Every state-keeping root, by workspace, with its resolved location.
fn roots(db: &dyn Db, tree: Tree) -> Vec<Root> {
    let b = builders(db, tree);
    let mut out = Vec::new();
    for vct in ROOT_CLASSES {
        for decl in b.by_class.get(&vct).into_iter().flat_map(|m| m.values()) {
            let keeps = db
                .registry()
                .model(decl.classification, decl.model)
                .is_some_and(|spec| (spec.builder)(decl).keeps_state());
            if !keeps {
                continue;
            }
            let workspace = csis_model::naming::super_safe_name(decl.name());
            let own = decl.base.common().state_configuration.clone();
            let runtime = decl
                .base
                .runtime()
                .filter(|_| vct != Vct::RuntimeBuilderModel)
                .and_then(|rt| b.resolve(Vct::RuntimeBuilderModel, rt));
            let (named, origin_decl) = match own {
                Some(n) => (Some(n), (vct, decl.name().to_string())),
                None => match runtime.and_then(|r| r.base.common().state_configuration.clone()) {
                    Some(n) => (
                        Some(n),
                        (
                            Vct::RuntimeBuilderModel,
                            runtime.map(|r| r.name().to_string()).unwrap_or_default(),
                        ),
                    ),
                    None => (None, (vct, decl.name().to_string())),
                },
            };
            let origin = b
                .origins
                .get(&origin_decl)
                .map(|o| o.key("state_configuration"));
            out.push(Root {
                resolved: resolve(b, &workspace, named.as_deref()),
                workspace,
                owner: (vct, decl.name().to_string()),
                origin,
            });
        }
    }
    out
}

fn resolve(b: &Builders, workspace: &str, named: Option<&str>) -> Result<Location, String> {
    if let Some(n) = named
        && csis_model::naming::reserved_word(n) == Some("none")
    {
        return Err(format!(
            "workspace '{workspace}' names state backend '{n}', which names nothing -- declare a backend of type local for state on disk, or leave state_configuration out for the default backend"
        ));
    }
    let reference = named.unwrap_or("default");
    let Some(backend) = b.resolve(Vct::StateBackendModel, reference) else {
        return Err(match named {
            Some(n) => format!(
                "workspace '{workspace}' names state backend '{n}', which is not declared (declared: {})",
                b.declared(Vct::StateBackendModel)
            ),
            None => format!(
                "workspace '{workspace}' has no state backend: config.use_state_backends is on but state_backends declares none -- declare one (is_default: true), or turn use_state_backends off"
            ),
        });
    };
    let config = &backend.base.common().config;
    let setting = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_string);
    let bucket = setting("bucket").unwrap_or_else(|| backend.name().to_string());
    let prefix = setting("prefix").unwrap_or_default();
    Ok(Location {
        backend: backend.name().to_string(),
        type_: backend.model.to_string(),
        location: format!("{}://{bucket}/{prefix}{workspace}.tfstate", backend.model),
        run: String::new(),
    })
}

/// What stands in a root: the resources its state holds, as meta-state
/// records them.
fn standing(db: &dyn Db, tree: Tree, owner: &(Vct, String)) -> Vec<String> {
    let (vct, name) = owner;
    let b = builders(db, tree);
    match *vct {
        Vct::StorageBuilderModel => read_record::<crate::state::storage_state::StorageState>(
            db,
            tree,
            crate::state::storage_state::FILE,
        )
        .value
        .storages
        .iter()
        .filter(|(_, r)| r.builder.as_deref() == Some(name) && r.state != "destroyed")
        .map(|(s, _)| format!("storage '{s}'"))
        .collect(),
        Vct::InstanceBuilderModel => {
            let launched = read_record::<crate::state::launch_params::LaunchParams>(
                db,
                tree,
                crate::state::launch_params::FILE,
            )
            .value;
            item_index(db, tree)
                .names(ItemKind::INSTANCES)
                .filter(|i| launched.instances.get(*i).is_some_and(|r| r.launched))
                .filter(|i| {
                    let id = ItemId::new(db, ItemKind::INSTANCES, (*i).clone());
                    matches!(structured_item(db, tree, id).item.as_deref(),
                        Some(Item::Instance(inst)) if b
                            .resolve(Vct::InstanceBuilderModel, &inst.root.named.type_)
                            .is_some_and(|d| d.name() == name))
                })
                .map(|i| format!("instance '{i}'"))
                .collect()
        }
        Vct::RuntimeBuilderModel => lineage(db, tree)
            .value
            .builds
            .iter()
            .filter(|r| r.runtime == *name)
            .map(|r| format!("build '{}'", r.build_id))
            .collect(),
        _ => {
            let identity = read_record::<serde_json::Map<String, serde_json::Value>>(
                db,
                tree,
                crate::state::read_models::IDENTITY,
            )
            .value;
            ["groups", "users"]
                .iter()
                .flat_map(|k| identity.get(*k).and_then(|v| v.as_object()))
                .flat_map(|m| m.iter())
                .filter(|(_, v)| v.get("builder").and_then(|x| x.as_str()) == Some(name))
                .map(|(n, _)| format!("'{n}'"))
                .collect()
        }
    }
}

/// The state-location refusals of validation; `migrating` are the
/// workspaces `--migrate-state` names.
pub fn check(db: &dyn Db, tree: Tree, migrating: &[String]) -> Vec<Diagnostic> {
    let b = builders(db, tree);
    if !enabled(b) {
        return Vec::new();
    }
    let recorded = read_record::<StateLocations>(db, tree, FILE).value;
    let mut out = Vec::new();
    let mut by_location: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for root in roots(db, tree) {
        let loc = match root.resolved {
            Ok(loc) => loc,
            Err(msg) => {
                out.push(Diagnostic::error(msg).at_opt(root.origin));
                continue;
            }
        };
        by_location
            .entry(loc.location.clone())
            .or_default()
            .push(format!(
                "{} '{}'",
                crate::load::builders::list_label(root.owner.0).to_lowercase(),
                root.owner.1
            ));
        let Some(before) = recorded.workspaces.get(&root.workspace) else {
            continue;
        };
        if before.location == loc.location || migrating.contains(&root.workspace) {
            continue;
        }
        let stands = standing(db, tree, &root.owner);
        if !stands.is_empty() {
            out.push(
                Diagnostic::error(format!(
                    "workspace '{}' would move its state from {} to {} while {} stand(s) in it -- move it with a real run's --migrate-state {} (or restore state_configuration); never rebind past the refusal",
                    root.workspace,
                    before.location,
                    loc.location,
                    stands.join(", "),
                    root.workspace
                ))
                .at_opt(root.origin),
            );
        }
    }
    for (location, owners) in by_location.iter().filter(|(_, o)| o.len() > 1) {
        out.push(Diagnostic::error(format!(
            "state location collision: the roots of {} share one state object, {location} -- give one its own state_configuration, or rename it",
            owners.join(", ")
        )));
    }
    for ws in migrating {
        match recorded.workspaces.get(ws) {
            None => out.push(Diagnostic::error(format!(
                "--migrate-state {ws}: meta-state records no location for workspace '{ws}'; there is nothing to migrate from"
            ))),
            Some(before)
                if !roots(db, tree)
                    .iter()
                    .any(|r| r.workspace == *ws && r.resolved.as_ref().is_ok_and(|l| l.location != before.location)) =>
            {
                out.push(Diagnostic::error(format!(
                    "--migrate-state {ws}: workspace '{ws}' does not move (its state stays at {})",
                    before.location
                )))
            }
            Some(_) => {}
        }
    }
    out
}

/// The record after a run that generated (`migrated` false): every root's
/// current location except the workspaces `--migrate-state` names; after
/// the real apply that moved them (`migrated` true): those, each move
/// appended to `migrations`.
pub fn recorded_after(
    db: &dyn Db,
    tree: Tree,
    before: &StateLocations,
    migrating: &[String],
    migrated: bool,
    run: &str,
) -> StateLocations {
    let mut next = before.clone();
    for root in roots(db, tree) {
        let Ok(mut loc) = root.resolved else { continue };
        let previous = before.workspaces.get(&root.workspace);
        let migrates = previous.is_some() && migrating.contains(&root.workspace);
        if previous.is_some_and(|p| p.location == loc.location) || migrates != migrated {
            continue;
        }
        if let Some(p) = previous.filter(|_| migrates) {
            next.migrations.push(Migration {
                workspace: root.workspace.clone(),
                from: p.location.clone(),
                to: loc.location.clone(),
                run: run.to_string(),
            });
        }
        loc.run = run.to_string();
        next.workspaces.insert(root.workspace, loc);
    }
    next
}
