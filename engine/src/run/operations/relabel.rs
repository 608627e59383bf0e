//! `lineage relabel FROM TO`: after an image (or OS builder) is renamed,
//! its recorded builds follow it. Each build's artifact is retagged on its
//! runtime (`csis_series`), then lineage (series and chains), the image
//! pins and the releases are rewritten under the new name, each file
//! whole. Without `--commit` it only says what it would do.
//!
//! Refused before anything changes: FROM still declared, TO not declared,
//! no build of FROM, TO already recorded on a runtime FROM has builds on
//! (two series' builds would interleave), a runtime that cannot retag.
//! A retag that fails stops the command before any meta-state is written;
//! running it again retags what is left (a retag is idempotent).

use std::collections::{BTreeMap, BTreeSet};

use crate::state::lineage::{Releases, read_json, write_json};

use super::Ops;

impl Ops<'_> {
    pub fn relabel(&self, from: &str, to: &str, commit: bool) -> Result<String, String> {
        let declared =
            |s: &str| crate::plan::fingerprint::chain_root(&self.ws.db, self.ws.tree, s).is_some();
        let refuse = |why: String| format!("lineage relabel refused, nothing changed: {why}");
        if declared(from) {
            return Err(refuse(format!(
                "'{from}' is still declared; rename it in the tree first, then relabel its builds"
            )));
        }
        if !declared(to) {
            return Err(refuse(format!(
                "'{to}' is not a declared image or OS builder"
            )));
        }
        let mut lineage = self.lineage()?;
        let builds: Vec<(String, String)> = lineage
            .builds
            .iter()
            .filter(|r| r.series == from)
            .map(|r| (r.build_id.clone(), r.runtime.clone()))
            .collect();
        if builds.is_empty() {
            return Err(refuse(format!(
                "meta-state/lineage.yaml records no build of '{from}'"
            )));
        }
        let runtimes: BTreeSet<&str> = builds.iter().map(|(_, rt)| rt.as_str()).collect();
        for rt in &runtimes {
            if lineage.head(to, rt).is_some() {
                return Err(refuse(format!(
                    "'{to}' already has builds on runtime '{rt}'; its builds and '{from}''s would interleave in one series"
                )));
            }
        }
        let mut hooks = BTreeMap::new();
        for rt in &runtimes {
            let (_, hook) = self.runtime_hooks("lineage relabel", rt).map_err(&refuse)?;
            if !hook.can_retag_image() {
                return Err(refuse(format!("runtime '{rt}' cannot retag its images")));
            }
            hooks.insert(*rt, hook);
        }
        let mut out: Vec<String> = builds
            .iter()
            .map(|(id, rt)| format!("lineage relabel: {id} ({rt}): csis_series {from} -> {to}"))
            .collect();
        if !commit {
            out.push("lineage relabel: nothing changed; pass --commit to retag and record".into());
            return Ok(out.join("\n"));
        }
        let tags = BTreeMap::from([("csis_series".to_string(), to.to_string())]);
        for (id, rt) in &builds {
            if let Some(hook) = hooks.get(rt.as_str()) {
                hook.retag_image(&self.ws.root, id, &tags).map_err(|e| {
                    format!(
                        "lineage relabel: retagging {id} on '{rt}' failed: {e}; meta-state is unchanged, and running the relabel again retags what is left"
                    )
                })?;
            }
        }
        for rec in &mut lineage.builds {
            if rec.series == from {
                rec.series = to.to_string();
            }
            for link in &mut rec.chain {
                if link == from {
                    *link = to.to_string();
                }
            }
        }
        // The name enters the series' fingerprint and, through
        // parent_fingerprint, its children's: a head whose inputs differ
        // only there keeps being current, restamped, down the chain.
        out.extend(self.restamp_renamed(&mut lineage, to, &runtimes));
        let mut pins = self.pins()?;
        pins.images = std::mem::take(&mut pins.images)
            .into_iter()
            .map(|(consumer, build)| match consumer.split_once('@') {
                Some((series, rt)) if series == from => (format!("{to}@{rt}"), build),
                _ => (consumer, build),
            })
            .collect();
        let mut releases: Releases = read_json(self.system, &self.ws.root, "releases.yaml")?;
        for by_image in releases.current.values_mut() {
            if let Some(build) = by_image.remove(from) {
                by_image.insert(to.to_string(), build);
            }
        }
        write_json(self.system, &self.ws.root, "lineage.yaml", &lineage)?;
        write_json(self.system, &self.ws.root, "pins.yaml", &pins)?;
        write_json(self.system, &self.ws.root, "releases.yaml", &releases)?;
        out.push(format!(
            "lineage relabel: {} build{} of '{from}' now recorded as '{to}'",
            builds.len(),
            if builds.len() == 1 { "" } else { "s" }
        ));
        Ok(out.join("\n"))
    }

    /// Restamp the heads at and below `to` on `runtimes` whose inputs
    /// differ from the ones computed now only by the rename: `series` for
    /// `to` itself, `parent_fingerprint` for a child of a restamped head.
    fn restamp_renamed(
        &self,
        lineage: &mut crate::state::lineage::Lineage,
        to: &str,
        runtimes: &BTreeSet<&str>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for rt in runtimes {
            let mut heads: Vec<(usize, String, String)> = lineage
                .builds
                .iter()
                .filter(|r| r.runtime == *rt && r.chain.iter().any(|c| c == to))
                .filter(|r| lineage.head(&r.series, rt).map(|h| &h.build_id) == Some(&r.build_id))
                .map(|r| (r.chain.len(), r.series.clone(), r.build_id.clone()))
                .collect();
            heads.sort();
            // Per restamped series: its head's fingerprint before and after.
            let mut restamped: BTreeMap<String, (String, String)> = BTreeMap::new();
            for (_, series, id) in heads {
                let key = crate::plan::fingerprint::SeriesKey::new(
                    &self.ws.db,
                    series.clone(),
                    rt.to_string(),
                );
                let Some(mut now) =
                    crate::plan::fingerprint::fingerprint_detail(&self.ws.db, self.ws.tree, key)
                else {
                    continue;
                };
                let Some(rec) = lineage.builds.iter_mut().find(|r| r.build_id == id) else {
                    continue;
                };
                // Built on the parent's restamped head (followed, or pinned
                // to it): it will read the new fingerprint.
                let parent = rec.chain.iter().rev().nth(1).and_then(|p| restamped.get(p));
                let parent_restamped = match (parent, now.parent()) {
                    (Some((old, new)), Some(reads)) if reads == old || reads == new => {
                        now = now.with_parent(new);
                        true
                    }
                    _ => false,
                };
                let moved = |k: &str| {
                    (k == "series" && series == to)
                        || (k == "parent_fingerprint" && parent_restamped)
                };
                let inputs = now.inputs();
                let rest = |m: &BTreeMap<String, String>| {
                    m.iter()
                        .filter(|(k, _)| !moved(k))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect::<BTreeMap<_, _>>()
                };
                if rec.input_fingerprint == now.hex {
                    continue;
                }
                if !rec.inputs.is_empty() && rest(&rec.inputs) == rest(&inputs) {
                    restamped.insert(
                        series.clone(),
                        (rec.input_fingerprint.clone(), now.hex.clone()),
                    );
                    rec.input_fingerprint = now.hex.clone();
                    rec.inputs = inputs;
                    out.push(format!(
                        "lineage relabel: {id} ({series}@{rt}): fingerprint restamped, only the rename changed it"
                    ));
                } else {
                    out.push(format!(
                        "lineage relabel: {id} ({series}@{rt}): its inputs changed beyond the rename; the plan re-bakes it"
                    ));
                }
            }
        }
        out
    }
}
