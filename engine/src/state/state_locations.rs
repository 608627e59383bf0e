//! Where each terraform root keeps its state, with
//! `config.use_state_backends`: every builder whose root keeps state
//! (`Builder::keeps_state`) resolves its backend from its own
//! `state_configuration`, else its runtime's, else the default state
//! backend. meta-state/state-locations.yaml records the locations after
//! each run that generated, and every migration performed. The record, not
//! the emission, is what the move guard (check/state_locations.rs)
//! compares against.

use std::collections::BTreeMap;

use csis_model::{Origin, Value, Vct};
use serde::{Deserialize, Serialize};

use crate::db::{Db, Tree};
use crate::load::builders::{Builders, builders};

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
    /// When `state-migration finish` recorded it, the state's serial then,
    /// and the backup of the old state `begin` kept (relative to the
    /// root); absent on a move recorded by the run itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
}

/// One root's resolved location, or why it has none.
pub struct Root {
    pub workspace: String,
    /// `<class> '<name>'` of the builder that owns it.
    pub owner: (Vct, String),
    pub resolved: Result<Location, String>,
    pub origin: Option<Origin>,
}

pub fn enabled(b: &Builders) -> bool {
    b.config_map()
        .get("use_state_backends")
        .and_then(Value::as_str)
        .and_then(csis_model::fields::parse_bool)
        .unwrap_or(false)
}

/// Every state-keeping root, by workspace, with its resolved location.
pub fn roots(db: &dyn Db, tree: Tree) -> Vec<Root> {
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
    Ok(Location {
        backend: backend.name().to_string(),
        type_: backend.model.to_string(),
        location: csis_plugin_api::state_object::StateObject::of(backend, workspace).location(),
        run: String::new(),
    })
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
                at: None,
                serial: None,
                backup: None,
            });
        }
        loc.run = run.to_string();
        next.workspaces.insert(root.workspace, loc);
    }
    next
}
