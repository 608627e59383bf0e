//! `dispose` and `lineage restamp`: the operations on lineage's build
//! records.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{Value, Vct};

use crate::load::builders::builders;
use crate::state::lineage::{Lineage, Pins, Releases, read_json, short_fingerprint, write_json};

use super::Ops;

impl Ops<'_> {
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
        // One builder per runtime, so a runtime that connects to its
        // provider does so once for all its builds.
        let mut hooks_of: BTreeMap<String, Box<dyn csis_plugin_api::Builder>> = BTreeMap::new();
        for id in &targets {
            let Some(rec) = lineage.build(id).cloned() else {
                continue;
            };
            if !hooks_of.contains_key(&rec.runtime) {
                let (_, hooks) = self.runtime_hooks("dispose", &rec.runtime)?;
                hooks_of.insert(rec.runtime.clone(), hooks);
            }
            hooks_of[&rec.runtime].dispose_image(&self.ws.root, id)?;
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
                    short_fingerprint(&rec.input_fingerprint),
                    short_fingerprint(&now)
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
