//! The world's files kept in the persisted cache (load/kept_world.rs) and
//! the scripts the images name (load/kept_scripts.rs): a fresh process
//! takes them only while what they were computed from is as it was,
//! checks again every file that had found something, reads the scripts
//! the kept list names, and answers exactly as a cold process does,
//! whether it takes them or not.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use csis_engine::db::Db;

use csis_engine::load::kept_world::kept_world;
use csis_engine::plan::bakes::bake_keys;
use csis_engine::plan::fingerprint::{SeriesKey, input_fingerprint};
use csis_engine::run::persist_cache::save_cache;
use csis_engine::workspace::Workspace;
use csis_test_support::{
    DiskWithEnv, LOCAL_BASE, described_diagnostics, load_cached, parse, temp_tree, write_file,
};

/// `web`, whose group a variable names and whose modification runs a
/// script file; `stray`, in a file of its own, chaining to nothing (a
/// finding of its file's checks); a storage; two instances files.
const TREE: &str = r#"
--- images/web.yml
images:
  - name: web
    source_image: alma
    group: "{{ ENV.TEAM }}"
    runtimes:
      - image_builder: ib
    modifications:
      - {name: site, scripts: [scripts/site.sh]}
--- images/stray.yml
images:
  - name: stray
    source_image: nowhere
    group: ops
    runtimes:
      - image_builder: ib
--- scripts/site.sh
echo site
--- scripts/other.sh
echo other
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
    image: web
"#;

/// What `stray`'s file finds.
const STRAY: &str = "image 'stray' does not chain to a base image (source_image=nowhere)";

/// What `web` finds when its group is not declared.
const NO_GROUP: &str = "image 'web'";

fn env(team: &str) -> DiskWithEnv {
    DiskWithEnv(BTreeMap::from([("TEAM".to_string(), team.to_string())]))
}

/// Each series' input fingerprint, as `csis plan` computes them.
fn fingerprints(ws: &Workspace) -> Vec<String> {
    let keys = bake_keys(&ws.db, ws.tree);
    csis_engine::workspace::prewarm::fingerprints(&ws.db, ws.tree, &keys);
    keys.into_iter()
        .map(|(series, runtime)| {
            let key = SeriesKey::new(&ws.db, series.clone(), runtime.clone());
            let fp = input_fingerprint(&ws.db, ws.tree, key);
            format!("{series}@{runtime}: {fp:?}")
        })
        .collect()
}

/// What a fresh process with the cache found, after checking that a
/// cold one finds and fingerprints the same; whether it took the world's
/// files and the scripts; then it writes the cache.
struct Took {
    world: bool,
    scripts: bool,
    found: Vec<String>,
    fingerprints: Vec<String>,
}

fn took(sys: &DiskWithEnv, root: &Path, cache: &Path) -> Took {
    let cached = load_cached(sys, root, Some(cache));
    // Asked of the load: whether it took the scripts is known now.
    let scripts = cached
        .db
        .cache()
        .unwrap()
        .taken_digest(csis_engine::load::kept_scripts::UNIT)
        .is_some();
    let found = described_diagnostics(&cached);
    let cold = load_cached(sys, root, None);
    assert_eq!(found, described_diagnostics(&cold));
    let fingerprints = fingerprints(&cached);
    assert_eq!(fingerprints, self::fingerprints(&cold));
    let world = kept_world(&cached.db, cached.tree).is_some();
    save_cache(&cached, sys).unwrap();
    Took {
        world,
        scripts,
        found,
        fingerprints,
    }
}

fn finds(found: &[String], what: &str) -> bool {
    found.iter().any(|d| d.contains(what))
}

#[test]
fn the_world_is_taken_after_an_instances_edit_and_a_file_that_found_something_is_checked_again() {
    let files = parse(&format!("{LOCAL_BASE}{TREE}"));
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("ops");
    let first = took(&sys, root.path(), cache);
    assert!(!first.world && !first.scripts, "nothing kept yet");
    assert!(finds(&first.found, STRAY), "{:#?}", first.found);

    // An instances file's edit: both are taken, and stray's file, which
    // found something, is checked again and says so where it did.
    write_file(
        root.path(),
        "instances/more.yml",
        "instances:\n  - name: spare\n    image: web\n    description: edited\n",
    );
    let second = took(&sys, root.path(), cache);
    assert!(second.world && second.scripts, "an instances file edited");
    assert!(
        second
            .found
            .iter()
            .any(|d| d.starts_with("images/stray.yml:") && d.contains(STRAY)),
        "{:#?}",
        second.found
    );
    assert!(!finds(&second.found, NO_GROUP), "{:#?}", second.found);

    // A variable web's template reads: its group is not declared now. A
    // unit kept under TEAM=ops would call web's file quiet.
    let third = took(&env("dev"), root.path(), cache);
    assert!(!third.world, "TEAM changed");
    assert!(finds(&third.found, NO_GROUP), "{:#?}", third.found);
    assert!(took(&env("dev"), root.path(), cache).world, "kept again");

    // A world file's edit: stray chains to alma now, and nothing kept
    // before says otherwise.
    write_file(
        root.path(),
        "images/stray.yml",
        &files["images/stray.yml"].replace("nowhere", "alma"),
    );
    let fourth = took(&env("dev"), root.path(), cache);
    assert!(!fourth.world && !fourth.scripts, "an image edited");
    assert!(!finds(&fourth.found, STRAY), "{:#?}", fourth.found);
}

#[test]
fn the_scripts_kept_are_read_and_a_new_list_is_made_when_an_image_names_another() {
    let files = parse(&format!("{LOCAL_BASE}{TREE}"));
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("ops");
    let first = took(&sys, root.path(), cache);

    // A script's text: the list is the same, so it is taken, and the new
    // text is read and enters web's fingerprint (a cold process's, as
    // `took` checks).
    write_file(root.path(), "scripts/site.sh", "echo site, edited\n");
    let second = took(&sys, root.path(), cache);
    assert!(second.scripts, "only a script's text changed");
    assert!(!second.world, "the world holds the scripts' texts");
    assert_ne!(second.fingerprints, first.fingerprints);

    // web names another script: a list kept before would leave it
    // unread, and web's fingerprint would miss it.
    write_file(
        root.path(),
        "images/web.yml",
        &files["images/web.yml"].replace("scripts/site.sh", "scripts/other.sh"),
    );
    let third = took(&sys, root.path(), cache);
    assert!(!third.scripts, "an image edited");
    assert_ne!(third.fingerprints, second.fingerprints);
    assert!(took(&sys, root.path(), cache).scripts, "kept again");
}

/// A check across the world that found something (a group whose member
/// is not declared) is not kept: a process that took the world's files
/// makes it again and refuses as a cold one, where a kept "found
/// nothing" would stay silent.
#[test]
fn a_check_across_the_world_that_found_something_is_made_again() {
    let mut files = parse(&format!("{LOCAL_BASE}{TREE}"));
    files.insert(
        "groups/extra.yml".into(),
        "groups:\n  - {name: ghost, members: [nobody]}\n".into(),
    );
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("ops");
    const GHOST: &str = "Group ghost has member nobody which is not in the list of defined users.";
    assert!(finds(&took(&sys, root.path(), cache).found, GHOST));
    write_file(
        root.path(),
        "instances/more.yml",
        "instances:\n  - name: spare\n    image: web\n    description: edited\n",
    );
    let second = took(&sys, root.path(), cache);
    assert!(second.world, "an instances file edited");
    assert!(finds(&second.found, GHOST), "{:#?}", second.found);
}

/// A user builder whose users log in by their email, and a users file
/// whose one user's email a variable makes.
const MAILED: &str = r#"
--- groups/mailed.yml
users:
  - {type: mail, name: casey@example.org, email: "{{ ENV.MAIL }}@example.org", first_name: Casey, last_name: Charlie}
"#;

/// The world's variables include those a users file's templates read,
/// though a process that took the world asks nothing of that file and
/// writes its unit back unread (`Cache::keep_untaken`): checking a unit's
/// variables notes them, so the next world unit is kept under them too. A
/// changed variable then takes neither, and the user's refusal is a cold
/// load's.
#[test]
fn a_variable_only_a_users_file_reads_keeps_the_world_from_being_taken() {
    let mut files = parse(&format!("{LOCAL_BASE}{TREE}{MAILED}"));
    let builders = files["cfg/builders.yml"].replace(
        "user_builders:\n",
        "user_builders:\n  - {name: mail, type: basic, email_as_username: true}\n",
    );
    files.insert("cfg/builders.yml".into(), builders);
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = |mail: &str| {
        DiskWithEnv(BTreeMap::from([
            ("TEAM".to_string(), "ops".to_string()),
            ("MAIL".to_string(), mail.to_string()),
        ]))
    };
    let first = took(&sys("casey"), root.path(), cache);
    assert!(!finds(&first.found, "casey"), "{:#?}", first.found);
    // An image's edit: the world is kept again by a process that took
    // the users file's unit; then an instances file's edit takes both.
    write_file(
        root.path(),
        "images/web.yml",
        &files["images/web.yml"].replace("runtimes:", "description: edited\n    runtimes:"),
    );
    assert!(
        !took(&sys("casey"), root.path(), cache).world,
        "an image edited"
    );
    write_file(
        root.path(),
        "instances/more.yml",
        "instances:\n  - name: spare\n    image: web\n    description: edited\n",
    );
    assert!(
        took(&sys("casey"), root.path(), cache).world,
        "an instances file edited"
    );
    // The user's email is another now.
    let changed = took(&sys("dana"), root.path(), cache);
    assert!(!changed.world, "MAIL changed");
    assert!(
        finds(&changed.found, "casey@example.org"),
        "{:#?}",
        changed.found
    );
}
