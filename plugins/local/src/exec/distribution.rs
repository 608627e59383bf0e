//! Base roots from a distribution's archive: an OS builder entry's
//! `distribution:` (suite, variant, packages, components, mirror) is built
//! by mmdebstrap into a root tarball once and kept in a cache outside the
//! configuration tree, keyed by the spec's content. A base bake unpacks
//! it as it would copy a vendor directory.
//!
//! mmdebstrap runs in its unshare mode: the packages' maintainer scripts
//! run in a user namespace of its own, never as the host's root on the
//! host. It is the one other program this runtime starts besides the
//! sandbox (`sandbox.rs`).
//!
//! The cache (`CSIS_LOCAL_CACHE`, else `$XDG_CACHE_HOME/csis/local`, else
//! `~/.cache/csis/local`) holds `roots/<key>.tar`; a tarball is written
//! beside its place and renamed in, so a build that is stopped leaves
//! nothing a later bake would take for whole.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value as J;

use super::store::io_err;

/// Where the root tarball for `spec` is, building it first when the
/// cache does not hold it; and whether it was built now.
pub(super) fn cached_root(spec: &J) -> Result<(PathBuf, bool), String> {
    let dir = cache_dir()?.join("roots");
    let key = key(spec);
    let tarball = dir.join(format!("{key}.tar"));
    if fs::symlink_metadata(&tarball).is_ok_and(|m| m.is_file()) {
        return Ok((tarball, false));
    }
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let partial = dir.join(format!(".{key}.partial-{}.tar", std::process::id()));
    let built = mmdebstrap(spec, &partial)
        .and_then(|()| fs::rename(&partial, &tarball).map_err(io_err(&tarball)));
    if built.is_err() {
        let _ = fs::remove_file(&partial);
    }
    built.map(|()| (tarball, true))
}

/// What the spec is called in messages: `bookworm (apt, +hello)`.
pub(super) fn describe(spec: &J) -> String {
    let s = |k: &str| spec.get(k).and_then(J::as_str).unwrap_or_default();
    let mut extra: String = words(spec, "packages")
        .iter()
        .map(|p| format!(", +{p}"))
        .collect();
    if let Some(m) = spec.get("mirror").and_then(J::as_str) {
        extra.push_str(&format!(", from {m}"));
    }
    format!("{} ({}{extra})", s("suite"), s("variant"))
}

/// The cache key: the spec's canonical JSON (serde_json sorts keys)
/// hashed with the host's architecture, which mmdebstrap builds for.
fn key(spec: &J) -> String {
    let text = format!("{}\n{}", std::env::consts::ARCH, spec);
    blake3::hash(text.as_bytes()).to_hex()[..32].to_string()
}

fn cache_dir() -> Result<PathBuf, String> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("CSIS_LOCAL_CACHE") {
        return Ok(dir);
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Ok(dir.join("csis/local"));
    }
    match var("HOME") {
        Some(home) => Ok(home.join(".cache/csis/local")),
        None => Err("no cache for distribution roots: set CSIS_LOCAL_CACHE (or HOME) to a directory outside the tree".into()),
    }
}

fn words(spec: &J, key: &str) -> Vec<String> {
    spec.get(key)
        .and_then(J::as_array)
        .map(|a| a.iter().filter_map(J::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn mmdebstrap(spec: &J, out: &std::path::Path) -> Result<(), String> {
    let what = describe(spec);
    let program = super::sandbox::program(
        "mmdebstrap",
        "mmdebstrap",
        "builds a `distribution:` root with mmdebstrap",
    )?;
    let suite = spec
        .get("suite")
        .and_then(J::as_str)
        .ok_or("the distribution spec has no suite")?;
    let variant = spec.get("variant").and_then(J::as_str).unwrap_or("apt");
    let mut c = Command::new(program);
    c.args([
        "--mode=unshare",
        "--format=tar",
        "--quiet",
        &format!("--variant={variant}"),
    ]);
    let packages = words(spec, "packages");
    if !packages.is_empty() {
        c.arg(format!("--include={}", packages.join(",")));
    }
    let components = words(spec, "components");
    if !components.is_empty() {
        c.arg(format!("--components={}", components.join(",")));
    }
    // Options end here: the model refused names starting with `-`.
    c.arg(suite).arg(out);
    if let Some(mirror) = spec.get("mirror").and_then(J::as_str) {
        c.arg(mirror);
    }
    let output = csis_child::die_with_parent(&mut c)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("building the {what} root: mmdebstrap: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!(
        "building the {what} root: mmdebstrap failed ({}); it needs the archive reachable and, when csis does not run as root, subordinate ids in /etc/subuid and /etc/subgid:\n{}",
        output.status,
        tail.join("\n")
    ))
}
