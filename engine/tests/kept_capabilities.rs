//! The world's part of the capabilities check kept in the persisted cache
//! (check/kept_capabilities.rs): a fresh process takes it only while the
//! tree but its instances files and the variables its templates read are
//! as they were, checks only the storages the instances attach against
//! it, and refuses exactly as a cold process does, whether it takes the
//! unit or not.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use csis_engine::check::kept_capabilities::kept_capabilities;
use csis_engine::run::persist_cache::save_cache;
use csis_test_support::{
    DiskWithEnv, LOCAL_BASE, described_diagnostics, load_cached, parse, temp_tree, write_file,
};

/// Two images: `web` on alma, which carries local storages, and `lean` on
/// slim, which carries none; a local storage `data` that box attaches.
const TREE: &str = r#"
--- images/web.yml
images:
  - name: web
    source_image: alma
    group: ops
    description: "{{ ENV.TEAM }} web"
    runtimes:
      - image_builder: ib
  - name: lean
    source_image: slim
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
    storages:
      - {name: data, mount_point: /srv/data}
--- instances/more.yml
instances:
  - name: spare
    image: lean
"#;

/// The second OS builder, after alma in cfg/builders.yml.
const SLIM: &str = "  - name: slim
    type: local
    family: alma-linux
    family_version: 10
    identity_types: [unix]
    storage_types: []
    runtimes:
      - image_builder: ib
";

/// LOCAL_BASE with slim, and TREE.
fn tree() -> csis_test_support::Files {
    let mut files = parse(&format!("{LOCAL_BASE}{TREE}"));
    let builders = format!("{}{SLIM}", files["cfg/builders.yml"]);
    files.insert("cfg/builders.yml".into(), builders);
    files
}

/// What lean's instance attaching data brings.
const REFUSAL: &str = "image 'lean' attaches storage 'data' of type 'local' which base 'slim' does not declare (declared: [], via declaration)";

fn env(team: &str) -> DiskWithEnv {
    DiskWithEnv(BTreeMap::from([("TEAM".to_string(), team.to_string())]))
}

/// Whether a fresh process took the capabilities from the cache, after
/// checking it refuses what a cold one does; then it writes the cache.
/// Returns what it refused too.
fn took(sys: &DiskWithEnv, root: &Path, cache: &Path) -> (bool, Vec<String>) {
    let cached = load_cached(sys, root, Some(cache));
    let found = described_diagnostics(&cached);
    assert_eq!(found, described_diagnostics(&load_cached(sys, root, None)));
    let taken = kept_capabilities(&cached.db, cached.tree).is_some();
    save_cache(&cached, sys).unwrap();
    (taken, found)
}

/// `path` written with `text`, then what a fresh process refused, which
/// took the capabilities (an instances file's edit leaves them kept).
fn after_instances_edit(
    sys: &DiskWithEnv,
    root: &Path,
    cache: &Path,
    path: &str,
    text: &str,
) -> Vec<String> {
    write_file(root, path, text);
    let (taken, found) = took(sys, root, cache);
    assert!(taken, "an instances file edited");
    found
}

fn refuses(found: &[String]) -> bool {
    found.iter().any(|d| d.contains(REFUSAL))
}

#[test]
fn the_capabilities_are_taken_only_while_the_world_is_as_it_was_and_refuse_as_a_cold_load() {
    let files = tree();
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    assert!(!took(&sys, root.path(), cache).0, "nothing kept yet");
    let (taken, found) = took(&sys, root.path(), cache);
    assert!(taken, "nothing changed");
    assert!(!refuses(&found), "{found:#?}");

    // An instances file's edit: spare now attaches data, which lean's
    // base does not carry. The kept part answers for lean and for data.
    let attaching = "instances:\n  - name: spare\n    image: lean\n    storages:\n      - {name: data, mount_point: /srv/data}\n";
    let found = after_instances_edit(&sys, root.path(), cache, "instances/more.yml", attaching);
    assert!(refuses(&found), "{found:#?}");
    assert!(
        found
            .iter()
            .any(|d| d.starts_with("instances/more.yml:5:7: ")),
        "where spare declares its storages: {found:#?}"
    );

    // A variable an image's template reads.
    assert!(!took(&env("green"), root.path(), cache).0, "TEAM changed");
    let sys = env("green");
    assert!(took(&sys, root.path(), cache).0, "kept again");

    // Any file but an instances file: slim carries local storages now.
    write_file(
        root.path(),
        "cfg/builders.yml",
        &files["cfg/builders.yml"].replace("storage_types: []", "storage_types: [local]"),
    );
    let (taken, found) = took(&sys, root.path(), cache);
    assert!(!taken, "cfg/ changed");
    assert!(!refuses(&found), "{found:#?}");
    assert!(took(&sys, root.path(), cache).0, "kept again");
}

/// An image whose own part found something (an identity type its base
/// does not declare) is not kept: it is checked whole, and its refusal is
/// a cold load's, in a process that took the rest.
#[test]
fn an_image_whose_own_part_found_something_is_checked_whole() {
    let mut files = tree();
    let builders = files["cfg/builders.yml"].replace(
        "identity_types: [unix]\n    storage_types: []",
        "identity_types: []\n    storage_types: []",
    );
    files.insert("cfg/builders.yml".into(), builders);
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    let identity = "image 'lean' uses an identity type its base 'slim' does not declare: 'unix'";
    let (_, found) = took(&sys, root.path(), cache);
    assert!(found.iter().any(|d| d.contains(identity)), "{found:#?}");
    let found = after_instances_edit(
        &sys,
        root.path(),
        cache,
        "instances/more.yml",
        "instances:\n  - name: spare\n    image: lean\n    description: edited\n",
    );
    assert!(found.iter().any(|d| d.contains(identity)), "{found:#?}");
}

/// Images whose group has no identity builder are not kept either: the
/// refusal, once for the group at the first image that meets it, is a
/// cold load's in a process that took the rest.
#[test]
fn a_group_without_an_identity_builder_is_reported_once_as_a_cold_load_does() {
    let mut files = tree();
    let builders = files["cfg/builders.yml"].replace(
        "  - {name: unix, type: basic, is_default: true}\n",
        "  - {name: unix, type: basic, is_default: true}\n  - {name: sheet, type: dummy-roster}\n",
    );
    files.insert("cfg/builders.yml".into(), builders);
    let groups = format!(
        "{}  - {{name: lab, type: sheet, members: [avery.alpha]}}\n",
        files["groups/people.yml"]
    );
    files.insert("groups/people.yml".into(), groups);
    let images = files["images/web.yml"].replace(
        "  - name: lean\n    source_image: slim\n    group: ops\n",
        "  - name: lean\n    source_image: slim\n    group: lab\n",
    ) + "  - name: lean2\n    source_image: lean\n    group: lab\n    runtimes:\n      - image_builder: ib\n";
    files.insert("images/web.yml".into(), images);
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    let once = |found: &[String]| {
        found
            .iter()
            .filter(|d| d.contains("group 'lab' has no identity builder"))
            .count()
    };
    let (_, found) = took(&sys, root.path(), cache);
    assert_eq!(once(&found), 1, "{found:#?}");
    let found = after_instances_edit(
        &sys,
        root.path(),
        cache,
        "instances/more.yml",
        "instances:\n  - name: spare\n    image: lean2\n    description: edited\n",
    );
    assert_eq!(once(&found), 1, "{found:#?}");
}

/// An instances file's unit keeps whether the storages its instances
/// attach were carried (load/kept_instances.rs): after an edit of another
/// instances file, one whose were not is read by the check again and
/// refuses as a cold load does, and one whose were is left unread.
#[test]
fn an_instances_file_kept_with_a_storage_not_carried_is_checked_again() {
    use csis_engine::load::kept_instances::kept_instances;
    let mut files = tree();
    files.insert(
        "instances/more.yml".into(),
        "instances:\n  - name: spare\n    image: lean\n    storages:\n      - {name: data, mount_point: /srv/data}\n".into(),
    );
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    took(&sys, root.path(), cache);
    let (_, found) = took(&sys, root.path(), cache);
    assert!(refuses(&found), "{found:#?}");
    let carried = |ws: &csis_engine::workspace::Workspace, path: &str| {
        let file = ws.file(path).unwrap();
        kept_instances(&ws.db, file).map(|kept| kept.storages_carried())
    };
    let kept = load_cached(&sys, root.path(), Some(cache));
    assert_eq!(carried(&kept, "instances/box.yml"), Some(true));
    assert_eq!(carried(&kept, "instances/more.yml"), Some(false));

    let found = after_instances_edit(
        &sys,
        root.path(),
        cache,
        "instances/box.yml",
        "instances:\n  - name: box\n    image: web\n    description: edited\n    storages:\n      - {name: data, mount_point: /srv/data}\n",
    );
    assert!(refuses(&found), "more.yml's spare, kept: {found:#?}");
    let edited = load_cached(&sys, root.path(), Some(cache));
    assert_eq!(carried(&edited, "instances/more.yml"), Some(false));
}
