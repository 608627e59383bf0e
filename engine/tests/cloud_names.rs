//! The cloud-name collision rule (check/cloud_names.rs) over the worked
//! clouds tree with the linked plugins: a declaration whose derived name
//! an earlier one on the same runtime has is refused, naming the first;
//! the same declared name on another runtime, or one item baked on several
//! runtimes, is no collision.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::workspace::LoadOptions;
use csis_test_support::{LINKED, fixture_dir, inline, read_tree, workspace_with};

/// The refusals of the clouds tree with `extra` appended to its files.
fn collisions(extra: &[(&str, &str)]) -> Vec<String> {
    let mut files = read_tree(&fixture_dir("clouds"));
    for (path, text) in extra {
        files.get_mut(*path).unwrap().push_str(text);
    }
    let ws = workspace_with(&inline(&files), LINKED, &[], &LoadOptions::default());
    let all: Vec<String> = ws
        .load_diagnostics()
        .into_iter()
        .filter(|d| d.is_error())
        .map(|d| d.message)
        .collect();
    let found: Vec<String> = all
        .iter()
        .filter(|m| m.contains("cannot share a name"))
        .cloned()
        .collect();
    assert_eq!(found.len(), all.len(), "{all:#?}");
    found
}

#[test]
fn the_worked_tree_has_no_collision() {
    assert_eq!(collisions(&[]), Vec::<String>::new());
}

#[test]
fn a_second_disk_of_one_gce_name_is_refused_naming_the_first() {
    let found = collisions(&[(
        "storages/volumes.yml",
        "  - {name: gce-data, type: pd, groups: [ops], availability_zone: europe-west1-b, config: {size: 30}}\n",
    )]);
    assert_eq!(
        found,
        [
            "storage 'gce-data' becomes GCE disk name 'gce-data', as storage 'gce_data' (storages/volumes.yml:5:6) does; two resources cannot share a name: rename one"
        ]
    );
}

#[test]
fn the_same_name_on_another_runtime_is_no_collision() {
    // `gce-data` on AWS: an EBS volume, named nothing like a GCE disk.
    let found = collisions(&[(
        "storages/volumes.yml",
        "  - {name: gce-data, type: ebs, groups: [ops], availability_zone: us-east-1a, config: {size: 30}}\n",
    )]);
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn an_image_whose_family_collides_is_refused_once() {
    // Its image names collide too; one refusal says so.
    let found = collisions(&[(
        "images/chain.yml",
        "  - {name: app_, source_image: base, group: ops, runtimes: [{image_builder: pk-gce}, {image_builder: pk-aws}]}\n",
    )]);
    assert_eq!(
        found,
        [
            "image 'app_' becomes GCE image family 'app', as image 'app' (images/chain.yml:19:5) does; two resources cannot share a name: rename one"
        ]
    );
}
