//! Lineage and pins as the engine reads them: meta-state/lineage.yaml (every
//! recorded build) and meta-state/pins.yaml (which build each consumer is
//! bound to), parsed from the tree's meta-state inputs.

use std::collections::BTreeMap;

use csis_model::{Diagnostic, DocPath, Origin};
use serde::{Deserialize, Serialize};
use serde_json::Value as J;

use crate::db::{Db, SourceFile, Tree};
use crate::files::parse_file;

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
    let path = format!("{}/{name}", crate::meta_state::DIR);
    tree.meta_files(db)
        .iter()
        .copied()
        .find(|f| f.path(db).as_ref() == path)
}

/// Parse a meta-state record; an absent file is the empty record.
pub(crate) fn read_record<T: Default + for<'de> Deserialize<'de>>(
    db: &dyn Db,
    tree: Tree,
    name: &str,
) -> Record<T> {
    let Some(file) = meta_file(db, tree, name) else {
        return Record::default();
    };
    let path = file.path(db).clone();
    let parsed = parse_file(db, file);
    let origin = Origin::new(path.clone(), DocPath::root());
    if let Some(e) = &parsed.error {
        return Record {
            value: T::default(),
            diags: vec![e.clone().at(origin)],
        };
    }
    let json = parsed
        .value
        .as_deref()
        .map(|v| v.to_json())
        .unwrap_or(J::Null);
    let json = match json {
        J::Null => return Record::default(),
        J::Object(m) => J::Object(m),
        _ => {
            return Record {
                value: T::default(),
                diags: vec![
                    Diagnostic::error(format!(
                        "Meta-state file {path} must hold a mapping at the top level"
                    ))
                    .at(origin),
                ],
            };
        }
    };
    match serde_json::from_value(json) {
        Ok(value) => Record {
            value,
            diags: Vec::new(),
        },
        Err(e) => Record {
            value: T::default(),
            diags: vec![Diagnostic::error(format!("Meta-state file {path}: {e}")).at(origin)],
        },
    }
}

#[salsa::tracked(returns(ref))]
pub fn lineage(db: &dyn Db, tree: Tree) -> Record<Lineage> {
    read_record(db, tree, "lineage.yaml")
}

#[salsa::tracked(returns(ref))]
pub fn pins(db: &dyn Db, tree: Tree) -> Record<Pins> {
    read_record(db, tree, "pins.yaml")
}

#[salsa::tracked(returns(ref))]
pub fn releases(db: &dyn Db, tree: Tree) -> Record<crate::operations::Releases> {
    read_record(db, tree, "releases.yaml")
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
    Some(crate::clock::days_from_civil(*y, *mo as u32, *d as u32) * 86_400 + h * 3600 + mi * 60 + s)
}

/// `csis lineage record --manifest FILE`: after a bake, append the build to
/// meta-state/lineage.yaml and bind (or, under follow, move) the image's pin
/// to the parent build it was baked from. Recording a build twice changes
/// nothing. Returns what was done, for the log.
pub fn record_build(
    ws: &crate::workspace::Workspace,
    system: &dyn crate::system::System,
    manifest_path: &std::path::Path,
) -> Result<String, String> {
    let text = system
        .read_to_string(manifest_path)
        .map_err(|e| format!("{}: {e}", manifest_path.display()))?
        .ok_or_else(|| format!("{}: no such build manifest", manifest_path.display()))?;
    let m: J =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let s = |k: &str| m.get(k).and_then(J::as_str).unwrap_or_default().to_string();
    let (build_id, series, runtime, parent) =
        (s("build_id"), s("series"), s("runtime"), s("parent"));
    if build_id.is_empty() || series.is_empty() || runtime.is_empty() {
        return Err(format!(
            "{}: a build manifest needs build_id, series and runtime",
            manifest_path.display()
        ));
    }
    let db = &ws.db;
    let tree = ws.tree;
    let key = crate::fingerprint::SeriesKey::new(db, series.clone(), runtime.clone());
    let fp = crate::fingerprint::input_fingerprint(db, tree, key).as_ref();
    let fp_fields = fp.map(|f| f.fields.clone()).unwrap_or(J::Null);
    let operations: BTreeMap<String, String> = m
        .get("modifications")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(|x| {
            Some((
                x.get("name")?.as_str()?.to_string(),
                x.get("operation")?.as_str()?.to_string(),
            ))
        })
        .collect();
    let mods: Vec<J> = fp_fields
        .get("modifications")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .map(|x| {
            let name = x.get("name").and_then(J::as_str).unwrap_or_default();
            serde_json::json!({
                "name": name,
                "content_hash": x.get("content_hash"),
                "operation": operations.get(name),
                "run": s("run"),
            })
        })
        .collect();
    let tags = m.get("tags").cloned().unwrap_or(J::Null);
    let types = |k: &str| -> Vec<String> {
        tags.get(k)
            .and_then(J::as_str)
            .map(|v| {
                v.split(',')
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let assertions = fp_fields
        .get("verification")
        .and_then(J::as_object)
        .map_or(0, |v| v.len());
    let record = BuildRecord {
        build_id: build_id.clone(),
        series: series.clone(),
        runtime: runtime.clone(),
        name: series.clone(),
        parent: parent.clone(),
        input_fingerprint: s("input_fingerprint"),
        run: s("run"),
        capabilities: Capabilities {
            identity_types: types("csis_identity_types"),
            storage_types: types("csis_storage_types"),
        },
        mods,
        tests: serde_json::json!({ "in_bake": true, "assertions": assertions }),
        update: fp_fields.get("update").cloned().unwrap_or(J::Null),
        chain: crate::fingerprint::chain_root(db, tree, &series)
            .map(|(_, c)| c)
            .unwrap_or_default(),
        // Inputs only when they are the ones the build was baked with.
        inputs: fp
            .filter(|f| f.hex == s("input_fingerprint"))
            .map(|f| f.inputs.clone())
            .unwrap_or_default(),
    };
    let root = &ws.root;
    // Each file is written whole; recording twice is harmless, so a run
    // killed between the two writes is completed by recording again.
    let mut lineage: Lineage = read_json(system, root, "lineage.yaml")?;
    let mut done = Vec::new();
    if lineage.build(&build_id).is_some() {
        done.push(format!("lineage: {build_id} is already recorded"));
    } else {
        lineage.builds.push(record);
        write_json(system, root, "lineage.yaml", &lineage)?;
        done.push(format!(
            "lineage: recorded {build_id} ({series}@{runtime}, fingerprint {})",
            s("input_fingerprint").chars().take(16).collect::<String>()
        ));
    }
    if parent != "vendor" && !parent.is_empty() {
        let mut pins: Pins = read_json(system, root, "pins.yaml")?;
        let pin_key = format!("{series}@{runtime}");
        let policy = {
            let id = crate::items::ItemId::new(db, csis_model::ItemKind::IMAGES, series.clone());
            match crate::items_model::structured_item(db, tree, id)
                .item
                .as_deref()
            {
                Some(csis_model::models::Item::Image(img)) => img.parent_policy.clone(),
                _ => "pinned".into(),
            }
        };
        let current = pins.images.get(&pin_key).cloned();
        let op = match &current {
            None => Some("bind"),
            Some(c) if *c != parent && policy == "follow" => Some("follow"),
            _ => None,
        };
        if let Some(op) = op {
            pins.images.insert(pin_key.clone(), parent.clone());
            pins.upgrades.push(PinMove {
                kind: "image".into(),
                name: pin_key.clone(),
                from: current,
                to: Some(parent.clone()),
                run: s("run"),
                op: op.into(),
            });
            write_json(system, root, "pins.yaml", &pins)?;
            done.push(format!("pins: {pin_key} -> {parent} ({op})"));
        }
    }
    Ok(done.join("\n"))
}

pub fn read_json<T: Default + for<'de> Deserialize<'de>>(
    system: &dyn crate::system::System,
    root: &std::path::Path,
    file: &str,
) -> Result<T, String> {
    let doc = crate::meta_state::read(system, root, file)?;
    serde_json::from_value(J::Object(doc)).map_err(|e| format!("meta-state/{file}: {e}"))
}

pub fn write_json<T: Serialize>(
    system: &dyn crate::system::System,
    root: &std::path::Path,
    file: &str,
    value: &T,
) -> Result<(), String> {
    match serde_json::to_value(value).map_err(|e| e.to_string())? {
        J::Object(m) => crate::meta_state::write(system, root, file, &m),
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
    fn walk(l: &Lineage, rt: &str, parent: &str, depth: usize, out: &mut String) {
        for b in l
            .builds
            .iter()
            .filter(|b| b.runtime == rt && b.parent == parent)
        {
            let head = l
                .head(&b.series, rt)
                .is_some_and(|h| h.build_id == b.build_id);
            out.push_str(&format!(
                "{}{} {} ({}, fingerprint {}){}\n",
                "  ".repeat(depth),
                if head { "*" } else { "-" },
                b.build_id,
                b.series,
                b.input_fingerprint.chars().take(16).collect::<String>(),
                if b.run.is_empty() {
                    String::new()
                } else {
                    format!(", run {}", b.run)
                }
            ));
            walk(l, rt, &b.build_id, depth + 1, out);
        }
    }
    for rt in runtimes {
        out.push_str(&format!("runtime {rt}\n"));
        let known: Vec<&str> = lineage.builds.iter().map(|b| b.build_id.as_str()).collect();
        let mut roots: Vec<&str> = lineage
            .builds
            .iter()
            .filter(|b| b.runtime == rt && !known.contains(&b.parent.as_str()))
            .map(|b| b.parent.as_str())
            .collect();
        roots.dedup();
        for r in roots {
            out.push_str(&format!("  {r}\n"));
            walk(lineage, rt, r, 2, &mut out);
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
        assert_eq!(run_time(&crate::run::run_id(t)), Some(t));
        assert_eq!(run_time("nonsense"), None);
    }
}
