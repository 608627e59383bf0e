//! The operations on recorded builds and pins, as the cli's `upgrade`,
//! `forget`, `release`, `dispose` and `lineage bind-instance` commands run
//! them: each reads the meta-state files it changes, refuses with the
//! spec's message when it must, and writes each file whole.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{ItemKind, Value, Vct};
use serde_json::{Value as J, json};

use crate::db::Db;
use crate::db::system::System;
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::state::lineage::{Lineage, PinMove, Pins, Releases, read_json, write_json};
use crate::workspace::Workspace;

/// What an operation needs: the loaded tree, the door to the disk and the
/// run it belongs to (for the journal).
pub struct Ops<'a> {
    pub ws: &'a Workspace,
    pub system: &'a dyn System,
    pub run: String,
}

impl Ops<'_> {
    fn lineage(&self) -> Result<Lineage, String> {
        read_json(self.system, &self.ws.root, "lineage.yaml")
    }

    fn pins(&self) -> Result<Pins, String> {
        read_json(self.system, &self.ws.root, "pins.yaml")
    }

    fn image(&self, name: &str) -> Option<std::sync::Arc<Item>> {
        let db = &self.ws.db;
        let id = ItemId::new(db, ItemKind::IMAGES, csis_model::naming::safe_name(name));
        structured_item(db, self.ws.tree, id).item.clone()
    }

    /// The runtimes an image bakes on, in its declared order.
    fn image_runtimes(&self, name: &str) -> Vec<String> {
        let b = builders(&self.ws.db, self.ws.tree);
        let mut out: Vec<String> = Vec::new();
        if let Some(Item::Image(img)) = self.image(name).as_deref() {
            for e in &img.runtimes {
                if let Some(rt) = b
                    .resolve(Vct::ImageBuilderModel, &e.image_builder)
                    .and_then(|d| d.base.runtime().map(str::to_string))
                    && !out.contains(&rt)
                {
                    out.push(rt);
                }
            }
        }
        out
    }

    fn journal(
        &self,
        pins: &mut Pins,
        kind: &str,
        name: &str,
        from: Option<String>,
        to: Option<String>,
        op: &str,
    ) {
        pins.upgrades.push(PinMove {
            kind: kind.into(),
            name: name.into(),
            from,
            to,
            run: self.run.clone(),
            op: op.into(),
        });
    }

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
        let mut pins = self.pins()?;
        if pins.instances.contains_key(instance) {
            return Ok(format!(
                "pins: instance {instance} stays on {}",
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
                let id = ItemId::new(db, ItemKind::INSTANCES, name.clone());
                let Some(Item::Instance(inst)) = structured_item(db, self.ws.tree, id)
                    .item
                    .as_deref()
                    .cloned()
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
        self.forget_record(&name, "forget")
    }

    /// After a real apply launched (and tore down) an ephemeral instance:
    /// its launch record and pin go (journaled `op: ephemeral`) and its
    /// generation closes as ephemeral, so the next run launches it anew.
    pub fn forget_ephemeral(&self, name: &str) -> Result<String, String> {
        use crate::state::instance_state::{FILE, InstanceState, closed};
        let line = self.forget_record(name, "ephemeral")?;
        let state: InstanceState = read_json(self.system, &self.ws.root, FILE)?;
        let after = closed(&state, name, &self.run, "ephemeral");
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

    fn config_bool(&self, key: &str, default: bool) -> bool {
        builders(&self.ws.db, self.ws.tree)
            .config_map()
            .get(key)
            .and_then(Value::as_str)
            .and_then(csis_model::fields::parse_bool)
            .unwrap_or(default)
    }

    /// Why a build may not be released for an image, if it may not.
    fn release_refusal(&self, lineage: &Lineage, image: &str, build: &str) -> Option<String> {
        let Some(rec) = lineage.build(build) else {
            return Some(format!(
                "build '{build}' is not recorded in lineage; only baked builds can be released"
            ));
        };
        if rec.series != image {
            return Some(format!(
                "build '{build}' belongs to series '{}', not '{image}'",
                rec.series
            ));
        }
        if rec.tests.get("in_bake").and_then(J::as_bool) != Some(true) {
            return Some(format!(
                "build '{build}' carries no in-bake verification record; rebuild it with the verify provisioner"
            ));
        }
        let mod_tests: BTreeMap<String, J> =
            crate::state::meta_state::read(self.system, &self.ws.root, "mod-tests.yaml")
                .map(|m| m.into_iter().collect())
                .unwrap_or_default();
        for m in &rec.mods {
            let name = m.get("name").and_then(J::as_str).unwrap_or("?");
            let hash = m
                .get("content_hash")
                .and_then(J::as_str)
                .unwrap_or_default();
            match mod_tests.get(hash) {
                Some(t)
                    if t.get("status").and_then(J::as_str) != Some("passed")
                        || t.get("idempotent").and_then(J::as_bool) == Some(false) =>
                {
                    return Some(format!(
                        "modification '{name}' of build '{build}' failed its local mod test (status={}, idempotent={})",
                        t.get("status").and_then(J::as_str).unwrap_or("?"),
                        t.get("idempotent")
                            .map(J::to_string)
                            .unwrap_or_else(|| "?".into())
                    ));
                }
                None if self.config_bool("require_mod_tests", false) => {
                    return Some(format!(
                        "modification '{name}' of build '{build}' has no local mod-test result (config.require_mod_tests)"
                    ));
                }
                _ => {}
            }
        }
        let post_bake = matches!(self.image(image).as_deref(), Some(Item::Image(img)) if img.tests.contains_key("post_bake"));
        if post_bake && self.config_bool("require_image_tests", true) {
            let records =
                crate::state::meta_state::read(self.system, &self.ws.root, "image-tests.yaml")
                    .unwrap_or_default();
            match records.get(build) {
                None => {
                    return Some(format!(
                        "build '{build}' has no post-bake test record while '{image}' declares tests.post_bake -- launch it (ephemeral) and verify first"
                    ));
                }
                Some(r) if r.get("ok").and_then(J::as_bool) != Some(true) => {
                    return Some(format!(
                        "build '{build}' failed its post-bake tests in run {}: {}",
                        r.get("run").and_then(J::as_str).unwrap_or("?"),
                        r.get("checks").map(J::to_string).unwrap_or_default()
                    ));
                }
                _ => {}
            }
        }
        None
    }

    /// `release IMAGE --build B [--model M] [--note N]`.
    pub fn release(
        &self,
        image: &str,
        build: &str,
        model: &str,
        note: Option<&str>,
    ) -> Result<String, String> {
        let image = csis_model::naming::safe_name(image);
        let lineage = self.lineage()?;
        if let Some(why) = self.release_refusal(&lineage, &image, build) {
            return Err(format!("release refused: {why}"));
        }
        let caps = lineage
            .build(build)
            .map(|r| r.capabilities.clone())
            .unwrap_or_default();
        let mut releases: Releases = read_json(self.system, &self.ws.root, "releases.yaml")?;
        releases.releases.push(json!({
            "image": image,
            "build_id": build,
            "model": model,
            "run": self.run,
            "note": note,
            "name": image,
            "capabilities": caps,
        }));
        releases
            .current
            .entry(model.into())
            .or_default()
            .insert(image.clone(), build.into());
        write_json(self.system, &self.ws.root, "releases.yaml", &releases)?;
        Ok(format!(
            "release: {build} of {image} released for model {model}"
        ))
    }

    /// `release --declared`: for every image declaring `release: {model}`,
    /// release each runtime's series head that may be released; a head that
    /// may not is skipped, saying why.
    pub fn release_declared(&self) -> Result<String, String> {
        let lineage = self.lineage()?;
        let mut out = Vec::new();
        for name in item_index(&self.ws.db, self.ws.tree).names(ItemKind::IMAGES) {
            let Some(Item::Image(img)) = self.image(name).as_deref().cloned() else {
                continue;
            };
            let Some(model) = img
                .release
                .as_ref()
                .and_then(|r| r.get("model"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            for rt in self.image_runtimes(name) {
                let Some(head) = lineage.head(name, &rt) else {
                    out.push(format!(
                        "release --declared: {name}@{rt}: no build recorded; skipped"
                    ));
                    continue;
                };
                let current = read_json::<Releases>(self.system, &self.ws.root, "releases.yaml")?;
                if current.current.get(model).and_then(|m| m.get(name)) == Some(&head.build_id) {
                    out.push(format!(
                        "release --declared: {name}@{rt}: {} is already released",
                        head.build_id
                    ));
                    continue;
                }
                match self.release(name, &head.build_id, model, Some("release --declared")) {
                    Ok(done) => out.push(done),
                    Err(why) => {
                        out.push(format!("release --declared: {name}@{rt}: skipped ({why})"))
                    }
                }
            }
        }
        if out.is_empty() {
            out.push("release --declared: no image declares a release".into());
        }
        Ok(out.join("\n"))
    }

    /// The builds an instance is pinned to (or was launched from).
    fn instance_builds(&self, pins: &Pins) -> BTreeMap<String, Vec<String>> {
        let mut by_build: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (inst, build) in &pins.instances {
            by_build
                .entry(build.clone())
                .or_default()
                .push(inst.clone());
        }
        by_build
    }

    /// `dispose image BUILD...`, `--all --runtime RT`, or `--retention`.
    pub fn dispose(
        &self,
        builds: &[String],
        all: bool,
        runtime: Option<&str>,
        retention: bool,
    ) -> Result<String, String> {
        let b = builders(&self.ws.db, self.ws.tree);
        if let Some(rt) = runtime
            && b.resolve(Vct::RuntimeBuilderModel, rt).is_none()
        {
            return Err(format!("dispose: unknown runtime '{rt}'"));
        }
        let mut lineage = self.lineage()?;
        let pins = self.pins()?;
        let pinned = self.instance_builds(&pins);
        let mut log = Vec::new();
        let targets: Vec<String> = if retention {
            self.retention_targets(&lineage, &pins, runtime, &mut log)?
        } else if all {
            let rt = runtime.ok_or_else(|| "dispose: --all needs --runtime <name>".to_string())?;
            lineage
                .builds
                .iter()
                .filter(|r| r.runtime == rt)
                .map(|r| r.build_id.clone())
                .collect()
        } else {
            for id in builds {
                if lineage.build(id).is_none() {
                    return Err(format!(
                        "dispose: build '{id}' is not recorded in lineage; an unrecorded image is adopted with 'state import' or left to the orphan sweep, never deleted blind"
                    ));
                }
            }
            let held: Vec<&String> = builds.iter().filter(|b| pinned.contains_key(*b)).collect();
            if !held.is_empty() {
                let insts: Vec<String> = held.iter().flat_map(|b| pinned[*b].clone()).collect();
                return Err(format!(
                    "dispose: instance(s) [{}] are pinned to / launched from the build(s) [{}]; decommission them first",
                    insts.join(", "),
                    held.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            builds.to_vec()
        };
        for id in &targets {
            let Some(rec) = lineage.build(id).cloned() else {
                continue;
            };
            let runtime_decl = b
                .resolve(Vct::RuntimeBuilderModel, &rec.runtime)
                .ok_or_else(|| format!("dispose: unknown runtime '{}'", rec.runtime))?;
            let spec = self
                .ws
                .db
                .registry()
                .model(runtime_decl.classification, runtime_decl.model)
                .ok_or_else(|| format!("dispose: runtime '{}' has no builder", rec.runtime))?;
            (spec.builder)(runtime_decl).dispose_image(&self.ws.root, id)?;
            lineage.builds.retain(|r| r.build_id != *id);
            write_json(self.system, &self.ws.root, "lineage.yaml", &lineage)?;
            log.push(format!(
                "dispose: {id} ({}@{}) disposed",
                rec.series, rec.runtime
            ));
            // Images pinned to it lose the pin: they bake from their
            // parent's head next (unpin_images_at).
            let mut pins = self.pins()?;
            let held: Vec<String> = pins
                .images
                .iter()
                .filter(|(_, b)| *b == id)
                .map(|(k, _)| k.clone())
                .collect();
            for key in &held {
                pins.images.remove(key);
                self.journal(&mut pins, "image", key, Some(id.clone()), None, "dispose");
                log.push(format!(
                    "pins: {key} unpinned (its parent build {id} was disposed)"
                ));
            }
            if !held.is_empty() {
                write_json(self.system, &self.ws.root, "pins.yaml", &pins)?;
            }
        }
        if targets.is_empty() {
            log.push("dispose: nothing to dispose".into());
        }
        Ok(log.join("\n"))
    }

    /// The builds the declared retention no longer keeps: beyond
    /// `retention.keep` per image, else `retention_keep` per runtime, or
    /// everything on an ephemeral runtime. A build an instance or an image
    /// pin holds, or a released one, is kept and reported as debt.
    fn retention_targets(
        &self,
        lineage: &Lineage,
        pins: &Pins,
        runtime: Option<&str>,
        log: &mut Vec<String>,
    ) -> Result<Vec<String>, String> {
        let b = builders(&self.ws.db, self.ws.tree);
        let releases: Releases = read_json(self.system, &self.ws.root, "releases.yaml")?;
        let released: Vec<&String> = releases.current.values().flat_map(|m| m.values()).collect();
        let instance_held = self.instance_builds(pins);
        let image_held: Vec<&String> = pins.images.values().collect();
        let mut series: Vec<(String, String)> = lineage
            .builds
            .iter()
            .map(|r| (r.series.clone(), r.runtime.clone()))
            .collect();
        series.sort();
        series.dedup();
        let mut out = Vec::new();
        for (s, rt) in series {
            if runtime.is_some_and(|r| r != rt) {
                continue;
            }
            let rt_model = b
                .resolve(Vct::RuntimeBuilderModel, &rt)
                .and_then(|d| d.base.runtime_model().cloned());
            let keep = if rt_model.as_ref().is_some_and(|m| m.ephemeral) {
                Some(0)
            } else {
                let image_keep = match self.image(&s).as_deref() {
                    Some(Item::Image(img)) => img
                        .retention
                        .as_ref()
                        .and_then(|r| r.get("keep"))
                        .and_then(Value::as_str)
                        .and_then(|k| k.parse::<usize>().ok()),
                    _ => None,
                };
                image_keep.or_else(|| {
                    rt_model
                        .and_then(|m| m.retention_keep)
                        .map(|k| k.max(0) as usize)
                })
            };
            let Some(keep) = keep else { continue };
            let builds: Vec<&crate::state::lineage::BuildRecord> = lineage
                .builds
                .iter()
                .filter(|r| r.series == s && r.runtime == rt)
                .collect();
            let beyond = builds.len().saturating_sub(keep);
            for rec in builds.into_iter().take(beyond) {
                let id = &rec.build_id;
                if released.contains(&id) {
                    log.push(format!(
                        "warning: retention debt: {id} ({s}@{rt}) would be disposed but it is a RELEASED build (kept by decision; dispose it explicitly)"
                    ));
                } else if instance_held.contains_key(id) {
                    log.push(format!(
                        "warning: retention debt: {id} ({s}@{rt}) would be disposed but an instance is pinned to it or was launched from it"
                    ));
                } else if image_held.contains(&id) {
                    log.push(format!(
                        "warning: retention debt: {id} ({s}@{rt}) would be disposed but an image is pinned to it (a child bakes from it)"
                    ));
                } else {
                    out.push(id.clone());
                }
            }
        }
        Ok(out)
    }
}

impl Ops<'_> {
    /// `lineage restamp --runtime RT [--commit]`: set each series head's
    /// recorded fingerprint on RT to the one computed now, for when the
    /// fingerprint's definition moved and nothing about the builds did.
    /// Without `--commit` it only says what would change.
    pub fn restamp(&self, runtime: &str, commit: bool) -> Result<String, String> {
        let b = builders(&self.ws.db, self.ws.tree);
        if b.resolve(Vct::RuntimeBuilderModel, runtime).is_none() {
            return Err(format!("lineage restamp: unknown runtime '{runtime}'"));
        }
        let mut lineage = self.lineage()?;
        let mut heads: Vec<String> = lineage
            .builds
            .iter()
            .filter(|r| r.runtime == runtime)
            .filter_map(|r| lineage.head(&r.series, runtime).map(|h| h.build_id.clone()))
            .collect();
        heads.sort();
        heads.dedup();
        let mut out = Vec::new();
        for id in heads {
            let Some(rec) = lineage.builds.iter_mut().find(|r| r.build_id == id) else {
                continue;
            };
            let key = crate::plan::fingerprint::SeriesKey::new(
                &self.ws.db,
                rec.series.clone(),
                runtime.to_string(),
            );
            let Some(now) =
                crate::plan::fingerprint::input_fingerprint(&self.ws.db, self.ws.tree, key)
                    .as_ref()
                    .map(|f| f.hex.clone())
            else {
                continue;
            };
            if now != rec.input_fingerprint {
                out.push(format!(
                    "lineage restamp: {id} ({}@{runtime}): {} -> {}",
                    rec.series,
                    rec.input_fingerprint.chars().take(16).collect::<String>(),
                    now.chars().take(16).collect::<String>()
                ));
                rec.input_fingerprint = now;
            }
        }
        if out.is_empty() {
            return Ok(format!(
                "lineage restamp: every head on {runtime} is current"
            ));
        }
        if commit {
            write_json(self.system, &self.ws.root, "lineage.yaml", &lineage)?;
        } else {
            out.push("lineage restamp: nothing written; pass --commit to record these".into());
        }
        Ok(out.join("\n"))
    }
}
