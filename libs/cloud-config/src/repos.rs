//! repos: package repositories, their fields and the consumes graph
//! (no cycles, nothing consumed that the document does not define).

use std::collections::{BTreeMap, BTreeSet};

use csis_model::{DocPath, Value};

use crate::names::repo_name_problem;
use crate::values::{bool_of, carried_problem, scalar_text, shown_scalar};
use crate::{Checker, REPO_KEYS, Severity};

impl Checker {
    pub(crate) fn repos(&mut self, v: &Value, path: &DocPath) {
        let Some(items) = self.list(v, path, "repos") else {
            return;
        };
        // name -> (index, enabled, consumes); only entries that pass their
        // own checks.
        let mut good: BTreeMap<String, (usize, bool, Vec<String>)> = BTreeMap::new();
        let mut lower_seen: BTreeSet<String> = BTreeSet::new();
        let mut names: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = path.index(i);
            let Some(entry) = self.entry(item, &at, "repos") else {
                names.push(String::new());
                continue;
            };
            let name = entry.get("name").map(scalar_text).unwrap_or_default();
            names.push(name.clone());
            let unknown: Vec<&String> = entry
                .keys()
                .filter(|k| !REPO_KEYS.contains(&k.as_str()))
                .collect();
            for key in &unknown {
                self.report_key(
                    &at.key(key),
                    Severity::Refused,
                    format!("repos: '{name}': unknown key '{key}'; the repository is skipped"),
                );
            }
            let mut refused = !unknown.is_empty();
            let mut refuse = |c: &mut Checker, p: &DocPath, why: String| {
                refused = true;
                c.report(
                    p,
                    Severity::Refused,
                    format!("repos: '{name}': {why}; the repository is skipped"),
                );
            };
            if entry.get("name").is_none() {
                refuse(self, &at, "name is required".into());
            } else if let Some(why) = repo_name_problem(&name) {
                refuse(self, &at.key("name"), format!("the name {why}"));
            } else if !lower_seen.insert(name.to_lowercase()) {
                refuse(
                    self,
                    &at.key("name"),
                    "another repository's name differs only in case (the file names are lowercased and would collide)".into(),
                );
            }
            match (entry.get("url"), entry.get("path")) {
                (Some(_), Some(_)) => refuse(self, &at, "url and path cannot be combined".into()),
                (None, None) => refuse(self, &at, "one of url or path is required".into()),
                (Some(_), None) if entry.get("tuf_root").is_none() => refuse(
                    self,
                    &at.key("url"),
                    "url needs tuf_root (the trust anchor's content)".into(),
                ),
                (None, Some(_)) if entry.get("tuf_root").is_some() => refuse(
                    self,
                    &at.key("tuf_root"),
                    "tuf_root with path is an error: a local repository has no trust anchor".into(),
                ),
                _ => {}
            }
            if let Some(why) = entry
                .get("tuf_root")
                .and_then(|v| carried_problem(&scalar_text(v), "tuf_root", "a trust anchor"))
            {
                refuse(self, &at.key("tuf_root"), why);
            }
            if let Some(p) = entry.get("priority")
                && scalar_text(p).parse::<i64>().is_err()
            {
                refuse(
                    self,
                    &at.key("priority"),
                    format!("priority must be an integer, not {}", shown_scalar(p)),
                );
            }
            let enabled = match entry.get("enabled") {
                None => Some(true),
                Some(e) => bool_of(e),
            };
            if enabled.is_none() {
                refuse(
                    self,
                    &at.key("enabled"),
                    "enabled must be true or false".into(),
                );
            }
            let consumes: Vec<String> = match entry.get("consumes") {
                None => Vec::new(),
                Some(Value::Seq(cs)) => cs.iter().map(scalar_text).collect(),
                Some(other) => {
                    refuse(
                        self,
                        &at.key("consumes"),
                        format!(
                            "consumes must be a list of repository names, not a {}",
                            other.kind_name()
                        ),
                    );
                    Vec::new()
                }
            };
            if !refused {
                good.insert(name, (i, enabled.unwrap_or(true), consumes));
            }
        }
        // A consumer of a refused or disabled provider, and every member
        // of a consumes cycle, is refused too; until nothing changes.
        let all: BTreeSet<&String> = names.iter().filter(|n| !n.is_empty()).collect();
        loop {
            let mut drop: Vec<(String, String)> = Vec::new();
            for (name, (_, _, consumes)) in &good {
                for c in consumes {
                    match good.get(c) {
                        Some((_, true, _)) => {}
                        Some((_, false, _)) => drop.push((
                            name.clone(),
                            format!("it consumes '{c}', which is disabled"),
                        )),
                        None if all.contains(c) => drop
                            .push((name.clone(), format!("it consumes '{c}', which is refused"))),
                        None => {}
                    }
                }
            }
            if drop.is_empty() {
                break;
            }
            for (name, why) in drop {
                if let Some((i, _, _)) = good.remove(&name) {
                    self.report(
                        &path.index(i).key("consumes"),
                        Severity::Refused,
                        format!("repos: '{name}': {why}; the repository is skipped"),
                    );
                }
            }
        }
        for name in cycle_members(&good) {
            if let Some((i, _, _)) = good.remove(&name) {
                self.report(
                    &path.index(i).key("consumes"),
                    Severity::Refused,
                    format!(
                        "repos: '{name}': it is part of a consumes cycle; the repository is skipped"
                    ),
                );
            }
        }
        for (name, (i, _, consumes)) in &good {
            for c in consumes.iter().filter(|c| !all.contains(c)) {
                self.report(
                    &path.index(*i).key("consumes"),
                    Severity::Skipped,
                    format!("repos: '{name}': consumes '{c}', which this document does not define; it must be an enabled repository already on the target"),
                );
            }
        }
    }
}

/// Repositories on a consumes cycle among the given ones.
pub(crate) fn cycle_members(good: &BTreeMap<String, (usize, bool, Vec<String>)>) -> Vec<String> {
    let mut out = Vec::new();
    for start in good.keys() {
        // Is `start` reachable from itself?
        let mut stack: Vec<&String> = good[start].2.iter().collect();
        let mut seen: BTreeSet<&String> = BTreeSet::new();
        while let Some(n) = stack.pop() {
            if n == start {
                out.push(start.clone());
                break;
            }
            if seen.insert(n)
                && let Some((_, _, next)) = good.get(n)
            {
                stack.extend(next.iter());
            }
        }
    }
    out
}
