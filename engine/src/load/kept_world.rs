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

use std::ops::Range;

use bytes::Bytes;
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
/// read of each storage, each list sorted by its key. The quiet files'
/// paths and the images' rows are read where the unit holds them, when
/// asked: decoded whole, they were 4,000 strings made by the one worker
/// that took the unit while every other waited for it (the warm-up's
/// first question of every file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptWorld {
    env: KeptEnv,
    /// The unit's bytes, as the cache holds them.
    bytes: Bytes,
    /// Each quiet file's path, as a range of `bytes`.
    quiet: Vec<Range<usize>>,
    checks: Vec<WorldCheck>,
    /// Each image's name, as a range of `bytes`, and where its series is.
    images: Vec<(Range<usize>, usize)>,
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
    kept_world(db, file.tree(db)).is_some_and(|kept| kept.is_quiet(file.path(db)))
}

/// Image `name`'s series, when the unit holds it.
pub fn kept_series(db: &dyn Db, tree: Tree, name: &str) -> Option<ImageSeries> {
    kept_world(db, tree)?.series(name)
}

/// What is read of storage `name`, when the unit holds it.
pub fn kept_storage<'db>(db: &'db dyn Db, tree: Tree, name: &str) -> Option<&'db KeptStorage> {
    kept_world(db, tree)?.storage(name)
}

impl KeptWorld {
    /// Whether the file at `path` is one whose checks found nothing.
    fn is_quiet(&self, path: &str) -> bool {
        self.quiet
            .binary_search_by(|p| self.bytes[p.clone()].cmp(path.as_bytes()))
            .is_ok()
    }

    /// Image `name`'s series, when the unit holds it.
    pub fn series(&self, name: &str) -> Option<ImageSeries> {
        let row = self
            .images
            .binary_search_by(|(n, _)| self.bytes[n.clone()].cmp(name.as_bytes()))
            .ok()?;
        let mut at = self.images.get(row)?.1;
        let mut runtimes = Vec::new();
        let parent = series_at(&self.bytes, &mut at, |rt| runtimes.push(rt.to_string()))?;
        Some(ImageSeries {
            runtimes,
            parent: parent.map(|(p, policy)| (p.to_string(), policy.to_string())),
        })
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
        decode(bytes.clone()).filter(|kept| kept.env.holds(db, tree))
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
    let env = KeptEnv::of_process(db, tree)?;
    let parts = Parts {
        quiet,
        checks,
        images,
        storages,
    };
    Some((key, bytes_of(&env, &parts)))
}

fn bytes_of(env: &KeptEnv, kept: &Parts) -> Vec<u8> {
    let mut out = Vec::new();
    env.write(&mut out);
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

/// `n` rows read in a row, each a key greater than the one before (as
/// the readers search them) and its value, read by `value`.
fn read_sorted<V>(
    bytes: &[u8],
    at: &mut usize,
    mut value: impl FnMut(&[u8], &mut usize) -> Option<V>,
) -> Option<Vec<(Range<usize>, V)>> {
    let n = read_len(bytes, at)?;
    let mut rows: Vec<(Range<usize>, V)> = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let key = read_str(bytes, at)?.len();
        let key = *at - key..*at;
        if rows
            .last()
            .is_some_and(|(last, _)| bytes[last.clone()] >= bytes[key.clone()])
        {
            return None;
        }
        let v = value(bytes, at)?;
        rows.push((key, v));
    }
    Some(rows)
}

/// An image's series where the unit holds it: each runtime handed to
/// `runtime`, then its parent and policy, if any.
fn series_at<'a>(
    bytes: &'a [u8],
    at: &mut usize,
    mut runtime: impl FnMut(&'a str),
) -> Option<Option<(&'a str, &'a str)>> {
    let n = read_len(bytes, at)?;
    for _ in 0..n {
        runtime(read_str(bytes, at)?);
    }
    match read_len(bytes, at)? {
        0 => Some(None),
        1 => Some(Some((read_str(bytes, at)?, read_str(bytes, at)?))),
        _ => None,
    }
}

/// The unit, every row checked as it is found (a malformed unit is none).
fn decode(bytes: Bytes) -> Option<KeptWorld> {
    let mut at = 0;
    let env = KeptEnv::read(&bytes, &mut at)?;
    let quiet = read_sorted(&bytes, &mut at, |_, _| Some(()))?
        .into_iter()
        .map(|(path, ())| path)
        .collect();
    let n = read_len(&bytes, &mut at)?;
    let mut checks: Vec<WorldCheck> = Vec::with_capacity(n.min(WorldCheck::ALL.len()));
    for _ in 0..n {
        let tag = read_str(&bytes, &mut at)?;
        let check = WorldCheck::ALL.into_iter().find(|c| c.tag() == tag)?;
        if checks.last().is_some_and(|last| *last >= check) {
            return None;
        }
        checks.push(check);
    }
    let images = read_sorted(&bytes, &mut at, |bytes, at| {
        let start = *at;
        series_at(bytes, at, |_| {})?;
        Some(start)
    })?;
    let storages = read_sorted(&bytes, &mut at, |bytes, at| {
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
    })?
    .into_iter()
    .map(|(name, storage)| Some((std::str::from_utf8(&bytes[name]).ok()?.to_string(), storage)))
    .collect::<Option<Vec<_>>>()?;
    (at == bytes.len()).then_some(KeptWorld {
        env,
        bytes,
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
        let env = KeptEnv::now_for_test();
        let web = ImageSeries {
            runtimes: vec!["aws".into(), "local".into()],
            parent: Some(("base".into(), "latest".into())),
        };
        let data = KeptStorage {
            runtime: "here".into(),
            type_: "dirs".into(),
            builder: "dirs".into(),
            requested: "active".into(),
            supports_archive: true,
        };
        let parts = Parts {
            quiet: vec!["groups/ops.yml".into(), "images/web.yml".into()],
            images: vec![
                (
                    "base".into(),
                    ImageSeries {
                        runtimes: vec!["local".into()],
                        parent: None,
                    },
                ),
                ("web".into(), web.clone()),
            ],
            checks: vec![WorldCheck::Groups, WorldCheck::Logins],
            storages: vec![("data".into(), data.clone())],
        };
        let bytes = bytes_of(&env, &parts);
        let kept = decode(Bytes::from(bytes.clone())).unwrap();
        assert_eq!(kept.env, env);
        assert!(kept.is_quiet("groups/ops.yml") && kept.is_quiet("images/web.yml"));
        assert!(!kept.is_quiet("images/base.yml") && !kept.is_quiet("groups"));
        assert_eq!(kept.series("web"), Some(web));
        assert_eq!(kept.series("base").unwrap().parent, None);
        assert_eq!(kept.series("db"), None);
        assert_eq!(kept.storage("data"), Some(&data));
        assert_eq!(kept.checks, vec![WorldCheck::Groups, WorldCheck::Logins]);

        let read = |bytes: &[u8]| decode(Bytes::copy_from_slice(bytes));
        assert_eq!(read(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(read(&longer), None);
        let unsorted = |change: &dyn Fn(&mut Parts)| {
            let mut parts = Parts {
                quiet: parts.quiet.clone(),
                checks: parts.checks.clone(),
                images: parts.images.clone(),
                storages: parts.storages.clone(),
            };
            change(&mut parts);
            read(&bytes_of(&env, &parts))
        };
        assert_eq!(unsorted(&|p| p.quiet.reverse()), None);
        assert_eq!(unsorted(&|p| p.images.reverse()), None);
        assert_eq!(unsorted(&|p| p.checks.reverse()), None);
        // Each image's row is checked on the load, though read only when
        // asked: a parent marked other than 0 or 1 is no unit.
        let one_image = |parent_tag: usize| {
            let mut out = Vec::new();
            env.write(&mut out);
            write_len(0, &mut out);
            write_len(0, &mut out);
            write_len(1, &mut out);
            write_str("a", &mut out);
            write_len(0, &mut out);
            write_len(parent_tag, &mut out);
            write_len(0, &mut out);
            read(&out)
        };
        assert_eq!(one_image(0).unwrap().series("a").unwrap().runtimes.len(), 0);
        assert_eq!(one_image(2), None);
    }
}
