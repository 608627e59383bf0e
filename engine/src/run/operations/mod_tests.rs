//! `csis test-mods [IMAGE...]`: every modification of an instance image
//! tested twice in a throwaway copy of its parent build (apply, then again
//! for idempotence) by a runtime that can (the runtime's
//! `test_modifications` hook), the results kept in meta-state/mod-tests.yaml
//! by the modification's content hash, which `release` reads. A
//! modification whose hash has passed or failed is not tested again: its
//! content is what was tested (a skipped one is tried again).

use csis_model::models::Item;
use serde_json::{Value as J, json};

use crate::plan::fingerprint::{SeriesKey, fingerprint_detail};
use crate::plan::hook_context::EngineContext;

use super::Ops;

const FILE: &str = "mod-tests.yaml";

/// What `test-mods` did: a line per modification, and how many failed.
pub struct ModTestsReport {
    pub lines: Vec<String>,
    pub failed: usize,
}

/// One image's modifications and their content hashes on a runtime.
struct Candidate {
    image: String,
    runtime: String,
    parent: String,
    mods: Vec<(String, String)>,
}

impl Ops<'_> {
    /// Test the modifications of `images` (every instance image when
    /// empty), in bake order.
    pub fn test_mods(&self, images: &[String]) -> Result<ModTestsReport, String> {
        let db = &self.ws.db;
        let tree = self.ws.tree;
        let order = crate::plan::bakes::image_graph(db, tree).order.clone();
        let wanted: Vec<String> = images
            .iter()
            .map(|i| csis_model::naming::safe_name(i))
            .collect();
        for w in &wanted {
            if !order.contains(w) {
                return Err(format!("test-mods: image '{w}' is not declared"));
            }
        }
        let mut results: serde_json::Map<String, J> =
            crate::state::meta_state::read(self.system, &self.ws.root, FILE)?;
        let lineage = self.lineage()?;
        let pins = self.pins()?;
        let mut report = ModTestsReport {
            lines: Vec::new(),
            failed: 0,
        };
        for image in order
            .iter()
            .filter(|i| wanted.is_empty() || wanted.contains(i))
        {
            let Some(c) = self.candidate(image) else {
                continue;
            };
            // A skipped test tested nothing: it is tried again.
            let untested: Vec<&(String, String)> = c
                .mods
                .iter()
                .filter(|(_, hash)| {
                    results
                        .get(hash)
                        .and_then(|r| r.get("status"))
                        .and_then(J::as_str)
                        .is_none_or(|s| s == "skipped")
                })
                .collect();
            for (name, hash) in c.mods.iter().filter(|m| !untested.contains(m)) {
                let status = results[hash]
                    .get("status")
                    .and_then(J::as_str)
                    .unwrap_or("?")
                    .to_string();
                if status == "failed" {
                    report.failed += 1;
                }
                report.lines.push(format!(
                    "image '{image}' modification '{name}': {status} (tested before, content unchanged)"
                ));
            }
            if untested.is_empty() {
                continue;
            }
            let parent_build = pins
                .images
                .get(&format!("{image}@{}", c.runtime))
                .cloned()
                .or_else(|| {
                    lineage
                        .head(&c.parent, &c.runtime)
                        .map(|r| r.build_id.clone())
                });
            let names: Vec<String> = untested.iter().map(|(n, _)| n.clone()).collect();
            let outcomes = match &parent_build {
                None => Err(format!(
                    "no build of its parent '{}' on runtime '{}': bake it first",
                    c.parent, c.runtime
                )),
                Some(build) => self.run_hook(&c, build, &names),
            };
            for (name, hash) in untested {
                let (status, idempotent, detail) = match &outcomes {
                    Err(why) => ("skipped".to_string(), J::Null, why.clone()),
                    Ok(list) => match list.iter().find(|o| o.name == *name) {
                        Some(o) => (
                            o.status.clone(),
                            o.idempotent.map_or(J::Null, J::Bool),
                            o.detail.clone(),
                        ),
                        // Not reached: an earlier one failed.
                        None => continue,
                    },
                };
                let mut line = format!("image '{image}' modification '{name}': {status}");
                if !detail.is_empty() {
                    line.push_str(&format!(": {detail}"));
                }
                if status == "failed" {
                    report.failed += 1;
                }
                report.lines.push(line);
                results.insert(
                    hash.clone(),
                    json!({
                        "image": image,
                        "modification": name,
                        "runtime": c.runtime,
                        "parent_build": parent_build,
                        "status": status,
                        "idempotent": idempotent,
                        "detail": detail,
                        "run": self.run,
                    }),
                );
            }
            // Written after each image: what was tested stays recorded if
            // a later image's test is interrupted.
            crate::state::meta_state::write(self.system, &self.ws.root, FILE, &results)?;
        }
        if report.lines.is_empty() {
            report
                .lines
                .push("test-mods: no instance image has modifications to test".into());
        }
        Ok(report)
    }

    /// An instance image's parent, first runtime and modifications with
    /// their content hashes (as its fingerprint has them).
    fn candidate(&self, image: &str) -> Option<Candidate> {
        let Some(Item::Image(img)) = self.image(image).as_deref().cloned() else {
            return None;
        };
        let parent = img
            .source_image
            .as_deref()
            .map(csis_model::naming::safe_name)?;
        let runtime = self.image_runtimes(image).into_iter().next()?;
        let db = &self.ws.db;
        let key = SeriesKey::new(db, image.to_string(), runtime.clone());
        let fp = fingerprint_detail(db, self.ws.tree, key)?;
        let mods: Vec<(String, String)> = fp
            .fields
            .get("modifications")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| {
                Some((
                    m.get("name")?.as_str()?.to_string(),
                    m.get("content_hash")?.as_str()?.to_string(),
                ))
            })
            .collect();
        (!mods.is_empty()).then_some(Candidate {
            image: image.to_string(),
            runtime,
            parent,
            mods,
        })
    }

    fn run_hook(
        &self,
        c: &Candidate,
        parent_build: &str,
        names: &[String],
    ) -> Result<Vec<csis_plugin_api::ModTestOutcome>, String> {
        let (_, hooks) = self.runtime_hooks("test-mods", &c.runtime)?;
        let ctx = EngineContext::outside_run(&self.ws.db, self.ws.tree);
        hooks.test_modifications(&ctx, &self.ws.root, &c.image, parent_build, names)
    }
}
