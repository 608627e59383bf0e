//! `release --tag-runtime RT`: the cloud-side mark of the current
//! releases (spec: a runtime's release_commands, deferred into the
//! release runner when `config.apply_release` allows the runtime). Each
//! build on RT that is a model's current release for its image carries
//! `csis_release_<model>=<run it was released in>`; a build that carries
//! the tag of a release no longer current loses it. The builds and their
//! tags are what the runtime answers (`observe`), so a tag set by hand or
//! by an earlier run is put right as well.

use std::collections::BTreeMap;

use crate::state::lineage::{Releases, read_json};

use super::Ops;

pub const TAG_PREFIX: &str = "csis_release_";

impl Ops<'_> {
    pub fn release_tags(&self, runtime: &str) -> Result<String, String> {
        let what = "release --tag-runtime";
        let (rt, hooks) = self.runtime_hooks(what, runtime)?;
        if !hooks.can_retag_image() {
            return Err(format!("{what}: runtime '{rt}' cannot retag its images"));
        }
        let releases: Releases = read_json(self.system, &self.ws.root, "releases.yaml")?;
        let lineage = self.lineage()?;
        // build -> tag -> value, for the current releases on this runtime.
        let mut want: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
        for (model, by_image) in &releases.current {
            for (image, build) in by_image {
                if lineage.build(build).is_none_or(|r| r.runtime != rt) {
                    continue;
                }
                let run = releases
                    .releases
                    .iter()
                    .rev()
                    .find(|r| {
                        r["model"] == model.as_str()
                            && r["image"] == image.as_str()
                            && r["build_id"] == build.as_str()
                    })
                    .and_then(|r| r["run"].as_str())
                    .unwrap_or_default();
                want.entry(build)
                    .or_default()
                    .insert(format!("{TAG_PREFIX}{model}"), run.to_string());
            }
        }
        let seen = hooks
            .observe(&self.ws.root, &self.ws.tree_id())
            .map_err(|e| format!("{what}: runtime '{rt}' could not be asked: {e}"))?;
        let mut out = Vec::new();
        for image in &seen.images {
            let wanted = want.remove(image.build_id.as_str()).unwrap_or_default();
            let mut change: BTreeMap<String, String> = BTreeMap::new();
            for (k, v) in &wanted {
                if image.tags.get(k) != Some(v) {
                    change.insert(k.clone(), v.clone());
                }
            }
            for k in image.tags.keys() {
                if k.starts_with(TAG_PREFIX) && !wanted.contains_key(k) {
                    change.insert(k.clone(), String::new());
                }
            }
            if change.is_empty() {
                continue;
            }
            hooks
                .retag_image(&self.ws.root, &image.build_id, &change)
                .map_err(|e| format!("{what}: tagging {} on '{rt}' failed: {e}", image.build_id))?;
            for (k, v) in &change {
                out.push(if v.is_empty() {
                    format!(
                        "{what}: {} ({rt}): removed {k} (no longer released)",
                        image.build_id
                    )
                } else {
                    format!("{what}: {} ({rt}): {k}={v}", image.build_id)
                });
            }
        }
        for build in want.keys() {
            out.push(format!(
                "{what}: {build} ({rt}): released but the runtime does not have it; not tagged"
            ));
        }
        if out.is_empty() {
            out.push(format!(
                "{what}: every build on '{rt}' carries its release tags"
            ));
        }
        Ok(out.join("\n"))
    }
}
