//! Load refusals that depend on which plugins are linked.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::workspace::LoadOptions;

#[test]
fn no_runtime_plugin_linked_means_no_runtime_providers() {
    let ws = csis_test_support::workspace_with(
        "--- cfg/_config.yml\nid: t\n",
        &[],
        &[],
        &LoadOptions::default(),
    );
    let msgs: Vec<_> = ws
        .load_diagnostics()
        .into_iter()
        .map(|d| d.message)
        .collect();
    assert_eq!(msgs, ["No runtime providers configured."]);
}

#[test]
fn a_missing_runtime_declaration_with_plugins_linked() {
    let ws = csis_test_support::workspace_with(
        "--- cfg/_config.yml\nid: t\n",
        &[&csis_plugin_local::LocalPlugin],
        &[],
        &LoadOptions::default(),
    );
    let msgs: Vec<_> = ws
        .load_diagnostics()
        .into_iter()
        .map(|d| d.message)
        .collect();
    assert_eq!(msgs, ["No runtime builders found in config file."]);
}

/// The entries the index takes of each file: all of a file none of whose
/// names was declared before or undeclared, without a lookup; only the
/// first declaration of a name, and none that is undeclared.
#[test]
fn the_index_takes_each_files_entries_but_repeats_and_undeclared_ones() {
    let tree = "--- cfg/_config.yml\nid: t\n\
--- groups/a.yml\nusers:\n  - name: ann\n  - name: bob\n\
--- groups/b.yml\nusers:\n  - name: cat\n  - name: ann\n  - name: dan\n\
--- groups/c.yml\nusers:\n  - name: eve\n  - name: fay\n\
--- groups/d.yml\nusers:\n  - name: gus\n";
    let options = LoadOptions {
        undeclare: vec!["user:fay".to_string()],
        ..LoadOptions::default()
    };
    let ws = csis_test_support::workspace_with(tree, &[], &[], &options);
    let taken = |path: &str| -> Vec<(usize, String)> {
        let file = ws.file(path).unwrap();
        csis_engine::load::items::indexed_entries(&ws.db, file)
            .map(|(n, item)| (n, item.name.to_string()))
            .collect()
    };
    let names = |pairs: &[(usize, &str)]| -> Vec<(usize, String)> {
        pairs.iter().map(|(n, s)| (*n, s.to_string())).collect()
    };
    assert_eq!(taken("groups/a.yml"), names(&[(0, "ann"), (1, "bob")]));
    assert_eq!(taken("groups/b.yml"), names(&[(0, "cat"), (2, "dan")]));
    assert_eq!(taken("groups/c.yml"), names(&[(0, "eve")]));
    assert_eq!(taken("groups/d.yml"), names(&[(0, "gus")]));
    let index = csis_engine::load::items::item_index(&ws.db, ws.tree);
    let mut partial: Vec<&str> = index
        .partial_files
        .iter()
        .map(|f| &**f.path(&ws.db))
        .collect();
    partial.sort();
    assert_eq!(partial, ["groups/b.yml", "groups/c.yml"]);
}
