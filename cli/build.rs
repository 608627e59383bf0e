//! The plugins' sources digested into `CSIS_PLUGIN_SOURCES`, which the
//! binary hands its registry (`Registry::with_plugin_sources`) so that the
//! persisted cache's key names them: what a kept result holds depends on
//! the plugins' hooks too (an instance's user-data, a modification's
//! fields in a fingerprint), and a binary built from other plugin sources
//! of one version must not take another's results. The engine's own
//! sources are digested by `engine/build.rs`; digesting the plugins here
//! leaves the engine unbuilt when only a plugin changes.
// A build script speaks to cargo on stdout and reads the sources it is
// built from: neither goes through the engine's `System`.
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let workspace = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
    let plugins = workspace.join("plugins");
    println!("cargo:rerun-if-changed={}", plugins.display());
    let mut files = Vec::new();
    walk(&plugins, &mut files);
    files.sort();
    let mut hasher = blake3::Hasher::new();
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        let rel = file.strip_prefix(&workspace).unwrap_or(&file);
        hasher.update(rel.to_string_lossy().as_bytes());
        hasher.update(&std::fs::read(&file).unwrap_or_default());
    }
    let digest = hasher.finalize().to_hex();
    println!("cargo:rustc-env=CSIS_PLUGIN_SOURCES={}", &digest[..16]);
}

/// Every Rust source below `dir` that a plugin is built from (its `src/`,
/// not its tests).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "tests" && name != "target" {
                walk(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.components().any(|c| c.as_os_str() == "src")
        {
            out.push(path);
        }
    }
}
