//! The machines a runtime reports, against the records: what `state
//! query` says of instances (missing, changed, the notes), and, after a
//! real apply, each open generation confirmed by the provider's instance
//! id (or closed as replaced out of band).
//!
//! A stopped machine is a note, never drift; its booted image is not
//! read. A runtime that cannot say an instance's id, power or boot image
//! makes no claim about it.

use std::collections::BTreeMap;

use csis_plugin_api::ObservedInstance;

use crate::run::state_report::{StateReport, drift};
use crate::state::instance_state::InstanceState;
use crate::state::launch_params::LaunchParams;
use crate::state::lineage::{IndexedLineage, Pins};

/// The records an instance comparison reads.
pub struct InstanceRecords<'a> {
    pub lineage: &'a IndexedLineage<'a>,
    pub pins: &'a Pins,
    pub launched: &'a LaunchParams,
    pub generations: &'a InstanceState,
    /// The runtime each declared instance launches on.
    pub declared_on: &'a BTreeMap<String, String>,
}

impl InstanceRecords<'_> {
    /// The build a launched instance booted when it was launched: the
    /// last `bind` of its pin (its launch parameters say `unbound` when
    /// they were computed before the bake), else its parameters' build.
    fn launched_from<'a>(&'a self, name: &str, params_build: Option<&'a str>) -> Option<&'a str> {
        self.pins
            .upgrades
            .iter()
            .rev()
            .find(|m| m.kind == "instance" && m.name == name && m.op == "bind")
            .and_then(|m| m.to.as_deref())
            .or(params_build.filter(|b| *b != "unbound"))
    }

    /// The launched instances on `rt` (by the build they stand on, else
    /// their declaration): (name, the build they were launched from).
    fn launched_on(&self, rt: &str) -> Vec<(&str, Option<&str>)> {
        self.launched
            .instances
            .iter()
            .filter(|(_, r)| r.launched)
            .filter_map(|(name, r)| {
                let from = self.launched_from(name, r.params.get("build").and_then(|b| b.as_str()));
                let on = self
                    .pins
                    .instances
                    .get(name)
                    .map(String::as_str)
                    .or(from)
                    .and_then(|b| self.lineage.build(b))
                    .map(|rec| rec.runtime.as_str())
                    .or(self.declared_on.get(name).map(String::as_str))?;
                (on == rt).then_some((name.as_str(), from))
            })
            .collect()
    }

    /// Compare `seen` (runtime `rt`'s machines) with the records.
    pub fn compare(&self, rt: &str, seen: &[ObservedInstance], report: &mut StateReport) {
        let mut by_name: BTreeMap<&str, Vec<&ObservedInstance>> = BTreeMap::new();
        for m in seen {
            by_name.entry(m.name.as_str()).or_default().push(m);
        }
        for (name, launched_from) in self.launched_on(rt) {
            let machines = by_name.get(name).cloned().unwrap_or_default();
            let change = |detail: String| drift("changed", "instance", name, rt, detail, false);
            let m = match machines.as_slice() {
                [] => {
                    report.entries.push(drift(
                        "missing",
                        "instance",
                        name,
                        rt,
                        "recorded launched in meta-state/launch-params.yaml but not running".into(),
                        false,
                    ));
                    continue;
                }
                [m] => *m,
                many => {
                    let ids: Vec<&str> = many
                        .iter()
                        .filter_map(|m| m.instance_id.as_deref())
                        .collect();
                    report.entries.push(change(format!(
                        "{} machines carry this name ({}); one instance is one machine",
                        many.len(),
                        ids.join(", ")
                    )));
                    continue;
                }
            };
            let recorded_id = self
                .generations
                .instances
                .get(name)
                .and_then(|r| r.current.as_ref())
                .and_then(|g| g.instance_id.as_deref());
            if let (Some(was), Some(is)) = (recorded_id, m.instance_id.as_deref())
                && was != is
            {
                report.entries.push(change(format!(
                    "the machine bearing this name is {is}, not {was} (replaced out of band; the next real apply records it)"
                )));
            }
            if m.power.as_deref() == Some("stopped") {
                report.notes.push(format!(
                    "instances/{name}: STOPPED (switched off; not drift)"
                ));
                continue;
            }
            let (Some(booted), Some(pin)) =
                (m.boot_image.as_deref(), self.pins.instances.get(name))
            else {
                continue;
            };
            if booted == pin {
                continue;
            }
            if Some(booted) == launched_from {
                report.notes.push(format!(
                    "instances/{name}: booted image {booted} is behind its pin {pin}; the replacement is PENDING"
                ));
            } else {
                report.entries.push(change(format!(
                    "booted image {booted} is neither its pin {pin} nor the build it was launched from ({})",
                    launched_from.unwrap_or("not recorded")
                )));
            }
        }
    }
}

/// After a real apply: each launched instance's open generation takes the
/// id of the one machine standing under its name (`how: observed`); a
/// different id than the one recorded closes it as replaced out of band
/// and opens the next, with the warning the spec words, unless this run's
/// apply replaced it (its user-data moved), which keeps the generation;
/// a machine with no generation yet (from before the ledger) is adopted
/// as one.
pub fn confirm(
    state: &InstanceState,
    seen: &[(String, ObservedInstance)],
    launched: &LaunchParams,
    run: &str,
) -> (InstanceState, Vec<String>) {
    use crate::state::instance_state::Generation;
    let mut next = state.clone();
    let mut warnings = Vec::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, m) in seen {
        *counts.entry(m.name.as_str()).or_default() += 1;
    }
    for (_, m) in seen {
        let (Some(id), Some(rec)) = (m.instance_id.as_deref(), launched.instances.get(&m.name))
        else {
            continue;
        };
        if !rec.launched || counts.get(m.name.as_str()) != Some(&1) {
            continue;
        }
        let kind = if rec.params.get("ephemeral") == Some(&serde_json::Value::Bool(true)) {
            "ephemeral"
        } else {
            "durable"
        };
        let r = next.instances.entry(m.name.clone()).or_default();
        let open = |r: &mut crate::state::instance_state::InstanceRecord, how: &str| {
            let counter = r.generations.entry(kind.to_string()).or_insert(0);
            *counter += 1;
            r.current = Some(Generation {
                number: *counter,
                kind: kind.to_string(),
                how: how.to_string(),
                opened_run: run.to_string(),
                closed_run: None,
                why: None,
                instance_id: Some(id.to_string()),
            });
        };
        match r.current.as_mut() {
            None => open(r, "adopted"),
            Some(g) if g.instance_id.is_none() => {
                g.instance_id = Some(id.to_string());
                g.how = "observed".into();
            }
            Some(g) if g.instance_id.as_deref() == Some(id) => {}
            // This run's apply replaced the machine because its user-data
            // moved (launch_params::launched): the same logical machine,
            // generation and hostname, on a new id.
            Some(g) if rec.launched_run.as_deref() == Some(run) => {
                g.instance_id = Some(id.to_string());
                g.how = "observed".into();
            }
            Some(g) => {
                let was = g.instance_id.clone().unwrap_or_default();
                let (old_kind, old_number) = (g.kind.clone(), g.number);
                let mut old = g.clone();
                old.closed_run = Some(run.to_string());
                old.why = Some("replaced-out-of-band".into());
                r.history.push(old);
                open(r, "observed");
                let new_number = r.current.as_ref().map_or(0, |g| g.number);
                warnings.push(format!(
                    "Instance {}: the machine bearing this name is {id}, not {was} -- generation {old_kind} {old_number} closed as replaced out of band, {kind} {new_number} opened. Nothing in this system did that.",
                    m.name
                ));
            }
        }
    }
    (next, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::launch_params::Recorded;

    fn launched(names: &[&str]) -> LaunchParams {
        let mut l = LaunchParams::default();
        for n in names {
            let mut params = serde_json::Map::new();
            params.insert("build".into(), serde_json::json!("b1"));
            l.instances.insert(
                n.to_string(),
                Recorded {
                    params,
                    user_data_sha256: None,
                    run: "r0".into(),
                    launched: true,
                    launched_run: Some("r0".into()),
                },
            );
        }
        l
    }

    fn machine(name: &str, id: &str) -> (String, ObservedInstance) {
        (
            "aws".into(),
            ObservedInstance {
                name: name.into(),
                instance_id: Some(id.into()),
                power: Some("running".into()),
                boot_image: Some("b1".into()),
            },
        )
    }

    #[test]
    fn a_generation_is_confirmed_by_its_machines_id_and_a_replaced_machine_closes_it() {
        let l = launched(&["web"]);
        let opened = crate::state::instance_state::opened(
            &InstanceState::default(),
            &[("web".into(), false)],
            "r1",
        );
        let (confirmed, warnings) = confirm(&opened, &[machine("web", "i-1")], &l, "r1");
        assert!(warnings.is_empty());
        let g = confirmed.instances["web"].current.clone().unwrap();
        assert_eq!(
            (g.how.as_str(), g.instance_id.as_deref()),
            ("observed", Some("i-1"))
        );
        // The same machine again changes nothing.
        assert_eq!(
            confirm(&confirmed, &[machine("web", "i-1")], &l, "r2").0,
            confirmed
        );
        let (replaced, warnings) = confirm(&confirmed, &[machine("web", "i-2")], &l, "r3");
        assert_eq!(
            warnings,
            [
                "Instance web: the machine bearing this name is i-2, not i-1 -- generation durable 1 closed as replaced out of band, durable 2 opened. Nothing in this system did that."
            ]
        );
        let r = &replaced.instances["web"];
        assert_eq!(
            r.history.last().unwrap().why.as_deref(),
            Some("replaced-out-of-band")
        );
        assert_eq!(r.history.last().unwrap().closed_run.as_deref(), Some("r3"));
        let g = r.current.clone().unwrap();
        assert_eq!((g.number, g.instance_id.as_deref()), (2, Some("i-2")));
    }

    #[test]
    fn a_machine_from_before_the_record_is_adopted_and_two_under_one_name_confirm_nothing() {
        let l = launched(&["old", "twin"]);
        let (next, warnings) = confirm(
            &InstanceState::default(),
            &[
                machine("old", "i-9"),
                machine("twin", "i-3"),
                machine("twin", "i-4"),
            ],
            &l,
            "r1",
        );
        assert!(warnings.is_empty());
        let g = next.instances["old"].current.clone().unwrap();
        assert_eq!((g.how.as_str(), g.number), ("adopted", 1));
        assert!(!next.instances.contains_key("twin"));
    }
}
