//! Test specs (the spec's validate row "test specs"): an image's `tests`
//! use the known vocabulary (files, packages, commands, services_enabled,
//! users, and post_bake, which takes the same plus mounts); every files
//! entry has a path, every commands entry a run, every mounts entry is an
//! absolute mount point. The tests run on a baked machine; a spec is
//! checked here, before any machine is baked to run it.

use csis_model::naming::{control_char_problem, mount_point_problem};
use csis_model::{Map, Origin, Value};

use crate::check::context::Checks;

impl Checks<'_> {
    /// The tests vocabulary: files, packages, commands, services_enabled,
    /// users, and post_bake (the same plus mounts).
    pub(super) fn test_spec(&mut self, where_: &str, tests: &Map, at: Option<Origin>) {
        const KNOWN: [&str; 6] = [
            "files",
            "packages",
            "commands",
            "services_enabled",
            "users",
            "post_bake",
        ];
        self.test_keys(where_, tests, &KNOWN, at.clone());
        if let Some(pb) = tests.get("post_bake") {
            match pb.as_map() {
                None => self.err(
                    format!("{where_}: tests.post_bake must be a map"),
                    at.clone(),
                ),
                Some(m) => {
                    const POST: [&str; 6] = [
                        "files",
                        "packages",
                        "commands",
                        "services_enabled",
                        "users",
                        "mounts",
                    ];
                    self.test_keys(&format!("{where_} post_bake"), m, &POST, at.clone());
                    for mp in m
                        .get("mounts")
                        .and_then(Value::as_seq)
                        .into_iter()
                        .flatten()
                    {
                        let p = mp
                            .as_str()
                            .or_else(|| mp.get("path").and_then(Value::as_str))
                            .unwrap_or_default();
                        if !p.starts_with('/') {
                            self.err(
                                format!("{where_}: every mounts entry is an absolute mount point"),
                                at.clone(),
                            );
                        } else if let Some(why) = mount_point_problem(p) {
                            self.err(
                                format!("{where_}: tests.post_bake.mounts: {why}"),
                                at.clone(),
                            );
                        }
                    }
                }
            }
        }
    }

    fn test_keys(&mut self, where_: &str, tests: &Map, known: &[&str], at: Option<Origin>) {
        let unknown: Vec<&str> = tests
            .keys()
            .map(String::as_str)
            .filter(|k| !known.contains(k))
            .collect();
        if !unknown.is_empty() {
            self.err(
                format!("{where_}: unknown tests keys {unknown:?} (known: {known:?})"),
                at.clone(),
            );
        }
        // Each list's mapping entries need their key.
        for (list, key, needs) in [("files", "path", "a path"), ("commands", "run", "run")] {
            for entry in tests
                .get(list)
                .and_then(Value::as_seq)
                .into_iter()
                .flatten()
            {
                if let Value::Map(m) = entry
                    && !m.contains_key(key)
                {
                    self.err(
                        format!("{where_}: every tests.{list} entry needs {needs}"),
                        at.clone(),
                    );
                }
                // A file's path names a file on the machine.
                let path = entry
                    .as_str()
                    .or_else(|| entry.get("path").and_then(Value::as_str));
                if list == "files"
                    && let Some(why) = path.and_then(|p| control_char_problem("path", p))
                {
                    self.err(format!("{where_}: tests.files: {why}"), at.clone());
                }
            }
        }
    }
}
