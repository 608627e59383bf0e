//! An instances file's checks kept in the persisted cache
//! (load/kept_instances.rs): a fresh process takes them only while the
//! file, every file that is not an instances file, which of its entries
//! the index takes and the variables its templates read are as they
//! were; never for a file whose instances name another item, nor in a
//! process where a builder's hook read across instances; and it answers
//! exactly as a cold process, whether it takes them or not.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use csis_engine::db::Db;
use csis_engine::load::kept_instances::kept_instances;
use csis_engine::plan::hook_context::EngineContext;
use csis_engine::run::persist_cache::save_cache;
use csis_engine::workspace::Workspace;
use csis_model::ItemKind;
use csis_plugin_api::HookContext;
use csis_test_support::{
    DiskWithEnv, LOCAL_BASE, described_diagnostics, fixture_dir, load_cached, parse, read_tree,
    temp_tree, write_file,
};

/// Two instances files over LOCAL_BASE: `box` attaches a storage its
/// image's group may use, and is described from the environment.
const HOSTS: &str = r#"
--- images/web.yml
images:
  - name: web
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
--- storages/data.yml
storages:
  - name: data
    groups: [ops]
--- instances/box.yml
instances:
  - name: box
    image: web
    description: "{{ ENV.TEAM }} box"
    storages:
      - {name: data, mount_point: /srv/data}
--- instances/more.yml
instances:
  - name: spare
    image: web
"#;

const BOX_FILE: &str = "instances/box.yml";

/// Whether a fresh process took box's file's checks from the cache,
/// after checking it answers as a cold one; then it writes the cache.
fn took(sys: &DiskWithEnv, root: &Path, cache: &Path) -> bool {
    took_file(sys, root, cache, BOX_FILE)
}

/// The same for the instances file at `path`; the process plans as
/// `csis plan` does (every fingerprint computed, so the cache may keep
/// them too).
fn took_file(sys: &DiskWithEnv, root: &Path, cache: &Path, path: &str) -> bool {
    let cached = load_cached(sys, root, Some(cache));
    let cold = load_cached(sys, root, None);
    assert_eq!(described_diagnostics(&cached), described_diagnostics(&cold));
    let file = cached.file(path).expect("the instances file");
    let taken = kept_instances(&cached.db, file).is_some();
    let keys = csis_engine::plan::bakes::bake_keys(&cached.db, cached.tree);
    csis_engine::workspace::prewarm::fingerprints(&cached.db, cached.tree, &keys);
    save_cache(&cached, sys).unwrap();
    taken
}

fn env(team: &str) -> DiskWithEnv {
    DiskWithEnv(BTreeMap::from([("TEAM".to_string(), team.to_string())]))
}

#[test]
fn an_instances_file_is_taken_only_while_what_it_read_is_as_it_was() {
    let files = parse(&format!("{LOCAL_BASE}{HOSTS}"));
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    assert!(!took(&sys, root.path(), cache), "nothing kept yet");
    assert!(took(&sys, root.path(), cache), "nothing changed");

    // Another instances file's edit leaves it as it was.
    write_file(
        root.path(),
        "instances/more.yml",
        "instances:\n  - name: spare\n    image: web\n    description: edited\n",
    );
    assert!(
        took(&sys, root.path(), cache),
        "another instances file edited"
    );

    // A variable its templates read.
    assert!(!took(&env("green"), root.path(), cache), "TEAM changed");
    assert!(took(&env("green"), root.path(), cache), "kept again");
    let sys = env("green");

    // Any other file: the image's group changes, and box may no longer
    // attach its storage, which a cold load refuses; the cached load must
    // too.
    write_file(
        root.path(),
        "images/web.yml",
        &files["images/web.yml"].replace("group: ops", "group: ghosts"),
    );
    let refused = |ws: &Workspace| {
        described_diagnostics(ws)
            .iter()
            .any(|d| d.contains("may not attach storage 'data'"))
    };
    assert!(
        refused(&load_cached(&sys, root.path(), None)),
        "the cold load refuses the attachment"
    );
    assert!(!took(&sys, root.path(), cache), "the image changed");
    assert!(refused(&load_cached(&sys, root.path(), Some(cache))));
    assert!(
        !took(&sys, root.path(), cache),
        "a file with findings is not kept"
    );
    write_file(root.path(), "images/web.yml", &files["images/web.yml"]);
    assert!(!took(&sys, root.path(), cache), "the image changed back");
    assert!(took(&sys, root.path(), cache), "kept again");

    // Its own text.
    write_file(
        root.path(),
        BOX_FILE,
        &files[BOX_FILE].replace("/srv/data", "/srv/other"),
    );
    assert!(!took(&sys, root.path(), cache), "its text changed");
    assert!(took(&sys, root.path(), cache), "kept again");

    // Its one name declared in a file read before it: the index takes
    // that one, and this file's checks cover no instance.
    write_file(
        root.path(),
        "instances/aaa.yml",
        "instances:\n  - name: box\n    image: web\n",
    );
    assert!(!took(&sys, root.path(), cache), "a name taken from it");

    // As many entries taken, but others: box names a storage that does
    // not exist, which is refused only once the index takes box from it.
    write_file(
        root.path(),
        BOX_FILE,
        "instances:\n  - name: box\n    image: web\n    storages:\n      - {name: nowhere, mount_point: /x}\n  - name: extra\n    image: web\n",
    );
    assert!(!took(&sys, root.path(), cache), "its text changed");
    assert!(took(&sys, root.path(), cache), "kept with extra alone");
    write_file(
        root.path(),
        "instances/aaa.yml",
        "instances:\n  - name: extra\n    image: web\n",
    );
    assert!(!took(&sys, root.path(), cache), "box taken from it instead");
}

#[test]
fn an_instances_file_whose_templates_name_another_item_is_never_kept() {
    let hosts = HOSTS.replace("{{ ENV.TEAM }} box", "beside {{ spare.name }}");
    let root = temp_tree(parse(&format!("{LOCAL_BASE}{hosts}")));
    let cache_dir = tempfile::tempdir().unwrap();
    let sys = env("blue");
    assert!(!took(&sys, root.path(), cache_dir.path()));
    assert!(!took(&sys, root.path(), cache_dir.path()));
}

#[test]
fn a_hook_reading_another_instance_keeps_no_instances_file() {
    let root = temp_tree(parse(&format!("{LOCAL_BASE}{HOSTS}")));
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    let ws = load_cached(&sys, root.path(), Some(cache));
    // Answering for box, a hook reads box, then what else is declared.
    let about_box = EngineContext::about_instance(&ws.db, ws.tree, "box");
    assert!(about_box.item(ItemKind::INSTANCES, "box").is_some());
    assert!(about_box.item(ItemKind::STORAGES, "data").is_some());
    assert!(!ws.db.cache().unwrap().reached_across(), "its own instance");
    assert_eq!(about_box.item_names(ItemKind::INSTANCES).len(), 2);
    assert!(ws.db.cache().unwrap().reached_across(), "every instance");
    // The process keeps none of the files whose checks it ran (a file it
    // took was checked by a process where no hook read across).
    save_cache(&ws, &sys).unwrap();
    assert!(!took(&sys, root.path(), cache), "none was kept");
    assert!(
        took(&sys, root.path(), cache),
        "a process without it keeps it"
    );

    // Another instance by name, and another context's reads.
    let ws = load_cached(&sys, root.path(), Some(cache));
    EngineContext::outside_run(&ws.db, ws.tree).item(ItemKind::INSTANCES, "spare");
    assert!(!ws.db.cache().unwrap().reached_across(), "for no instance");
    EngineContext::about_instance(&ws.db, ws.tree, "box").item_model(ItemKind::INSTANCES, "spare");
    assert!(ws.db.cache().unwrap().reached_across(), "spare, for box");
}

/// The clouds tree with its instances file kept, then a second instances
/// file whose instances collide with the kept ones: a GCE name, and an
/// EBS volume two instances attach. The tree-wide checks read the kept
/// instances from the unit, and refuse as a cold load does.
#[test]
fn the_tree_wide_checks_read_a_kept_files_instances_as_a_cold_load_does() {
    let root = temp_tree(read_tree(&fixture_dir("clouds")));
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = DiskWithEnv(BTreeMap::new());
    for _ in 0..2 {
        let ws = load_cached(&sys, root.path(), Some(cache));
        assert_eq!(described_diagnostics(&ws), Vec::<String>::new());
        save_cache(&ws, &sys).unwrap();
    }
    write_file(
        root.path(),
        "instances/later.yml",
        "instances:\n  - name: web_gce\n    type: gce-vms\n    image: web\n  - name: later-aws\n    type: ec2\n    image: web\n    storages:\n      - {name: web_data, mount_point: /srv/later}\n",
    );
    let cached = load_cached(&sys, root.path(), Some(cache));
    let found = described_diagnostics(&cached);
    let web = cached.file("instances/web.yml").unwrap();
    assert!(kept_instances(&cached.db, web).is_some(), "web.yml is kept");
    assert_eq!(
        found,
        described_diagnostics(&load_cached(&sys, root.path(), None))
    );
    let has = |text: &str| found.iter().any(|d| d.contains(text));
    // later.yml is read first: the kept instance is the second to
    // derive the name, refused where its file declares it.
    assert!(
        has(
            "instances/web.yml:11:5: instance 'web-gce' becomes GCE instance name 'web-gce', as instance 'web_gce' (instances/later.yml:2:5) does"
        ),
        "{found:#?}"
    );
    assert!(
        has(
            "storage 'web_data' (ebs) is single-attach but instances [later-aws, web-aws] all attach it"
        ),
        "{found:#?}"
    );
}

/// A kept instance whose storage its image's base cannot mount: the
/// capabilities (a tree-wide check, by image) read which instances launch
/// the image and what they attach from the unit, and refuse as a cold
/// load does, where the instance declares its storages.
#[test]
fn the_capabilities_read_a_kept_files_instances_as_a_cold_load_does() {
    let base = LOCAL_BASE.replace("storage_types: [local]", "storage_types: [nfs]");
    let root = temp_tree(parse(&format!("{base}{HOSTS}")));
    let cache_dir = tempfile::tempdir().unwrap();
    let sys = env("blue");
    assert!(
        !took(&sys, root.path(), cache_dir.path()),
        "nothing kept yet"
    );
    write_file(
        root.path(),
        "instances/more.yml",
        "instances:\n  - name: spare\n    image: web\n    description: edited\n",
    );
    assert!(took(&sys, root.path(), cache_dir.path()), "box's file kept");
    let found = described_diagnostics(&load_cached(&sys, root.path(), Some(cache_dir.path())));
    assert!(
        found.iter().any(|d| d.starts_with("instances/box.yml:6:7: image 'web' attaches storage 'data' of type 'local' which base 'alma' does not declare")),
        "{found:#?}"
    );
}

/// An image whose group an instance's description gives: the world then
/// reads an instances file, and nothing is kept under it. Kept, the other
/// instances file's checks would miss that its instance may no longer
/// attach its storage once the description changes.
#[test]
fn nothing_is_kept_while_an_item_outside_the_instances_files_names_another_item() {
    let tree = r#"
--- images/web.yml
images:
  - name: web
    source_image: alma
    group: "{{ box.description }}"
    runtimes:
      - image_builder: ib
--- storages/data.yml
storages:
  - name: data
    groups: [ops]
--- instances/box.yml
instances:
  - name: box
    image: web
    description: ops
--- instances/more.yml
instances:
  - name: spare
    image: web
    storages:
      - {name: data, mount_point: /srv/data}
"#;
    let files = parse(&format!("{LOCAL_BASE}{tree}"));
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    let more = "instances/more.yml";
    assert!(
        !took_file(&sys, root.path(), cache, more),
        "nothing kept yet"
    );
    assert!(!took_file(&sys, root.path(), cache, more), "never kept");
    let ws = load_cached(&sys, root.path(), Some(cache));
    assert!(
        csis_engine::plan::kept_fingerprints::kept_fingerprint(&ws.db, ws.tree, "web", "here")
            .is_none(),
        "no fingerprint kept"
    );
    write_file(
        root.path(),
        "instances/box.yml",
        &files["instances/box.yml"].replace("description: ops", "description: ghosts"),
    );
    assert!(!took_file(&sys, root.path(), cache, more));
    let refused = described_diagnostics(&load_cached(&sys, root.path(), Some(cache)));
    assert!(
        refused.iter().any(|d| d.contains(
            "instance 'spare' (image 'web', group 'ghosts') may not attach storage 'data'"
        )),
        "{refused:#?}"
    );
}
