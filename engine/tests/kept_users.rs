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
use std::io;
use std::path::{Path, PathBuf};

use csis_engine::db::system::{
    HeldLock, OsSystem, Process, ProcessOutput, SourceRead, Stream, System,
};
use csis_engine::load::kept_users::kept_users;
use csis_engine::plan::hook_context::EngineContext;
use csis_engine::run::persist_cache::save_cache;
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_plugin_api::HookContext;
use csis_test_support::{LINKED, LOCAL_BASE, parse, registry, temp_tree, write_file};

/// The disk, with an environment of the test's own.
struct WithEnv(BTreeMap<String, String>);

impl System for WithEnv {
    fn read_to_string(&self, path: &Path) -> io::Result<Option<String>> {
        OsSystem.read_to_string(path)
    }
    fn read_source(&self, path: &Path, max_bytes: u64) -> SourceRead {
        OsSystem.read_source(path, max_bytes)
    }
    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        OsSystem.resolve(path)
    }
    fn list_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        OsSystem.list_files(dir)
    }
    fn is_dir(&self, path: &Path) -> bool {
        OsSystem.is_dir(path)
    }
    fn env(&self) -> BTreeMap<String, String> {
        self.0.clone()
    }
    fn now_unix(&self) -> i64 {
        OsSystem.now_unix()
    }
    fn read_bytes(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        OsSystem.read_bytes(path)
    }
    fn write_atomic(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        OsSystem.write_atomic(path, bytes, executable)
    }
    fn write_replace(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        OsSystem.write_replace(path, bytes, executable)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        OsSystem.remove_file(path)
    }
    fn remove_empty_dirs(&self, dir: &Path) -> io::Result<()> {
        OsSystem.remove_empty_dirs(dir)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        OsSystem.canonicalize(path)
    }
    fn run_streaming(
        &self,
        process: &Process,
        on_line: &mut dyn FnMut(Stream, &str),
    ) -> io::Result<ProcessOutput> {
        OsSystem.run_streaming(process, on_line)
    }
    fn modified(&self, path: &Path) -> io::Result<Option<std::time::SystemTime>> {
        OsSystem.modified(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn HeldLock>>> {
        OsSystem.try_lock(path)
    }
}

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

fn fresh(sys: &WithEnv, root: &Path, cache: Option<&Path>) -> Workspace {
    let options = LoadOptions {
        cache_dir: cache.map(Path::to_path_buf),
        ..LoadOptions::default()
    };
    Workspace::load(sys, registry(LINKED), root, &options).expect("the tree reads")
}

/// The diagnostics of a load, as text.
fn diagnostics(ws: &Workspace) -> Vec<String> {
    ws.load_diagnostics()
        .iter()
        .map(|d| ws.describe(d))
        .collect()
}

/// Whether a fresh process took the staff file's checks from the cache,
/// after checking it answers as a cold one; then it writes the cache.
fn took(sys: &WithEnv, root: &Path, cache: &Path) -> bool {
    let cached = fresh(sys, root, Some(cache));
    let cold = fresh(sys, root, None);
    assert_eq!(diagnostics(&cached), diagnostics(&cold));
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

fn env(team: &str) -> WithEnv {
    WithEnv(BTreeMap::from([("TEAM".to_string(), team.to_string())]))
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
        diagnostics(ws)
            .iter()
            .any(|d| d.contains("both log in as 'casey'"))
    };
    assert!(
        clash(&fresh(&sys, root.path(), None)),
        "the cold load refuses the clash"
    );
    assert!(!took(&sys, root.path(), cache), "cfg/ changed");
    assert!(clash(&fresh(&sys, root.path(), Some(cache))));

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
