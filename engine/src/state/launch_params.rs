//! Launch parameters: the bindings specific to one instance, computed from
//! validated configuration and recorded in meta-state/launch-params.yaml
//! after the instance-image lifecycle generates. A launched instance is
//! immutable: changed parameters refuse validation unless the change is a
//! sanctioned exit (the pin moved: an upgrade or a follow target, which
//! replaces the machine) or only removes mounts (a detach).

use std::collections::BTreeMap;

use csis_model::models::Item;
use csis_model::{ItemKind, Vct};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as J, json};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;

pub const FILE: &str = "launch-params.yaml";

/// What `build` holds for an instance no pin binds yet.
const UNBOUND: &str = "unbound";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchParams {
    #[serde(default)]
    pub instances: BTreeMap<String, Recorded>,
}

/// One instance's record: its parameters and whether a real apply launched
/// the machine they describe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    pub params: Map<String, J>,
    /// The SHA-256 of the user-data the machine boots with
    /// (`plan::user_data`); for a launched machine, the user-data it was
    /// launched with, since a running machine never reads it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data_sha256: Option<String>,
    pub run: String,
    #[serde(default)]
    pub launched: bool,
    #[serde(default)]
    pub launched_run: Option<String>,
}

/// meta-state/launch-params.yaml as the tree was loaded with it.
#[salsa::tracked(returns(ref))]
pub fn launch_record(db: &dyn Db, tree: Tree) -> crate::state::lineage::Record<LaunchParams> {
    crate::state::lineage::read_record(db, tree, FILE)
}

/// Every declared instance's launch parameters, by name. `record` gives a
/// launched machine its recorded hostname.
pub fn compute_all(
    db: &dyn Db,
    tree: Tree,
    record: &LaunchParams,
) -> BTreeMap<String, Map<String, J>> {
    item_index(db, tree)
        .names(ItemKind::INSTANCES)
        .filter_map(|name| Some((name.to_string(), compute(db, tree, record, name)?)))
        .collect()
}

/// One declared instance's launch parameters; nothing for a name that is
/// no instance.
pub(crate) fn compute(
    db: &dyn Db,
    tree: Tree,
    record: &LaunchParams,
    name: &str,
) -> Option<Map<String, J>> {
    let b = builders(db, tree);
    let registry = db.registry();
    let pins = &crate::state::lineage::pins(db, tree).value;
    let item = |kind: ItemKind, name: &str| {
        structured_item(
            db,
            ItemId::new(db, tree, kind, csis_model::naming::as_safe_name(name)),
        )
    };
    let builder_of = |vct: Vct, reference: &str| {
        b.resolve(vct, reference).and_then(|d| {
            registry
                .model(d.classification, d.model)
                .map(|spec| (d, (spec.builder)(d)))
        })
    };
    let state = crate::state::instance_state::recorded(db, tree);
    let si = item(ItemKind::INSTANCES, name);
    let Some(Item::Instance(inst)) = si.item.as_deref() else {
        return None;
    };
    let image = inst.image.clone().unwrap_or_default();
    let group = match item(ItemKind::IMAGES, &image).item.as_deref() {
        Some(Item::Image(img)) => img.group.clone(),
        _ => None,
    };
    let identity_type =
        group
            .as_deref()
            .and_then(|g| match item(ItemKind::GROUPS, g).item.as_deref() {
                Some(Item::Group(grp)) => builder_of(Vct::GroupBuilderModel, &grp.root.named.type_)
                    .and_then(|(_, builder)| builder.identity_type().map(str::to_string)),
                _ => None,
            });
    let session = b
        .resolve(Vct::InstanceBuilderModel, &inst.root.named.type_)
        .and_then(|d| d.base.runtime().map(str::to_string))
        .and_then(|rt| builder_of(Vct::RuntimeBuilderModel, &rt))
        .and_then(|(_, builder)| builder.session_mechanism().map(str::to_string));
    let mounts: Vec<J> = si
        .storages
        .iter()
        .map(|m| {
            let st = match item(ItemKind::STORAGES, &m.name).item.as_deref() {
                Some(Item::Storage(st)) => Some(st.clone()),
                _ => None,
            };
            let builder = st
                .as_ref()
                .and_then(|st| builder_of(Vct::StorageBuilderModel, &st.named.type_));
            json!({
                "storage": m.name,
                "type": builder.as_ref().and_then(|(_, b)| b.capability_type().map(str::to_string)),
                "builder": builder.as_ref().map(|(d, _)| d.name().to_string()),
                "mount_point": m.mount_point,
                "group": group,
                "share_mode": st.as_ref().map(|s| s.share_mode.clone()),
                "public_read": st.as_ref().is_some_and(|s| s.public_read),
            })
        })
        .collect();
    let hostname = json!(hostname_of(record, state, pins, name, inst.ephemeral));
    let mut params = Map::new();
    params.insert("image".into(), json!(image));
    params.insert(
        "build".into(),
        json!(pins.instances.get(name).map_or(UNBOUND, String::as_str)),
    );
    params.insert("group".into(), json!(group));
    params.insert("identity_type".into(), json!(identity_type));
    params.insert("mounts".into(), J::Array(mounts));
    params.insert("enrollment".into(), J::Null);
    params.insert("session".into(), json!(session));
    params.insert("hostname".into(), hostname);
    // Drawn from the pool by the run that launched the machine.
    let alias = record
        .instances
        .get(name)
        .and_then(|r| r.params.get("alias").cloned())
        .unwrap_or(J::Null);
    params.insert("alias".into(), alias);
    params.insert("ephemeral".into(), json!(inst.ephemeral));
    if !inst.userdata.is_empty() {
        params.insert("userdata".into(), json!(inst.userdata));
    }
    Some(params)
}

/// The canonical hostname: a launched machine keeps the one it was
/// recorded with; a new one is `<name>-NNN` after its kind's next
/// generation.
fn hostname_of(
    record: &LaunchParams,
    state: &crate::state::instance_state::InstanceState,
    pins: &crate::state::lineage::Pins,
    name: &str,
    ephemeral: bool,
) -> String {
    let pin = json!(pins.instances.get(name).map_or(UNBOUND, String::as_str));
    record
        .instances
        .get(name)
        // A machine standing that this run does not replace.
        .filter(|r| {
            let mut now = Map::new();
            now.insert("build".into(), pin.clone());
            r.launched && !replaced(&r.params, &now)
        })
        .and_then(|r| {
            r.params
                .get("hostname")
                .and_then(J::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| crate::state::instance_state::next_hostname(state, name, ephemeral))
}

/// The canonical hostname of one declared instance, from the records the
/// tree was loaded with.
pub fn canonical_hostname(db: &dyn Db, tree: Tree, name: &str, ephemeral: bool) -> String {
    let record = &launch_record(db, tree).value;
    let pins = &crate::state::lineage::pins(db, tree).value;
    hostname_of(
        record,
        crate::state::instance_state::recorded(db, tree),
        pins,
        name,
        ephemeral,
    )
}

/// The keys whose values differ, sorted; mounts only removed are a detach
/// and do not count.
pub(crate) fn changed_keys(before: &Map<String, J>, now: &Map<String, J>) -> Vec<String> {
    let mut keys: Vec<&String> = before.keys().chain(now.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != now.get(*k))
        .filter(|k| {
            if k.as_str() != "mounts" {
                return true;
            }
            let empty = Vec::new();
            let was = before.get("mounts").and_then(J::as_array).unwrap_or(&empty);
            let is = now.get("mounts").and_then(J::as_array).unwrap_or(&empty);
            !is.iter().all(|m| was.contains(m))
        })
        .cloned()
        .collect()
}

/// Whether a change is a sanctioned exit: the pin moved from one build to
/// another (an upgrade, or a follow target), which replaces the machine.
pub(crate) fn replaced(before: &Map<String, J>, now: &Map<String, J>) -> bool {
    now.get("build")
        .and_then(J::as_str)
        .is_some_and(|pin| moved_off(before, pin).is_some())
}

/// The build a launched machine was recorded on, when its pin has moved
/// from it to `pin` ([`replaced`]'s rule; `csis plan` names both builds).
pub(crate) fn moved_off<'a>(before: &'a Map<String, J>, pin: &str) -> Option<&'a str> {
    before
        .get("build")
        .and_then(J::as_str)
        .filter(|was| *was != pin && *was != UNBOUND)
}

/// Binding the pin of a machine launched unbound is no change.
pub(crate) fn bound_only(before: &Map<String, J>) -> bool {
    before.get("build").and_then(J::as_str) == Some(UNBOUND)
}

/// The record after generation: each declared instance whose parameters
/// or user-data changed is recorded anew by `run`. A launched machine
/// stays launched unless its pin moved (an upgrade, a follow target: the
/// replacement launches anew), and keeps the digest of the user-data it
/// was launched with until the apply that replaces it ([`launched`]).
/// `digests` holds each instance's user-data digest, when its builder
/// emits user-data. Undeclared instances keep their records until they
/// are forgotten.
pub fn recorded(
    record: &LaunchParams,
    now: &BTreeMap<String, Map<String, J>>,
    digests: &BTreeMap<String, String>,
    run: &str,
) -> LaunchParams {
    let mut next = record.clone();
    for (name, params) in now {
        let before = record.instances.get(name);
        let keep_launched = before.filter(|b| b.launched && !replaced(&b.params, params));
        let digest = match keep_launched {
            Some(b) if b.user_data_sha256.is_some() => b.user_data_sha256.clone(),
            _ => digests.get(name).cloned(),
        };
        if before.is_some_and(|b| &b.params == params && b.user_data_sha256 == digest) {
            continue;
        }
        next.instances.insert(
            name.clone(),
            Recorded {
                params: params.clone(),
                user_data_sha256: digest,
                run: run.to_string(),
                launched: keep_launched.is_some(),
                launched_run: keep_launched.and_then(|b| b.launched_run.clone()),
            },
        );
    }
    next
}

/// Whether a machine launched with user-data `was` boots with other
/// user-data now. A record written before digests were kept (`None`)
/// learns the digest without a replacement.
pub fn user_data_moved(was: Option<&str>, now: Option<&str>) -> bool {
    matches!((was, now), (Some(a), Some(b)) if a != b)
}

/// The record after a real instance-image apply launched every declared
/// instance: one not launched yet is, and a launched one whose user-data
/// moved was replaced by it (the roots replace such a machine) and now
/// stands with the user-data of `digests`, launched by `run`.
pub fn launched(
    record: &LaunchParams,
    declared: &[&str],
    digests: &BTreeMap<String, String>,
    run: &str,
) -> LaunchParams {
    let mut next = record.clone();
    for name in declared {
        let Some(r) = next.instances.get_mut(*name) else {
            continue;
        };
        let now = digests.get(*name);
        if !r.launched {
            r.launched = true;
            r.launched_run = Some(run.to_string());
        } else if user_data_moved(r.user_data_sha256.as_deref(), now.map(String::as_str)) {
            r.launched_run = Some(run.to_string());
            r.user_data_sha256 = now.cloned();
        }
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(build: &str, mounts: &[&str], userdata: &str) -> Map<String, J> {
        let mut m = Map::new();
        m.insert("build".into(), json!(build));
        m.insert(
            "mounts".into(),
            J::Array(mounts.iter().map(|s| json!({"storage": s})).collect()),
        );
        m.insert("userdata".into(), json!(userdata));
        m
    }

    #[test]
    fn what_counts_as_a_change() {
        let was = params("b1", &["data", "logs"], "echo hi");
        assert!(
            changed_keys(&was, &params("b1", &["data"], "echo hi")).is_empty(),
            "a detach"
        );
        assert_eq!(
            changed_keys(&was, &params("b1", &["data", "logs", "new"], "echo bye")),
            ["mounts", "userdata"]
        );
        assert!(replaced(&was, &params("b2", &["data"], "x")));
        assert!(!replaced(&params(UNBOUND, &[], ""), &params("b1", &[], "")));
        assert!(bound_only(&params(UNBOUND, &[], "")));
    }

    #[test]
    fn recording_keeps_a_launch_until_the_pin_moves() {
        let mut now = BTreeMap::new();
        now.insert("box".to_string(), params(UNBOUND, &[], "a"));
        let first = recorded(&LaunchParams::default(), &now, &BTreeMap::new(), "r1");
        assert!(!first.instances["box"].launched);
        let up = launched(&first, &["box"], &BTreeMap::new(), "r2");
        assert_eq!(up.instances["box"].launched_run.as_deref(), Some("r2"));
        now.insert("box".to_string(), params("b1", &[], "a"));
        let bound = recorded(&up, &now, &BTreeMap::new(), "r3");
        assert!(
            bound.instances["box"].launched,
            "binding the pin keeps the machine"
        );
        now.insert("box".to_string(), params("b2", &[], "a"));
        let moved = recorded(&bound, &now, &BTreeMap::new(), "r4");
        assert!(
            !moved.instances["box"].launched,
            "a moved pin is a replacement"
        );
    }

    #[test]
    fn a_launched_machine_keeps_its_user_data_digest_until_the_apply_replaces_it() {
        let now = BTreeMap::from([("box".to_string(), params("b1", &[], "a"))]);
        let digest = |d: &str| BTreeMap::from([("box".to_string(), d.to_string())]);
        let first = recorded(&LaunchParams::default(), &now, &digest("d1"), "r1");
        assert_eq!(
            first.instances["box"].user_data_sha256.as_deref(),
            Some("d1")
        );
        let box_ = "box".to_string();
        let up = launched(&first, &[&box_], &digest("d1"), "r2");
        assert_eq!(
            recorded(&up, &now, &digest("d1"), "r3"),
            up,
            "nothing moved"
        );
        // Generated with other user-data: still the machine of r2, with
        // what it was launched with.
        let generated = recorded(&up, &now, &digest("d2"), "r3");
        assert_eq!(generated, up);
        // The apply replaced it: launched by r3, with d2.
        let after = launched(&generated, &[&box_], &digest("d2"), "r3");
        let r = &after.instances["box"];
        assert!(r.launched);
        assert_eq!(
            (r.user_data_sha256.as_deref(), r.launched_run.as_deref()),
            (Some("d2"), Some("r3"))
        );
        // A record kept before digests learns one without a replacement.
        let mut old = up.clone();
        old.instances.get_mut("box").unwrap().user_data_sha256 = None;
        let learnt = recorded(&old, &now, &digest("d1"), "r3");
        assert!(learnt.instances["box"].launched);
        assert_eq!(
            learnt.instances["box"].user_data_sha256.as_deref(),
            Some("d1")
        );
        assert_eq!(
            launched(&learnt, &[&box_], &digest("d1"), "r4").instances["box"].launched_run,
            Some("r2".to_string())
        );
        assert!(!user_data_moved(None, Some("d1")));
        assert!(!user_data_moved(Some("d1"), None));
        assert!(user_data_moved(Some("d1"), Some("d2")));
    }
}
