//! What a run records in meta-state/ as it goes: the read-models a
//! lifecycle leaves once generated, the state locations (after generation
//! and after a real apply), the alias drawn before a real instance-image
//! apply, and after a real apply the storage transitions, the launched
//! instances (their generations confirmed by the machines' ids) and the
//! ephemeral ones forgotten.

use std::borrow::Cow;

use serde_json::{Value as J, json};

use crate::db::system::System;
use crate::load::builders::builders;
use crate::load::items::item_index;
use crate::run::Level;
use crate::run::steps::Runner;
use crate::state::lineage::Record;
use crate::state::meta_state;
use crate::workspace::Workspace;

/// A meta-state record as the tree was loaded with it (`loaded`, its
/// query's memo) while the file still holds the text it was loaded from,
/// as it does until this run writes it; read from disk again otherwise.
/// A run would otherwise parse the same megabytes (launch-params.yaml is
/// 2.1 MB on the reference tree) once per reader.
pub(super) fn record_now<'a, T>(
    ws: &'a Workspace,
    system: &dyn System,
    file: &str,
    loaded: &'a Record<T>,
) -> Result<Cow<'a, T>, String>
where
    T: Clone + Default + serde::de::DeserializeOwned,
{
    let path = meta_state::path(&ws.root, file);
    let on_disk = system
        .read_to_string(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let as_loaded = crate::state::lineage::meta_file(&ws.db, ws.tree, file).map(|f| f.text(&ws.db));
    if loaded.diags.is_empty() && on_disk.as_deref() == as_loaded.map(|t| &**t) {
        return Ok(Cow::Borrowed(&loaded.value));
    }
    match on_disk {
        Some(text) => meta_state::parse(&text, &path.display().to_string()).map(Cow::Owned),
        None => Ok(Cow::Owned(T::default())),
    }
}

impl<'a> Runner<'a> {
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
        use crate::plan::user_data::user_data_digests;
        use crate::state::launch_params::{compute_all, recorded};
        let (db, tree) = (&self.ws.db, self.ws.tree);
        let before = self.read_launch_params()?;
        let after = recorded(
            &before,
            &compute_all(db, tree, &before),
            &user_data_digests(db, tree),
            &self.run_id,
        );
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
        let mut after = before.clone().into_owned();
        let time = csis_string_stage::clock::iso_datetime(crate::db::reads::start_unix(
            &self.ws.db,
            self.ws.tree,
        ));
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
        if dry_run || after == *before {
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
        let loaded = crate::state::storage_state::storage_record(&self.ws.db, self.ws.tree);
        let before: Cow<StorageState> = record_now(self.ws, self.system, FILE, loaded)?;
        let (system, root) = (self.system, &self.ws.root);
        let after = applied(&before, &declared(&self.ws.db, self.ws.tree), &self.run_id);
        if after == *before {
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
        let declared: Vec<&str> = index.names(csis_model::ItemKind::INSTANCES).collect();
        let digests = crate::plan::user_data::user_data_digests(&self.ws.db, self.ws.tree);
        let after =
            crate::state::launch_params::launched(&before, &declared, &digests, &self.run_id);
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

    /// After a real instance-image apply: the runtimes asked what stands,
    /// each open generation confirmed by its machine's id, or closed as
    /// replaced out of band (a warning). A runtime that cannot be asked
    /// confirms nothing.
    pub(super) fn confirm_generations(&mut self) -> Result<(), String> {
        use crate::state::instance_state::{FILE, InstanceState};
        let launched = self.read_launch_params()?;
        let mut seen = Vec::new();
        for (decl, hooks) in crate::load::builders::runtime_hooks(&self.ws.db, self.ws.tree) {
            if let Ok(o) = hooks.observe(&self.ws.root, &self.ws.tree_id()) {
                seen.extend(
                    o.instances
                        .into_iter()
                        .map(|m| (decl.name().to_string(), m)),
                );
            }
        }
        let (system, root) = (self.system, &self.ws.root);
        let state: InstanceState = crate::state::lineage::read_json(system, root, FILE)?;
        let (next, warnings) =
            crate::run::state_instances::confirm(&state, &seen, &launched, &self.run_id);
        for w in warnings {
            self.log.line(Level::Warn, w);
        }
        if next != state {
            crate::state::lineage::write_json(system, root, FILE, &next)?;
        }
        Ok(())
    }

    /// After a real instance-image apply: every ephemeral machine it
    /// launched (and its runtime tore down) is forgotten; one whose
    /// verification failed in this run then fails the run.
    pub(super) fn forget_ephemerals(&mut self) -> Result<(), String> {
        let launched = self.read_launch_params()?;
        let ops = crate::run::operations::Ops {
            ws: self.ws,
            system: self.system,
            run: self.run_id.clone(),
        };
        let mut failed = Vec::new();
        for (name, r) in &launched.instances {
            if r.launched && r.params.get("ephemeral") == Some(&J::Bool(true)) {
                let line = ops.forget_ephemeral(name)?;
                self.info(line);
                // Torn down whatever its verdict (on_failure: teardown):
                // the run fails now, its records matching what exists.
                failed.extend(ops.failed_in_this_run(name)?);
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed.join("; "))
        }
    }

    fn read_launch_params(
        &self,
    ) -> Result<Cow<'a, crate::state::launch_params::LaunchParams>, String> {
        let ws: &'a Workspace = self.ws;
        record_now(
            ws,
            self.system,
            crate::state::launch_params::FILE,
            crate::state::launch_params::launch_record(&ws.db, ws.tree),
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::db::system::MemorySystem;
    use crate::registry::Registry;
    use crate::state::launch_params::{FILE, launch_record};
    use crate::workspace::LoadOptions;

    fn launched(name: &str) -> String {
        format!("instances:\n  {name}:\n    params: {{}}\n    run: R1\n    launched: true\n")
    }

    #[test]
    fn a_record_is_the_loaded_one_until_its_file_changes() {
        let root = Path::new("/t");
        let sys = MemorySystem::new();
        let file = meta_state::path(root, FILE);
        sys.write(&file, &launched("box"));
        let registry = Arc::new(Registry::build(&[&csis_plugin_local::LocalPlugin]).unwrap());
        let ws = Workspace::load(&sys, registry, root, &LoadOptions::default()).unwrap();
        let loaded = launch_record(&ws.db, ws.tree);

        let now = record_now(&ws, &sys, FILE, loaded).unwrap();
        assert!(matches!(now, Cow::Borrowed(_)));
        assert!(now.instances.contains_key("box"));

        // Written since the load (by this run, or by hand): read again.
        sys.write(&file, &launched("other"));
        let now = record_now(&ws, &sys, FILE, loaded).unwrap();
        assert!(matches!(now, Cow::Owned(_)));
        assert_eq!(now.instances.keys().collect::<Vec<_>>(), ["other"]);

        sys.remove_file(&file).unwrap();
        let now = record_now(&ws, &sys, FILE, loaded).unwrap();
        assert!(now.instances.is_empty());

        sys.write(&file, "instances: [broken\n");
        let err = record_now(&ws, &sys, FILE, loaded).unwrap_err();
        assert!(
            err.starts_with("/t/meta-state/launch-params.yaml: "),
            "{err}"
        );
    }
}
