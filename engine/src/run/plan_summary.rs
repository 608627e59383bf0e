//! The line that ends `csis plan`, in terraform's spirit: how many series
//! bake, how many are current, how many instances a run would launch; and,
//! for a parent that re-bakes, what stays on its old build under
//! `parent_policy: pinned` with the `csis upgrade` that moves it.

use csis_model::ItemKind;
use csis_model::models::Item;
use serde::Serialize;

use crate::db::{Db, Tree};
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::run::plan_report::PlanEntry;
use crate::state::launch_params::launch_record;
use crate::state::lineage::pins;

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
    /// What stays on an old build while its parent re-bakes.
    pub stays: Vec<Stay>,
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

pub fn summarize(db: &dyn Db, tree: Tree, plan: &[PlanEntry]) -> PlanSummary {
    let index = item_index(db, tree);
    let record = &launch_record(db, tree).value;
    let pins = &pins(db, tree).value;
    let item = |kind: ItemKind, name: &str| {
        structured_item(db, tree, ItemId::new(db, kind, name.to_string()))
            .item
            .clone()
    };
    let mut summary = PlanSummary {
        bake: plan.iter().filter(|p| p.decision == "bake").count(),
        current: plan.iter().filter(|p| p.reason == "skip: current").count(),
        skipped: plan
            .iter()
            .filter(|p| p.decision != "bake" && p.reason != "skip: current")
            .count(),
        launch: index
            .names(ItemKind::INSTANCES)
            .filter(|n| record.instances.get(*n).is_none_or(|r| !r.launched))
            .count(),
        stays: Vec::new(),
    };
    for p in plan.iter().filter(|p| p.decision == "bake") {
        for child in index.names(ItemKind::IMAGES) {
            let Some(Item::Image(img)) = item(ItemKind::IMAGES, child).as_deref().cloned() else {
                continue;
            };
            let pin = pins.images.get(&format!("{child}@{}", p.runtime));
            if img.source_image.as_deref() == Some(p.series.as_str())
                && img.parent_policy != "follow"
                && let Some(build) = pin
            {
                summary.stays.push(Stay {
                    what: format!("image '{child}' on {}", p.runtime),
                    build: build.clone(),
                    parent: p.series.clone(),
                    policy: Some(format!("parent_policy: {}", img.parent_policy)),
                    upgrade: format!("csis upgrade image {child} --runtime {}", p.runtime),
                });
            }
        }
        for instance in index.names(ItemKind::INSTANCES) {
            let Some(Item::Instance(inst)) =
                item(ItemKind::INSTANCES, instance).as_deref().cloned()
            else {
                continue;
            };
            if inst.image.as_deref() == Some(p.series.as_str())
                && let Some(build) = pins.instances.get(instance)
            {
                summary.stays.push(Stay {
                    what: format!("instance '{instance}'"),
                    build: build.clone(),
                    parent: p.series.clone(),
                    policy: None,
                    upgrade: format!("csis upgrade instance {instance}"),
                });
            }
        }
    }
    summary
}

impl PlanSummary {
    /// `Plan: 2 to bake, 3 current, 1 instance to launch.` (and `, N
    /// skipped` when the selection or scope left some out), then a line
    /// per pinned dependant of a re-baked parent.
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
        let mut out = vec![format!(
            "Plan: {} to bake, {} current{skipped}, {} {instances} to launch.",
            self.bake, self.current, self.launch
        )];
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
