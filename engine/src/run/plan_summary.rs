//! The line that ends `csis plan`, in terraform's spirit: how many series
//! bake, how many are current, how many instances a run would launch; and,
//! for a parent that re-bakes, what stays on its old build under
//! `parent_policy: pinned` with the `csis upgrade` that moves it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use csis_model::ItemKind;
use serde::Serialize;

use crate::db::run_input::RunInput;
use crate::db::{Db, Tree};
use crate::load::items::{ItemId, indexed_of_kind, item_index};
use crate::load::kept_instances::InstanceRef;
use crate::plan::bakes::{bake_plan, image_series};
use crate::plan::user_data::user_data_sha256;
use crate::state::launch_params::{launch_record, moved_off, user_data_moved};
use crate::state::lineage::{build_of, pins};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PlanSummary {
    /// `<series>@<runtime>` that bake.
    pub bake: usize,
    /// That are current (`skip: current`).
    pub current: usize,
    /// Skipped for another reason (not selected, outside the scope).
    pub skipped: usize,
    /// Declared instances no real run has launched yet.
    pub launch: usize,
    /// Launched machines the next apply replaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<Replace>,
    /// What stays on an old build while its parent re-bakes.
    pub stays: Vec<Stay>,
}

/// A launched machine the next apply replaces: its pin moved (`csis
/// upgrade`, a follow target), or its user-data changed, which a running
/// machine never reads again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replace {
    pub instance: String,
    /// The run that launched the machine standing now.
    pub launched_run: String,
    /// What changed since, and why that replaces the machine.
    pub why: String,
}

/// An image or instance pinned to a build of a series that re-bakes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stay {
    /// `image 'mid' on here` or `instance 'box'`.
    pub what: String,
    /// The build it stays on.
    pub build: String,
    /// The series that re-bakes.
    pub parent: String,
    /// Why it stays: `parent_policy: pinned` for an image; an instance
    /// stays on its pin until upgraded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The command that moves it.
    pub upgrade: String,
}

/// The summary of the run's plan: a query, so a re-plan that changed
/// nothing it reads costs a lookup. Children and instances come from one
/// pass over the images' series and the instances-by-image index, not a
/// scan of every item per re-baked series.
#[salsa::tracked(returns(ref))]
pub fn plan_summary(db: &dyn Db, tree: Tree, run: RunInput) -> PlanSummary {
    let index = item_index(db, tree);
    let record = &launch_record(db, tree).value;
    let pins = &pins(db, tree).value;
    let decisions = &bake_plan(db, tree, run).decisions;
    let is_current = |d: &csis_plugin_api::BakeDecision| d.reason == "skip: current";
    let mut summary = PlanSummary {
        bake: decisions.iter().filter(|(_, _, d)| d.bake).count(),
        current: decisions.iter().filter(|(_, _, d)| is_current(d)).count(),
        skipped: decisions
            .iter()
            .filter(|(_, _, d)| !d.bake && !is_current(d))
            .count(),
        launch: index
            .names(ItemKind::INSTANCES)
            .filter(|n| record.instances.get(*n).is_none_or(|r| !r.launched))
            .count(),
        replaces: Vec::new(),
        stays: Vec::new(),
    };
    for name in index.names(ItemKind::INSTANCES) {
        let Some(r) = record.instances.get(name).filter(|r| r.launched) else {
            continue;
        };
        let launched_run = r.launched_run.clone().unwrap_or_else(|| r.run.clone());
        let id = ItemId::new(db, tree, ItemKind::INSTANCES, name);
        let why = if let Some(now) = pins.instances.get(name)
            && let Some(was) = moved_off(&r.params, now)
        {
            format!(
                "its pin moved from {was} to {now} since run {launched_run} launched it, and a machine runs the build it was launched from"
            )
        } else if user_data_moved(
            r.user_data_sha256.as_deref(),
            user_data_sha256(db, id).as_deref(),
        ) {
            format!(
                "its user-data changed since run {launched_run} launched it, and a running machine never reads its user-data again"
            )
        } else {
            continue;
        };
        summary.replaces.push(Replace {
            instance: name.to_string(),
            launched_run,
            why,
        });
    }
    // Images pinned to their parent's build, by parent series.
    let mut pinned_children: BTreeMap<&str, Vec<(&str, &String)>> = BTreeMap::new();
    let series: Vec<_> = indexed_of_kind(db, tree, ItemKind::IMAGES)
        .into_iter()
        .map(|id| (id.name(db).as_str(), image_series(db, id)))
        .collect();
    for (child, s) in &series {
        if let Some((parent, policy)) = s.as_ref().and_then(|s| s.parent.as_ref())
            && policy != "follow"
        {
            pinned_children
                .entry(parent.as_str())
                .or_default()
                .push((child, policy));
        }
    }
    let instances = pinned_instances(db, tree, &pins.instances);
    let mut reported = BTreeSet::new();
    for (series, runtime, _) in decisions.iter().filter(|(_, _, d)| d.bake) {
        for (child, policy) in pinned_children.get(series.as_str()).into_iter().flatten() {
            if let Some(build) = pins.images.get(&format!("{child}@{runtime}")) {
                summary.stays.push(Stay {
                    what: format!("image '{child}' on {runtime}"),
                    build: build.clone(),
                    parent: series.clone(),
                    policy: Some(format!("parent_policy: {policy}")),
                    upgrade: format!("csis upgrade image {child} --runtime {runtime}"),
                });
            }
        }
        // An instance stays where its build's runtime re-bakes the
        // series: once, though the series bakes on several runtimes.
        for &(instance, build) in instances.get(series.as_str()).into_iter().flatten() {
            if build_of(db, tree, build).is_none_or(|b| b.runtime == *runtime)
                && !reported.contains(instance)
            {
                reported.insert(instance);
                summary.stays.push(Stay {
                    what: format!("instance '{instance}'"),
                    build: build.clone(),
                    parent: series.clone(),
                    policy: None,
                    upgrade: format!("csis upgrade instance {instance}"),
                });
            }
        }
    }
    summary
}

/// The pinned instances by the (safe) name of the image they launch,
/// each list in index order, with the build each is pinned to: asked of
/// the pins (few), not of the tree's every instance, each read by its
/// place (`InstanceRef`).
fn pinned_instances<'p>(
    db: &dyn Db,
    tree: Tree,
    pinned: &'p BTreeMap<String, String>,
) -> HashMap<String, Vec<(&'p str, &'p String)>> {
    let Some(names) = item_index(db, tree).items.get(&ItemKind::INSTANCES) else {
        return HashMap::new();
    };
    let mut found: Vec<(usize, String, &str, &String)> = pinned
        .iter()
        .filter_map(|(instance, build)| {
            let (at, name, source) = names.get_full(instance.as_str())?;
            let links = InstanceRef::declared(name.clone(), *source).links(db, tree)?;
            let image = csis_model::naming::safe_name(links.image()?);
            Some((at, image, instance.as_str(), build))
        })
        .collect();
    found.sort_by_key(|(at, ..)| *at);
    let mut out: HashMap<String, Vec<(&str, &String)>> = HashMap::new();
    for (_, image, instance, build) in found {
        out.entry(image).or_default().push((instance, build));
    }
    out
}

impl PlanSummary {
    /// `Plan: 2 to bake, 3 current, 1 instance to launch.` (and `, N
    /// skipped` when the selection or scope left some out, `, N to
    /// replace` when launched machines are replaced), then a line per
    /// replaced machine and per pinned dependant of a re-baked parent.
    pub fn lines(&self) -> Vec<String> {
        let instances = if self.launch == 1 {
            "instance"
        } else {
            "instances"
        };
        let skipped = match self.skipped {
            0 => String::new(),
            n => format!(", {n} skipped"),
        };
        let replace = match self.replaces.len() {
            0 => String::new(),
            n => format!(", {n} to replace"),
        };
        let mut out = vec![format!(
            "Plan: {} to bake, {} current{skipped}, {} {instances} to launch{replace}.",
            self.bake, self.current, self.launch
        )];
        for r in &self.replaces {
            out.push(format!(
                "instance '{}' is replaced by the next apply: {}",
                r.instance, r.why
            ));
        }
        for s in &self.stays {
            let policy = s
                .policy
                .as_ref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default();
            out.push(format!(
                "{} stays on build {} while '{}' re-bakes{policy}; to move it after the bake: {}",
                s.what, s.build, s.parent, s.upgrade
            ));
        }
        out
    }
}
