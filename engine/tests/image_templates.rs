//! Image templates (spec 001) as engine inputs (fixtures/templates, in memory): the
//! chain's files are read at load, a base's fingerprint follows its merged
//! template and nothing else, and an edit reaches only what it changed.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use csis_engine::load::templates::{template_files, template_on_runtime};
use csis_engine::plan::fingerprint::{SeriesKey, input_fingerprint};
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_test_support::{LINKED, ROOT, fixture_dir, load, memory_system, read_tree, registry};

fn workspace() -> Workspace {
    let files = read_tree(&fixture_dir("templates"));
    let sys = memory_system(Path::new(ROOT), &files);
    load(
        &sys,
        registry(LINKED),
        Path::new(ROOT),
        // The query log on: the incrementality tests read it.
        &LoadOptions {
            query_log: true,
            ..LoadOptions::default()
        },
    )
}

fn fingerprint(ws: &Workspace, series: &str) -> String {
    let key = SeriesKey::new(&ws.db, series.to_string(), "here".to_string());
    input_fingerprint(&ws.db, ws.tree, key)
        .as_ref()
        .unwrap()
        .hex
        .clone()
}

fn all(ws: &Workspace) -> Vec<(String, String)> {
    ["edge", "lean", "solo", "app", "app-top", "tool"]
        .iter()
        .map(|s| (s.to_string(), fingerprint(ws, s)))
        .collect()
}

fn edited(ws: &mut Workspace, path: &str, from: &str, to: &str) {
    let text = ws.file(path).unwrap().text(&ws.db).to_string();
    assert!(text.contains(from), "{path} has no {from:?}");
    assert!(ws.set_file_text(path, &text.replacen(from, to, 1)));
}

#[test]
fn the_load_reads_every_chain_and_the_os_defaults() {
    let ws = workspace();
    let errors: Vec<String> = ws
        .load_diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| ws.describe(d))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let files = template_files(&ws.db, ws.tree);
    let defaults =
        "ict/config/osv/ubuntu/ubuntu24/imageconfigs/defaultconfigs/default-raw-x86_64.yml";
    assert_eq!(files["templates/root.yml"], ["edge", "lean"]);
    assert_eq!(files["templates/leaf.yml"], ["edge"]);
    assert_eq!(files["templates/solo.yml"], ["solo"]);
    assert_eq!(files[defaults], ["edge", "lean"]);
    assert!(
        !files.contains_key("templates/extra.yml"),
        "no chain names it"
    );
    let (_, r) = template_on_runtime(&ws.db, ws.tree, "edge", "here").unwrap();
    assert_eq!(
        r.chain,
        [
            "templates/root.yml",
            "templates/middle.yml",
            "templates/leaf.yml"
        ]
    );
    assert_eq!(
        r.json.as_ref().unwrap()["systemConfig"]["packages"],
        serde_json::json!([
            "openssh-server",
            "docker-cli",
            "containerd",
            "prometheus-node-exporter",
            "grafana-agent",
            "my-custom-app"
        ])
    );
    assert!(!ws.wants_reload());
}

#[test]
fn a_comment_edit_moves_no_fingerprint_and_stops_at_the_merged_template() {
    let mut ws = workspace();
    // A file being worked on: its first save moves it to LOW durability
    // (salsa does not backdate across that move), after which a save
    // costs only what it reaches.
    edited(
        &mut ws,
        "templates/root.yml",
        "# The root",
        "# Opened: the root",
    );
    let before = all(&ws);
    ws.db.query_log().start();
    edited(
        &mut ws,
        "templates/root.yml",
        "# Opened: the root",
        "# Still the root",
    );
    assert_eq!(all(&ws), before);
    let ran = ws.db.query_log().take();
    assert!(
        ran.iter().any(|q| q.starts_with("resolved_template")),
        "the chains reading root.yml are resolved again: {ran:#?}"
    );
    assert!(
        !ran.iter().any(|q| q.starts_with("input_fingerprint")),
        "an equal merged template re-executes no fingerprint: {ran:#?}"
    );
}

#[test]
fn a_package_in_the_root_moves_the_bases_on_it_and_their_images_only() {
    let mut ws = workspace();
    let before: std::collections::BTreeMap<_, _> = all(&ws).into_iter().collect();
    edited(
        &mut ws,
        "templates/root.yml",
        "    - containerd\n",
        "    - containerd\n    - jq\n",
    );
    let after: std::collections::BTreeMap<_, _> = all(&ws).into_iter().collect();
    let moved: Vec<&String> = before.keys().filter(|s| before[*s] != after[*s]).collect();
    assert_eq!(moved, ["app", "app-top", "edge", "lean", "tool"]);
}

#[test]
fn an_extends_to_a_file_the_load_did_not_read_asks_for_a_reload() {
    let mut ws = workspace();
    edited(
        &mut ws,
        "templates/lean.yml",
        "extends: root.yml",
        "extends: extra.yml",
    );
    assert!(ws.wants_reload());
    edited(
        &mut ws,
        "templates/lean.yml",
        "extends: extra.yml",
        "extends: root.yml",
    );
    assert!(!ws.wants_reload());
}

/// The load's errors for the fixture's chain with `extra` templates
/// inserted between its middle and its root.
fn errors_with_chain_of(extra: usize) -> Vec<String> {
    let mut files = read_tree(&fixture_dir("templates"));
    let root = files["templates/root.yml"].clone();
    let with_parent = |p: &str| {
        root.replacen(
            "# The root of the chain",
            &format!("extends: {p}\n# The root of the chain"),
            1,
        )
    };
    for i in 0..extra {
        let parent = if i + 1 == extra {
            "root.yml".to_string()
        } else {
            format!("r{}.yml", i + 1)
        };
        files.insert(format!("templates/r{i}.yml"), with_parent(&parent));
    }
    let middle = files["templates/middle.yml"].replacen("extends: root.yml", "extends: r0.yml", 1);
    files.insert("templates/middle.yml".into(), middle);
    let sys = memory_system(Path::new(ROOT), &files);
    let ws = load(
        &sys,
        registry(LINKED),
        Path::new(ROOT),
        &LoadOptions::default(),
    );
    ws.load_diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| ws.describe(d))
        .collect()
}

#[test]
fn the_load_follows_a_chain_as_deep_as_the_resolver_allows_and_no_deeper() {
    // The fixture's chain is leaf, middle, root: 61 more make 64 levels.
    assert_eq!(errors_with_chain_of(61), Vec::<String>::new());
    let deeper = errors_with_chain_of(70);
    assert!(
        deeper
            .iter()
            .any(|e| e.contains("extends chain deeper than 64 levels")),
        "{deeper:?}"
    );
    assert!(
        !deeper.iter().any(|e| e.contains("cannot read")),
        "{deeper:?}"
    );
}
