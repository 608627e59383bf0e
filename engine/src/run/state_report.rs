//! What `state query` found, as generated/state-report.json holds it and
//! as it prints: drift entries by class, the runtimes that could not be
//! asked, and the notes that are not drift.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateReport {
    pub entries: Vec<Drift>,
    /// `<runtime>: <why it could not be asked>`.
    pub unavailable: Vec<String>,
    /// What is worth saying and is not drift (a stopped machine, a
    /// pending replacement).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    pub class: String,
    /// image, storage, instance or pin.
    pub kind: String,
    pub name: String,
    pub runtime: String,
    pub detail: String,
    pub hard: bool,
}

impl StateReport {
    /// Per class, and `hard`, as the run summary's `state`.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for d in &self.entries {
            *counts.entry(d.class.clone()).or_insert(0) += 1;
            if d.hard {
                *counts.entry("hard".into()).or_insert(0) += 1;
            }
        }
        counts.insert("unavailable".into(), self.unavailable.len() as u64);
        counts
    }

    /// The lines `state query` prints, entries first.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .entries
            .iter()
            .map(|d| {
                format!(
                    "{}{} {} {} ({}): {}",
                    if d.hard { "hard: " } else { "" },
                    d.class,
                    d.kind,
                    d.name,
                    d.runtime,
                    d.detail
                )
            })
            .collect();
        out.extend(self.unavailable.iter().map(|u| format!("unavailable: {u}")));
        out.extend(self.notes.iter().map(|n| format!("note: {n}")));
        out
    }
}

pub(crate) fn drift(
    class: &str,
    kind: &str,
    name: &str,
    runtime: &str,
    detail: String,
    hard: bool,
) -> Drift {
    Drift {
        class: class.into(),
        kind: kind.into(),
        name: name.into(),
        runtime: runtime.into(),
        detail,
        hard,
    }
}
