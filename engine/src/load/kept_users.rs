//! A users file's checks and accounts as the persisted cache keeps them
//! (issue 40): a fresh process whose users file, cfg/ and environment are
//! as they were takes the file's logins and accounts from the cache,
//! knows its checks found nothing, and structures none of its users
//! unless something else asks for one. Users are most of a tree's items:
//! structuring and checking them is about a fifth of a cold plan of the
//! reference tree, and the accounts a group's user-data carries asked for
//! a sixth of them again.
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
//!
//! It is the load's, beside `entries.rs` (the other kind of unit): the
//! load's warm-up, the checks and the plan's hook context all ask it,
//! and whether the file's checks found nothing is handed in by the
//! writer (`run/persist_cache.rs`), never asked of check/ from here.

use csis_model::ItemKind;
use csis_model::packed::{read_len, read_str, write_len, write_str};
use csis_plugin_api::cloud_config::{AccountFields, account_fields};

use crate::db::files::text_digest;
use crate::db::system::digest_parts;
use crate::db::{Db, ItemSource, SourceFile, Tree};
use crate::load::items::{indexed_entries, indexed_in_file, item_index};
use crate::load::items_model::structured_item;
use crate::load::kept_env::{KeptEnv, keyable};

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
pub struct KeptUsers {
    env: KeptEnv,
    /// Each user, in the order the index takes them.
    users: Vec<KeptUser>,
}

/// One user of a kept file: the entry that declares it, and its account
/// (a kept user holds no secret, so nothing of it is a marker).
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeptUser {
    entry: usize,
    account: AccountFields,
}

impl KeptUsers {
    pub fn logins(&self) -> impl Iterator<Item = &String> {
        self.users.iter().map(|u| &u.account.login)
    }
}

/// The account of user `name`, when the file that declares it is kept:
/// what [`account_fields`] gives of the structured user, without
/// structuring it. Read from the unit's bytes alone: a group's members
/// come from many users files, and decoding each file's 200 accounts
/// for one of them was most of an instance's user-data after an edit.
pub fn kept_account(db: &dyn Db, tree: Tree, name: &str) -> Option<AccountFields> {
    // Without a cache nothing is kept: no lookup of the name (a cold
    // plan asks this of every group's every member).
    let cache = db.cache()?;
    let ItemSource::Tree { file, index } = *item_index(db, tree)
        .items
        .get(&ItemKind::USERS)?
        .get(name)?
    else {
        return None;
    };
    if !holds(db, file) {
        return None;
    }
    cache.take(&unit_path(file.path(db)), key(db, file), |bytes| {
        account_in(bytes, index)
    })
}

/// The file's kept checks, when every input they were computed from is
/// as it was when they were kept. Asked of every item file: a file the
/// cache holds nothing for (every file, without a cache) is answered
/// without a query, whose memo a plan would carry for each file.
pub fn kept_users(db: &dyn Db, file: SourceFile) -> Option<&KeptUsers> {
    let held = db.cache()?.holds(&unit_path(file.path(db)));
    held.then(|| taken_users(db, file).as_ref()).flatten()
}

/// Whether the cache holds `file`'s unit under its key, for as many users
/// as the file declares, and the variables it was kept under hold: the
/// unit is then taken, and written back as it was loaded, without its
/// users decoded (the shard's checksum vouches for the rest of its
/// bytes). A process that took the world's files (`load::kept_world`)
/// asks nothing else of a users file, and decoding 20,000 accounts was a
/// twentieth of a plan after an edit.
pub fn holds(db: &dyn Db, file: SourceFile) -> bool {
    db.cache()
        .is_some_and(|cache| cache.holds(&unit_path(file.path(db))))
        && *held_users(db, file)
}

#[salsa::tracked]
fn held_users(db: &dyn Db, file: SourceFile) -> bool {
    let Some(cache) = db.cache() else {
        return false;
    };
    let tree = file.tree(db);
    let Some(users) = users_of(db, file) else {
        return false;
    };
    if !keyable(db, tree) {
        return false;
    }
    let path = unit_path(file.path(db));
    cache
        .take(&path, key(db, file), |bytes| {
            let mut at = 0;
            let env = KeptEnv::read(bytes, &mut at)?;
            (read_len(bytes, &mut at)? == users && env.holds(db, tree)).then_some(())
        })
        .is_some()
}

#[salsa::tracked(returns(ref))]
fn taken_users(db: &dyn Db, file: SourceFile) -> Option<KeptUsers> {
    if !holds(db, file) {
        return None;
    }
    let path = unit_path(file.path(db));
    db.cache()?.take(&path, key(db, file), decode)
}

/// The bytes to keep for `file` and the digest to keep them with, when
/// they may be kept (see the module's comment). `found_nothing`: whether
/// the file's checks found nothing (asked only of a file of users: the
/// checks are not this module's to run). Not asked of a unit this
/// process took: the cache writes its loaded bytes back.
pub fn encode(
    db: &dyn Db,
    file: SourceFile,
    found_nothing: impl FnOnce() -> bool,
) -> Option<([u8; 32], Vec<u8>)> {
    let tree = file.tree(db);
    let cache = db.cache()?;
    users_of(db, file).filter(|n| *n > 0)?;
    let reads = cache.env_reads();
    if !keyable(db, tree) || reads.read_clock() || !found_nothing() {
        return None;
    }
    let vars = reads.vars()?;
    let names = item_index(db, tree).items.get(&ItemKind::USERS)?;
    let mut users = Vec::new();
    for id in indexed_in_file(db, file) {
        let si = structured_item(db, *id);
        if !si.secrets.is_empty() || !si.interpolated.is_empty() || si.reads_items {
            return None;
        }
        let ItemSource::Tree { index: entry, .. } = *names.get(id.name(db).as_str())? else {
            return None;
        };
        users.push(KeptUser {
            entry,
            account: account_fields(&si.view()?)?,
        });
    }
    let kept = KeptUsers {
        env: KeptEnv::now(db, tree, vars),
        users,
    };
    Some((*key(db, file), bytes_of(&kept)))
}

/// How many items the index takes from `file`, when they are all users.
fn users_of(db: &dyn Db, file: SourceFile) -> Option<usize> {
    indexed_entries(db, file).try_fold(0, |n, (_, item)| {
        (item.kind == ItemKind::USERS).then_some(n + 1)
    })
}

/// What a unit of `file` is kept with: its text, every cfg/ file, and
/// the names of the entries the index takes from it (which follow from
/// the other files when a name is declared twice).
#[salsa::tracked(returns(ref))]
fn key(db: &dyn Db, file: SourceFile) -> [u8; 32] {
    let tree = file.tree(db);
    let cfg: Vec<_> = tree
        .cfg_files(db)
        .iter()
        .map(|f| (f.path(db), text_digest(db, *f)))
        .collect();
    let names = indexed_entries(db, file).map(|(_, item)| item.name.as_bytes());
    let text = text_digest(db, file);
    let parts = [b"csis users checks".as_slice(), text.as_slice()]
        .into_iter()
        .chain(
            cfg.iter()
                .flat_map(|(path, text)| [path.as_bytes(), text.as_slice()]),
        )
        .chain(names);
    digest_parts(parts)
}

fn bytes_of(kept: &KeptUsers) -> Vec<u8> {
    let mut out = Vec::new();
    kept.env.write(&mut out);
    write_len(kept.users.len(), &mut out);
    for user in &kept.users {
        let AccountFields { login, gecos, keys } = &user.account;
        write_len(user.entry, &mut out);
        write_str(login, &mut out);
        write_str(gecos, &mut out);
        write_len(keys.len(), &mut out);
        for key in keys {
            write_str(key, &mut out);
        }
    }
    out
}

/// The account of the user the unit's `entry`-th entry declares, read
/// past the others without making their strings.
fn account_in(bytes: &[u8], entry: usize) -> Option<AccountFields> {
    let mut at = 0;
    KeptEnv::read(bytes, &mut at)?;
    for _ in 0..read_len(bytes, &mut at)? {
        let this = read_len(bytes, &mut at)?;
        let (login, gecos) = (read_str(bytes, &mut at)?, read_str(bytes, &mut at)?);
        let n = read_len(bytes, &mut at)?;
        let mut keys = Vec::new();
        for _ in 0..n {
            let key = read_str(bytes, &mut at)?;
            if this == entry {
                keys.push(key.to_string());
            }
        }
        if this == entry {
            return Some(AccountFields {
                login: login.to_string(),
                gecos: gecos.to_string(),
                keys,
            });
        }
    }
    None
}

fn decode(bytes: &[u8]) -> Option<KeptUsers> {
    let mut at = 0;
    let env = KeptEnv::read(bytes, &mut at)?;
    let n = read_len(bytes, &mut at)?;
    let mut users: Vec<KeptUser> = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let entry = read_len(bytes, &mut at)?;
        // In entry order, as the index takes them ([`KeptUsers::account`]
        // searches them).
        if users.last().is_some_and(|u| u.entry >= entry) {
            return None;
        }
        let login = read_str(bytes, &mut at)?.to_string();
        let gecos = read_str(bytes, &mut at)?.to_string();
        let n = read_len(bytes, &mut at)?;
        let mut keys = Vec::with_capacity(n.min(bytes.len()));
        for _ in 0..n {
            keys.push(read_str(bytes, &mut at)?.to_string());
        }
        users.push(KeptUser {
            entry,
            account: AccountFields { login, gecos, keys },
        });
    }
    (at == bytes.len()).then_some(KeptUsers { env, users })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_reads_back_as_written_and_a_short_one_not_at_all() {
        let kept = KeptUsers {
            env: KeptEnv::now_for_test(),
            users: [
                (0, "ada", vec![]),
                (2, "", vec!["ssh-ed25519 AAAA"]),
                (3, "grace", vec!["a", "b"]),
            ]
            .into_iter()
            .map(|(entry, login, keys)| KeptUser {
                entry,
                account: AccountFields {
                    login: login.into(),
                    gecos: format!("{login} Lovelace"),
                    keys: keys.into_iter().map(String::from).collect(),
                },
            })
            .collect(),
        };
        let bytes = bytes_of(&kept);
        // One account read past the others, as a group's member is.
        for user in &kept.users {
            assert_eq!(account_in(&bytes, user.entry).as_ref(), Some(&user.account));
        }
        assert_eq!(account_in(&bytes, 1), None);
        assert_eq!(account_in(&bytes[..bytes.len() - 1], 3), None);
        // Out of entry order, a unit could not be searched: refused.
        let mut reversed = kept.clone();
        reversed.users.reverse();
        assert_eq!(decode(&bytes_of(&reversed)), None);
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
