//! Meta-state: the committed, human-readable YAML records under
//! `<root>/meta-state/` that carry memory between runs. Each write is atomic
//! per file; a file whose top level is not a mapping is refused.

use std::path::{Path, PathBuf};

use serde_json::Value as J;

use crate::db::system::System;
use csis_yaml::emit::to_yaml;

pub const DIR: &str = "meta-state";
/// How many runs the journal keeps.
pub const RUNS_KEPT: usize = 200;

/// The tree's lock (see `run::lock`): under meta-state/, never a record,
/// never committed.
pub const LOCK_FILE: &str = ".csis.lock";

/// The lock the processes of one run take around a record's
/// read-modify-write: several `lineage record`s of concurrent bakes run
/// under their parent's tree lock at once.
pub const RECORDS_LOCK_FILE: &str = ".csis-records.lock";

/// `meta-state/.csis.lock`, relative to the root.
pub fn lock_rel() -> String {
    format!("{DIR}/{LOCK_FILE}")
}

pub fn path(root: &Path, file: &str) -> PathBuf {
    root.join(DIR).join(file)
}

/// A meta-state file read into `T` (a record type, or a JSON mapping); an
/// absent file is `T::default()`.
pub fn read<T: Default + serde::de::DeserializeOwned>(
    system: &dyn System,
    root: &Path,
    file: &str,
) -> Result<T, String> {
    let p = path(root, file);
    match system.read_to_string(&p) {
        Ok(Some(text)) => parse(&text, &p.display().to_string()),
        Ok(None) => Ok(T::default()),
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}

/// A meta-state file's text read into `T`; an empty document is
/// `T::default()`, anything but a mapping is refused. `shown` is the path
/// the messages name. Parsed without positions and read straight from the
/// document (no JSON copy): the records are megabytes on a large tree.
pub fn parse<T: Default + serde::de::DeserializeOwned>(
    text: &str,
    shown: &str,
) -> Result<T, String> {
    let doc = csis_yaml::parse_value(text).map_err(|e| format!("{shown}: {}", e.message))?;
    match doc {
        csis_model::Value::Null => Ok(T::default()),
        csis_model::Value::Map(_) => {
            T::deserialize(&doc).map_err(|e| format!("Meta-state file {shown}: {e}"))
        }
        _ => Err(format!(
            "Meta-state file {shown} must hold a mapping at the top level"
        )),
    }
}

/// Write a meta-state file whole (temporary file and rename).
pub fn write(
    system: &dyn System,
    root: &Path,
    file: &str,
    value: &serde_json::Map<String, J>,
) -> Result<(), String> {
    let p = path(root, file);
    let text = format!(
        "# csis meta-state: {file}. Written by csis; change it through csis commands.\n{}",
        to_yaml(&J::Object(value.clone()))
    );
    gate(system, root, &format!("{DIR}/{file}"), &text)?;
    system
        .write_atomic(&p, text.as_bytes(), false)
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// Refused when a hard public-safe rule matches what would be written to
/// `rel` (relative to the root): the caller then writes nothing.
pub fn gate(system: &dyn System, root: &Path, rel: &str, text: &str) -> Result<(), String> {
    Gate::load(system, root).check(rel, text)
}

/// The public-safe hard rules with the tree's allowances, read once for
/// many files (a lifecycle's generated tree).
pub struct Gate {
    allow: csis_public_safe::Allow,
}

impl Gate {
    pub fn load(system: &dyn System, root: &Path) -> Gate {
        Gate {
            allow: csis_public_safe::Allow::from_config_text(&Gate::config_text(system, root)),
        }
    }

    /// The text the gate's configuration is read from (cfg/_config.yml).
    pub fn config_text(system: &dyn System, root: &Path) -> String {
        system
            .read_to_string(&root.join("cfg/_config.yml"))
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// `rel` (as the message names it) may be written with `text`.
    pub fn check(&self, rel: &str, text: &str) -> Result<(), String> {
        let findings = csis_public_safe::scan_text(rel, text, &self.allow, true);
        if findings.is_empty() {
            Ok(())
        } else {
            Err(csis_public_safe::refusal(rel, &findings))
        }
    }
}

/// Append one run to meta-state/runs.yaml, keeping the last
/// [`RUNS_KEPT`].
pub fn record_run(system: &dyn System, root: &Path, entry: J) -> Result<(), String> {
    let mut doc: serde_json::Map<String, J> = read(system, root, "runs.yaml")?;
    let mut runs = match doc.remove("runs") {
        Some(J::Array(a)) => a,
        _ => Vec::new(),
    };
    runs.push(entry);
    if runs.len() > RUNS_KEPT {
        runs.drain(..runs.len() - RUNS_KEPT);
    }
    doc.insert("runs".into(), J::Array(runs));
    write(system, root, "runs.yaml", &doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::MemorySystem;

    #[test]
    fn the_journal_keeps_the_last_200_runs() {
        let sys = MemorySystem::new();
        let root = Path::new("/r");
        for i in 0..205 {
            record_run(
                &sys,
                root,
                serde_json::json!({"run": format!("r{i}"), "ok": true}),
            )
            .unwrap();
        }
        let doc: serde_json::Map<String, J> = read(&sys, root, "runs.yaml").unwrap();
        let runs = doc["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 200);
        assert_eq!(runs[0]["run"], "r5");
        assert_eq!(runs[199]["run"], "r204");
    }

    #[test]
    fn a_write_a_hard_rule_matches_is_refused_and_writes_nothing() {
        let sys = MemorySystem::new();
        let root = Path::new("/r");
        record_run(&sys, root, serde_json::json!({"run": "r1", "ok": true})).unwrap();
        let before = sys.read(&path(root, "runs.yaml"));
        let err = record_run(
            &sys,
            root,
            serde_json::json!({"run": "r2", "error": "AKIAIOSFODNN7EXAMPLE leaked"}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            "Refusing meta-state/runs.yaml: material that must not be public -- meta-state/runs.yaml: aws-access-key: AKIAIO (public-safe by construction; allow a value by decision in cfg/_config.yml public_safe.allow)"
        );
        assert_eq!(sys.read(&path(root, "runs.yaml")), before);
        sys.write(
            &root.join("cfg/_config.yml"),
            "id: x\npublic_safe:\n  allow: [AKIAIOSFODNN7EXAMPLE]\n",
        );
        record_run(
            &sys,
            root,
            serde_json::json!({"run": "r2", "error": "AKIAIOSFODNN7EXAMPLE leaked"}),
        )
        .unwrap();
    }

    #[test]
    fn a_record_is_read_straight_from_its_document_and_a_wrong_type_named() {
        use crate::state::lineage::Pins;
        let sys = MemorySystem::new();
        let root = Path::new("/r");
        sys.write(
            &path(root, "pins.yaml"),
            "instances:\n  web: b-1\nimages: {}\nnot_a_field: [1, {a: b}]\n",
        );
        let pins: Pins = read(&sys, root, "pins.yaml").unwrap();
        assert_eq!(pins.instances["web"], "b-1");
        assert!(pins.images.is_empty());

        sys.write(&path(root, "pins.yaml"), "instances:\n  web: [b-1]\n");
        assert_eq!(
            read::<Pins>(&sys, root, "pins.yaml").unwrap_err(),
            "Meta-state file /r/meta-state/pins.yaml: invalid type: sequence, expected a string"
        );
        // An empty file is the empty record.
        sys.write(&path(root, "pins.yaml"), "# nothing yet\n");
        assert_eq!(
            read::<Pins>(&sys, root, "pins.yaml").unwrap(),
            Pins::default()
        );
    }

    #[test]
    fn a_hand_edited_file_that_is_not_a_mapping_is_refused() {
        let sys = MemorySystem::new();
        let root = Path::new("/r");
        sys.write(&path(root, "runs.yaml"), "- a\n- b\n");
        assert_eq!(
            read::<serde_json::Map<String, J>>(&sys, root, "runs.yaml").unwrap_err(),
            "Meta-state file /r/meta-state/runs.yaml must hold a mapping at the top level"
        );
        assert!(record_run(&sys, root, serde_json::json!({})).is_err());
        // Nothing was overwritten.
        assert_eq!(sys.read(&path(root, "runs.yaml")), "- a\n- b\n");
    }
}
