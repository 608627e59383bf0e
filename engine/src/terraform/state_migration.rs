//! `csis state-migration begin|finish --workspace <ws>`: the runner steps
//! of a real run's `--migrate-state <ws>`, run from the OpenTofu root the
//! runner entered (still initialised against the workspace's OLD location).
//!
//! begin: the recorded old location (meta-state/state-locations.yaml) and
//! the new one (the configuration's, whose settings are in
//! `--backend-config <file>`); the old state pulled and kept in
//! `_private/state-backups/`; the new location probed from a scratch root
//! (`tofu init -reconfigure` there, then `state pull`): it must be empty or
//! hold this workspace's lineage, else a collision refuses before anything
//! is copied; then `tofu init -migrate-state -force-copy
//! -backend-config=<file>` copies the state (OpenTofu never deletes the
//! old one) and a pull checks the lineage arrived. What begin did is left
//! in `<ws>.state-migration.json` beside the root.
//!
//! finish: reads that file, records the move in state-locations.yaml
//! (the workspace's new location, and a migration: from, to, run, at,
//! serial, backup) through the meta-state writer, and removes the file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::db::system::System;
use crate::state::lineage::{read_json, write_json};
use crate::state::state_locations::{self, Location, Migration, StateLocations};
use crate::terraform::state_backup::backup_target;
use crate::terraform::{FAILED, Outcome, PulledState, Tofu, read_pulled, run_id, shown, write_new};
use crate::workspace::Workspace;

/// One invocation.
pub struct StateMigration<'a> {
    pub cwd: &'a Path,
    pub workspace: &'a str,
    pub backend_config: Option<&'a str>,
    pub tofu: &'a str,
}

/// What begin leaves for finish.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Begun {
    pub workspace: String,
    pub from: String,
    pub to: Location,
    pub backend_config: String,
    pub lineage: String,
    pub serial: u64,
    /// The old state's backup, relative to the configuration root.
    pub backup: Option<String>,
    pub run: String,
    pub at: String,
}

/// The scratch root begin probes the new location from, inside the root.
pub(crate) const PROBE_DIR: &str = ".csis-state-probe";

/// How the record of a begun migration, beside the root's files, ends.
pub(crate) const BEGUN_SUFFIX: &str = ".state-migration.json";

fn begun_path(cwd: &Path, workspace: &str) -> PathBuf {
    cwd.join(format!("{workspace}{BEGUN_SUFFIX}"))
}

pub fn begin(ws: &Workspace, system: &dyn System, req: &StateMigration) -> Outcome {
    match try_begin(ws, system, req) {
        Ok(b) => Outcome::ok(vec![format!(
            "state-migration begin: workspace '{}' copied from {} to {} (lineage {}, serial {}); the old state is untouched{}; 'state-migration finish' records the move",
            b.workspace,
            b.from,
            b.to.location,
            if b.lineage.is_empty() {
                "none"
            } else {
                &b.lineage
            },
            b.serial,
            b.backup
                .as_deref()
                .map(|p| format!(" and kept in {p}"))
                .unwrap_or_default()
        )]),
        Err(e) => Outcome::failed(FAILED, e),
    }
}

fn try_begin(ws: &Workspace, system: &dyn System, req: &StateMigration) -> Result<Begun, String> {
    let name = req.workspace;
    let Some(file) = req.backend_config.filter(|f| !f.trim().is_empty()) else {
        return Err(format!(
            "state-migration begin: --backend-config <file> is required: the .tfbackend.hcl of the location the state moves to (the root's {name}.tfbackend.hcl)"
        ));
    };
    let recorded: StateLocations = read_json(system, &ws.root, state_locations::FILE)?;
    let Some(old) = recorded.workspaces.get(name) else {
        return Err(format!(
            "state-migration begin: meta-state records no location for workspace '{name}'; there is nothing to migrate from"
        ));
    };
    let new = state_locations::roots(&ws.db, ws.tree)
        .into_iter()
        .find(|r| r.workspace == name)
        .ok_or_else(|| {
            format!(
                "state-migration begin: no root of the configuration keeps its state as workspace '{name}' -- name a declared workspace"
            )
        })?
        .resolved
        .map_err(|e| format!("state-migration begin: {e}"))?;
    if new.location == old.location {
        return Err(format!(
            "state-migration begin: workspace '{name}' does not move (its state stays at {}); nothing to migrate",
            old.location
        ));
    }
    if !system.is_dir(&req.cwd.join(".terraform")) {
        return Err(format!(
            "state-migration begin: {} is not an initialised terraform root (initialised against the old location {}); the old state is untouched",
            req.cwd.display(),
            old.location
        ));
    }
    let failed = |e: String| {
        format!(
            "state-migration begin for workspace '{name}' FAILED: {e}; the old state is untouched"
        )
    };
    let tofu = Tofu {
        system,
        binary: req.tofu,
        cwd: req.cwd,
    };
    let pull = |t: &Tofu| -> Result<Option<PulledState>, String> {
        read_pulled(&t.run(&["state", "pull"])?)
    };
    let before = pull(&tofu).map_err(failed)?;
    let backup = match &before {
        Some(s) if s.resources > 0 => {
            let (dir, stem) = backup_target(system, &ws.root, name).map_err(failed)?;
            let path =
                write_new(system, &dir, &stem, ".tfstate", s.text.as_bytes()).map_err(failed)?;
            Some(shown(&path, &ws.root))
        }
        _ => None,
    };
    let lineage = before
        .as_ref()
        .map(|s| s.lineage.clone())
        .unwrap_or_default();
    let init_failed = |e: String| {
        format!(
            "state-migration begin: init against {file} failed: {e}; the old state is untouched"
        )
    };
    // The new location, read before anything is copied into it.
    let there = probe(system, req, &new.type_, file).map_err(|e| match e {
        Probe::Init(e) => init_failed(e),
        Probe::Other(e) => failed(e),
    })?;
    if let Some(s) = there.filter(|s| s.resources > 0 && s.lineage != lineage) {
        return Err(format!(
            "the new location {} already holds state (lineage {}) that is not this workspace's: a collision, refused. The old state is untouched.",
            new.location, s.lineage
        ));
    }
    let flag = format!("-backend-config={file}");
    tofu.run(&[
        "init",
        "-input=false",
        "-migrate-state",
        "-force-copy",
        &flag,
    ])
    .map_err(init_failed)?;
    let after = pull(&tofu).map_err(failed)?;
    let arrived = after
        .as_ref()
        .map(|s| s.lineage.as_str())
        .unwrap_or_default();
    if arrived != lineage {
        return Err(failed(format!(
            "after the copy the new location {} holds lineage '{arrived}', not this workspace's '{lineage}'",
            new.location
        )));
    }
    let begun = Begun {
        workspace: name.to_string(),
        from: old.location.clone(),
        to: new,
        backend_config: file.to_string(),
        lineage,
        serial: after.map_or(0, |s| s.serial),
        backup,
        run: run_id(system),
        at: csis_string_stage::clock::iso_datetime(system.now_unix()),
    };
    let text = serde_json::to_string_pretty(&begun).map_err(|e| e.to_string())?;
    let path = begun_path(req.cwd, name);
    system
        .write_atomic(&path, format!("{text}\n").as_bytes(), false)
        .map_err(|e| format!("state-migration begin: {}: {e}", path.display()))?;
    Ok(begun)
}

enum Probe {
    Init(String),
    Other(String),
}

/// What the new location holds: a scratch root with only the backend
/// block, initialised against `file` (`-reconfigure`: no state is moved),
/// then pulled. The scratch root is removed afterwards.
fn probe(
    system: &dyn System,
    req: &StateMigration,
    backend_type: &str,
    file: &str,
) -> Result<Option<PulledState>, Probe> {
    let dir = req.cwd.join(PROBE_DIR);
    let main = dir.join("main.tf");
    let text = format!(
        "# csis state-migration begin: a scratch root that reads the new location; removed after.\nterraform {{\n  backend \"{backend_type}\" {{}}\n}}\n"
    );
    system
        .write_atomic(&main, text.as_bytes(), false)
        .map_err(|e| Probe::Other(format!("{}: {e}", main.display())))?;
    let tofu = Tofu {
        system,
        binary: req.tofu,
        cwd: &dir,
    };
    let config = req.cwd.join(file);
    let flag = format!("-backend-config={}", config.display());
    let result = tofu
        .run(&["init", "-input=false", "-reconfigure", &flag])
        .map_err(Probe::Init)
        .and_then(|_| {
            tofu.run(&["state", "pull"])
                .and_then(|t| read_pulled(&t))
                .map_err(Probe::Other)
        });
    // Best effort: a scratch root left behind holds no state, only the
    // backend's settings cache.
    if let Ok(files) = system.list_files(&dir) {
        for f in files {
            let _ = system.remove_file(&f);
        }
    }
    let _ = system.remove_empty_dirs(&dir);
    result
}

pub fn finish(ws: &Workspace, system: &dyn System, req: &StateMigration) -> Outcome {
    match try_finish(ws, system, req) {
        Ok(lines) => Outcome::ok(lines),
        Err(e) => Outcome::failed(FAILED, e),
    }
}

fn try_finish(
    ws: &Workspace,
    system: &dyn System,
    req: &StateMigration,
) -> Result<Vec<String>, String> {
    let name = req.workspace;
    let path = begun_path(req.cwd, name);
    let Some(text) = system
        .read_to_string(&path)
        .map_err(|e| format!("state-migration finish: {}: {e}", path.display()))?
    else {
        return Err(format!(
            "state-migration finish: no {name}.state-migration.json -- 'begin' did not run"
        ));
    };
    let begun: Begun = serde_json::from_str(&text)
        .map_err(|e| format!("state-migration finish: {}: {e}", path.display()))?;
    let tofu = Tofu {
        system,
        binary: req.tofu,
        cwd: req.cwd,
    };
    let failed = |e: String| format!("state-migration finish for workspace '{name}' FAILED: {e}");
    let now = tofu
        .run(&["state", "pull"])
        .and_then(|t| read_pulled(&t))
        .map_err(failed)?;
    let lineage = now.as_ref().map(|s| s.lineage.as_str()).unwrap_or_default();
    if lineage != begun.lineage {
        return Err(failed(format!(
            "the root's state has lineage '{lineage}', not the '{}' begin copied -- is the root initialised against {}?",
            begun.lineage, begun.to.location
        )));
    }
    let serial = now.map_or(begun.serial, |s| s.serial);
    let mut record: StateLocations = read_json(system, &ws.root, state_locations::FILE)?;
    let run = run_id(system);
    let mut to = begun.to.clone();
    to.run = run.clone();
    record.workspaces.insert(name.to_string(), to);
    record.migrations.push(Migration {
        workspace: name.to_string(),
        from: begun.from.clone(),
        to: begun.to.location.clone(),
        run,
        at: Some(csis_string_stage::clock::iso_datetime(system.now_unix())),
        serial: Some(serial),
        backup: begun.backup.clone(),
    });
    write_json(system, &ws.root, state_locations::FILE, &record)
        .map_err(|e| format!("state-migration finish: {e}"))?;
    system
        .remove_file(&path)
        .map_err(|e| format!("state-migration finish: {e}"))?;
    Ok(vec![format!(
        "state-migration finish: workspace '{name}' moved from {} to {} (serial {serial}); recorded in meta-state/{}",
        begun.from,
        begun.to.location,
        state_locations::FILE
    )])
}
