//! The persisted cache's key names the build, not only the version: a
//! cache written by a binary built from other sources (a developer's
//! tree between two commits of one version) is another cache. What a
//! unit holds depends on the engine, the models, the libraries that read
//! files and the plugin API (a kept user's account is made there), so
//! their sources are digested into `CSIS_BUILD_SOURCES`.
// A build script speaks to cargo on stdout and reads the sources it is
// built from: neither goes through the engine's `System`, which is for
// the tree csis reads at run time.
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let workspace = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut dirs = vec![
        manifest.join("src"),
        workspace.join("model/src"),
        workspace.join("plugins/api/src"),
    ];
    if let Ok(libs) = std::fs::read_dir(workspace.join("libs")) {
        let mut libs: Vec<PathBuf> = libs.flatten().map(|e| e.path().join("src")).collect();
        libs.sort();
        dirs.extend(libs);
    }
    let mut hasher = blake3::Hasher::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files = Vec::new();
        walk(dir, &mut files);
        files.sort();
        for file in files {
            let rel = file.strip_prefix(&workspace).unwrap_or(&file);
            hasher.update(rel.to_string_lossy().as_bytes());
            hasher.update(&std::fs::read(&file).unwrap_or_default());
        }
    }
    let digest = hasher.finalize().to_hex();
    println!("cargo:rustc-env=CSIS_BUILD_SOURCES={}", &digest[..16]);
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
