//! A users file's checks and logins as the persisted cache keeps them
//! (issue 40): a fresh process whose users file, cfg/ and environment are
//! as they were takes the file's logins from the cache, knows its checks
//! found nothing, and structures none of its users unless something else
//! asks for one (a group's accounts). Users are most of a tree's items:
//! structuring and checking them is about a fifth of a cold plan of the
//! reference tree.
//!
//! A unit is kept only for a file of users alone whose checks found
//! nothing, and whose users read nothing but their own entry, cfg/ and
//! the environment: no template naming another item, no `${...}`
//! interpolation, no secret; none when the process read the clock or the
//! whole environment, or ran with overlays or `--undeclare`. Its key
//! ([`key`]) is then everything its results were computed from: the
//! file's text, every cfg/ file, which of its entries the index takes;
//! and, inside the unit, the values of the environment variables the
//! process had looked up when it was written (a superset of those the
//! users' templates read).

use csis_model::ItemKind;
use csis_model::models::Item;
use csis_model::packed::{read_len, read_str, write_len, write_str};

use crate::db::system::digest_parts;
use crate::db::{Db, SourceFile, Tree};
use crate::load::items::indexed_in_file;
use crate::load::items_model::structured_item;

/// What a unit's path adds to its file's (no path holds a NUL).
const SUFFIX: &str = "\0checks";

/// The path the cache keeps `path`'s checks under.
pub fn unit_path(path: &str) -> String {
    format!("{path}{SUFFIX}")
}

/// Whether a unit of the cache is a file's checks (asked for after the
/// load, so its bytes are held past it).
pub fn is_unit_path(path: &str) -> bool {
    path.ends_with(SUFFIX)
}

/// What the cache kept of one users file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptChecks {
    /// The environment variables the writing process had looked up, and
    /// the digest of their values then.
    vars: Vec<String>,
    values: [u8; 32],
    /// Each user's login, in the order the index takes them.
    logins: Vec<String>,
}

impl KeptChecks {
    pub fn logins(&self) -> &[String] {
        &self.logins
    }
}

/// The file's kept checks, when every input they were computed from is
/// as it was when they were kept. Asked of every item file: a file the
/// cache holds nothing for (every file, without a cache) is answered
/// without a query, whose memo a plan would carry for each file.
pub fn kept_checks(db: &dyn Db, file: SourceFile) -> Option<&KeptChecks> {
    let held = db.cache()?.holds(&unit_path(file.path(db)));
    held.then(|| taken_checks(db, file).as_ref()).flatten()
}

#[salsa::tracked(returns(ref))]
fn taken_checks(db: &dyn Db, file: SourceFile) -> Option<KeptChecks> {
    let cache = db.cache()?;
    let path = unit_path(file.path(db));
    let tree = file.tree(db);
    let users = users_of(db, file)?;
    if !keyable(db, tree) {
        return None;
    }
    cache.take(&path, &key(db, file), |bytes| {
        let kept = decode(bytes)?;
        (kept.logins.len() == users && kept.values == values(db, tree, &kept.vars)).then_some(kept)
    })
}

/// The bytes to keep for `file` and the digest to keep them with, when
/// they may be kept (see the module's comment). `found_nothing`: whether
/// the file's checks found nothing (asked only of a file of users: the
/// checks are not this module's to run).
pub fn encode(
    db: &dyn Db,
    file: SourceFile,
    found_nothing: impl FnOnce() -> bool,
) -> Option<([u8; 32], Vec<u8>)> {
    let tree = file.tree(db);
    let cache = db.cache()?;
    users_of(db, file).filter(|n| *n > 0)?;
    // Taken: what it holds is this file's result still, under the digest
    // it was taken with.
    if let Some(kept) = kept_checks(db, file)
        && let Some(digest) = cache.taken_digest(&unit_path(file.path(db)))
    {
        return Some((digest, bytes_of(kept)));
    }
    let reads = cache.env_reads();
    if !keyable(db, tree) || reads.read_clock() || !found_nothing() {
        return None;
    }
    let vars = reads.vars()?;
    let mut logins = Vec::new();
    for id in indexed_in_file(db, file) {
        let si = structured_item(db, *id);
        if !si.secrets.is_empty() || !si.interpolated.is_empty() || si.reads_items {
            return None;
        }
        let Some(Item::User(user)) = si.item.as_deref() else {
            return None;
        };
        logins.push(user.login.to_string());
    }
    let kept = KeptChecks {
        values: values(db, tree, &vars),
        vars,
        logins,
    };
    Some((crate::db::cache::digest(&key(db, file)), bytes_of(&kept)))
}

/// How many items the index takes from `file`, when they are all users.
fn users_of(db: &dyn Db, file: SourceFile) -> Option<usize> {
    let ids = indexed_in_file(db, file);
    ids.iter()
        .all(|id| id.kind(db) == ItemKind::USERS)
        .then_some(ids.len())
}

/// A run with overlays or `--undeclare` changes items for itself alone:
/// nothing of it is kept or taken.
fn keyable(db: &dyn Db, tree: Tree) -> bool {
    tree.overlays(db).is_empty() && tree.undeclare(db).is_empty()
}

/// What a unit of `file` is kept with: its text, every cfg/ file, and
/// the names of the entries the index takes from it (which follow from
/// the other files when a name is declared twice).
fn key(db: &dyn Db, file: SourceFile) -> String {
    let tree = file.tree(db);
    let cfg = tree
        .cfg_files(db)
        .iter()
        .flat_map(|f| [f.path(db).as_bytes(), f.text(db).as_bytes()]);
    let names = indexed_in_file(db, file)
        .iter()
        .map(|id| id.name(db).as_bytes());
    let parts = [b"csis users checks".as_slice(), file.text(db).as_bytes()]
        .into_iter()
        .chain(cfg)
        .chain(names);
    blake3::Hash::from(digest_parts(parts)).to_hex().to_string()
}

/// The digest of the values of `vars` (an unset one differs from every
/// value).
fn values(db: &dyn Db, tree: Tree, vars: &[String]) -> [u8; 32] {
    digest_parts(vars.iter().flat_map(|var| {
        let value = crate::db::reads::env_var(db, tree, var);
        [
            var.as_bytes(),
            if value.is_some() { b"set" } else { b"unset" },
            value.map_or(&b""[..], |v| v.as_bytes()),
        ]
    }))
}

fn bytes_of(kept: &KeptChecks) -> Vec<u8> {
    let mut out = Vec::new();
    write_len(kept.vars.len(), &mut out);
    for var in &kept.vars {
        write_str(var, &mut out);
    }
    out.extend_from_slice(&kept.values);
    write_len(kept.logins.len(), &mut out);
    for login in &kept.logins {
        write_str(login, &mut out);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<KeptChecks> {
    let mut at = 0;
    let n = read_len(bytes, &mut at)?;
    let mut vars = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        vars.push(read_str(bytes, &mut at)?.to_string());
    }
    let values = bytes.get(at..at + 32)?.try_into().ok()?;
    at += 32;
    let n = read_len(bytes, &mut at)?;
    let mut logins = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        logins.push(read_str(bytes, &mut at)?.to_string());
    }
    (at == bytes.len()).then_some(KeptChecks {
        vars,
        values,
        logins,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_reads_back_as_written_and_a_short_one_not_at_all() {
        let kept = KeptChecks {
            vars: vec!["HOME".into(), "USER".into()],
            values: [7; 32],
            logins: vec!["ada".into(), "".into(), "grace".into()],
        };
        let bytes = bytes_of(&kept);
        assert_eq!(decode(&bytes), Some(kept));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
    }

    #[test]
    fn a_unit_path_is_no_file_path() {
        assert!(is_unit_path(&unit_path("groups/users-000.yml")));
        assert!(!is_unit_path("groups/users-000.yml"));
    }
}
