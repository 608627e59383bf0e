//! Loading in-memory fixture trees for the engine's tests.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use csis_engine::db::system::MemorySystem;
use csis_engine::registry::Registry;
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_plugin_api::Plugin;

/// The root every fixture is loaded under.
pub const ROOT: &str = "/t";

/// A multi-file fixture (`--- path` starts each file) loaded with `plugins`.
pub fn workspace_with(
    fixture: &str,
    plugins: &[&'static dyn Plugin],
    env: &[(&str, &str)],
    options: &LoadOptions,
) -> Workspace {
    let root = Path::new(ROOT);
    let mut sys = MemorySystem::from_fixture(root, fixture);
    for (k, v) in env {
        sys = sys.with_env(k, v);
    }
    let registry = Registry::build(plugins).unwrap();
    Workspace::load(&sys, Arc::new(registry), root, options).unwrap()
}

/// A fixture loaded with the plugins the cli links.
pub fn workspace(fixture: &str, env: &[(&str, &str)]) -> Workspace {
    workspace_with(
        fixture,
        &[
            &csis_plugin_dummy::DummyPlugin,
            &csis_plugin_local::LocalPlugin,
        ],
        env,
        &LoadOptions::default(),
    )
}
