//! `lineage bind-instance`, `upgrade` and `forget`: the operations that
//! move or drop a pin.

use csis_model::ItemKind;
use csis_model::models::Item;
use serde_json::Value as J;

use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::state::lineage::{read_json, write_json};

use super::Ops;

impl Ops<'_> {
    /// `lineage bind-instance`: after a launch, bind the instance to the
    /// build it runs (once; later moves are upgrades).
    pub fn bind_instance(
        &self,
        instance: &str,
        launched: &std::path::Path,
    ) -> Result<String, String> {
        let text = self
            .system
            .read_to_string(launched)
            .map_err(|e| format!("{}: {e}", launched.display()))?
            .ok_or_else(|| format!("{}: no launch record", launched.display()))?;
        let record: J =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", launched.display()))?;
        let build = record
            .get("build")
            .and_then(J::as_str)
            .ok_or_else(|| format!("{}: the launch record names no build", launched.display()))?
            .to_string();
        self.bind(instance, build)
    }

    /// `lineage bind-instance --tofu-outputs DIR`: after a tofu apply, bind
    /// the instance to the build it booted, as the root's `instances`
    /// output says (`<tofu> output -json` run in DIR: `instances.value.
    /// <instance>.image`).
    pub fn bind_instance_from_tofu(
        &self,
        instance: &str,
        dir: &std::path::Path,
        tofu: &str,
    ) -> Result<String, String> {
        let process = crate::db::system::Process {
            program: tofu.into(),
            args: vec!["output".into(), "-json".into()],
            cwd: dir.to_path_buf(),
            env: Vec::new(),
        };
        let shown = format!("{tofu} output -json (in {})", dir.display());
        let out = self
            .system
            .run(&process)
            .map_err(|e| format!("{shown}: {e}"))?;
        if out.code != Some(0) {
            return Err(format!(
                "{shown} exited {}: {}",
                out.code
                    .map_or("by a signal".to_string(), |c| c.to_string()),
                out.stderr.trim()
            ));
        }
        let outputs: J =
            serde_json::from_str(&out.stdout).map_err(|e| format!("{shown}: not JSON: {e}"))?;
        let Some(instances) = outputs.pointer("/instances/value") else {
            return Err(format!(
                "{shown}: no output 'instances' -- is {} an instance root csis generated?",
                dir.display()
            ));
        };
        let build = instances
            .get(instance)
            .and_then(|i| i.get("image"))
            .and_then(J::as_str)
            .filter(|b| !b.is_empty())
            .ok_or_else(|| {
                format!("{shown}: output 'instances' names no image for instance '{instance}'")
            })?;
        self.bind(instance, build.to_string())
    }

    /// Pin `instance` to `build`, unless it is pinned already.
    fn bind(&self, instance: &str, build: String) -> Result<String, String> {
        let mut pins = self.pins()?;
        if pins.instances.contains_key(instance) {
            return Ok(format!(
                "pins: instance {instance} is pinned to {} already",
                pins.instances[instance]
            ));
        }
        pins.instances.insert(instance.into(), build.clone());
        self.journal(
            &mut pins,
            "instance",
            instance,
            None,
            Some(build.clone()),
            "bind",
        );
        write_json(self.system, &self.ws.root, "pins.yaml", &pins)?;
        Ok(format!("pins: instance {instance} -> {build} (bind)"))
    }

    /// `upgrade image|instance NAME [--runtime RT] [--to BUILD]`: move one
    /// pin to the newest build of what it consumes (or to BUILD).
    pub fn upgrade(
        &self,
        kind: &str,
        name: &str,
        runtime: Option<&str>,
        to: Option<&str>,
    ) -> Result<String, String> {
        let db = &self.ws.db;
        let name = csis_model::naming::safe_name(name);
        let index = item_index(db, self.ws.tree);
        let (series, runtime, key) = match kind {
            "image" => {
                let Some(Item::Image(img)) = self.image(&name).as_deref().cloned() else {
                    return Err(format!(
                        "upgrade: image '{name}' is not defined in the configuration"
                    ));
                };
                let rts = self.image_runtimes(&name);
                let rt = match (runtime, rts.as_slice()) {
                    (Some(r), _) if rts.iter().any(|x| x == r) => r.to_string(),
                    (Some(r), _) => {
                        return Err(format!(
                            "upgrade: image '{name}' is not baked on runtime '{r}' (its runtimes: [{}])",
                            rts.join(", ")
                        ));
                    }
                    (None, [one]) => one.clone(),
                    (None, _) => {
                        return Err(format!(
                            "upgrade: image '{name}' is baked on runtimes [{}]; pass --runtime",
                            rts.join(", ")
                        ));
                    }
                };
                let parent =
                    csis_model::naming::safe_name(img.source_image.as_deref().unwrap_or_default());
                (parent, rt.clone(), format!("{name}@{rt}"))
            }
            _ => {
                if !index.contains(ItemKind::INSTANCES, &name) {
                    return Err(format!(
                        "upgrade: instance '{name}' is not defined in the configuration"
                    ));
                }
                let id = ItemId::new(db, self.ws.tree, ItemKind::INSTANCES, name.as_str());
                let Some(Item::Instance(inst)) = structured_item(db, id).item.as_deref().cloned()
                else {
                    return Err(format!(
                        "upgrade: instance '{name}' is not defined in the configuration"
                    ));
                };
                let image =
                    csis_model::naming::safe_name(inst.image.as_deref().unwrap_or_default());
                let rts = self.image_runtimes(&image);
                let rt = match (runtime, rts.as_slice()) {
                    (Some(r), _) => r.to_string(),
                    (None, [one]) => one.clone(),
                    (None, _) => {
                        return Err(format!(
                            "upgrade: image '{image}' is baked on runtimes [{}]; pass --runtime",
                            rts.join(", ")
                        ));
                    }
                };
                (image, rt, name.clone())
            }
        };
        let lineage = self.lineage()?;
        let target = match to {
            Some(b) => {
                let rec = lineage
                    .build(b)
                    .ok_or_else(|| format!("upgrade: build '{b}' is not recorded in lineage"))?;
                if rec.series != series {
                    return Err(format!("upgrade: build '{b}' belongs to series '{}', not '{series}'", rec.series));
                }
                if rec.runtime != runtime {
                    return Err(format!("upgrade: build '{b}' was baked on runtime '{}', not '{runtime}'", rec.runtime));
                }
                b.to_string()
            }
            None => lineage
                .head(&series, &runtime)
                .map(|h| h.build_id.clone())
                .ok_or_else(|| format!("upgrade: no build of series '{series}' is recorded in lineage; build it first or pass --to <build id>"))?,
        };
        let mut pins = self.pins()?;
        let pinned = match kind {
            "image" => pins.images.get(&key).cloned(),
            _ => pins.instances.get(&key).cloned(),
        };
        if pinned.as_deref() == Some(target.as_str()) {
            return Err(format!(
                "upgrade: {kind} '{key}' is already pinned to {target}"
            ));
        }
        match kind {
            "image" => pins.images.insert(key.clone(), target.clone()),
            _ => pins.instances.insert(key.clone(), target.clone()),
        };
        self.journal(
            &mut pins,
            kind,
            &key,
            pinned.clone(),
            Some(target.clone()),
            "upgrade",
        );
        write_json(self.system, &self.ws.root, "pins.yaml", &pins)?;
        Ok(format!(
            "upgrade: {kind} {key}: {} -> {target}",
            pinned.unwrap_or_else(|| "unbound".into())
        ))
    }

    /// `forget instance NAME`: drop the record of an instance that is no
    /// longer declared (a pin that outlived its instance).
    pub fn forget_instance(&self, name: &str) -> Result<String, String> {
        let name = csis_model::naming::safe_name(name);
        if item_index(&self.ws.db, self.ws.tree).contains(ItemKind::INSTANCES, &name) {
            return Err(format!(
                "forget: instance '{name}' is declared; remove its declaration (decommission it) before forgetting its record"
            ));
        }
        // Its open generation closes too: the machine is no longer
        // anyone's, and a new declaration of the name starts a new one.
        self.forget_closing(&name, "forget")
    }

    /// After a real apply launched (and tore down) an ephemeral instance:
    /// its launch record and pin go (journaled `op: ephemeral`) and its
    /// generation closes as ephemeral, so the next run launches it anew.
    pub fn forget_ephemeral(&self, name: &str) -> Result<String, String> {
        self.forget_closing(name, "ephemeral")
    }

    /// [`Self::forget_record`], then the instance's open generation closed
    /// in instance-state.yaml with `op` as its why.
    fn forget_closing(&self, name: &str, op: &str) -> Result<String, String> {
        use crate::state::instance_state::{FILE, InstanceState, closed};
        let line = self.forget_record(name, op)?;
        let state: InstanceState = read_json(self.system, &self.ws.root, FILE)?;
        let after = closed(&state, name, &self.run, op);
        if after != state {
            write_json(self.system, &self.ws.root, FILE, &after)?;
        }
        Ok(line)
    }

    /// Drop an instance's launch record and pin, the pin's move journaled
    /// under `op`.
    fn forget_record(&self, name: &str, op: &str) -> Result<String, String> {
        let mut pins = self.pins()?;
        let file = crate::state::launch_params::FILE;
        let mut launch: crate::state::launch_params::LaunchParams =
            read_json(self.system, &self.ws.root, file)?;
        let launched = launch.instances.remove(name).is_some();
        let build = pins.instances.remove(name);
        if build.is_none() && !launched {
            return Err(format!(
                "forget: instance '{name}' has no record in pins.yaml or {file}"
            ));
        }
        if let Some(build) = &build {
            self.journal(&mut pins, "instance", name, Some(build.clone()), None, op);
            write_json(self.system, &self.ws.root, "pins.yaml", &pins)?;
        }
        if launched {
            write_json(self.system, &self.ws.root, file, &launch)?;
        }
        let what = if op == "ephemeral" {
            "ephemeral instance"
        } else {
            "instance"
        };
        Ok(format!(
            "forget: {what} {name} (was on {})",
            build.as_deref().unwrap_or("no build")
        ))
    }
}
