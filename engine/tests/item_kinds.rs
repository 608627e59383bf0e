//! A plugin adds an item kind: its directory is read, its items structure
//! with the plugin's fields, its validation refuses, overlays and
//! `--undeclare` know it.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::load::render::resolved_tree;
use csis_engine::registry::Registry;
use csis_engine::workspace::{LoadOptions, Workspace};

mod common;
use common::Networks;

/// Validated, not interpolated.
static PLUGIN: Networks = Networks {
    validated: true,
    interpolated: false,
};

const TREE: &str = r#"
--- cfg/_config.yml
id: kinds
runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small}
--- networks/lan.yml
networks:
  - {name: lan, cidr: 10.0.0.0/24, description: "{{ network.name }} on {{ builder.default_machine_type }}"}
  - {name: wan, cidr: 192.0.2.1}
  - {name: odd, cidr: 10.1.0.0/16, colour: red}
"#;

fn load(undeclare: &[&str]) -> Workspace {
    let options = LoadOptions {
        undeclare: undeclare.iter().map(|s| s.to_string()).collect(),
        ..LoadOptions::default()
    };
    csis_test_support::workspace_with(
        TREE,
        &[&csis_plugin_local::LocalPlugin, &PLUGIN],
        &[],
        &options,
    )
}

#[test]
fn a_plugin_item_kind_loads_validates_and_renders() {
    let ws = load(&[]);
    let msgs: Vec<_> = ws
        .load_diagnostics()
        .into_iter()
        .map(|d| (d.message, d.help))
        .collect();
    assert_eq!(
        msgs,
        [
            ("cidr '192.0.2.1' needs a prefix length (/NN)".to_string(), None),
            (
                "network 'odd': unknown key 'colour'".to_string(),
                Some("unknown key 'colour' in network 'odd'; allowed: [aliases, cidr, description, name, type]".to_string())
            ),
        ]
    );
    let t = resolved_tree(&ws.db, ws.tree);
    let lan = &t["networks"][0];
    assert_eq!(lan["cidr"], "10.0.0.0/24");
    assert_eq!(lan["description"], "lan on small");
}

#[test]
fn undeclare_knows_plugin_kinds() {
    let ws = load(&["network:wan", "network:odd"]);
    assert!(ws.load_diagnostics().is_empty());
}

#[test]
fn a_second_kind_with_the_same_key_is_a_collision() {
    let err = Registry::build(&[&PLUGIN, &PLUGIN]).err().unwrap();
    assert_eq!(
        err,
        "Type Collision: item kind 'networks' of plugin 'networks' is already registered"
    );
}
