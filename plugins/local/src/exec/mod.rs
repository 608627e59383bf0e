//! The local runtime's steps, as runner scripts call them:
//! `csis local bake|storage|launch|identity --spec FILE`, run from the
//! lifecycle directory with `CSIS_ROOT` and `CSIS_RUN_ID` set.
//!
//! The store under the root:
//!
//! ```text
//! <store>/images/<build_id>/root/            the image's file tree
//! <store>/images/<build_id>/manifest.json    build id, series, parent, lineage tags
//! <store>/heads/<series>@<runtime>           the newest build of a series
//! <store>/storages/<name>/                   a storage's data
//! <store>/instances/<name>/                  launch script, user-data, image link, mounts
//! <store>/identity/<kind>.json               users and groups
//! ```
//!
//! A bake works in `<store>/images/.<build_id>.partial` and is renamed into
//! place only when every modification succeeded, so a failed bake leaves
//! nothing recorded.
//!
//! Here: the step's entry (`main`), reading its spec and dispatching by
//! verb. Each step is its own file: `bake.rs` (a bake's parent and its
//! store entry), `distribution.rs` (a base's root built by mmdebstrap and
//! cached), `modification.rs` (running one modification against a
//! build's root), `storage.rs`, `instance.rs` (launch, teardown, unmount)
//! and `identity.rs`; `store.rs` holds how every step writes into the
//! store, `upkeep.rs` the runtime's hooks on the store outside a
//! runner step (observe, dispose, clean), and `mod_test.rs` `csis
//! test-mods` (modifications applied twice in a throwaway copy), and
//! `verify.rs` `csis verify instance` (checks on an instance's root).
#![allow(clippy::disallowed_methods)] // the runtime itself: it owns the store

mod bake;
mod boot;
mod distribution;
mod identity;
mod instance;
mod layer;
mod mod_test;
mod modification;
mod sandbox;
mod setup;
mod storage;
mod store;
mod upkeep;
mod verify;

pub use instance::unmount;
pub use mod_test::{ModTestRequest, test_mods};
pub use upkeep::{clean, dispose, observe, retag};
pub use verify::verify;

use bake::bake;
use identity::identity;
use instance::{launch, teardown};
use storage::storage;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value as J;

/// Run one step; the process exit code.
pub fn main(args: &[String]) -> u8 {
    match run(args) {
        Ok(msg) => {
            csis_plugin_api::outln!("{msg}");
            0
        }
        Err(e) => {
            eprintln!("csis local: {e}");
            1
        }
    }
}

struct Env {
    root: PathBuf,
    run_id: String,
}

fn env() -> Result<Env, String> {
    let var = |k: &str| {
        std::env::var(k).map_err(|_| format!("{k} is not set (the runner script sets it)"))
    };
    Ok(Env {
        root: PathBuf::from(var("CSIS_ROOT")?),
        run_id: var("CSIS_RUN_ID")?,
    })
}

fn run(args: &[String]) -> Result<String, String> {
    let usage = "usage: csis local bake|storage|launch|teardown|identity --spec FILE";
    let (verb, spec_path) = match args {
        [verb, flag, path] if flag == "--spec" => (verb.as_str(), Path::new(path)),
        _ => return Err(usage.into()),
    };
    let text =
        fs::read_to_string(spec_path).map_err(|e| format!("{}: {e}", spec_path.display()))?;
    let spec: J =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", spec_path.display()))?;
    let env = env()?;
    match verb {
        "bake" => bake(&env, &spec),
        "storage" => storage(&env, &spec),
        "launch" => launch(&env, &spec),
        "teardown" => teardown(&env, &spec),
        "identity" => identity(&env, &spec),
        _ => Err(usage.into()),
    }
}

fn field<'a>(spec: &'a J, key: &str) -> Result<&'a str, String> {
    spec.get(key)
        .and_then(J::as_str)
        .ok_or_else(|| format!("the spec has no '{key}'"))
}

/// Whether the step's scripts may reach the network (the runtime's
/// `network: true`).
fn network(spec: &J) -> bool {
    spec.get("network").and_then(J::as_bool) == Some(true)
}

fn store(env: &Env, spec: &J) -> Result<PathBuf, String> {
    Ok(env.root.join(field(spec, "store")?))
}
