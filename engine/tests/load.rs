//! Load refusals that depend on which plugins are linked.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use csis_engine::registry::Registry;
use csis_engine::system::MemorySystem;
use csis_engine::workspace::{LoadOptions, Workspace};

#[test]
fn no_runtime_plugin_linked_means_no_runtime_providers() {
    let root = Path::new("/t");
    let sys = MemorySystem::from_fixture(root, "--- cfg/_config.yml\nid: t\n");
    let ws = Workspace::load(
        &sys,
        Arc::new(Registry::build(&[]).unwrap()),
        root,
        &LoadOptions::default(),
    )
    .unwrap();
    let msgs: Vec<_> = ws
        .load_diagnostics()
        .into_iter()
        .map(|d| d.message)
        .collect();
    assert_eq!(msgs, ["No runtime providers configured."]);
}

#[test]
fn a_missing_runtime_declaration_with_plugins_linked() {
    let root = Path::new("/t");
    let sys = MemorySystem::from_fixture(root, "--- cfg/_config.yml\nid: t\n");
    let reg = Registry::build(&[&csis_plugin_local::LocalPlugin]).unwrap();
    let ws = Workspace::load(&sys, Arc::new(reg), root, &LoadOptions::default()).unwrap();
    let msgs: Vec<_> = ws
        .load_diagnostics()
        .into_iter()
        .map(|d| d.message)
        .collect();
    assert_eq!(msgs, ["No runtime builders found in config file."]);
}
