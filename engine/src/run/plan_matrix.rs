//! `csis plan --format matrix`: a plan's bakes cut into independent
//! groups, one entry each of a CI matrix (GitHub Actions'
//! `strategy.matrix` with `include:`). Two bakes share a group when one is
//! the other's parent on the same runtime, so a group is a chain (or a
//! tree of chains) on one runtime, baked by one job (`csis run --shard`)
//! while the other groups bake on other runners; one job then records
//! every group's manifests (`csis lineage record`).

use std::collections::HashMap;

use petgraph::unionfind::UnionFind;
use serde::Serialize;

use crate::load::items::ItemId;
use crate::plan::bakes::image_series;
use crate::run::plan_report::PlanEntry;
use crate::workspace::Workspace;

/// The matrix: `{"include": [...]}`, empty when nothing bakes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Matrix {
    pub include: Vec<MatrixEntry>,
}

/// One group of bakes, with what its job passes to `csis run`. Every
/// value is one string, as a workflow puts it into a shell line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MatrixEntry {
    /// The group's first bake (`<series>@<runtime>`): its name.
    pub group: String,
    pub runtime: String,
    /// The lifecycles that bake it, space-separated, in run order
    /// (`base-image` for an OS builder's base image, `instance-image`
    /// for images).
    pub lifecycles: String,
    /// Its bakes, parents first, space-separated.
    pub bakes: String,
    /// The selection for `csis run`: `--only-runtime`, an `--only` per
    /// bake, and the plan's `--force-bake` names that fall in the group.
    pub args: String,
}

/// The bakes of `plan` in groups, in the plan's order (the group of the
/// first bake first; within a group, parents first).
pub fn matrix(ws: &Workspace, plan: &[PlanEntry], force_bake: &[String]) -> Matrix {
    let db = &ws.db;
    let bakes: Vec<&PlanEntry> = plan.iter().filter(|p| p.decision == "bake").collect();
    let at: HashMap<(&str, &str), usize> = bakes
        .iter()
        .enumerate()
        .map(|(i, p)| ((p.series.as_str(), p.runtime.as_str()), i))
        .collect();
    // An image has a series of its own; an OS builder's base image has
    // none (and no parent).
    let series_of = |name: &str| {
        image_series(
            db,
            ItemId::new(db, ws.tree, csis_model::ItemKind::IMAGES, name),
        )
    };
    let mut groups = UnionFind::<usize>::new(bakes.len());
    let mut is_image = vec![false; bakes.len()];
    for (i, p) in bakes.iter().enumerate() {
        let Some(series) = series_of(&p.series) else {
            continue;
        };
        is_image[i] = true;
        if let Some((parent, _)) = &series.parent
            && let Some(&j) = at.get(&(parent.as_str(), p.runtime.as_str()))
        {
            groups.union(i, j);
        }
    }
    let mut order: Vec<usize> = Vec::new();
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..bakes.len() {
        let g = groups.find(i);
        if !members.contains_key(&g) {
            order.push(g);
        }
        members.entry(g).or_default().push(i);
    }
    let include = order
        .iter()
        .map(|g| {
            let m = &members[g];
            let first = bakes[m[0]];
            let keys: Vec<String> = m
                .iter()
                .map(|&i| format!("{}@{}", bakes[i].series, bakes[i].runtime))
                .collect();
            let mut lifecycles = Vec::new();
            if m.iter().any(|&i| !is_image[i]) {
                lifecycles.push("base-image");
            }
            if m.iter().any(|&i| is_image[i]) {
                lifecycles.push("instance-image");
            }
            let mut args = vec!["--only-runtime".to_string(), first.runtime.clone()];
            for k in &keys {
                args.extend(["--only".to_string(), k.clone()]);
            }
            for f in force_bake {
                if m.iter().any(|&i| bakes[i].series == *f) {
                    args.extend(["--force-bake".to_string(), f.clone()]);
                }
            }
            MatrixEntry {
                group: keys[0].clone(),
                runtime: first.runtime.clone(),
                lifecycles: lifecycles.join(" "),
                bakes: keys.join(" "),
                args: args.join(" "),
            }
        })
        .collect();
    Matrix { include }
}
