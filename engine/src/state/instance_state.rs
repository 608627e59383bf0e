//! meta-state/instance-state.yaml: per instance name, the generation
//! counters (durable and ephemeral count separately) and the machine
//! currently standing. A new machine of a declaration is named
//! `<name>-NNN` after its kind's next generation, so a relaunch never
//! reuses a hostname a registry may still hold. Nothing is ever deleted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::db::{Db, Tree};

pub const FILE: &str = "instance-state.yaml";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceState {
    #[serde(default)]
    pub instances: BTreeMap<String, InstanceRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// `durable` and `ephemeral`: the last generation opened of each kind.
    #[serde(default)]
    pub generations: BTreeMap<String, u64>,
    #[serde(default)]
    pub current: Option<Generation>,
    #[serde(default)]
    pub history: Vec<Generation>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generation {
    pub number: u64,
    pub kind: String,
    /// `inferred`: opened because a real apply launched it; `observed`:
    /// its machine's id confirmed by the provider; `adopted`: a machine
    /// that stood before the record.
    pub how: String,
    pub opened_run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_run: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The provider's id of the machine, once a real apply's observation
    /// confirmed it (`how: observed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
}

fn kind(ephemeral: bool) -> &'static str {
    if ephemeral { "ephemeral" } else { "durable" }
}

/// The hostname of the next machine of a declaration.
pub fn next_hostname(state: &InstanceState, name: &str, ephemeral: bool) -> String {
    let last = state
        .instances
        .get(name)
        .and_then(|r| r.generations.get(kind(ephemeral)))
        .copied()
        .unwrap_or(0);
    format!("{name}-{:03}", last + 1)
}

/// The record as the tree was loaded with it.
#[salsa::tracked(returns(ref))]
pub fn recorded(db: &dyn Db, tree: Tree) -> InstanceState {
    crate::state::lineage::read_record::<InstanceState>(db, tree, FILE).value
}

/// After a real apply launched `launched` (name, ephemeral): each opens its
/// kind's next generation; a machine standing before is closed as replaced.
pub fn opened(state: &InstanceState, launched: &[(String, bool)], run: &str) -> InstanceState {
    let mut next = state.clone();
    for (name, ephemeral) in launched {
        let r = next.instances.entry(name.clone()).or_default();
        let counter = r
            .generations
            .entry(kind(*ephemeral).to_string())
            .or_insert(0);
        *counter += 1;
        let number = *counter;
        if let Some(mut old) = r.current.take() {
            old.closed_run = Some(run.to_string());
            old.why = Some("replaced".into());
            r.history.push(old);
        }
        r.current = Some(Generation {
            number,
            kind: kind(*ephemeral).to_string(),
            how: "inferred".into(),
            opened_run: run.to_string(),
            closed_run: None,
            why: None,
            instance_id: None,
        });
    }
    next
}

/// The standing machine of `name` gone (`why`: ephemeral, forget):
/// its generation closes; the counters stay.
pub fn closed(state: &InstanceState, name: &str, run: &str, why: &str) -> InstanceState {
    let mut next = state.clone();
    if let Some(r) = next.instances.get_mut(name)
        && let Some(mut g) = r.current.take()
    {
        g.closed_run = Some(run.to_string());
        g.why = Some(why.to_string());
        r.history.push(g);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_name_new_machines_and_count_by_kind() {
        let s = InstanceState::default();
        assert_eq!(next_hostname(&s, "web", false), "web-001");
        let s = opened(&s, &[("web".into(), false)], "r1");
        assert_eq!(next_hostname(&s, "web", false), "web-002");
        assert_eq!(
            next_hostname(&s, "web", true),
            "web-001",
            "ephemeral counts apart"
        );
        let s = opened(&s, &[("web".into(), false)], "r2");
        let r = &s.instances["web"];
        assert_eq!(r.current.as_ref().map(|g| g.number), Some(2));
        assert_eq!(r.history.len(), 1);
        assert_eq!(r.history[0].why.as_deref(), Some("replaced"));
        assert_eq!(r.history[0].closed_run.as_deref(), Some("r2"));
    }
}
