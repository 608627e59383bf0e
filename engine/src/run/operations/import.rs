//! `state import [--runtime RT] [BUILD...]`: adopt builds a runtime has
//! and lineage does not record (state query's foreign images) into
//! lineage, from the lineage tags every bake writes on its artifact. What
//! the tags cannot say is not invented: an adopted build carries no
//! in-bake record (release refuses it) and its fingerprint is the tag's
//! 16-character prefix (so the plan re-bakes its series when it is the
//! head). Anything ambiguous refuses the whole import, writing nothing.

use std::collections::BTreeMap;

use csis_model::Vct;
use csis_plugin_api::ObservedImage;
use serde_json::Value as J;

use super::Ops;
use crate::load::builders::builders;
use crate::state::lineage::{BuildRecord, Capabilities, write_json};

impl Ops<'_> {
    pub fn state_import(&self, builds: &[String], runtime: Option<&str>) -> Result<String, String> {
        let b = builders(&self.ws.db, self.ws.tree);
        if let Some(rt) = runtime
            && b.resolve(Vct::RuntimeBuilderModel, rt).is_none()
        {
            return Err(format!("state import: unknown runtime '{rt}'"));
        }
        let mut lineage = self.lineage()?;
        // Every foreign image of the runtimes asked, with its runtime.
        let mut foreign: Vec<(String, ObservedImage)> = Vec::new();
        let mut unavailable = Vec::new();
        for decl in b
            .by_class
            .get(&Vct::RuntimeBuilderModel)
            .into_iter()
            .flat_map(|m| m.values())
            .filter(|d| runtime.is_none_or(|r| r == d.name()))
        {
            let (rt, hooks) = self.runtime_hooks("state import", decl.name())?;
            match hooks.observe(&self.ws.root, &self.ws.tree_id()) {
                Ok(seen) => foreign.extend(
                    seen.images
                        .into_iter()
                        .filter(|i| lineage.build(&i.build_id).is_none())
                        .map(|i| (rt.clone(), i)),
                ),
                Err(e) => unavailable.push(format!("{rt}: {e}")),
            }
        }
        let mut problems = Vec::new();
        for id in builds {
            if lineage.build(id).is_some() {
                problems.push(format!("build '{id}' is recorded in lineage already"));
            } else if !foreign.iter().any(|(_, i)| i.build_id == *id) {
                problems.push(format!(
                    "build '{id}' is not a foreign image of any runtime that answered{}",
                    if unavailable.is_empty() {
                        String::new()
                    } else {
                        format!(" (not asked: {})", unavailable.join("; "))
                    }
                ));
            }
        }
        let targets: Vec<&(String, ObservedImage)> = foreign
            .iter()
            .filter(|(_, i)| builds.is_empty() || builds.contains(&i.build_id))
            .collect();
        let mut runs: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
        for (rt, img) in &targets {
            let tag = |k: &str| img.tags.get(k).filter(|v| !v.trim().is_empty());
            for key in ["csis_run", "csis_fingerprint"] {
                if tag(key).is_none() {
                    problems.push(format!(
                        "build '{}' lacks its lineage tag {key}; only a build csis baked can be adopted",
                        img.build_id
                    ));
                }
            }
            if !self.image_runtimes(&img.series).iter().any(|r| r == rt) {
                problems.push(format!(
                    "build '{}' carries csis_series '{}', which is not an image baked on runtime '{rt}'",
                    img.build_id, img.series
                ));
            }
            if let Some(run) = tag("csis_run") {
                if let Some(other) = lineage
                    .builds
                    .iter()
                    .find(|r| r.series == img.series && r.runtime == *rt && r.run == *run)
                {
                    problems.push(format!(
                        "build '{}' says it is {}@{rt} of run {run}, which lineage records as '{}'",
                        img.build_id, img.series, other.build_id
                    ));
                }
                runs.entry((img.series.clone(), rt.clone(), run.clone()))
                    .or_default()
                    .push(img.build_id.clone());
            }
        }
        for ((series, rt, run), ids) in &runs {
            if ids.len() > 1 {
                problems.push(format!(
                    "builds [{}] all say they are {series}@{rt} of run {run}: which one that run recorded cannot be told",
                    ids.join(", ")
                ));
            }
        }
        if !problems.is_empty() {
            return Err(format!(
                "state import refused, nothing adopted: {}",
                problems.join("; ")
            ));
        }
        if targets.is_empty() {
            return Ok("state import: no foreign build to adopt".into());
        }
        let mut log = Vec::new();
        for (rt, img) in targets {
            let tag = |k: &str| img.tags.get(k).cloned().unwrap_or_default();
            let list = |k: &str| -> Vec<String> {
                tag(k)
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            };
            let run = tag("csis_run");
            let parent = match tag("csis_parent") {
                p if p.is_empty() => "vendor".to_string(),
                p => p,
            };
            let record = BuildRecord {
                build_id: img.build_id.clone(),
                series: img.series.clone(),
                runtime: rt.clone(),
                name: img.series.clone(),
                parent,
                input_fingerprint: tag("csis_fingerprint"),
                run: run.clone(),
                capabilities: Capabilities {
                    identity_types: list("csis_identity_types"),
                    storage_types: list("csis_storage_types"),
                },
                mods: Vec::new(),
                tests: J::Null,
                update: J::Null,
                chain: vec![img.series.clone()],
                inputs: BTreeMap::new(),
            };
            // In run order within its series, so an older build adopted
            // never becomes the head.
            let at = lineage
                .builds
                .iter()
                .position(|r| r.series == img.series && r.runtime == *rt && r.run > run)
                .unwrap_or(lineage.builds.len());
            lineage.builds.insert(at, record);
            log.push(format!(
                "state import: {} ({}@{rt}, run {run}) adopted into lineage from its tags; it has no in-bake record, so release refuses it",
                img.build_id, img.series
            ));
        }
        write_json(self.system, &self.ws.root, "lineage.yaml", &lineage)?;
        Ok(log.join("\n"))
    }
}
