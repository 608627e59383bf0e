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

fn meta_file(db: &dyn Db, tree: Tree, name: &str) -> Option<SourceFile> {
    let path = format!("{}/{name}", crate::meta_state::DIR);
    tree.meta_files(db)
        .iter()
        .copied()
        .find(|f| f.path(db).as_ref() == path)
}

/// Parse a meta-state record; an absent file is the empty record.
fn read_record<T: Default + for<'de> Deserialize<'de>>(
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
