//! A users file's checks kept in the persisted cache (load/kept_users.rs): a
//! fresh process takes them only while everything they were computed
//! from is as it was (the file, cfg/, which of its entries the index
//! takes, the environment variables looked up), never for a file whose
//! users read another item; and it answers exactly as a cold process,
//! whether it takes them or not, down to the accounts a group's
//! user-data carries, which a kept file answers without structuring its
//! users.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use csis_engine::load::kept_users::kept_users;
use csis_engine::plan::hook_context::EngineContext;
use csis_engine::run::persist_cache::save_cache;
use csis_engine::workspace::Workspace;
use csis_plugin_api::HookContext;
use csis_test_support::{
    DiskWithEnv, LOCAL_BASE, described_diagnostics, load_cached, parse, temp_tree, write_file,
};

/// A users file of its own beside LOCAL_BASE's (which holds a group too,
/// so is never kept): two users whose emails share a local part, one
/// described from the environment; and a group of them in a file of its
/// own, whose accounts read their logins, names and keys.
const STAFF: &str = r#"
--- groups/staff.yml
users:
  - {name: casey.charlie, first_name: Casey, last_name: Charlie, email: casey@example.com, public_keys: ["ssh-ed25519 AAAAC3casey casey@laptop"]}
  - {name: dana.delta, first_name: Dana, last_name: Delta, email: casey@example.org, description: "{{ ENV.TEAM }} member"}
--- groups/crew.yml
groups:
  - {name: crew, members: [casey.charlie, nobody.declared], admins: [dana.delta]}
"#;

const STAFF_FILE: &str = "groups/staff.yml";

/// Whether a fresh process took the staff file's checks from the cache,
/// after checking it answers as a cold one; then it writes the cache.
fn took(sys: &DiskWithEnv, root: &Path, cache: &Path) -> bool {
    let cached = load_cached(sys, root, Some(cache));
    let cold = load_cached(sys, root, None);
    assert_eq!(described_diagnostics(&cached), described_diagnostics(&cold));
    let accounts = |ws: &Workspace| {
        let crew = EngineContext::outside_run(&ws.db, ws.tree).group_accounts(Some("crew"));
        (crew.users.clone(), crew.groups.clone())
    };
    assert_eq!(accounts(&cached), accounts(&cold));
    assert_eq!(accounts(&cold).0.len(), 3, "the crew's accounts");
    let file = cached.file(STAFF_FILE).expect("the staff file");
    let taken = kept_users(&cached.db, file).is_some();
    save_cache(&cached, sys).unwrap();
    taken
}

fn env(team: &str) -> DiskWithEnv {
    DiskWithEnv(BTreeMap::from([("TEAM".to_string(), team.to_string())]))
}

#[test]
fn a_users_file_is_taken_only_while_what_it_read_is_as_it_was() {
    let files = parse(&format!("{LOCAL_BASE}{STAFF}"));
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path();
    let sys = env("blue");
    assert!(!took(&sys, root.path(), cache), "nothing kept yet");
    assert!(took(&sys, root.path(), cache), "nothing changed");

    // Another file's edit leaves it as it was.
    let people = &files["groups/people.yml"];
    write_file(
        root.path(),
        "groups/people.yml",
        &format!("# edited\n{people}"),
    );
    assert!(took(&sys, root.path(), cache), "another file edited");

    // A variable the users' templates read.
    assert!(!took(&env("green"), root.path(), cache), "TEAM changed");
    assert!(took(&env("green"), root.path(), cache), "kept again");

    // cfg/: under email_as_username the two users share the login
    // "casey", which a cold load refuses; the cached load must too.
    let builders =
        files["cfg/builders.yml"].replace("email_as_username: false", "email_as_username: true");
    write_file(root.path(), "cfg/builders.yml", &builders);
    let sys = env("green");
    let clash = |ws: &Workspace| {
        described_diagnostics(ws)
            .iter()
            .any(|d| d.contains("both log in as 'casey'"))
    };
    assert!(
        clash(&load_cached(&sys, root.path(), None)),
        "the cold load refuses the clash"
    );
    assert!(!took(&sys, root.path(), cache), "cfg/ changed");
    assert!(clash(&load_cached(&sys, root.path(), Some(cache))));

    // Its checks found something: not kept.
    assert!(
        !took(&sys, root.path(), cache),
        "a file with findings is not kept"
    );
    write_file(root.path(), "cfg/builders.yml", &files["cfg/builders.yml"]);
    assert!(!took(&sys, root.path(), cache), "cfg/ changed back");
    assert!(took(&sys, root.path(), cache), "kept again");

    // The same user declared in a file read before it: the index takes
    // that one, and this file's checks cover one user less.
    write_file(
        root.path(),
        "groups/early.yml",
        "users:\n  - {name: casey.charlie, first_name: Casey, last_name: Early}\n",
    );
    assert!(!took(&sys, root.path(), cache), "a name taken from it");
    // Kept again with one user less: the crew's casey.charlie is early's
    // (kept too), its other accounts the staff file's.
    assert!(took(&sys, root.path(), cache), "kept with one user less");
}

#[test]
fn a_users_file_whose_templates_name_another_item_is_never_kept() {
    let staff = STAFF.replace("{{ ENV.TEAM }} member", "member of {{ ops.name }}");
    let files = parse(&format!("{LOCAL_BASE}{staff}"));
    let root = temp_tree(&files);
    let cache_dir = tempfile::tempdir().unwrap();
    let sys = env("blue");
    assert!(!took(&sys, root.path(), cache_dir.path()));
    assert!(!took(&sys, root.path(), cache_dir.path()));
}
