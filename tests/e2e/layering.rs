//! The dependency direction of DESIGN.md and docs/architecture.md,
//! enforced: between crates (model ← libs ← plugin-api ← engine;
//! plugin-api ← plugins, and the tofu plugin ← the aws and gce runtime
//! plugins; the cli links engine and plugins), between the
//! engine's layer folders (registry ← db ← load ← state ← plan ← check ←
//! workspace ← run), and between the engine's files: no two files import
//! each other, directly or around a cycle, so each file can be read
//! knowing only the files below it. A forbidden edge fails here, not in
//! review.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::import_graph::{code_only, crate_paths, import_cycles, import_graph};

/// Workspace crates each crate may depend on (dev-dependencies aside).
fn allowed(krate: &str) -> Vec<&'static str> {
    let libs = [
        "csis-yaml",
        "csis-cloud-config",
        "csis-template",
        "csis-public-safe",
        "csis-secrets",
        "csis-string-stage",
        "csis-child",
    ];
    let engine: Vec<&str> = ["csis-model", "csis-plugin-api"]
        .into_iter()
        .chain(libs)
        .collect();
    match krate {
        "csis-model" | "csis-alloc" | "csis-child" => vec![],
        "csis-yaml" | "csis-string-stage" => vec!["csis-model"],
        "csis-plugin-api" => vec!["csis-model", "csis-hcl"],
        // The ict OS builder resolves a template again at execution
        // (`csis ict materialize`) through the one implementation.
        "csis-plugin-ict" => vec!["csis-model", "csis-plugin-api", "csis-template"],
        "csis-cloud-config" | "csis-template" | "csis-public-safe" | "csis-secrets" => {
            vec!["csis-model", "csis-yaml"]
        }
        "csis-engine" => engine,
        "csis-plugin-dummy" => vec!["csis-model", "csis-plugin-api"],
        // Its scripts die with the step that runs them.
        "csis-plugin-local" => vec!["csis-model", "csis-plugin-api", "csis-child"],
        "csis-plugin-aws" | "csis-plugin-gce" | "csis-plugin-packer" => {
            vec!["csis-model", "csis-plugin-api", "csis-hcl"]
        }
        // The tofu roots read their runtime through the aws and gce
        // runtime plugins' own accessors (profile, project, zone) and name
        // GCE resources by the gce plugin's rule, the one its image
        // families are baked under.
        "csis-plugin-tofu" => vec![
            "csis-model",
            "csis-plugin-api",
            "csis-hcl",
            "csis-plugin-aws",
            "csis-plugin-gce",
        ],
        // The binary and the test support link everything shipped; the
        // benches load their trees through the test support. Nothing
        // shipped depends on the test support.
        "csis" | "csis-test-support" | "csis-benches" => {
            let mut all: Vec<&str> = engine
                .into_iter()
                .chain(["csis-engine", "csis-plugin-dummy", "csis-plugin-local"])
                .chain([
                    "csis-plugin-aws",
                    "csis-plugin-gce",
                    "csis-plugin-packer",
                    "csis-plugin-tofu",
                    "csis-plugin-ict",
                ])
                .collect();
            if krate == "csis-benches" {
                all.push("csis-test-support");
            }
            // The binary's allocator, which the benches install too so
            // they time what it runs.
            if krate != "csis-test-support" {
                all.push("csis-alloc");
            }
            all
        }
        _ => vec![],
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

/// The engine's layer folders, lowest first: a file may name its own
/// folder and any folder before it, never one after it.
const LAYERS: [&str; 9] = [
    "registry",
    "db",
    "load",
    "state",
    "plan",
    "check",
    "workspace",
    "run",
    "terraform",
];

/// Every path in `layer`'s file `file` (under engine/src/) that names a
/// layer above it, read as the cycle checker reads paths, as
/// `file:line: <layer> uses <upper>`.
fn upward_uses(layer: &str, file: &str, text: &str) -> Vec<String> {
    let Some(own) = LAYERS.iter().position(|l| *l == layer) else {
        return vec![format!(
            "{file}: folder '{layer}' is no layer of docs/architecture.md"
        )];
    };
    // Test code is read too: a test may not reach up either.
    let under_src = file.strip_prefix("engine/src/").unwrap_or(file);
    crate_paths(under_src, &code_only(text))
        .into_iter()
        .filter_map(|n| {
            let named = n.path.first()?;
            let at = LAYERS.iter().position(|l| l == named)?;
            (at > own).then(|| format!("{file}:{}: {layer} uses {named}, a layer above it", n.line))
        })
        .collect()
}

/// Every `.rs` file below `dir` (relative to it, with `/` between
/// components) and its text, sorted by path. The walk fails the test
/// where it cannot read: a checker that read nothing would pass.
pub(crate) fn rust_sources(dir: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(dir).unwrap().to_string_lossy();
            (rel.replace('\\', "/"), std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

#[test]
fn engine_layers_point_one_way() {
    let files = engine_sources();
    let mut bad = Vec::new();
    for (rel, text) in &files {
        let Some((layer, _)) = rel.split_once('/') else {
            if rel != "lib.rs" {
                bad.push(format!(
                    "engine/src/{rel}: a module outside the layer folders"
                ));
            }
            continue;
        };
        bad.extend(upward_uses(layer, &format!("engine/src/{rel}"), text));
    }
    assert!(files.len() > 40, "the engine's sources were not found");
    assert!(
        bad.is_empty(),
        "upward uses between engine layers:\n{}",
        bad.join("\n")
    );
}

/// The checker itself: an upward `use` (plain, grouped, over several
/// lines, or through `super::` up to the crate root) is reported with its
/// line; a downward or same-layer one, and a mention in a comment, is
/// not.
#[test]
fn the_layer_checker_finds_an_upward_use() {
    let text = "\
//! crate::run in a doc comment is no use
use crate::db::{Db, Tree};
use crate::load::items::ItemId; // crate::workspace in a comment
use crate::run::generate::Emission;
use crate::{
    plan::bakes::bake_plan,
    workspace::Workspace,
};
fn f() { super::super::run::explain::explain_bakes(); }
fn g() { let _ = crate::state::lineage::run_id(0); }
";
    assert_eq!(
        upward_uses("state", "engine/src/state/x.rs", text),
        vec![
            "engine/src/state/x.rs:4: state uses run, a layer above it",
            "engine/src/state/x.rs:6: state uses plan, a layer above it",
            "engine/src/state/x.rs:7: state uses workspace, a layer above it",
            "engine/src/state/x.rs:9: state uses run, a layer above it",
        ]
    );
    assert!(upward_uses("run", "engine/src/run/x.rs", text).is_empty());
    // `super::` counts from the file's own depth: two levels up from
    // db/system/os/ is db/system, four is the crate root.
    let deep = "use super::super::Stream;\nuse super::super::super::super::run::x;\n";
    assert_eq!(
        upward_uses("db", "engine/src/db/system/os/x.rs", deep),
        vec!["engine/src/db/system/os/x.rs:2: db uses run, a layer above it"]
    );
    assert_eq!(
        upward_uses("util", "engine/src/util/x.rs", ""),
        vec!["engine/src/util/x.rs: folder 'util' is no layer of docs/architecture.md"]
    );
}

fn engine_sources() -> Vec<(String, String)> {
    rust_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/src"))
}

#[test]
fn engine_files_import_without_cycles() {
    let files = engine_sources();
    assert!(files.len() > 40, "the engine's sources were not found");
    let imports: usize = import_graph(&files).values().map(BTreeMap::len).sum();
    assert!(
        imports > 300,
        "only {imports} imports read: the reader is broken"
    );
    let cycles = import_cycles(&files);
    assert!(
        cycles.is_empty(),
        "files of engine/src that import each other (each cycle: its files, then the imports inside it; move what both need into a file below them):\n{}",
        cycles.join("\n")
    );
}

/// The local runtime runs an image's scripts only through its sandbox
/// (docs/local-runtime.md, "The sandbox"): no other file of the plugin
/// starts a process, outside its tests.
#[test]
fn only_the_sandbox_and_the_root_builder_start_processes_in_the_local_runtime() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/local/src");
    let mut spawning: Vec<String> = rust_sources(&src)
        .into_iter()
        // The sandbox runs the image's scripts; mmdebstrap builds a
        // distribution's root in a user namespace of its own.
        .filter(|(rel, _)| rel != "exec/sandbox.rs" && rel != "exec/distribution.rs")
        .filter(|(_, text)| {
            let product = text.split("#[cfg(test)]").next().unwrap_or_default();
            [
                "Command::new",
                "process::Command",
                "libc::exec",
                "libc::fork",
            ]
            .iter()
            .any(|p| product.contains(p))
        })
        .map(|(rel, _)| rel)
        .collect();
    spawning.sort();
    assert!(
        spawning.is_empty(),
        "these files of plugins/local start processes outside exec/sandbox.rs and exec/distribution.rs: {spawning:?}"
    );
}

/// The input fields a query may read only through engine/src/db/reads.rs,
/// which notes each read of the environment and the clock for the plan
/// record.
const NOTED_INPUTS: [&str; 2] = ["env", "start_unix"];

/// Each line of `text` (outside its tests) that reads an input's field
/// directly.
fn unnoted_reads(rel: &str, text: &str) -> Vec<String> {
    let product = text.split("#[cfg(test)]").next().unwrap_or_default();
    let handles = ["db", "&db", "self.db", "&self.db", "&ws.db", "&self.ws.db"];
    product
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            NOTED_INPUTS.iter().any(|field| {
                handles
                    .iter()
                    .any(|h| line.contains(&format!(".{field}({h})")))
            })
        })
        .map(|(n, line)| format!("engine/src/{rel}:{}: {}", n + 1, line.trim()))
        .collect()
}

/// A plan record is kept with the environment variables its templates
/// looked up and only when it did not read the clock, as db/reads.rs
/// noted them: a read past it would let a record answer for a plan that
/// read something else. Only the reader itself, and the load that sets
/// the inputs, touch those fields.
#[test]
fn queries_read_inputs_only_through_the_noting_reader() {
    let files = engine_sources();
    assert!(files.len() > 40, "the engine's sources were not found");
    let found: Vec<String> = files
        .iter()
        .filter(|(rel, _)| rel != "db/reads.rs" && rel != "workspace/load.rs")
        .flat_map(|(rel, text)| unnoted_reads(rel, text))
        .collect();
    assert!(
        found.is_empty(),
        "inputs read past crate::db::reads (call its reader, which notes the read):\n{}",
        found.join("\n")
    );
    assert_eq!(
        unnoted_reads(
            "x.rs",
            "let a = tree.env(db);\nlet b = reads::env_var(db, tree, \"USER\");\n"
        ),
        vec!["engine/src/x.rs:1: let a = tree.env(db);"]
    );
}
