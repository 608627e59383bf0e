//! A bake: the parent it starts from (a vendor tree, a distribution's
//! root, a template build's artifacts, or a parent build in the store), the modifications applied
//! in a `.partial` directory, the manifest, and the move into place with
//! the series head. How one modification runs is `modification.rs`.

use std::fs;
use std::path::PathBuf;

use serde_json::{Value as J, json};

use csis_plugin_api::first_boot;

use super::distribution::{cached_root, describe};
use super::layer::{Layer, apply_upper, remove_bake_dir};
use super::modification::apply_mod;
use super::sandbox::{BASH, Sandbox, exit_text, resolve_inside};
use super::store::{
    confined, copy_tree, head_path, io_err, link_tree, unpack_root, unpack_root_archives,
    write_atomic,
};
use super::{Env, field, network, store};

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

/// Every base image carries the csis first-boot unit, as a packer base
/// bake installs it: installed inside the root by the same lines. A root
/// without a shell (a template build of disk images only) has no system
/// to boot; it gets none, and an instance of it is refused at launch.
fn install_first_boot_unit(series: &str, root: &std::path::Path) -> Result<(), String> {
    if resolve_inside(root, BASH).is_none() {
        return Ok(());
    }
    let what = format!("base image '{series}': installing the csis first-boot unit");
    match Sandbox::new(root).run_bash(&what, &first_boot::install_lines().join("\n"))? {
        Some(0) => Ok(()),
        code => Err(format!("{what} failed (exit {})", exit_text(code))),
    }
}

/// The in-bake verification, the bake's last step inside its root: the
/// spec's declared tests, then, in a root that can boot (it holds bash),
/// that the csis first-boot unit is installed, as every packer bake
/// asserts it. The first assertion that fails fails the bake (its line on
/// stderr names what is missing) and nothing is recorded. What ran, for
/// the build's record.
fn verify_in_bake(
    series: &str,
    build: &Sandbox,
    spec: &J,
    bootable: bool,
) -> Result<Vec<String>, String> {
    let mut checks: Vec<(String, String)> = spec
        .get("in_bake_tests")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some((
                c.get("what")?.as_str()?.to_string(),
                c.get("line")?.as_str()?.to_string(),
            ))
        })
        .collect();
    if bootable {
        checks.push((
            first_boot::INSTALLED_CHECK.into(),
            first_boot::installed_assertion(),
        ));
    }
    if checks.is_empty() {
        return Ok(Vec::new());
    }
    let what = format!("in-bake verification of image '{series}'");
    let script: Vec<&str> = checks.iter().map(|(_, line)| line.as_str()).collect();
    match build.run_bash(&what, &script.join("\n"))? {
        Some(0) => Ok(checks.into_iter().map(|(what, _)| what).collect()),
        code => Err(format!(
            "{what} failed (exit {}); nothing was recorded for this build",
            exit_text(code)
        )),
    }
}

/// Bake: copy the parent (a vendor tree, or the parent series' newest
/// build), apply each modification with the build's root in
/// `$CSIS_IMAGE_ROOT`, record the manifest, move it into place.
pub(super) fn bake(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let series = field(spec, "series")?;
    let runtime = field(spec, "runtime")?;
    let build_id = crate::build_id(series, runtime, &env.run_id);
    let template_build = spec.get("vendor_kind").and_then(J::as_str) == Some("template-build");
    // A base from a distribution (its cached root) or from a vendor
    // tarball is unpacked, not copied.
    let mut tarball = None;
    let mut origin = String::new();
    let base = field(spec, "kind")? == "base";
    let (parent_root, parent_id) = match field(spec, "kind")? {
        "base" if template_build => (
            template_artifacts(env, field(spec, "vendor")?)?,
            "vendor".to_string(),
        ),
        "base" if spec.get("distribution").is_some() => {
            let d = &spec["distribution"];
            let (tar, built) = cached_root(d)?;
            origin = format!(
                " ({} root {})",
                describe(d),
                if built {
                    "built by mmdebstrap"
                } else {
                    "from the cache"
                }
            );
            tarball = Some(tar.clone());
            (tar, "vendor".to_string())
        }
        "base" => {
            // Inside the root, through its symlinks too, as the load
            // requires to take a tarball's digest.
            let vendor = confined(&env.root, "image_id", field(spec, "vendor")?)?;
            let archive = vendor.extension().is_some_and(|x| x == "tar");
            if archive && vendor.is_file() {
                tarball = Some(vendor.clone());
            } else if !vendor.is_dir() {
                return Err(format!(
                    "vendor image {} is not a directory or a root tarball (*.tar) (the OS builder entry's image_id names it, relative to the root)",
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
    remove_bake_dir(&partial)?;
    let result = (|| {
        let root = partial.join("root");
        // A base copies its vendor image whole (the tree's own files may
        // change under it); a child runs its scripts on an overlay of its
        // parent build and shares every file it leaves alone (`layer.rs`).
        let (build, layer) = if base {
            match &tarball {
                Some(tar) => unpack_root(tar, &root)?,
                None => copy_tree(&parent_root, &root)?,
            }
            if template_build {
                unpack_root_archives(&root)?;
            }
            install_first_boot_unit(series, &root)?;
            (Sandbox::new(&root), None)
        } else {
            let layer = Layer::new(&partial.join("layer"))?;
            (Sandbox::over(&parent_root, &layer), Some(layer))
        };
        let build = build.network(network(spec));
        let mut applied = Vec::new();
        let variables = spec
            .get("variables")
            .and_then(J::as_object)
            .cloned()
            .unwrap_or_default();
        for m in spec
            .get("modifications")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
        {
            applied.push(
                apply_mod(env, series, &build, &variables, m)
                    .map_err(|e| format!("{e}; nothing was recorded for this build"))?,
            );
        }
        let bootable = resolve_inside(if base { &root } else { &parent_root }, BASH).is_some();
        let checked = verify_in_bake(series, &build, spec, bootable)?;
        if let Some(layer) = layer {
            link_tree(&parent_root, &root)?;
            apply_upper(&layer.upper, &root)?;
            layer.remove()?;
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
            "in_bake": {"assertions": checked.len(), "checks": checked},
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
        let _ = remove_bake_dir(&partial);
        return Err(e);
    }
    let dest = images.join(&build_id);
    let _ = fs::remove_dir_all(&dest);
    fs::rename(&partial, &dest).map_err(io_err(&dest))?;
    write_atomic(
        &head_path(&store, series, runtime),
        format!("{build_id}\n").as_bytes(),
    )?;
    Ok(format!("baked {build_id} from {parent_id}{origin}"))
}
