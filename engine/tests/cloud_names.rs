//! The cloud-name collision rule (check/cloud_names.rs) over the worked
//! clouds tree with the linked plugins: a declaration whose derived name
//! an earlier one on the same runtime has is refused, naming the first;
//! the same declared name on another runtime, or one item baked on several
//! runtimes, is no collision.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::workspace::LoadOptions;
use csis_test_support::{LINKED, ROOT, fixture_dir, inline, read_tree, workspace_with};

/// The refusals of the clouds tree with `extra` appended to its files.
fn collisions(extra: &[(&str, &str)]) -> Vec<String> {
    collisions_with(extra, None)
}

/// The same, loaded with `overlay` as an `--overlay` file.
fn collisions_with(extra: &[(&str, &str)], overlay: Option<&str>) -> Vec<String> {
    let mut files = read_tree(&fixture_dir("clouds"));
    let mut options = LoadOptions::default();
    if let Some(text) = overlay {
        files.insert("overlay.yml".into(), text.into());
        options.overlays.push(format!("{ROOT}/overlay.yml").into());
    }
    for (path, text) in extra {
        let f = files.get_mut(*path).unwrap();
        // A builder list entry goes after its list's first line.
        if let Some((list, entry)) = text.split_once('\n')
            && list.ends_with(':')
            && f.contains(&format!("{list}\n"))
        {
            *f = f.replacen(&format!("{list}\n"), &format!("{list}\n{entry}"), 1);
        } else {
            f.push_str(text);
        }
    }
    let ws = workspace_with(&inline(&files), LINKED, &[], &options);
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
fn a_disk_an_overlay_declares_comes_after_the_trees_and_is_refused() {
    let found = collisions_with(
        &[],
        Some(
            "storages:\n  - {name: gce-data, type: pd, groups: [ops], availability_zone: europe-west1-b, config: {size: 30}}\n",
        ),
    );
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
            "image 'app_' becomes GCE image family '<tree>-app', as image 'app' (images/chain.yml:19:5) does; two resources cannot share a name: rename one"
        ]
    );
}

/// A second gce runtime on `project` with a storage builder `pd2`.
fn second_runtime(project: &str) -> String {
    format!(
        "runtime_builders:\n  - {{name: gce2, type: gce, project: {project}, region: europe-west1, zone: europe-west1-b, default_machine_type: e2-small, networking: {{network: n, subnets: [{{subnet_id: s, is_default: true}}]}}}}\n"
    )
}

#[test]
fn runtimes_on_one_gce_project_share_its_names() {
    let rt = second_runtime("csis-example");
    let found = collisions(&[
        ("cfg/builders.yml", rt.as_str()),
        (
            "cfg/builders.yml",
            "storage_builders:\n  - {name: pd2, type: tofu-gce, runtime: gce2, state_configuration: gcs-state}\n",
        ),
        (
            "storages/volumes.yml",
            "  - {name: Gce.Data, type: pd2, groups: [ops], availability_zone: europe-west1-b, config: {size: 30}}\n",
        ),
    ]);
    assert_eq!(
        found,
        [
            "storage 'gce.data' becomes GCE disk name 'gce-data', as storage 'gce_data' (storages/volumes.yml:5:6) does; two resources cannot share a name: rename one"
        ]
    );
}

#[test]
fn runtimes_on_two_gce_projects_do_not() {
    let rt = second_runtime("other-project");
    let found = collisions(&[
        ("cfg/builders.yml", rt.as_str()),
        (
            "cfg/builders.yml",
            "storage_builders:\n  - {name: pd2, type: tofu-gce, runtime: gce2, state_configuration: gcs-state}\n",
        ),
        (
            "storages/volumes.yml",
            "  - {name: gce-data, type: pd2, groups: [ops], availability_zone: europe-west1-b, config: {size: 30}}\n",
        ),
    ]);
    assert_eq!(found, Vec::<String>::new());
}

/// A disk and an image family that collide, loaded by a fresh process
/// with a persisted cache after an instances file's edit: the process
/// that took the world's files reads their runtimes from the cache, by
/// name and with no id (check/cloud_names.rs), and refuses the same
/// declarations, in the same words, as a cold process.
#[test]
fn collisions_in_the_world_the_cache_kept_are_found_as_a_cold_plan_finds_them() {
    use csis_engine::load::kept_world::kept_world;
    use csis_engine::run::persist_cache::save_cache;
    use csis_test_support::{
        DiskWithEnv, described_diagnostics, load_cached, temp_tree, write_file,
    };

    let mut files = read_tree(&fixture_dir("clouds"));
    files.get_mut("storages/volumes.yml").unwrap().push_str(
        "  - {name: gce-data, type: pd, groups: [ops], availability_zone: europe-west1-b, config: {size: 30}}\n",
    );
    files.get_mut("images/chain.yml").unwrap().push_str(
        "  - {name: app_, source_image: base, group: ops, runtimes: [{image_builder: pk-gce}, {image_builder: pk-aws}]}\n",
    );
    let dir = temp_tree(&files);
    let (root, cache) = (dir.path(), dir.path().join(".csis/cache"));
    let sys = DiskWithEnv(Default::default());
    let refusals = [
        "image 'app_' becomes GCE image family '<tree>-app', as image 'app' (images/chain.yml:19:5) does",
        "storage 'gce-data' becomes GCE disk name 'gce-data', as storage 'gce_data' (storages/volumes.yml:5:6) does",
    ];
    let refused = |found: &[String]| refusals.iter().all(|r| found.iter().any(|d| d.contains(r)));
    let first = load_cached(&sys, root, Some(&cache));
    assert!(
        refused(&described_diagnostics(&first)),
        "{:#?}",
        described_diagnostics(&first)
    );
    save_cache(&first, &sys).unwrap();
    write_file(
        root,
        "instances/web.yml",
        &files["instances/web.yml"].replace("echo web-aws is up", "echo web-aws is up again"),
    );
    let cached = load_cached(&sys, root, Some(&cache));
    assert!(
        kept_world(&cached.db, cached.tree).is_some(),
        "the world's files are taken from the cache"
    );
    let found = described_diagnostics(&cached);
    assert!(refused(&found), "{found:#?}");
    assert_eq!(found, described_diagnostics(&load_cached(&sys, root, None)));
}
