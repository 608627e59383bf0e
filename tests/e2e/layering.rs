//! The dependency direction of DESIGN.md, enforced: model ← plugin-api ←
//! engine; plugin-api ← plugins; the cli links engine and plugins. A
//! forbidden edge fails here, not in review.

use std::process::Command;

/// Workspace crates each crate may depend on.
fn allowed(krate: &str) -> &'static [&'static str] {
    match krate {
        "csis-model" => &[],
        "csis-yaml" => &["csis-model"],
        "csis-cloud-config" | "csis-public-safe" | "csis-secrets" => &["csis-model", "csis-yaml"],
        "csis-plugin-api" => &["csis-model"],
        "csis-engine" => &[
            "csis-model",
            "csis-yaml",
            "csis-cloud-config",
            "csis-public-safe",
            "csis-secrets",
            "csis-plugin-api",
        ],
        "csis-plugin-dummy" | "csis-plugin-local" => &["csis-model", "csis-plugin-api"],
        "csis" => &[
            "csis-model",
            "csis-yaml",
            "csis-cloud-config",
            "csis-public-safe",
            "csis-secrets",
            "csis-plugin-api",
            "csis-engine",
            "csis-plugin-dummy",
            "csis-plugin-local",
        ],
        // Test code, never shipped: no crate above lists it.
        "csis-test-support" => &[
            "csis-plugin-api",
            "csis-engine",
            "csis-plugin-dummy",
            "csis-plugin-local",
        ],
        "csis-benches" => &[
            "csis-model",
            "csis-plugin-api",
            "csis-engine",
            "csis-plugin-dummy",
            "csis-plugin-local",
            "csis-test-support",
        ],
        _ => &[],
    }
}

#[test]
fn crate_dependencies_point_one_way() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let ours: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let mut bad = Vec::new();
    for p in packages {
        let name = p["name"].as_str().unwrap();
        for dep in p["dependencies"].as_array().unwrap() {
            let d = dep["name"].as_str().unwrap();
            let dev = dep["kind"].as_str() == Some("dev");
            if ours.contains(&d) && !dev && !allowed(name).contains(&d) {
                bad.push(format!("{name} -> {d}"));
            }
        }
    }
    assert!(ours.contains(&"csis-engine") && ours.contains(&"csis-plugin-local"));
    assert!(bad.is_empty(), "forbidden crate dependencies: {bad:?}");
}
