//! What the persisted cache keeps of the world's item files (issue 40):
//! a fresh process whose tree is as it was but for its instances files
//! knows which of the other item files' checks found nothing, and what
//! the plan and the tree-wide checks read of each image and storage,
//! so that after an edit of an instances file it structures none of the
//! world's 3,500 items for them.
//!
//! Kept: the item files that declare no instance whose checks
//! (`check::item_checks::file_findings`) found nothing; the checks
//! across the tree that read no instance (the groups', the logins') when
//! they found nothing; each image's series (the runtimes it bakes on and
//! its parent, what the plan and the cloud names read of it); what the
//! storages' checks across the tree read of each storage (its runtime,
//! type, builder, requested state). A file's checks read its items, the
//! items they name, the builders and their hooks, cfg/ and meta-state;
//! the groups' and logins' checks read groups and users; an image's
//! series and a storage's row read that item and the builders. None of
//! those is an instances file, as
//! long as no check of a world item reads an instance (the audit is in
//! docs/architecture.md, "What a unit of the tree may keep") and no item
//! of the world names another item in its templates
//! (`load::world::world_names_no_item`, asked before anything is kept).
//! So the key is the digest of the tree but its instances files
//! (`load::world`) and, inside the unit, the values of the environment
//! variables the writing process had looked up. A file or check that
//! found something is not listed: it is checked again. Nothing is kept of a
//! process that read the clock or the whole environment, ran with
//! overlays or `--undeclare`, or had an identity set.

use csis_model::packed::{read_flag, read_len, read_str, write_flag, write_len, write_str};

use crate::db::{Db, SourceFile, Tree};
use crate::load::kept_env::KeptEnv;
use crate::load::world::{key_to_keep, row, sort_unique, take_under_world, world_names_no_item};

/// Where the cache keeps the unit: a unit of the tree, not of a file (no
/// file's path starts with a NUL).
pub const UNIT: &str = "\0world files";

/// What the unit is kept with besides the world's digest.
const TAG: &str = "csis world files";

/// What the plan reads of one image: the runtimes it bakes on (in entry
/// order, unresolvable ones left out) and its parent series with its
/// `parent_policy`. Defined here, where the cache keeps it, and computed
/// by `plan::bakes::image_series`, which asks this file (not the
/// reverse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSeries {
    pub runtimes: Vec<String>,
    pub parent: Option<(String, String)>,
}

/// What the checks across the tree and the plan read of one storage:
/// the runtime its cloud names are derived on, its `type:` as written,
/// the storage builder that resolves (else the type), the state it
/// requests and whether its builder can archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptStorage {
    pub runtime: String,
    pub type_: String,
    pub builder: String,
    pub requested: String,
    pub supports_archive: bool,
}

/// A check across the tree that reads no instance, kept when it found
/// nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorldCheck {
    /// One root group, every member a declared user
    /// (`check::groups::check_groups`).
    Groups,
    /// No two users with one login (`check::logins::login_diagnostics`).
    Logins,
}

impl WorldCheck {
    const ALL: [WorldCheck; 2] = [WorldCheck::Groups, WorldCheck::Logins];

    fn tag(self) -> &'static str {
        match self {
            WorldCheck::Groups => "groups",
            WorldCheck::Logins => "logins",
        }
    }
}

/// The world's quiet files and checks, each image's series and what is
/// read of each storage, each list sorted by its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptWorld {
    env: KeptEnv,
    quiet: Vec<String>,
    checks: Vec<WorldCheck>,
    images: Vec<(String, ImageSeries)>,
    storages: Vec<(String, KeptStorage)>,
}

/// What the writer hands [`encode`], each list in any order.
pub struct Parts {
    /// The paths of the files whose checks found nothing.
    pub quiet: Vec<String>,
    /// The checks across the tree that found nothing.
    pub checks: Vec<WorldCheck>,
    pub images: Vec<(String, ImageSeries)>,
    pub storages: Vec<(String, KeptStorage)>,
}

/// The unit this process took, when every input it was kept with is as
/// it was. Answered without a query when the cache holds none (a cold
/// plan asks this of every file and item).
pub fn kept_world(db: &dyn Db, tree: Tree) -> Option<&KeptWorld> {
    if !db.cache()?.holds(UNIT) {
        return None;
    }
    taken_world(db, tree).as_ref()
}

/// Whether no item of the world names another item in its templates
/// (`load::world::world_names_no_item`): known without structuring the
/// world when this process took the unit, which is kept only when it
/// held (the same texts under the same variables have the same
/// templates).
pub(crate) fn names_no_item(db: &dyn Db, tree: Tree) -> bool {
    kept_world(db, tree).is_some() || *world_names_no_item(db, tree)
}

/// Whether `file`'s checks found nothing when the unit was kept.
pub(crate) fn quiet_file(db: &dyn Db, file: SourceFile) -> bool {
    kept_world(db, file.tree(db)).is_some_and(|kept| {
        kept.quiet
            .binary_search_by(|p| p.as_str().cmp(file.path(db)))
            .is_ok()
    })
}

/// Image `name`'s series, when the unit holds it.
pub fn kept_series<'db>(db: &'db dyn Db, tree: Tree, name: &str) -> Option<&'db ImageSeries> {
    kept_world(db, tree)?.series(name)
}

/// What is read of storage `name`, when the unit holds it.
pub fn kept_storage<'db>(db: &'db dyn Db, tree: Tree, name: &str) -> Option<&'db KeptStorage> {
    kept_world(db, tree)?.storage(name)
}

impl KeptWorld {
    /// Image `name`'s series, when the unit holds it.
    pub fn series(&self, name: &str) -> Option<&ImageSeries> {
        row(&self.images, name)
    }

    /// What is read of storage `name`, when the unit holds it.
    pub fn storage(&self, name: &str) -> Option<&KeptStorage> {
        row(&self.storages, name)
    }
}

/// Whether `check` found nothing when the unit was kept.
pub fn quiet_check(db: &dyn Db, tree: Tree, check: WorldCheck) -> bool {
    kept_world(db, tree).is_some_and(|kept| kept.checks.contains(&check))
}

#[salsa::tracked(returns(ref))]
fn taken_world(db: &dyn Db, tree: Tree) -> Option<KeptWorld> {
    take_under_world(db, tree, UNIT, TAG, |bytes| {
        decode(bytes).filter(|kept| kept.env.holds(db, tree))
    })
}

/// The bytes to keep and the digest to keep them with, when they may be
/// kept (see the module's comment). `to_keep`: the parts, computed by the
/// writer from the checks and the plan. Not asked of a unit this process
/// took: the cache writes its loaded bytes back.
pub fn encode(
    db: &dyn Db,
    tree: Tree,
    to_keep: impl FnOnce() -> Parts,
) -> Option<([u8; 32], Vec<u8>)> {
    let key = key_to_keep(db, tree, TAG)?;
    let Parts {
        mut quiet,
        mut checks,
        mut images,
        mut storages,
    } = to_keep();
    quiet.sort();
    quiet.dedup();
    checks.sort();
    checks.dedup();
    sort_unique(&mut images);
    sort_unique(&mut storages);
    // What they read, once they are all computed.
    let kept = KeptWorld {
        env: KeptEnv::of_process(db, tree)?,
        quiet,
        checks,
        images,
        storages,
    };
    Some((key, bytes_of(&kept)))
}

fn bytes_of(kept: &KeptWorld) -> Vec<u8> {
    let mut out = Vec::new();
    kept.env.write(&mut out);
    write_len(kept.quiet.len(), &mut out);
    for path in &kept.quiet {
        write_str(path, &mut out);
    }
    write_len(kept.checks.len(), &mut out);
    for check in &kept.checks {
        write_str(check.tag(), &mut out);
    }
    write_len(kept.images.len(), &mut out);
    for (name, series) in &kept.images {
        write_str(name, &mut out);
        write_len(series.runtimes.len(), &mut out);
        for runtime in &series.runtimes {
            write_str(runtime, &mut out);
        }
        // No parent is 0; a parent 1, its series and its policy.
        match &series.parent {
            None => write_len(0, &mut out),
            Some((parent, policy)) => {
                write_len(1, &mut out);
                write_str(parent, &mut out);
                write_str(policy, &mut out);
            }
        }
    }
    write_len(kept.storages.len(), &mut out);
    for (name, st) in &kept.storages {
        write_str(name, &mut out);
        for field in [&st.runtime, &st.type_, &st.builder, &st.requested] {
            write_str(field, &mut out);
        }
        write_flag(st.supports_archive, &mut out);
    }
    out
}

/// `n` strings read in a row, each greater than the one before (as the
/// readers search them).
fn read_sorted<V>(
    bytes: &[u8],
    at: &mut usize,
    mut value: impl FnMut(&[u8], &mut usize) -> Option<V>,
) -> Option<Vec<(String, V)>> {
    let n = read_len(bytes, at)?;
    let mut rows: Vec<(String, V)> = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let key = read_str(bytes, at)?.to_string();
        if rows.last().is_some_and(|(last, _)| *last >= key) {
            return None;
        }
        let v = value(bytes, at)?;
        rows.push((key, v));
    }
    Some(rows)
}

fn decode(bytes: &[u8]) -> Option<KeptWorld> {
    let mut at = 0;
    let env = KeptEnv::read(bytes, &mut at)?;
    let quiet = read_sorted(bytes, &mut at, |_, _| Some(()))?
        .into_iter()
        .map(|(path, ())| path)
        .collect();
    let n = read_len(bytes, &mut at)?;
    let mut checks: Vec<WorldCheck> = Vec::with_capacity(n.min(WorldCheck::ALL.len()));
    for _ in 0..n {
        let tag = read_str(bytes, &mut at)?;
        let check = WorldCheck::ALL.into_iter().find(|c| c.tag() == tag)?;
        if checks.last().is_some_and(|last| *last >= check) {
            return None;
        }
        checks.push(check);
    }
    let images = read_sorted(bytes, &mut at, |bytes, at| {
        let n = read_len(bytes, at)?;
        let mut runtimes = Vec::with_capacity(n.min(bytes.len()));
        for _ in 0..n {
            runtimes.push(read_str(bytes, at)?.to_string());
        }
        let parent = match read_len(bytes, at)? {
            0 => None,
            1 => Some((
                read_str(bytes, at)?.to_string(),
                read_str(bytes, at)?.to_string(),
            )),
            _ => return None,
        };
        Some(ImageSeries { runtimes, parent })
    })?;
    let storages = read_sorted(bytes, &mut at, |bytes, at| {
        let mut field = || Some(read_str(bytes, at)?.to_string());
        let (runtime, type_, builder, requested) = (field()?, field()?, field()?, field()?);
        let supports_archive = read_flag(bytes, at)?;
        Some(KeptStorage {
            runtime,
            type_,
            builder,
            requested,
            supports_archive,
        })
    })?;
    (at == bytes.len()).then_some(KeptWorld {
        env,
        quiet,
        checks,
        images,
        storages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_reads_back_as_written_and_a_short_long_or_unsorted_one_not_at_all() {
        let kept = KeptWorld {
            env: KeptEnv::now_for_test(),
            quiet: vec!["groups/ops.yml".into(), "images/web.yml".into()],
            images: vec![
                (
                    "base".into(),
                    ImageSeries {
                        runtimes: vec!["local".into()],
                        parent: None,
                    },
                ),
                (
                    "web".into(),
                    ImageSeries {
                        runtimes: vec!["aws".into(), "local".into()],
                        parent: Some(("base".into(), "latest".into())),
                    },
                ),
            ],
            checks: vec![WorldCheck::Groups, WorldCheck::Logins],
            storages: vec![(
                "data".into(),
                KeptStorage {
                    runtime: "here".into(),
                    type_: "dirs".into(),
                    builder: "dirs".into(),
                    requested: "active".into(),
                    supports_archive: true,
                },
            )],
        };
        let bytes = bytes_of(&kept);
        assert_eq!(decode(&bytes), Some(kept.clone()));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        let mut unsorted = kept.clone();
        unsorted.quiet.reverse();
        assert_eq!(decode(&bytes_of(&unsorted)), None);
        let mut unsorted = kept.clone();
        unsorted.images.reverse();
        assert_eq!(decode(&bytes_of(&unsorted)), None);
        let mut unsorted = kept;
        unsorted.checks.reverse();
        assert_eq!(decode(&bytes_of(&unsorted)), None);
    }
}
