//! What a run records in meta-state/ as it goes: the read-models a
//! lifecycle leaves once generated, the state locations (after generation
//! and after a real apply), the alias drawn before a real instance-image
//! apply, and after a real apply the storage transitions, the launched
//! instances and the ephemeral ones forgotten.

use serde_json::{Value as J, json};

use crate::load::builders::builders;
use crate::load::items::item_index;
use crate::run::Level;
use crate::run::steps::Runner;
use crate::state::meta_state;

impl Runner<'_> {
    /// The read-models a lifecycle leaves in meta-state/ once it has
    /// generated (a dry run too; `watch --generate` leaves no records).
    pub(super) fn write_read_models(&mut self, lifecycle: &str) -> Result<(), String> {
        use crate::state::read_models::{
            IDENTITY, STORAGE, identity_read_model, storage_read_model,
        };
        if !self.req.record {
            return Ok(());
        }
        let (db, tree) = (&self.ws.db, self.ws.tree);
        match lifecycle {
            "identity" => self.write_read_model(IDENTITY, identity_read_model(db, tree)),
            "storage" => {
                let record = crate::state::storage_state::storage_record(db, tree);
                self.write_read_model(STORAGE, storage_read_model(db, tree, &record.value))
            }
            "instance-image" => self.record_launch_params(),
            _ => Ok(()),
        }
    }

    /// meta-state/state-locations.yaml: after generation every root's
    /// location (a workspace `--migrate-state` names keeps its old record),
    /// after a real apply the migrated ones, each move journaled.
    pub(super) fn record_state_locations(&mut self, migrated: bool) -> Result<(), String> {
        use crate::state::lineage::{read_json, write_json};
        use crate::state::state_locations::{FILE, StateLocations, enabled, recorded_after};
        let (db, tree) = (&self.ws.db, self.ws.tree);
        let migrating = &self.req.options.migrate_state;
        if !enabled(builders(db, tree)) || (migrated && migrating.is_empty()) {
            return Ok(());
        }
        let before: StateLocations = read_json(self.system, &self.ws.root, FILE)?;
        let after = recorded_after(db, tree, &before, migrating, migrated, &self.run_id);
        if after != before {
            write_json(self.system, &self.ws.root, FILE, &after)?;
            for m in &after.migrations[before.migrations.len()..] {
                self.info(format!(
                    "state-locations: workspace {} moved from {} to {}",
                    m.workspace, m.from, m.to
                ));
            }
        }
        Ok(())
    }

    /// Launch parameters after instance-image generates; `launched` after
    /// a real apply executed it.
    pub(super) fn record_launch_params(&mut self) -> Result<(), String> {
        use crate::state::launch_params::{compute_all, recorded};
        let (db, tree) = (&self.ws.db, self.ws.tree);
        let before = self.read_launch_params()?;
        let after = recorded(&before, &compute_all(db, tree, &before), &self.run_id);
        self.write_launch_params(&before, &after)
    }

    /// Before a real instance-image apply: each new durable machine takes
    /// the first free name of meta-state/aliases.txt, burnt in place and
    /// recorded in its launch parameters (a run that dies in between costs
    /// one name). No pool, no aliases; an empty pool is a warning. A dry
    /// run only says what it would take.
    pub(super) fn draw_aliases(&mut self, dry_run: bool) -> Result<(), String> {
        let pool_path = meta_state::path(&self.ws.root, crate::state::alias_pool::FILE);
        let Some(mut pool) = self
            .system
            .read_to_string(&pool_path)
            .map_err(|e| format!("{}: {e}", pool_path.display()))?
        else {
            return Ok(());
        };
        let before = self.read_launch_params()?;
        let mut after = before.clone();
        let time = csis_string_stage::clock::iso_datetime(self.ws.tree.start_unix(&self.ws.db));
        for (name, r) in after.instances.iter_mut() {
            let durable = r.params.get("ephemeral") != Some(&J::Bool(true));
            if r.launched || !durable || r.params.get("alias").is_some_and(|a| !a.is_null()) {
                continue;
            }
            let hostname = r
                .params
                .get("hostname")
                .and_then(J::as_str)
                .unwrap_or(name)
                .to_string();
            match crate::state::alias_pool::draw(&pool, name, &hostname, &time, &self.run_id) {
                Some((rest, alias)) => {
                    let verb = if dry_run {
                        "[DRY RUN] alias pool: instance '{name}' would take"
                    } else {
                        "alias pool: instance '{name}' takes"
                    };
                    self.log.line(
                        Level::Info,
                        format!("{} '{alias}'", verb.replace("{name}", name)),
                    );
                    r.params.insert("alias".into(), json!(alias));
                    pool = rest;
                }
                None => self.log.line(
                    Level::Warn,
                    format!(
                        "alias pool {}: EMPTY -- instance '{name}' launches without an alias; append names to refill",
                        crate::state::alias_pool::FILE
                    ),
                ),
            }
        }
        if dry_run || after == before {
            return Ok(());
        }
        self.system
            .write_atomic(&pool_path, pool.as_bytes(), false)
            .map_err(|e| format!("{}: {e}", pool_path.display()))?;
        self.write_launch_params(&before, &after)
    }

    /// After a real storage apply, the requested states become current in
    /// meta-state/storage-state.yaml.
    pub(super) fn record_storage_transitions(&mut self) -> Result<(), String> {
        use crate::state::storage_state::{FILE, StorageState, applied, declared};
        let (system, root) = (self.system, &self.ws.root);
        let before: StorageState = crate::state::lineage::read_json(system, root, FILE)?;
        let after = applied(&before, &declared(&self.ws.db, self.ws.tree), &self.run_id);
        if after == before {
            return Ok(());
        }
        crate::state::lineage::write_json(system, root, FILE, &after)?;
        let model =
            crate::state::read_models::storage_read_model(&self.ws.db, self.ws.tree, &after);
        self.write_read_model(crate::state::read_models::STORAGE, model)
    }

    /// After a real instance-image apply: every declared instance not yet
    /// launched is, and opens its next generation in instance-state.yaml.
    pub(super) fn mark_launched(&mut self) -> Result<(), String> {
        use crate::state::instance_state::{FILE, InstanceState, opened};
        let before = self.read_launch_params()?;
        let index = item_index(&self.ws.db, self.ws.tree);
        let declared: Vec<&String> = index.names(csis_model::ItemKind::INSTANCES).collect();
        let after = crate::state::launch_params::launched(&before, &declared, &self.run_id);
        let new: Vec<(String, bool)> = after
            .instances
            .iter()
            .filter(|(n, r)| r.launched && !before.instances.get(*n).is_some_and(|b| b.launched))
            .map(|(n, r)| (n.clone(), r.params.get("ephemeral") == Some(&J::Bool(true))))
            .collect();
        if !new.is_empty() {
            let (system, root) = (self.system, &self.ws.root);
            let state: InstanceState = crate::state::lineage::read_json(system, root, FILE)?;
            crate::state::lineage::write_json(
                system,
                root,
                FILE,
                &opened(&state, &new, &self.run_id),
            )?;
        }
        self.write_launch_params(&before, &after)
    }

    /// After a real instance-image apply: every ephemeral machine it
    /// launched (and its runtime tore down) is forgotten.
    pub(super) fn forget_ephemerals(&mut self) -> Result<(), String> {
        let launched = self.read_launch_params()?;
        let ops = crate::run::operations::Ops {
            ws: self.ws,
            system: self.system,
            run: self.run_id.clone(),
        };
        for (name, r) in &launched.instances {
            if r.launched && r.params.get("ephemeral") == Some(&J::Bool(true)) {
                let line = ops.forget_ephemeral(name)?;
                self.info(line);
            }
        }
        Ok(())
    }

    fn read_launch_params(&self) -> Result<crate::state::launch_params::LaunchParams, String> {
        crate::state::lineage::read_json(
            self.system,
            &self.ws.root,
            crate::state::launch_params::FILE,
        )
    }

    fn write_launch_params(
        &self,
        before: &crate::state::launch_params::LaunchParams,
        after: &crate::state::launch_params::LaunchParams,
    ) -> Result<(), String> {
        if after == before {
            return Ok(());
        }
        crate::state::lineage::write_json(
            self.system,
            &self.ws.root,
            crate::state::launch_params::FILE,
            after,
        )
    }

    fn write_read_model(&self, file: &str, body: serde_json::Map<String, J>) -> Result<(), String> {
        let mut model = serde_json::Map::new();
        model.insert("run".into(), json!(self.run_id));
        model.extend(body);
        meta_state::write(self.system, &self.ws.root, file, &model)
    }
}
