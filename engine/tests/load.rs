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
