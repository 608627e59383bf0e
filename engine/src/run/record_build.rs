//! After a bake: the build's record in meta-state/lineage.yaml and its
//! image's pin, from the build manifest the bake step wrote.

use std::collections::BTreeMap;

use serde_json::Value as J;

use crate::db::system::System;
use crate::load::builders::builders;
use crate::state::lineage::{
    BuildRecord, Capabilities, Lineage, PinMove, Pins, read_json, short_fingerprint, write_json,
};
use crate::workspace::Workspace;

/// The record's `tests`: what the bake's manifest says its in-bake
/// verification ran (`in_bake.checks`: the local runtime's manifest, a
/// packer build's custom_data), else the count of the declared test kinds
/// (a packer template from before the list).
fn in_bake_record(manifest: &J, declared: usize) -> J {
    match manifest.get("in_bake") {
        Some(ran) => serde_json::json!({
            "in_bake": true,
            "assertions": ran.get("assertions").cloned().unwrap_or(J::from(0)),
            "checks": ran.get("checks").cloned().unwrap_or(J::Array(Vec::new())),
        }),
        None => serde_json::json!({ "in_bake": true, "assertions": declared }),
    }
}

/// A bake's manifest, read and made csis's own shape (`build_id`,
/// `series`, `runtime`, `parent`, `input_fingerprint`, `run`, `tags`,
/// `modifications`, `in_bake`). A packer bake's parent found by filter
/// stays `series:<name>` until its record.
struct Baked {
    path: std::path::PathBuf,
    m: J,
    /// Whether a packer build made it: it applied every modification of
    /// the fingerprint it was baked with.
    packer: bool,
}

impl Baked {
    fn get(&self, k: &str) -> String {
        self.m
            .get(k)
            .and_then(J::as_str)
            .unwrap_or_default()
            .to_string()
    }

    fn key(&self) -> String {
        format!("{}@{}", self.get("series"), self.get("runtime"))
    }
}

fn read_manifest(
    ws: &Workspace,
    system: &dyn System,
    path: &std::path::Path,
) -> Result<Baked, String> {
    let text = system
        .read_to_string(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .ok_or_else(|| format!("{}: no such build manifest", path.display()))?;
    let m: J = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let packer = m.get("builds").is_some();
    let m = if packer {
        from_packer(ws, path, &m)?
    } else {
        m
    };
    let baked = Baked {
        path: path.to_path_buf(),
        m,
        packer,
    };
    if [
        baked.get("build_id"),
        baked.get("series"),
        baked.get("runtime"),
    ]
    .iter()
    .any(String::is_empty)
    {
        return Err(format!(
            "{}: a build manifest needs build_id, series and runtime",
            path.display()
        ));
    }
    Ok(baked)
}

/// The refusal of a bake whose input fingerprint is not the one this
/// tree's plan computes: it was baked from another commit (a CI shard of
/// an older plan) or the tree changed after it.
fn fingerprint_refusal(ws: &Workspace, b: &Baked) -> Option<String> {
    let key = crate::plan::fingerprint::SeriesKey::new(&ws.db, b.get("series"), b.get("runtime"));
    let planned = crate::plan::fingerprint::input_fingerprint(&ws.db, ws.tree, key)
        .as_ref()
        .map(|f| f.hex.clone());
    let baked = b.get("input_fingerprint");
    let at = b.path.display();
    match planned {
        Some(p) if p == baked => None,
        Some(p) => Some(format!(
            "{at}: {} was baked with input fingerprint {}, but this tree plans {}: it is a bake of another commit, or the tree changed after it; bake it again from this tree",
            b.key(),
            if baked.is_empty() {
                "(none)".to_string()
            } else {
                short_fingerprint(&baked)
            },
            short_fingerprint(&p)
        )),
        None => Some(format!(
            "{at}: {} is not in this tree's plan (no such image or OS builder on that runtime)",
            b.key()
        )),
    }
}

/// `csis lineage record --manifest FILE...`: after bakes, append each
/// build to meta-state/lineage.yaml and bind (or, under follow, move) its
/// image's pin to the parent build it was baked from. Every manifest of a
/// build not yet recorded must carry the input fingerprint this tree's
/// plan computes, or nothing is recorded. Parents are recorded before
/// their children (a child baked from its parent's newest build names it
/// once the parent is recorded), whatever the order of the files.
/// Recording a build twice changes nothing. Returns what was done, for
/// the log.
pub fn record_builds(
    ws: &Workspace,
    system: &dyn System,
    paths: &[std::path::PathBuf],
) -> Result<String, String> {
    let mut baked = paths
        .iter()
        .map(|p| read_manifest(ws, system, p))
        .collect::<Result<Vec<_>, _>>()?;
    let lineage: Lineage = read_json(system, &ws.root, "lineage.yaml")?;
    let refused: Vec<String> = baked
        .iter()
        .filter(|b| lineage.build(&b.get("build_id")).is_none())
        .filter_map(|b| fingerprint_refusal(ws, b))
        .collect();
    match refused.as_slice() {
        [] => {}
        [one] => return Err(format!("{one}; nothing is recorded")),
        all => {
            return Err(format!(
                "{} manifests do not match this tree's plan; nothing is recorded:\n  {}",
                all.len(),
                all.join("\n  ")
            ));
        }
    }
    // Stable: manifests of one depth keep the order they were given in.
    baked.sort_by_cached_key(|b| {
        crate::plan::fingerprint::chain_root(&ws.db, ws.tree, &b.get("series"))
            .map_or(0, |(_, chain)| chain.len())
    });
    let mut done = Vec::new();
    for b in &baked {
        done.push(record(ws, system, b)?);
    }
    Ok(done.join("\n"))
}

/// Record one build and bind its pin.
fn record(ws: &Workspace, system: &dyn System, b: &Baked) -> Result<String, String> {
    let (m, packer) = (&b.m, b.packer);
    let s = |k: &str| b.get(k);
    let (build_id, series, runtime) = (s("build_id"), s("series"), s("runtime"));
    let db = &ws.db;
    let tree = ws.tree;
    let key = crate::plan::fingerprint::SeriesKey::new(db, series.clone(), runtime.clone());
    let fp = crate::plan::fingerprint::fingerprint_detail(db, tree, key);
    let fp_fields = fp.as_ref().map(|f| f.fields.clone()).unwrap_or(J::Null);
    let operations: BTreeMap<String, String> = m
        .get("modifications")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(|x| {
            Some((
                x.get("name")?.as_str()?.to_string(),
                x.get("operation")?.as_str()?.to_string(),
            ))
        })
        .collect();
    let mods: Vec<J> = fp_fields
        .get("modifications")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .map(|x| {
            let name = x.get("name").and_then(J::as_str).unwrap_or_default();
            let operation = if packer {
                Some("applied")
            } else {
                operations.get(name).map(String::as_str)
            };
            serde_json::json!({
                "name": name,
                "content_hash": x.get("content_hash"),
                "operation": operation,
                "run": s("run"),
            })
        })
        .collect();
    let tags = m.get("tags").cloned().unwrap_or(J::Null);
    let types = |k: &str| -> Vec<String> {
        tags.get(k)
            .and_then(J::as_str)
            .map(|v| {
                v.split(',')
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let assertions = fp_fields
        .get("verification")
        .and_then(J::as_object)
        .map_or(0, |v| v.len());
    let mut record = BuildRecord {
        build_id: build_id.clone(),
        series: series.clone(),
        runtime: runtime.clone(),
        name: series.clone(),
        // Known under the records lock.
        parent: String::new(),
        input_fingerprint: s("input_fingerprint"),
        run: s("run"),
        capabilities: Capabilities {
            identity_types: types("csis_identity_types"),
            storage_types: types("csis_storage_types"),
        },
        mods,
        tests: in_bake_record(m, assertions),
        update: fp_fields.get("update").cloned().unwrap_or(J::Null),
        chain: crate::plan::fingerprint::chain_root(db, tree, &series)
            .map(|(_, c)| c)
            .unwrap_or_default(),
        // Inputs only when they are the ones the build was baked with.
        inputs: fp
            .filter(|f| f.hex == s("input_fingerprint"))
            .map(|f| f.inputs())
            .unwrap_or_default(),
    };
    let root = &ws.root;
    // The bakes of one run record at once, each under the run's tree
    // lock: one read-modify-write at a time.
    let _records = crate::run::lock::lock_records(system, root)?;
    // Each file is written whole; recording twice is harmless, so a run
    // killed between the two writes is completed by recording again.
    let mut lineage: Lineage = read_json(system, root, "lineage.yaml")?;
    let mut done = Vec::new();
    let parent = if let Some(recorded) = lineage.build(&build_id) {
        done.push(format!("lineage: {build_id} is already recorded"));
        recorded.parent.clone()
    } else {
        record.parent = newest_parent(&lineage, b, s("parent"))?;
        let parent = record.parent.clone();
        lineage.builds.push(record);
        write_json(system, root, "lineage.yaml", &lineage)?;
        done.push(format!(
            "lineage: recorded {build_id} ({series}@{runtime}, fingerprint {})",
            short_fingerprint(&s("input_fingerprint"))
        ));
        parent
    };
    if parent != "vendor" && !parent.is_empty() {
        let mut pins: Pins = read_json(system, root, "pins.yaml")?;
        let pin_key = format!("{series}@{runtime}");
        let policy = {
            let id = crate::load::items::ItemId::new(
                db,
                tree,
                csis_model::ItemKind::IMAGES,
                series.as_str(),
            );
            match crate::load::items_model::structured_item(db, id)
                .item
                .as_deref()
            {
                Some(csis_model::models::Item::Image(img)) => img.parent_policy.clone(),
                _ => "pinned".into(),
            }
        };
        let current = pins.images.get(&pin_key).cloned();
        let op = match &current {
            None => Some("bind"),
            Some(c) if *c != parent && policy == "follow" => Some("follow"),
            _ => None,
        };
        if let Some(op) = op {
            pins.images.insert(pin_key.clone(), parent.clone());
            pins.upgrades.push(PinMove {
                kind: "image".into(),
                name: pin_key.clone(),
                from: current,
                to: Some(parent.clone()),
                run: s("run"),
                op: op.into(),
            });
            write_json(system, root, "pins.yaml", &pins)?;
            done.push(format!("pins: {pin_key} -> {parent} ({op})"));
        }
    }
    Ok(done.join("\n"))
}

/// A packer manifest (the manifest post-processor's `builds[]` and
/// `last_run_uuid`) as the build manifest [`record_builds`] reads: the last
/// build of the last run, its `custom_data` (series, runtime, fingerprint,
/// parent, run, identity_types, storage_types) and its artifact id turned
/// into the build id by the runtime's `build_id_from_artifact`.
fn from_packer(ws: &Workspace, path: &std::path::Path, m: &J) -> Result<J, String> {
    let at = path.display();
    let last_run = m
        .get("last_run_uuid")
        .and_then(J::as_str)
        .unwrap_or_default();
    let build = m
        .get("builds")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .rfind(|b| b.get("packer_run_uuid").and_then(J::as_str) == Some(last_run))
        .ok_or_else(|| {
            format!("{at}: the packer manifest has no build of its last run ({last_run})")
        })?;
    let data = build.get("custom_data").cloned().unwrap_or(J::Null);
    let s = |k: &str| {
        data.get(k)
            .and_then(J::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (series, runtime) = (s("series"), s("runtime"));
    if series.is_empty() || runtime.is_empty() {
        return Err(format!(
            "{at}: the packer build's custom_data needs series and runtime (the packer image builder writes them)"
        ));
    }
    let artifact = build
        .get("artifact_id")
        .and_then(J::as_str)
        .unwrap_or_default();
    let decl = builders(&ws.db, ws.tree)
        .resolve(csis_model::Vct::RuntimeBuilderModel, &runtime)
        .ok_or_else(|| format!("{at}: runtime '{runtime}' is not declared"))?;
    let hooks = crate::db::Db::registry(&ws.db)
        .model(decl.classification, decl.model)
        .map(|spec| (spec.builder)(decl))
        .ok_or_else(|| format!("{at}: runtime '{runtime}' has no registered model"))?;
    let build_id = hooks.build_id_from_artifact(artifact).ok_or_else(|| {
        format!(
            "{at}: artifact id '{artifact}' is not a build of runtime '{runtime}' (type {})",
            decl.model
        )
    })?;
    let mut manifest = serde_json::json!({
        "build_id": build_id,
        "series": series,
        "runtime": runtime,
        "parent": s("parent"),
        "input_fingerprint": s("fingerprint"),
        "run": s("run"),
        "tags": {
            "csis_identity_types": s("identity_types"),
            "csis_storage_types": s("storage_types"),
        },
    });
    // The template's verification ran last and passed, or there would
    // be no build: what it checked is what ran. A template written before
    // csis listed them leaves the declared count.
    if let Ok(J::Array(checks)) = serde_json::from_str::<J>(&s("in_bake_checks"))
        && let J::Object(m) = &mut manifest
    {
        m.insert(
            "in_bake".into(),
            serde_json::json!({"assertions": checks.len(), "checks": checks}),
        );
    }
    Ok(manifest)
}

/// The parent build a bake names: a parent found by filter at bake time
/// (`series:<name>`) is the parent series' newest recorded build on the
/// runtime, read under the records lock.
fn newest_parent(lineage: &Lineage, b: &Baked, parent: String) -> Result<String, String> {
    let Some(p) = parent.strip_prefix("series:") else {
        return Ok(parent);
    };
    let (series, runtime) = (b.get("series"), b.get("runtime"));
    lineage
        .head(p, &runtime)
        .map(|x| x.build_id.clone())
        .ok_or_else(|| {
            format!(
                "{}: '{series}' was baked from the newest build of '{p}', but lineage records no build of '{p}' on runtime '{runtime}'",
                b.path.display()
            )
        })
}
