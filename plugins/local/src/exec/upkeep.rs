//! The runtime's hooks on the store outside a runner step: what it holds
//! (`observe`, with the debris an interrupted step left), removing a build
//! (`dispose`), and removing debris and unrecorded builds (`clean`).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value as J;

use super::store::{head_path, io_err, write_atomic};

fn read_manifest(build_dir: &Path) -> J {
    fs::read_to_string(build_dir.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(J::Null)
}

/// Set `tags` on a build's manifest, keeping the others (an empty value
/// removes the tag). A new
/// `csis_series` moves the build to that series, and the series head
/// with it when it was the head.
pub fn retag(
    store: &Path,
    build_id: &str,
    tags: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    let dir = store.join("images").join(build_id);
    let mut m = read_manifest(&dir);
    let (Some(series), Some(runtime)) = (
        m.get("series").and_then(J::as_str).map(str::to_string),
        m.get("runtime").and_then(J::as_str).map(str::to_string),
    ) else {
        return Err(format!("the store holds no build {build_id}"));
    };
    let Some(have) = m.get_mut("tags").and_then(J::as_object_mut) else {
        return Err(format!("build {build_id}'s manifest carries no tags"));
    };
    for (k, v) in tags {
        if v.is_empty() {
            have.remove(k);
        } else {
            have.insert(k.clone(), J::String(v.clone()));
        }
    }
    let renamed = tags.get("csis_series").filter(|to| **to != series);
    if let (Some(to), Some(obj)) = (renamed, m.as_object_mut()) {
        obj.insert("series".into(), J::String(to.clone()));
    }
    let text = serde_json::to_string_pretty(&m).map_err(|e| e.to_string())?;
    write_atomic(&dir.join("manifest.json"), format!("{text}\n").as_bytes())?;
    if let Some(to) = renamed {
        let old = head_path(store, &series, &runtime);
        if fs::read_to_string(&old).is_ok_and(|h| h.trim() == build_id) {
            write_atomic(
                &head_path(store, to, &runtime),
                format!("{build_id}\n").as_bytes(),
            )?;
            fs::remove_file(&old).map_err(io_err(&old))?;
        }
    }
    Ok(())
}

/// Remove a build from the store. A series head that named it falls back to
/// the newest build of the series still in the store, or goes.
pub fn dispose(store: &Path, build_id: &str) -> Result<(), String> {
    let dir = store.join("images").join(build_id);
    let manifest = read_manifest(&dir);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    }
    let (Some(series), Some(runtime)) = (
        manifest.get("series").and_then(J::as_str),
        manifest.get("runtime").and_then(J::as_str),
    ) else {
        return Ok(());
    };
    let head = head_path(store, series, runtime);
    if fs::read_to_string(&head)
        .map(|h| h.trim() == build_id)
        .unwrap_or(false)
    {
        // By the manifest's series, not the id's prefix (a relabelled
        // build keeps the id it was baked with), newest run last.
        let mut remaining: Vec<(String, String)> = fs::read_dir(store.join("images"))
            .map_err(io_err(&store.join("images")))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let m = read_manifest(&e.path());
                let of = |k: &str| m.get(k).and_then(J::as_str).map(str::to_string);
                let ours = of("series")? == series && of("runtime")? == runtime;
                ours.then_some((of("run").unwrap_or_default(), of("build_id")?))
            })
            .collect();
        remaining.sort();
        match remaining.last().map(|(_, id)| id) {
            Some(newest) => write_atomic(&head, format!("{newest}\n").as_bytes())?,
            None => fs::remove_file(&head).map_err(io_err(&head))?,
        }
    }
    Ok(())
}

/// What the store holds for `runtime`: builds whose manifest names it (a
/// bake still in progress is not one), storages and instances by name.
pub fn observe(store: &Path, runtime: &str) -> Result<csis_plugin_api::Observed, String> {
    let names = |dir: &Path, dirs_only: bool| -> Result<Vec<String>, String> {
        if !dir.is_dir() {
            return Ok(Vec::new());
        }
        let mut out: Vec<String> = fs::read_dir(dir)
            .map_err(io_err(dir))?
            .filter_map(|e| e.ok())
            .filter(|e| !dirs_only || e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| !n.starts_with('.'))
            .collect();
        out.sort();
        Ok(out)
    };
    let mut seen = csis_plugin_api::Observed::default();
    for id in names(&store.join("images"), true)? {
        let manifest = read_manifest(&store.join("images").join(&id));
        if manifest.get("runtime").and_then(J::as_str) != Some(runtime) {
            continue;
        }
        let series = manifest
            .pointer("/tags/csis_series")
            .and_then(J::as_str)
            .unwrap_or_default();
        let tags = manifest
            .get("tags")
            .and_then(J::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        seen.images.push(csis_plugin_api::ObservedImage {
            build_id: id,
            series: series.to_string(),
            tags,
        });
    }
    seen.storages = names(&store.join("storages"), true)?;
    seen.instances = names(&store.join("instances"), true)?
        .into_iter()
        .map(csis_plugin_api::ObservedInstance::named)
        .collect();
    seen.debris = debris(store)
        .into_iter()
        .map(|(path, what)| (path.display().to_string(), what.to_string()))
        .collect();
    Ok(seen)
}

/// What an interrupted step leaves in the store: a bake's
/// `images/.<build>.partial` (the bake never finished) and the
/// `.<name>.tmp` files of a write that never reached its rename, in the
/// directories csis writes itself (never inside an image's root or a
/// storage's data, which are the user's).
fn debris(store: &Path) -> Vec<(PathBuf, &'static str)> {
    let entries = |dir: &Path| -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        out.sort();
        out
    };
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default()
    };
    let is_tmp = |p: &Path| {
        let n = name(p);
        n.starts_with('.') && n.ends_with(".tmp")
    };
    let mut dirs = vec![store.join("heads"), store.join("identity")];
    let images = entries(&store.join("images"));
    let instances = entries(&store.join("instances"));
    dirs.extend(
        images
            .iter()
            .chain(&instances)
            .filter(|p| p.is_dir())
            .cloned(),
    );
    let mut out = Vec::new();
    for p in &images {
        let n = name(p);
        if n.starts_with('.') && n.ends_with(".partial") {
            out.push((p.clone(), "a bake that never finished"));
        } else if is_tmp(p) {
            out.push((p.clone(), "a write that never finished"));
        }
    }
    for dir in dirs {
        out.extend(
            entries(&dir)
                .into_iter()
                .filter(|p| is_tmp(p))
                .map(|p| (p, "a write that never finished")),
        );
    }
    out.sort();
    out
}

/// Remove the store's debris and the builds lineage does not record; a
/// line per removal.
pub fn clean(store: &Path, runtime: &str, orphans: &[String]) -> Result<Vec<String>, String> {
    let mut done = Vec::new();
    for (path, what) in debris(store) {
        if path.is_dir() {
            super::layer::remove_bake_dir(&path)?;
        } else {
            fs::remove_file(&path).map_err(io_err(&path))?;
        }
        done.push(format!("removed {} ({what})", path.display()));
    }
    for build in orphans {
        let dir = store.join("images").join(build);
        let ours = fs::read_to_string(dir.join("manifest.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<J>(&t).ok())
            .is_some_and(|m| m.get("runtime").and_then(J::as_str) == Some(runtime));
        if !ours {
            continue;
        }
        dispose(store, build)?;
        done.push(format!(
            "removed build {build}, which lineage does not record (its run ended before recording it)"
        ));
    }
    Ok(done)
}
