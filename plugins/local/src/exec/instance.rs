//! An instance on the local runtime: its launch (a root of its own from
//! its build, its storages linked at their mount points, its first boot
//! in `boot.rs`), an ephemeral instance's teardown, and unmounting one
//! storage.

use std::fs;
use std::io;
use std::path::Path;

use serde_json::{Value as J, json};

use super::boot::{Machine, boot};
use super::setup::read_document;
use super::store::{confined_link, copy_tree, entry, head_path, io_err, write_atomic};
use super::{Env, field, store};

/// An ephemeral instance, once launched and bound: its directory goes (the
/// links to storages with it, never the storages).
pub(super) fn teardown(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let name = field(spec, "name")?;
    let dir = entry(&store, "instances", "instance name", name)?;
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    }
    Ok(format!("teardown: ephemeral instance {name} removed"))
}

/// A launch: the instance directory with its image (the pinned build or
/// the series head) copied as its root, its storages linked at their
/// mount points, and its first boot: the cloud-config applied, then the
/// image's first-boot unit running the launch script.
pub(super) fn launch(env: &Env, spec: &J) -> Result<String, String> {
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
    let dir = entry(&store, "instances", "instance name", name)?;
    // Like the spec, the cloud-config path is relative to the lifecycle
    // directory the step runs in.
    let doc_path = Path::new(field(spec, "cloud_config")?);
    let text = fs::read_to_string(doc_path).map_err(io_err(doc_path))?;
    let user_data = blake3::hash(text.as_bytes()).to_hex().to_string();
    // A machine that runs this build, launched from this spec and this
    // user-data, is left running: a run launches only what changed.
    if let Some(run) = running_as_launched(&dir, build.as_str(), spec, &user_data) {
        return Ok(format!(
            "instance {name} runs {build} as run {run} launched it; nothing to launch"
        ));
    }
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
    let links = dir.join("mounts");
    if links.exists() {
        fs::remove_dir_all(&links).map_err(io_err(&links))?;
    }
    let mut mounts = Vec::new();
    for s in spec
        .get("storages")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
    {
        let sname = field(s, "name")?;
        let mount = field(s, "mount_point")?.trim_start_matches('/');
        let target = entry(&store, "storages", "storage name", sname)?;
        if !target.is_dir() {
            return Err(format!(
                "instance '{name}' mounts storage '{sname}', which the store does not hold; run the storage lifecycle first"
            ));
        }
        link(&target, &confined_link(&links, "mount point", mount)?)?;
        mounts.push((target, format!("/{mount}")));
    }
    // The instance's own root: a fresh copy of its build's, as a machine
    // launched from the image starts from it.
    let root = dir.join("root");
    if root.exists() {
        fs::remove_dir_all(&root).map_err(io_err(&root))?;
    }
    copy_tree(&store.join("images").join(&build).join("root"), &root)?;
    let doc = read_document(&text).map_err(|e| format!("{}: {e}", doc_path.display()))?;
    let text = serde_json::to_string_pretty(&json!({
        "name": name,
        "build": build,
        "run": env.run_id,
        "spec": spec,
        "user_data_blake3": user_data,
    }))
    .map_err(|e| e.to_string())?;
    write_atomic(&dir.join("instance.json"), format!("{text}\n").as_bytes())?;
    let machine = Machine {
        name,
        root: &root,
        hostname: field(spec, "hostname")?,
        mounts,
        network: super::network(spec),
    };
    boot(&machine, &doc)?;
    Ok(format!("launched {name} from {build}"))
}

/// The run that launched the machine in `dir`, when it runs `build` from
/// the same spec and user-data and its root is there: nothing to launch.
/// A record from before the user-data digest never matches.
fn running_as_launched(dir: &Path, build: &str, spec: &J, user_data: &str) -> Option<String> {
    let text = fs::read_to_string(dir.join("instance.json")).ok()?;
    let launched: J = serde_json::from_str(&text).ok()?;
    // The first launch's spec names no build (the head then); the
    // launches after it name the pinned one: the build is compared alone.
    let unpinned = |s: &J| {
        let mut s = s.clone();
        if let Some(m) = s.as_object_mut() {
            m.remove("build");
        }
        s
    };
    let same = launched.get("build").and_then(J::as_str) == Some(build)
        && launched.get("spec").map(unpinned) == Some(unpinned(spec))
        && launched.get("user_data_blake3").and_then(J::as_str) == Some(user_data)
        && dir.join("root").is_dir();
    same.then(|| {
        launched
            .get("run")
            .and_then(J::as_str)
            .unwrap_or_default()
            .to_string()
    })
}

/// Unmount `mount_point` of a launched instance: remove the link its
/// launch made (never the storage it points at). Nothing mounted there is
/// already the goal; an instance the store does not hold, or something
/// there that is not a mount, is a failure.
pub fn unmount(store: &Path, instance: &str, mount_point: &str) -> Result<(), (i32, String)> {
    let dir = entry(store, "instances", "instance name", instance).map_err(|e| (1, e))?;
    if !dir.is_dir() {
        return Err((
            1,
            format!(
                "instance '{instance}' is not launched: the store holds no {}",
                dir.display()
            ),
        ));
    }
    let at = confined_link(
        &dir.join("mounts"),
        "mount point",
        mount_point.trim_start_matches('/'),
    )
    .map_err(|e| (1, e))?;
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
