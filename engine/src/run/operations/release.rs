//! `release` and `release --declared`: a build released for a model, once
//! nothing refuses it.

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{ItemKind, Value};
use serde_json::{Value as J, json};

use crate::load::builders::builders;
use crate::load::items::item_index;
use crate::state::lineage::{Lineage, Releases, read_json, write_json};

use super::Ops;

impl Ops<'_> {
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
            let records: serde_json::Map<String, J> =
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
}
