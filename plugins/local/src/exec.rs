//! The local runtime's steps, as runner scripts call them:
//! `csis local bake|storage|launch|identity --spec FILE`, run from the
//! lifecycle directory with `CSIS_ROOT` and `CSIS_RUN_ID` set.
//!
//! The store under the root:
//!
//! ```text
//! <store>/images/<build_id>/root/            the image's file tree
//! <store>/images/<build_id>/manifest.json    build id, series, parent, lineage tags
//! <store>/heads/<series>@<runtime>           the newest build of a series
//! <store>/storages/<name>/                   a storage's data
//! <store>/instances/<name>/                  launch script, user-data, image link, mounts
//! <store>/identity/<kind>.json               users and groups
//! ```
//!
//! A bake works in `<store>/images/.<build_id>.partial` and is renamed into
//! place only when every modification succeeded, so a failed bake leaves
//! nothing recorded.
#![allow(clippy::disallowed_methods)] // the runtime itself: it owns the store

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value as J, json};

/// Run one step; the process exit code.
pub fn main(args: &[String]) -> u8 {
    match run(args) {
        Ok(msg) => {
            println!("{msg}");
            0
        }
        Err(e) => {
            eprintln!("csis local: {e}");
            1
        }
    }
}

struct Env {
    root: PathBuf,
    run_id: String,
}

fn env() -> Result<Env, String> {
    let var = |k: &str| {
        std::env::var(k).map_err(|_| format!("{k} is not set (the runner script sets it)"))
    };
    Ok(Env {
        root: PathBuf::from(var("CSIS_ROOT")?),
        run_id: var("CSIS_RUN_ID")?,
    })
}

fn run(args: &[String]) -> Result<String, String> {
    let usage = "usage: csis local bake|storage|launch|teardown|identity --spec FILE";
    let (verb, spec_path) = match args {
        [verb, flag, path] if flag == "--spec" => (verb.as_str(), Path::new(path)),
        _ => return Err(usage.into()),
    };
    let text =
        fs::read_to_string(spec_path).map_err(|e| format!("{}: {e}", spec_path.display()))?;
    let spec: J =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", spec_path.display()))?;
    let env = env()?;
    match verb {
        "bake" => bake(&env, &spec),
        "storage" => storage(&env, &spec),
        "launch" => launch(&env, &spec),
        "teardown" => teardown(&env, &spec),
        "identity" => identity(&env, &spec),
        _ => Err(usage.into()),
    }
}

fn field<'a>(spec: &'a J, key: &str) -> Result<&'a str, String> {
    spec.get(key)
        .and_then(J::as_str)
        .ok_or_else(|| format!("the spec has no '{key}'"))
}

fn store(env: &Env, spec: &J) -> Result<PathBuf, String> {
    Ok(env.root.join(field(spec, "store")?))
}

fn io_err(path: &Path) -> impl Fn(io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// Write a file whole: a temporary beside it, then a rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no parent", path.display()))?;
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    // Unique per process and per write: two writers never share one.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{n}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("f"),
        std::process::id()
    ));
    fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io_err(path)(e)
    })
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(io_err(to))?;
    for entry in fs::read_dir(from).map_err(io_err(from))? {
        let entry = entry.map_err(io_err(from))?;
        let ty = entry.file_type().map_err(io_err(&entry.path()))?;
        let dest = to.join(entry.file_name());
        if ty.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else if ty.is_symlink() {
            let target = fs::read_link(entry.path()).map_err(io_err(&entry.path()))?;
            std::os::unix::fs::symlink(target, &dest).map_err(io_err(&dest))?;
        } else {
            fs::copy(entry.path(), &dest).map_err(io_err(&dest))?;
        }
    }
    Ok(())
}

fn head_path(store: &Path, series: &str, runtime: &str) -> PathBuf {
    store.join("heads").join(format!("{series}@{runtime}"))
}

/// The artifact of a template build (docs/templates-in-csis.md): every
/// image file (`*.raw`, `*.qcow2`, ... optionally compressed) under the
/// work directory image-composer-tool was handed, gathered flat into a
/// staging tree beside it (`<work>/../artifact/`), which becomes the base
/// image's store entry. None is a refusal naming the directory.
fn template_artifacts(env: &Env, work: &str) -> Result<PathBuf, String> {
    let dir = env.root.join(work);
    let mut found = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(ty) = e.file_type() else { continue };
            if ty.is_dir() {
                stack.push(p);
            } else if ty.is_file()
                && csis_plugin_api::is_template_artifact(&e.file_name().to_string_lossy())
            {
                found.push(p);
            }
        }
    }
    found.sort();
    if found.is_empty() {
        return Err(format!(
            "image-composer-tool left no image artifact (*.raw, *.qcow2, *.vhd, *.vhdx, *.vmdk, *.vdi, *.tar, *.iso, *.img, optionally .gz/.xz/.zst/.bz2) under {}",
            dir.display()
        ));
    }
    let staging = dir.with_file_name("artifact");
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    for p in &found {
        let name = p.file_name().unwrap_or_default();
        let to = staging.join(name);
        if to.exists() {
            return Err(format!(
                "two image artifacts named {} under {}; the local runtime keeps one file per name",
                name.to_string_lossy(),
                dir.display()
            ));
        }
        fs::copy(p, &to).map_err(|e| format!("copying {}: {e}", p.display()))?;
    }
    Ok(staging)
}

/// Bake: copy the parent (a vendor tree, or the parent series' newest
/// build), apply each modification with the build's root in
/// `$CSIS_IMAGE_ROOT`, record the manifest, move it into place.
fn bake(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let series = field(spec, "series")?;
    let runtime = field(spec, "runtime")?;
    let build_id = crate::build_id(series, runtime, &env.run_id);
    let (parent_root, parent_id) = match field(spec, "kind")? {
        "base" if spec.get("vendor_kind").and_then(J::as_str) == Some("template-build") => (
            template_artifacts(env, field(spec, "vendor")?)?,
            "vendor".to_string(),
        ),
        "base" => {
            let vendor = env.root.join(field(spec, "vendor")?);
            if !vendor.is_dir() {
                return Err(format!(
                    "vendor image {} is not a directory (the OS builder entry's image_id names it, relative to the root)",
                    vendor.display()
                ));
            }
            (vendor, "vendor".to_string())
        }
        _ => {
            let parent = field(spec, "parent")?;
            // Pinned: exactly the recorded build. Otherwise the parent
            // series' newest build, which may be this run's.
            let id = match spec.get("parent_build").and_then(J::as_str) {
                Some(pinned) => pinned.to_string(),
                None => fs::read_to_string(head_path(&store, parent, runtime))
                    .map_err(|_| format!("no build of '{parent}' on runtime '{runtime}' in the store; bake the parent first"))?
                    .trim()
                    .to_string(),
            };
            let root = store.join("images").join(&id).join("root");
            if !root.is_dir() {
                return Err(format!(
                    "parent build {id} of '{series}' is not in the store"
                ));
            }
            (root, id)
        }
    };
    let images = store.join("images");
    let partial = images.join(format!(".{build_id}.partial"));
    let _ = fs::remove_dir_all(&partial);
    let result = (|| {
        let root = partial.join("root");
        copy_tree(&parent_root, &root)?;
        let mut applied = Vec::new();
        for m in spec
            .get("modifications")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
        {
            applied.push(apply_mod(env, series, &root, m)?);
        }
        let fingerprint = field(spec, "fingerprint").unwrap_or_default();
        let types = |k: &str| -> String {
            spec.get(k)
                .and_then(J::as_array)
                .map(|a| a.iter().filter_map(J::as_str).collect::<Vec<_>>().join(","))
                .unwrap_or_default()
        };
        let manifest = json!({
            "build_id": build_id,
            "series": series,
            "runtime": runtime,
            "parent": parent_id,
            "input_fingerprint": fingerprint,
            "run": env.run_id,
            "modifications": applied,
            "tags": {
                "csis_series": series,
                "csis_parent": parent_id,
                "csis_run": env.run_id,
                "csis_fingerprint": fingerprint.chars().take(16).collect::<String>(),
                "csis_identity_types": types("identity_types"),
                "csis_storage_types": types("storage_types"),
            },
        });
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
        write_atomic(
            &partial.join("manifest.json"),
            format!("{text}\n").as_bytes(),
        )
    })();
    if let Err(e) = result {
        let _ = fs::remove_dir_all(&partial);
        return Err(e);
    }
    let dest = images.join(&build_id);
    let _ = fs::remove_dir_all(&dest);
    fs::rename(&partial, &dest).map_err(io_err(&dest))?;
    write_atomic(
        &head_path(&store, series, runtime),
        format!("{build_id}\n").as_bytes(),
    )?;
    Ok(format!("baked {build_id} from {parent_id}"))
}

/// One bash modification: skipped when every `ensure` command already
/// succeeds, else its script and script files run in order.
fn apply_mod(env: &Env, series: &str, root: &Path, m: &J) -> Result<J, String> {
    let name = m.get("name").and_then(J::as_str).unwrap_or("?");
    let sh = |script: &str| -> Result<Option<i32>, String> {
        let status = Command::new("bash")
            .arg("-c")
            .arg(script)
            .env("CSIS_IMAGE_ROOT", root)
            .current_dir(&env.root)
            .status()
            .map_err(|e| format!("modification '{name}' of image '{series}': bash: {e}"))?;
        Ok(status.code())
    };
    let ensure: Vec<&str> = m
        .get("ensure")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(J::as_str)
        .collect();
    if !ensure.is_empty()
        && ensure
            .iter()
            .try_fold(true, |ok, c| Ok::<_, String>(ok && sh(c)? == Some(0)))?
    {
        return Ok(json!({"name": name, "operation": "already applied"}));
    }
    let mut scripts: Vec<String> = m
        .get("script")
        .and_then(J::as_str)
        .map(str::to_string)
        .into_iter()
        .collect();
    for file in m
        .get("scripts")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(J::as_str)
    {
        scripts.push(format!(
            "bash {}",
            shell_quote(&env.root.join(file).to_string_lossy())
        ));
    }
    for s in scripts {
        match sh(&s)? {
            Some(0) => {}
            code => {
                return Err(format!(
                    "modification '{name}' of image '{series}' failed (exit {}); nothing was recorded for this build",
                    code.map_or("by a signal".into(), |c| c.to_string())
                ));
            }
        }
    }
    Ok(json!({"name": name, "operation": "applied"}))
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A storage: its directory, created once and never emptied here; removed
/// with its record when the storage is requested destroyed.
fn storage(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let name = field(spec, "name")?;
    let dir = store.join("storages").join(name);
    match spec.get("state").and_then(J::as_str).unwrap_or("active") {
        "active" => {}
        "destroyed" => {
            if dir.exists() {
                fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
            }
            let record = store.join("storages").join(format!("{name}.json"));
            if record.exists() {
                fs::remove_file(&record).map_err(io_err(&record))?;
            }
            return Ok(format!("storage {name} destroyed"));
        }
        other => {
            return Err(format!(
                "storage '{name}': the local runtime does not realize the state '{other}'"
            ));
        }
    }
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let text = serde_json::to_string_pretty(spec).map_err(|e| e.to_string())?;
    write_atomic(
        &store.join("storages").join(format!("{name}.json")),
        format!("{text}\n").as_bytes(),
    )?;
    Ok(format!("storage {name} at {}", dir.display()))
}

/// A launch: the instance directory with its image (the series head),
/// its storages mounted (linked) at their mount points, its user-data, run
/// once.
/// An ephemeral instance, once launched and bound: its directory goes (the
/// links to storages with it, never the storages).
fn teardown(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let name = field(spec, "name")?;
    let dir = store.join("instances").join(name);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    }
    Ok(format!("teardown: ephemeral instance {name} removed"))
}

fn launch(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let name = field(spec, "name")?;
    let image = field(spec, "image")?;
    let runtime = field(spec, "runtime")?;
    // A bound instance runs its pinned build; a new one its image's head.
    let build = match spec.get("build").and_then(J::as_str) {
        Some(pinned) => pinned.to_string(),
        None => fs::read_to_string(head_path(&store, image, runtime))
            .map_err(|_| {
                format!(
                    "instance '{name}': no build of image '{image}' on runtime '{runtime}' in the store"
                )
            })?
            .trim()
            .to_string(),
    };
    if !store.join("images").join(&build).is_dir() {
        return Err(format!(
            "instance '{name}': build {build} is not in the store"
        ));
    }
    let dir = store.join("instances").join(name);
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let link = |target: &Path, at: &Path| -> Result<(), String> {
        if let Some(parent) = at.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        let _ = fs::remove_file(at);
        std::os::unix::fs::symlink(target, at).map_err(io_err(at))
    };
    link(
        &store.join("images").join(&build).join("root"),
        &dir.join("image"),
    )?;
    // The mounts are exactly the declared ones: links left by an earlier
    // launch are removed first (never the storages they point at).
    let mounts = dir.join("mounts");
    if mounts.exists() {
        fs::remove_dir_all(&mounts).map_err(io_err(&mounts))?;
    }
    for s in spec
        .get("storages")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
    {
        let sname = field(s, "name")?;
        let mount = field(s, "mount_point")?.trim_start_matches('/');
        let target = store.join("storages").join(sname);
        if !target.is_dir() {
            return Err(format!(
                "instance '{name}' mounts storage '{sname}', which the store does not hold; run the storage lifecycle first"
            ));
        }
        link(&target, &dir.join("mounts").join(mount))?;
    }
    // Like the spec, the user-data path is relative to the lifecycle
    // directory the step runs in.
    let ud_path = Path::new(field(spec, "user_data")?);
    let ud = fs::read(ud_path).map_err(io_err(ud_path))?;
    write_atomic(&dir.join("user-data"), &ud)?;
    let launch = format!(
        "#!/usr/bin/env bash\n# csis launch script for instance {name} on the local runtime\nset -euo pipefail\nexport CSIS_INSTANCE_DIR=\"$(cd \"$(dirname \"$0\")\" && pwd)\"\nbash \"$CSIS_INSTANCE_DIR/user-data\"\n"
    );
    write_atomic(&dir.join("launch.sh"), launch.as_bytes())?;
    let text = serde_json::to_string_pretty(
        &json!({"name": name, "build": build, "run": env.run_id, "spec": spec}),
    )
    .map_err(|e| e.to_string())?;
    write_atomic(&dir.join("instance.json"), format!("{text}\n").as_bytes())?;
    let status = Command::new("bash")
        .arg(dir.join("launch.sh"))
        .current_dir(&dir)
        .status()
        .map_err(|e| format!("instance '{name}': launch: {e}"))?;
    if !status.success() {
        return Err(format!(
            "instance '{name}': its user-data failed ({status})"
        ));
    }
    Ok(format!("launched {name} from {build}"))
}

/// Unmount `mount_point` of a launched instance: remove the link its
/// launch made (never the storage it points at). Nothing mounted there is
/// already the goal; an instance the store does not hold, or something
/// there that is not a mount, is a failure.
pub fn unmount(store: &Path, instance: &str, mount_point: &str) -> Result<(), (i32, String)> {
    let dir = store.join("instances").join(instance);
    if !dir.is_dir() {
        return Err((
            1,
            format!(
                "instance '{instance}' is not launched: the store holds no {}",
                dir.display()
            ),
        ));
    }
    let at = dir.join("mounts").join(mount_point.trim_start_matches('/'));
    match fs::symlink_metadata(&at) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err((1, format!("{}: {e}", at.display()))),
        Ok(m) if m.file_type().is_symlink() => {
            fs::remove_file(&at).map_err(|e| (1, format!("{}: {e}", at.display())))
        }
        Ok(_) => Err((
            1,
            format!(
                "{} is not a mount (a link to a storage); it is left as it is",
                at.display()
            ),
        )),
    }
}

/// Users or groups, recorded in the store.
fn identity(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let kind = field(spec, "kind")?;
    let text = serde_json::to_string_pretty(spec.get("entries").unwrap_or(&J::Null))
        .map_err(|e| e.to_string())?;
    write_atomic(
        &store.join("identity").join(format!("{kind}.json")),
        format!("{text}\n").as_bytes(),
    )?;
    Ok(format!("identity: {kind} recorded"))
}

/// Remove a build from the store. A series head that named it falls back to
/// the newest build of the series still in the store, or goes.
pub fn dispose(store: &Path, build_id: &str) -> Result<(), String> {
    let dir = store.join("images").join(build_id);
    let manifest: J = fs::read_to_string(dir.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(J::Null);
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
        let prefix = format!("{series}-{runtime}-");
        let mut remaining: Vec<String> = fs::read_dir(store.join("images"))
            .map_err(io_err(&store.join("images")))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with(&prefix))
            .collect();
        remaining.sort();
        match remaining.last() {
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
        let manifest: J = fs::read_to_string(store.join("images").join(&id).join("manifest.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(J::Null);
        if manifest.get("runtime").and_then(J::as_str) != Some(runtime) {
            continue;
        }
        let series = manifest
            .pointer("/tags/csis_series")
            .and_then(J::as_str)
            .unwrap_or_default();
        seen.images.push(csis_plugin_api::ObservedImage {
            build_id: id,
            series: series.to_string(),
        });
    }
    seen.storages = names(&store.join("storages"), true)?;
    seen.instances = names(&store.join("instances"), true)?;
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
        let removed = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.map_err(io_err(&path))?;
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
