//! `csis state query`, and every run's first step: ask each runtime what
//! exists, compare it with meta-state, and classify the drift.
//!
//! | class | what |
//! |---|---|
//! | missing | meta-state records it, the runtime does not have it |
//! | foreign | the runtime has it (with lineage tags), meta-state does not record it |
//! | changed | a machine other than the records say: booted from neither its pin nor its launch build, replaced out of band, or several under one name |
//! | stale | a recorded build still standing that neither is a head nor is pinned: retention's to dispose |
//! | debris | what an interrupted step left (a bake's partial directory, a temporary file) |
//!
//! In a real run, when the answer holds debris or foreign images, each
//! runtime removes its debris and the builds lineage does not record (a
//! run killed between a bake and its record leaves one), and the runtimes
//! are asked again: the tree is locked, so nothing else is baking.
//!
//! Hard drift makes the next validation refuse: a pinned build gone, a
//! storage recorded live but absent, a pin to a build lineage does not
//! record. A runtime that cannot be asked is listed as unavailable, never
//! read as "nothing exists". The report is generated/state-report.json
//! (run-local, never committed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use csis_model::Vct;

use crate::db::Db;
use crate::db::system::System;
use crate::load::builders::builders;
use crate::run::records::record_now;
use crate::run::steps::Runner;
use crate::run::{Level, RunSummary};
use crate::state::launch_params::{self, launch_record};
use crate::state::lineage::{IndexedLineage, lineage, pins};
use crate::state::storage_state::{self, storage_record};
use crate::workspace::Workspace;

pub const REPORT: &str = "state-report.json";

use crate::run::state_report::drift;
pub use crate::run::state_report::{Drift, StateReport};

/// Ask every declared runtime what exists and compare with meta-state.
pub fn query(ws: &Workspace, system: &dyn System) -> Result<StateReport, String> {
    let root = &ws.root;
    let (db, tree) = (&ws.db, ws.tree);
    let recorded = record_now(ws, system, "lineage.yaml", lineage(db, tree))?;
    let lineage = IndexedLineage::new(&recorded);
    let pins = record_now(ws, system, "pins.yaml", pins(db, tree))?;
    let storages = record_now(ws, system, storage_state::FILE, storage_record(db, tree))?;
    let launched = record_now(ws, system, launch_params::FILE, launch_record(db, tree))?;
    let generations: crate::state::instance_state::InstanceState =
        crate::state::lineage::read_json(system, root, crate::state::instance_state::FILE)?;
    let b = builders(&ws.db, ws.tree);
    let declared_on: BTreeMap<String, String> = {
        use crate::load::items::{ItemId, item_index};
        use csis_model::models::Item;
        item_index(db, tree)
            .names(csis_model::ItemKind::INSTANCES)
            .filter_map(|n| {
                let id = ItemId::new(db, tree, csis_model::ItemKind::INSTANCES, n);
                match crate::load::items_model::structured_item(db, id)
                    .item
                    .as_deref()
                {
                    Some(Item::Instance(inst)) => Some((n.to_string(), b.instance_runtime(inst))),
                    _ => None,
                }
            })
            .collect()
    };
    let machines = crate::run::state_instances::InstanceRecords {
        declared_on: &declared_on,
        lineage: &lineage,
        pins: &pins,
        launched: &launched,
        generations: &generations,
    };
    let mut report = StateReport::default();

    // Who pins each build.
    let mut pinned_by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (consumer, build) in &pins.images {
        pinned_by.entry(build).or_default().push(consumer.clone());
    }
    for (instance, build) in &pins.instances {
        pinned_by
            .entry(build)
            .or_default()
            .push(format!("instance {instance}"));
    }
    for (build, by) in &pinned_by {
        if lineage.build(build).is_none() {
            report.entries.push(drift(
                "missing",
                "pin",
                build,
                "-",
                format!(
                    "pinned by {}, but meta-state/lineage.yaml records no such build",
                    by.join(", ")
                ),
                true,
            ));
        }
    }

    for (decl, hooks) in crate::load::builders::runtime_hooks(db, tree) {
        let rt = decl.name();
        let seen = match hooks.observe(root, &b.tree_id()) {
            Ok(seen) => seen,
            Err(why) => {
                report.unavailable.push(format!("{rt}: {why}"));
                continue;
            }
        };
        compare_images(&lineage, &pinned_by, rt, &seen, &mut report);
        for (path, what) in &seen.debris {
            report.entries.push(drift(
                "debris",
                "file",
                path,
                rt,
                format!("{what}; the next real run removes it"),
                false,
            ));
        }
        let seen_storages: BTreeSet<&String> = seen.storages.iter().collect();
        for (name, rec) in &storages.storages {
            let runtime = rec
                .builder
                .as_deref()
                .and_then(|s| b.resolve(Vct::StorageBuilderModel, s))
                .and_then(|d| d.base.runtime().map(str::to_string));
            if runtime.as_deref() == Some(rt)
                && rec.state == "active"
                && !seen_storages.contains(name)
            {
                report.entries.push(drift(
                    "missing",
                    "storage",
                    name,
                    rt,
                    "recorded active in meta-state/storage-state.yaml but absent".into(),
                    true,
                ));
            }
        }
        machines.compare(rt, &seen.instances, &mut report);
    }
    for path in unfinished_writes(ws, system) {
        report.entries.push(drift(
            "debris",
            "file",
            &path.display().to_string(),
            "-",
            "a write that never finished; the next real run removes it".into(),
            false,
        ));
    }
    report.entries.sort_by(|a, b| {
        (&a.runtime, &a.kind, &a.name, &a.class).cmp(&(&b.runtime, &b.kind, &b.name, &b.class))
    });
    report.unavailable.sort();
    report.notes.sort();
    Ok(report)
}

fn compare_images(
    lineage: &IndexedLineage<'_>,
    pinned_by: &BTreeMap<&str, Vec<String>>,
    rt: &str,
    seen: &csis_plugin_api::Observed,
    report: &mut StateReport,
) {
    let seen_ids: BTreeSet<&str> = seen.images.iter().map(|i| i.build_id.as_str()).collect();
    for rec in lineage.lineage.builds.iter().filter(|r| r.runtime == rt) {
        let head = lineage
            .head(&rec.series, rt)
            .is_some_and(|h| h.build_id == rec.build_id);
        let pins = pinned_by.get(rec.build_id.as_str());
        if !seen_ids.contains(rec.build_id.as_str()) {
            let (detail, hard) = match pins {
                Some(by) => (
                    format!("a pinned build is gone (pinned by {})", by.join(", ")),
                    true,
                ),
                None => (
                    "recorded in meta-state/lineage.yaml but absent".into(),
                    false,
                ),
            };
            report
                .entries
                .push(drift("missing", "image", &rec.build_id, rt, detail, hard));
        } else if !head && pins.is_none() {
            report.entries.push(drift(
                "stale",
                "image",
                &rec.build_id,
                rt,
                format!(
                    "superseded by {}'s head and pinned by nothing (retention disposes it)",
                    rec.series
                ),
                false,
            ));
        }
    }
    for img in &seen.images {
        if lineage.build(&img.build_id).is_none() {
            report.entries.push(drift(
                "foreign",
                "image",
                &img.build_id,
                rt,
                format!(
                    "carries csis_series '{}' but meta-state/lineage.yaml does not record it",
                    img.series
                ),
                false,
            ));
        }
    }
}

/// csis's own temporaries left in meta-state/ and the generated directory.
fn unfinished_writes(ws: &Workspace, system: &dyn System) -> Vec<std::path::PathBuf> {
    [
        ws.root.join(crate::state::meta_state::DIR),
        ws.root.join(ws.generation_dir_name()),
    ]
    .iter()
    .flat_map(|dir| system.list_files(dir).unwrap_or_default())
    .filter(|p| crate::db::system::is_unfinished_write(p))
    .collect()
}

/// What `report` found to clean, removed: csis's own unfinished writes,
/// then, per runtime, its debris and the builds of it lineage does not
/// record (the report's foreign images); what each did.
fn clean(ws: &Workspace, system: &dyn System, report: &StateReport) -> Result<Vec<String>, String> {
    let mut done = Vec::new();
    let mut runtimes: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for d in &report.entries {
        match (d.class.as_str(), d.runtime.as_str()) {
            ("debris", "-") => {
                let path = std::path::Path::new(&d.name);
                system
                    .remove_file(path)
                    .map_err(|e| format!("state: {e}"))?;
                done.push(format!("removed {} (a write that never finished)", d.name));
            }
            ("debris", rt) => {
                runtimes.entry(rt).or_default();
            }
            ("foreign", rt) if d.kind == "image" => {
                runtimes.entry(rt).or_default().push(d.name.clone());
            }
            _ => {}
        }
    }
    let b = builders(&ws.db, ws.tree);
    for (rt, orphans) in runtimes {
        let Some(decl) = b.resolve(Vct::RuntimeBuilderModel, rt) else {
            continue;
        };
        let Some(spec) = ws.db.registry().model(decl.classification, decl.model) else {
            continue;
        };
        done.extend(
            (spec.builder)(decl)
                .clean(&ws.root, &orphans)
                .map_err(|e| format!("state: cleaning runtime '{rt}': {e}"))?
                .into_iter()
                .map(|l| format!("{rt}: {l}")),
        );
    }
    Ok(done)
}

/// Write generated/state-report.json whole when it changed, after the
/// public-safe hard rules (a refused write writes nothing).
pub fn write_report(
    system: &dyn System,
    root: &Path,
    gen_dir: &Path,
    report: &StateReport,
) -> Result<(), String> {
    let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())? + "\n";
    crate::state::meta_state::gate(system, root, &format!("generated/{REPORT}"), &text)?;
    let path = gen_dir.join(REPORT);
    // The system's errors name the file.
    crate::db::emit::write_if_changed(system, &path, text.as_bytes(), false)
        .map(|_| ())
        .map_err(|e| format!("could not write the state report: {e}"))
}

/// The hard drift of the last report, as validation errors.
pub fn check_last_report(system: &dyn System, gen_dir: &Path) -> Vec<String> {
    let path = gen_dir.join(REPORT);
    let Ok(Some(text)) = system.read_to_string(&path) else {
        return Vec::new();
    };
    let report: StateReport = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            return vec![format!(
                "state: {} could not be read ({e}); re-run 'state query'",
                path.display()
            )];
        }
    };
    report
        .entries
        .iter()
        .filter(|d| d.hard)
        .map(|d| {
            format!(
                "state: {} {} {}: {} (from state-report.json; re-run 'state query' after fixing)",
                d.class, d.kind, d.name, d.detail
            )
        })
        .collect()
}

impl Runner<'_> {
    /// Ask the runtimes what exists; the report goes to
    /// generated/state-report.json and its counts to the summary.
    pub(super) fn state_query(&mut self, summary: &mut RunSummary) -> Result<(), String> {
        let mut report = query(self.ws, self.system)?;
        let cleanable = report
            .entries
            .iter()
            .any(|d| d.class == "debris" || (d.class == "foreign" && d.kind == "image"));
        if cleanable && !self.req.options.dry_run {
            for line in clean(self.ws, self.system, &report)? {
                self.log.line(Level::Info, format!("state: {line}"));
            }
            // The report says what stands after the cleaning.
            report = query(self.ws, self.system)?;
        }
        crate::run::state_query::write_report(self.system, &self.ws.root, &self.gen_dir, &report)?;
        for line in report.lines() {
            let level = if line.starts_with("unavailable: ") {
                Level::Warn
            } else {
                Level::Info
            };
            self.log.line(level, format!("state: {line}"));
        }
        // A session that would lapse mid-run is said before anything runs.
        for line in crate::workspace::preflight::sessions(self.ws, self.system).lines() {
            let level = if line.starts_with("blocking: ") {
                Level::Warn
            } else {
                Level::Info
            };
            self.log.line(level, line);
        }
        summary.state = report.counts();
        Ok(())
    }
}
