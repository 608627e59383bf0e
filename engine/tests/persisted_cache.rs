//! What the persisted cache keeps and when it is written (that a cached
//! process answers as a cold one is in warm_equals_cold.rs).
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use csis_engine::db::Db;
use csis_engine::db::system::OsSystem;
use csis_engine::run::persist_cache::save_cache;
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_test_support::{LINKED, LOCAL_BASE, load, parse, registry, temp_tree, write_file};

const TREE: &str = r#"
--- images/base.yml
images:
  - name: base
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
--- instances/box.yml
instances:
  - name: box
    image: base
--- instances/broken.yml
instances:
  - name: broken
    image: base
    no_such_field: 1
  - image: base
"#;

fn fresh(root: &Path, cache: &Path) -> Workspace {
    let options = LoadOptions {
        cache_dir: Some(cache.to_path_buf()),
        ..LoadOptions::default()
    };
    load(&OsSystem, registry(LINKED), root, &options)
}

/// The cache's files by name, with their bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().to_string_lossy().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The cache's files by name, with when each was last written.
fn modified(dir: &Path) -> BTreeMap<String, std::time::SystemTime> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().to_string_lossy().to_string(),
                e.metadata().unwrap().modified().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_tree_read_again_unchanged_is_read_from_the_cache_which_is_left_as_it_was() {
    let root = temp_tree(parse(&format!("{LOCAL_BASE}{TREE}")));
    let cache = tempfile::tempdir().unwrap();
    let first = fresh(root.path(), cache.path());
    assert_eq!(first.db.cache().unwrap().taken(), 0);
    save_cache(&first, &OsSystem).unwrap();
    let written = files(cache.path());

    let second = fresh(root.path(), cache.path());
    let items = second.tree.item_files(&second.db).len();
    // Every item file but the one with a finding (its entry without a
    // name), which is read again each time, and the scripts the images
    // name, which the load asks for (load/kept_scripts.rs).
    assert_eq!(second.db.cache().unwrap().taken(), items - 1 + 1);
    assert_eq!(second.db.cache().unwrap().notice(), None);
    // Nothing to write: no file is touched.
    let before = modified(cache.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    save_cache(&second, &OsSystem).unwrap();
    assert_eq!(modified(cache.path()), before);

    // One edit: that file is read anew, the others are taken, and the
    // cache is written again with the new text's entries.
    write_file(
        root.path(),
        "instances/box.yml",
        "instances:\n  - name: box\n    image: base\n    description: edited\n",
    );
    let third = fresh(root.path(), cache.path());
    // The scripts too: an instances file is not what the images read.
    assert_eq!(third.db.cache().unwrap().taken(), items - 2 + 1);
    std::thread::sleep(std::time::Duration::from_millis(20));
    save_cache(&third, &OsSystem).unwrap();
    // Only the edited file's shards are written again: its entries', and
    // its checks' (load/kept_instances.rs), which the new text keys anew.
    let shard_of =
        |path: &str| csis_engine::db::cache::shard_file(csis_engine::db::cache::shard_of(path));
    let shard = shard_of("instances/box.yml");
    let checks = shard_of(&csis_engine::load::kept_instances::unit_path(
        "instances/box.yml",
    ));
    let now = files(cache.path());
    assert_ne!(now[&shard], written[&shard]);
    assert_ne!(now[&checks], written[&checks]);
    let after = modified(cache.path());
    let rewritten: std::collections::BTreeSet<&String> =
        after.keys().filter(|f| after[*f] != before[*f]).collect();
    assert_eq!(rewritten, [&shard, &checks].into_iter().collect());
    let fourth = fresh(root.path(), cache.path());
    assert_eq!(fourth.db.cache().unwrap().taken(), items - 1 + 1);
}

/// A plan's recording hashes each text it reads to note the read; the
/// load hands that digest on, and a text set later (a save under `watch`)
/// is digested anew, never keyed by the digest of the text it replaced.
#[test]
fn a_text_is_keyed_by_its_own_digest_when_read_through_a_recording_and_when_edited() {
    use csis_engine::db::files::text_digest;
    use csis_engine::db::system::Recording;
    let root = temp_tree(parse(&format!("{LOCAL_BASE}{TREE}")));
    let cache = tempfile::tempdir().unwrap();
    let recording = Recording::new(&OsSystem);
    let options = LoadOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        ..LoadOptions::default()
    };
    let mut ws = load(&recording, registry(LINKED), root.path(), &options);
    let file = ws.file("instances/box.yml").unwrap();
    let text = std::fs::read_to_string(root.path().join("instances/box.yml")).unwrap();
    assert_eq!(
        *file.read_digest(&ws.db),
        Some(*blake3::hash(text.as_bytes()).as_bytes())
    );
    assert_eq!(
        *text_digest(&ws.db, file),
        *blake3::hash(text.as_bytes()).as_bytes()
    );

    let edited = "instances:\n  - name: box\n    image: base\n    description: saved\n";
    assert!(ws.set_file_text("instances/box.yml", edited));
    assert_eq!(*file.read_digest(&ws.db), None);
    assert_eq!(
        *text_digest(&ws.db, file),
        *blake3::hash(edited.as_bytes()).as_bytes()
    );
}
