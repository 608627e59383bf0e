//! Lineage and pins as the engine reads them: meta-state/lineage.yaml (every
//! recorded build) and meta-state/pins.yaml (which build each consumer is
//! bound to), parsed from the tree's meta-state inputs.

use std::collections::{BTreeMap, HashMap};

use csis_model::{Diagnostic, DocPath, Origin};
use serde::{Deserialize, Serialize};
use serde_json::Value as J;

use crate::db::{Db, SourceFile, Tree};

/// An input fingerprint as messages show it: its first 16 hex digits.
pub fn short_fingerprint(fingerprint: &str) -> String {
    fingerprint.chars().take(16).collect()
}

/// One recorded build.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BuildRecord {
    pub build_id: String,
    pub series: String,
    pub runtime: String,
    pub name: String,
    /// The build it was baked from, or `vendor`.
    pub parent: String,
    pub input_fingerprint: String,
    pub run: String,
    pub capabilities: Capabilities,
    pub mods: Vec<J>,
    pub tests: J,
    pub update: J,
    /// The series from the root base down to this one.
    pub chain: Vec<String>,
    /// A digest per leaf input of the fingerprint (docs/fingerprint.md):
    /// what `--explain` compares to name the field that changed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    pub identity_types: Vec<String>,
    pub storage_types: Vec<String>,
}

/// meta-state/lineage.yaml.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Lineage {
    pub builds: Vec<BuildRecord>,
}

impl Lineage {
    /// The newest recorded build of a series on a runtime.
    pub fn head(&self, series: &str, runtime: &str) -> Option<&BuildRecord> {
        self.builds
            .iter()
            .rev()
            .find(|b| b.series == series && b.runtime == runtime)
    }

    pub fn build(&self, id: &str) -> Option<&BuildRecord> {
        self.builds.iter().find(|b| b.build_id == id)
    }
}

/// One pin move, journaled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PinMove {
    pub kind: String,
    pub name: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub run: String,
    pub op: String,
}

/// meta-state/pins.yaml.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pins {
    /// Instance name to the build it runs.
    pub instances: BTreeMap<String, String>,
    /// `<image>@<runtime>` to the parent build it bakes from.
    pub images: BTreeMap<String, String>,
    pub upgrades: Vec<PinMove>,
    pub pending_replacements: Vec<J>,
}

/// A meta-state record and why it could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record<T> {
    pub value: T,
    pub diags: Vec<Diagnostic>,
}

pub(crate) fn meta_file(db: &dyn Db, tree: Tree, name: &str) -> Option<SourceFile> {
    let path = format!("{}/{name}", crate::state::meta_state::DIR);
    tree.meta_files(db)
        .iter()
        .copied()
        .find(|f| f.path(db).as_ref() == path)
}

/// Parse a meta-state record; an absent file is the empty record. Call it
/// from one tracked query per file (`lineage`, `launch_record`, ...): the
/// record is memoized typed, and the parsed document, which is ten times
/// the text, is dropped (a broken record's position is found again when
/// its diagnostic is shown).
pub(crate) fn read_record<T: Default + for<'de> Deserialize<'de>>(
    db: &dyn Db,
    tree: Tree,
    name: &str,
) -> Record<T> {
    let Some(file) = meta_file(db, tree, name) else {
        return Record::default();
    };
    let path = file.path(db);
    match crate::state::meta_state::parse(file.text(db), path) {
        Ok(value) => Record {
            value,
            diags: Vec::new(),
        },
        Err(message) => Record {
            value: T::default(),
            diags: vec![Diagnostic::error(message).at(Origin::new(path.clone(), DocPath::root()))],
        },
    }
}

/// meta-state/releases.yaml.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Releases {
    pub releases: Vec<J>,
    /// Per model, image to the released build.
    pub current: BTreeMap<String, BTreeMap<String, String>>,
}

#[salsa::tracked(returns(ref))]
pub fn lineage(db: &dyn Db, tree: Tree) -> Record<Lineage> {
    read_record(db, tree, "lineage.yaml")
}

/// Where each series' newest build on each runtime and each build id sit
/// in the lineage: what [`Lineage::head`] and [`Lineage::build`] find by
/// scanning every build. A plan asks once per series and a check once per
/// pinned image, so with a build recorded per series the scans made a
/// plan quadratic (at ten times the reference tree, its plan stage took
/// seven times as long as without builds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineageLookup {
    /// Series to its runtimes, each with its newest build's place.
    heads: HashMap<String, Vec<(String, usize)>, foldhash::fast::RandomState>,
    /// A build id's first place, as `Lineage::build` finds it.
    ids: HashMap<String, usize, foldhash::fast::RandomState>,
}

impl LineageLookup {
    pub fn of(lineage: &Lineage) -> LineageLookup {
        let mut out = LineageLookup::default();
        for (i, b) in lineage.builds.iter().enumerate() {
            let runtimes = out.heads.entry(b.series.clone()).or_default();
            match runtimes.iter_mut().find(|(rt, _)| *rt == b.runtime) {
                Some(at) => at.1 = i,
                None => runtimes.push((b.runtime.clone(), i)),
            }
            out.ids.entry(b.build_id.clone()).or_insert(i);
        }
        out
    }

    /// [`Lineage::head`] of the lineage this was made `of`.
    pub fn head<'l>(
        &self,
        lineage: &'l Lineage,
        series: &str,
        runtime: &str,
    ) -> Option<&'l BuildRecord> {
        let runtimes = self.heads.get(series)?;
        let at = runtimes.iter().find(|(rt, _)| rt == runtime)?.1;
        lineage.builds.get(at)
    }

    /// [`Lineage::build`] of the lineage this was made `of`.
    pub fn build<'l>(&self, lineage: &'l Lineage, id: &str) -> Option<&'l BuildRecord> {
        lineage.builds.get(*self.ids.get(id)?)
    }
}

/// A lineage with its lookup, for a command that asks one lineage (read
/// from disk, not the tree's memo) for many builds.
pub struct IndexedLineage<'a> {
    pub lineage: &'a Lineage,
    lookup: LineageLookup,
}

impl<'a> IndexedLineage<'a> {
    pub fn new(lineage: &'a Lineage) -> IndexedLineage<'a> {
        IndexedLineage {
            lineage,
            lookup: LineageLookup::of(lineage),
        }
    }

    pub fn head(&self, series: &str, runtime: &str) -> Option<&'a BuildRecord> {
        self.lookup.head(self.lineage, series, runtime)
    }

    pub fn build(&self, id: &str) -> Option<&'a BuildRecord> {
        self.lookup.build(self.lineage, id)
    }
}

#[salsa::tracked(returns(ref))]
pub fn lineage_lookup(db: &dyn Db, tree: Tree) -> LineageLookup {
    LineageLookup::of(&lineage(db, tree).value)
}

/// [`Lineage::head`] of the tree's lineage, through [`lineage_lookup`].
pub fn head_of<'db>(
    db: &'db dyn Db,
    tree: Tree,
    series: &str,
    runtime: &str,
) -> Option<&'db BuildRecord> {
    lineage_lookup(db, tree).head(&lineage(db, tree).value, series, runtime)
}

/// [`Lineage::build`] of the tree's lineage, through [`lineage_lookup`].
pub fn build_of<'db>(db: &'db dyn Db, tree: Tree, id: &str) -> Option<&'db BuildRecord> {
    lineage_lookup(db, tree).build(&lineage(db, tree).value, id)
}

#[salsa::tracked(returns(ref))]
pub fn pins(db: &dyn Db, tree: Tree) -> Record<Pins> {
    read_record(db, tree, "pins.yaml")
}

#[salsa::tracked(returns(ref))]
pub fn releases(db: &dyn Db, tree: Tree) -> Record<Releases> {
    read_record(db, tree, "releases.yaml")
}

/// `run_id`: the ISO start time with every separator replaced by `_`.
pub fn run_id(unix: i64) -> String {
    csis_string_stage::clock::strftime(unix, "%Y_%m_%dT%H_%M_%S")
}

/// The unix time a run id names (`2026_12_02T15_53_24`).
pub fn run_time(run_id: &str) -> Option<i64> {
    let digits: Vec<i64> = run_id
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect::<Option<Vec<_>>>()?;
    let [y, mo, d, h, mi, s] = digits.as_slice() else {
        return None;
    };
    // A record's run id from years 1 to 9999: anything else is no time
    // (and would overflow the arithmetic below).
    let fits = (1..=9999).contains(y)
        && (1..=12).contains(mo)
        && (1..=31).contains(d)
        && (0..24).contains(h)
        && (0..60).contains(mi)
        && (0..=60).contains(s);
    if !fits {
        return None;
    }
    Some(
        csis_string_stage::clock::days_from_civil(*y, *mo as u32, *d as u32) * 86_400
            + h * 3600
            + mi * 60
            + s,
    )
}

/// A record read from disk into `T` ([`meta_state::read`](crate::state::meta_state::read)),
/// the counterpart of [`write_json`].
pub fn read_json<T: Default + for<'de> Deserialize<'de>>(
    system: &dyn crate::db::system::System,
    root: &std::path::Path,
    file: &str,
) -> Result<T, String> {
    crate::state::meta_state::read(system, root, file)
}

pub fn write_json<T: Serialize>(
    system: &dyn crate::db::system::System,
    root: &std::path::Path,
    file: &str,
    value: &T,
) -> Result<(), String> {
    match serde_json::to_value(value).map_err(|e| e.to_string())? {
        J::Object(m) => crate::state::meta_state::write(system, root, file, &m),
        _ => Err(format!("meta-state/{file}: not a mapping")),
    }
}

/// `csis lineage show`: every recorded build as a tree of parent links, per
/// runtime, children in recording order; `*` marks a series head.
pub fn show(lineage: &Lineage) -> String {
    let mut out = String::new();
    let mut runtimes: Vec<&str> = lineage.builds.iter().map(|b| b.runtime.as_str()).collect();
    runtimes.sort_unstable();
    runtimes.dedup();
    // Each build's children, heads and ids found once: scanned per build,
    // a lineage of thousands of builds took seconds to show.
    let lookup = IndexedLineage::new(lineage);
    let mut children: Children<'_> = HashMap::new();
    for b in &lineage.builds {
        children
            .entry((b.runtime.as_str(), b.parent.as_str()))
            .or_default()
            .push(b);
    }
    type Children<'a> = HashMap<(&'a str, &'a str), Vec<&'a BuildRecord>>;
    fn walk(
        children: &Children<'_>,
        lookup: &IndexedLineage<'_>,
        (rt, parent): (&str, &str),
        depth: usize,
        out: &mut String,
    ) {
        for b in children.get(&(rt, parent)).into_iter().flatten() {
            let head = lookup
                .head(&b.series, rt)
                .is_some_and(|h| h.build_id == b.build_id);
            out.push_str(&format!(
                "{}{} {} ({}, fingerprint {}){}\n",
                "  ".repeat(depth),
                if head { "*" } else { "-" },
                b.build_id,
                b.series,
                short_fingerprint(&b.input_fingerprint),
                if b.run.is_empty() {
                    String::new()
                } else {
                    format!(", run {}", b.run)
                }
            ));
            walk(children, lookup, (rt, &b.build_id), depth + 1, out);
        }
    }
    let known: std::collections::HashSet<&str> =
        lineage.builds.iter().map(|b| b.build_id.as_str()).collect();
    for rt in runtimes {
        out.push_str(&format!("runtime {rt}\n"));
        let mut roots: Vec<&str> = lineage
            .builds
            .iter()
            .filter(|b| b.runtime == rt && !known.contains(b.parent.as_str()))
            .map(|b| b.parent.as_str())
            .collect();
        roots.dedup();
        for r in roots {
            out.push_str(&format!("  {r}\n"));
            walk(&children, &lookup, (rt, r), 2, &mut out);
        }
    }
    if out.is_empty() {
        out.push_str("no builds recorded\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_read_back_as_times() {
        let t = 1_796_226_804;
        assert_eq!(run_time(&run_id(t)), Some(t));
        assert_eq!(run_time("nonsense"), None);
        assert_eq!(run_time("9223372036854775807_01_01T00_00_00"), None);
        assert_eq!(run_time("2026_13_01T00_00_00"), None);
    }

    fn build(id: &str, series: &str, runtime: &str) -> BuildRecord {
        BuildRecord {
            build_id: id.into(),
            series: series.into(),
            runtime: runtime.into(),
            ..BuildRecord::default()
        }
    }

    #[test]
    fn show_draws_each_runtime_as_a_tree_of_parents_with_heads_starred() {
        let rec = |id: &str, series: &str, runtime: &str, parent: &str, run: &str| BuildRecord {
            parent: parent.into(),
            input_fingerprint: format!("{id}-fingerprint-long-enough"),
            run: run.into(),
            ..build(id, series, runtime)
        };
        let lineage = Lineage {
            builds: vec![
                rec("a-1", "a", "here", "vendor", "r1"),
                rec("b-1", "b", "here", "a-1", ""),
                rec("c-1", "c", "cloud", "vendor", ""),
                rec("a-2", "a", "here", "vendor", "r2"),
                rec("b-2", "b", "here", "a-2", ""),
                rec("d-1", "d", "here", "b-1", ""),
            ],
        };
        assert_eq!(
            show(&lineage),
            "runtime cloud\n  vendor\n    * c-1 (c, fingerprint c-1-fingerprint-)\n\
             runtime here\n  vendor\n    - a-1 (a, fingerprint a-1-fingerprint-), run r1\n\
             \x20     - b-1 (b, fingerprint b-1-fingerprint-)\n\
             \x20       * d-1 (d, fingerprint d-1-fingerprint-)\n\
             \x20   * a-2 (a, fingerprint a-2-fingerprint-), run r2\n\
             \x20     * b-2 (b, fingerprint b-2-fingerprint-)\n"
        );
        assert_eq!(show(&Lineage::default()), "no builds recorded\n");
    }

    #[test]
    fn the_lookup_finds_what_the_scans_find() {
        // Re-bakes (a newer head), a series on two runtimes, and an id
        // recorded twice (the first is the one `build` finds).
        let lineage = Lineage {
            builds: vec![
                build("a-1", "a", "here"),
                build("b-1", "b", "here"),
                build("a-2", "a", "here"),
                build("a-3", "a", "cloud"),
                build("b-1", "b", "cloud"),
                build("c-1", "c", "here"),
                build("a-4", "a", "here"),
            ],
        };
        let lookup = LineageLookup::of(&lineage);
        for series in ["a", "b", "c", "d"] {
            for runtime in ["here", "cloud", "elsewhere"] {
                assert_eq!(
                    lookup.head(&lineage, series, runtime),
                    lineage.head(series, runtime),
                    "{series}@{runtime}"
                );
            }
        }
        assert_eq!(
            lookup
                .head(&lineage, "a", "here")
                .map(|b| b.build_id.as_str()),
            Some("a-4")
        );
        for id in ["a-1", "a-2", "a-3", "a-4", "b-1", "c-1", "none"] {
            assert_eq!(lookup.build(&lineage, id), lineage.build(id), "{id}");
        }
        assert_eq!(
            lookup.build(&lineage, "b-1").map(|b| b.runtime.as_str()),
            Some("here")
        );
    }
}
