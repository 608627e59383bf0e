//! The tree's fingerprints kept in the persisted cache
//! (plan/kept_fingerprints.rs): a fresh process takes them only while
//! the tree but its instances files and the variables its templates read
//! are as they were, and whatever it takes, every series' fingerprint is
//! a cold process's.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use csis_engine::db::Db;
use csis_engine::plan::bakes::bake_keys;
use csis_engine::plan::fingerprint::{SeriesKey, input_fingerprint};
use csis_engine::plan::kept_fingerprints::kept_fingerprint;
use csis_engine::run::persist_cache::save_cache;
use csis_engine::workspace::Workspace;
use csis_engine::workspace::prewarm;
use csis_test_support::{DiskWithEnv, LOCAL_BASE, load_cached, parse, temp_tree, write_file};

/// An image whose modification reads a variable and one that runs a
/// script file, and an instance of each.
const TREE: &str = r#"
--- images/web.yml
images:
  - name: web
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
    modifications:
      - {name: greet, script: "echo {{ ENV.TEAM }}"}
  - name: tools
    source_image: web
    group: ops
    runtimes:
      - image_builder: ib
    modifications:
      - {name: tools, scripts: [scripts/tools.sh]}
--- scripts/tools.sh
echo tools
--- instances/box.yml
instances:
  - name: box
    image: tools
"#;

/// Every series' fingerprint, as a plan computes them.
fn fingerprints(ws: &Workspace) -> Vec<(String, String, Option<String>)> {
    let keys = bake_keys(&ws.db, ws.tree);
    prewarm::fingerprints(&ws.db, ws.tree, &keys);
    keys.into_iter()
        .map(|(s, r)| {
            let key = SeriesKey::new(&ws.db, s.clone(), r.clone());
            let fp = input_fingerprint(&ws.db, ws.tree, key).as_ref();
            (s, r, fp.map(|f| f.hex.clone()))
        })
        .collect()
}

/// Whether a fresh process that plans took the fingerprints from the
/// cache, after checking they are a cold process's; then it writes the
/// cache.
fn took(sys: &DiskWithEnv, root: &Path, cache: &Path) -> bool {
    let cached = load_cached(sys, root, Some(cache));
    let cold = load_cached(sys, root, None);
    let found = fingerprints(&cached);
    assert_eq!(found, fingerprints(&cold));
    assert_eq!(found.len(), 3, "alma, web and tools on the local runtime");
    let taken = kept_fingerprint(&cached.db, cached.tree, "tools", "here").is_some();
    cached.load_diagnostics();
    save_cache(&cached, sys).unwrap();
    taken
}

fn env(team: &str) -> DiskWithEnv {
    DiskWithEnv(BTreeMap::from([("TEAM".to_string(), team.to_string())]))
}

#[test]
fn the_fingerprints_are_taken_only_while_the_tree_but_its_instances_is_as_it_was() {
    let files = parse(&format!("{LOCAL_BASE}{TREE}"));
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    assert!(!took(&sys, root.path(), cache), "nothing kept yet");
    assert!(took(&sys, root.path(), cache), "nothing changed");

    // An instances file is no input of a fingerprint.
    write_file(
        root.path(),
        "instances/box.yml",
        "instances:\n  - name: box\n    image: tools\n    description: edited\n",
    );
    assert!(took(&sys, root.path(), cache), "an instances file edited");

    // A script file a modification runs.
    write_file(root.path(), "scripts/tools.sh", "echo tools 2\n");
    assert!(!took(&sys, root.path(), cache), "the script changed");
    assert!(took(&sys, root.path(), cache), "kept again");

    // A variable a modification reads.
    assert!(!took(&env("green"), root.path(), cache), "TEAM changed");
    assert!(took(&env("green"), root.path(), cache), "kept again");

    // An image.
    write_file(
        root.path(),
        "images/web.yml",
        &files["images/web.yml"].replace("echo {{ ENV.TEAM }}", "echo hello {{ ENV.TEAM }}"),
    );
    assert!(!took(&env("green"), root.path(), cache), "an image changed");
}

#[test]
fn a_process_that_computed_no_fingerprint_keeps_none() {
    let root = temp_tree(parse(&format!("{LOCAL_BASE}{TREE}")));
    let cache_dir = tempfile::tempdir().unwrap();
    let sys = env("blue");
    // As `validate` does: the checks, no plan.
    let validated = load_cached(&sys, root.path(), Some(cache_dir.path()));
    validated.load_diagnostics();
    assert!(!validated.db.cache().unwrap().fingerprinted());
    save_cache(&validated, &sys).unwrap();
    assert!(!took(&sys, root.path(), cache_dir.path()), "none was kept");
    assert!(
        took(&sys, root.path(), cache_dir.path()),
        "a plan keeps them"
    );
}
