//! The run's options as a salsa input, the image graph (parents before
//! children, cycles refused) and the bake plan seam.
//!
//! Bake decisions come from lineage (a later stage); until then every
//! selected image reads `bake: no build yet`.

use std::collections::BTreeMap;

use csis_model::models::{BaseBuilder, Item};
use csis_model::{Diagnostic, ItemKind, Vct};
use csis_plugin_api::BakeDecision;
use petgraph::algo::toposort;
use petgraph::graph::DiGraph;

use crate::builders::builders;
use crate::db::{Db, Tree};
use crate::items::{ItemId, item_index};
use crate::items_model::structured_item;

/// What a run was asked for, besides the lifecycles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RunOptions {
    pub dry_run: bool,
    /// `--only`: image names or `<image>@<runtime>`; `Some(empty)` is
    /// `--only none`, an explicitly empty bake surface.
    pub only: Option<Vec<String>>,
    /// `--only-runtime`: the runtime scope.
    pub only_runtime: Option<String>,
    /// `--force-bake`: images baked whatever the plan says.
    pub force_bake: Vec<String>,
}

impl RunOptions {
    /// Whether `--only` selects `<image>@<runtime>`.
    pub fn selects(&self, image: &str, runtime: &str) -> bool {
        match &self.only {
            None => true,
            Some(list) => list.iter().any(|s| match s.split_once('@') {
                Some((i, r)) => i == image && r == runtime,
                None => s == image,
            }),
        }
    }

    pub fn in_runtime_scope(&self, runtime: &str) -> bool {
        self.only_runtime.as_deref().is_none_or(|r| r == runtime)
    }
}

#[salsa::input(debug)]
pub struct RunInput {
    #[returns(ref)]
    pub options: RunOptions,
}

/// Images in bake order (every parent before its children), and the cycle
/// refusal when there is no such order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageGraph {
    pub order: Vec<String>,
    pub diags: Vec<Diagnostic>,
}

/// The image → parent graph. A parent that is an OS builder roots the
/// chain; a parent that names nothing is left to validation.
#[salsa::tracked(returns(ref))]
pub fn image_graph(db: &dyn Db, tree: Tree) -> ImageGraph {
    let index = item_index(db, tree);
    let names: Vec<String> = index.names(ItemKind::IMAGES).cloned().collect();
    let mut graph = DiGraph::<String, ()>::new();
    let nodes: BTreeMap<&str, _> = names
        .iter()
        .map(|n| (n.as_str(), graph.add_node(n.clone())))
        .collect();
    for name in &names {
        let id = ItemId::new(db, ItemKind::IMAGES, name.clone());
        let Some(Item::Image(img)) = structured_item(db, tree, id).item.as_deref() else {
            continue;
        };
        let Some(parent) = img.source_image.as_deref() else {
            continue;
        };
        let parent = csis_model::naming::safe_name(parent);
        if let (Some(&p), Some(&c)) = (nodes.get(parent.as_str()), nodes.get(name.as_str())) {
            graph.add_edge(p, c, ());
        }
    }
    match toposort(&graph, None) {
        Ok(order) => ImageGraph {
            order: order.into_iter().map(|n| graph[n].clone()).collect(),
            diags: Vec::new(),
        },
        Err(cycle) => {
            let start = graph[cycle.node_id()].clone();
            let mut path = vec![start.clone()];
            let mut at = start.clone();
            // Walk parents until the start comes round again.
            for _ in 0..names.len() {
                let id = ItemId::new(db, ItemKind::IMAGES, at.clone());
                let next = match structured_item(db, tree, id).item.as_deref() {
                    Some(Item::Image(img)) => img
                        .source_image
                        .as_deref()
                        .map(csis_model::naming::safe_name),
                    _ => None,
                };
                match next {
                    Some(n) => {
                        path.push(n.clone());
                        if n == start {
                            break;
                        }
                        at = n;
                    }
                    None => break,
                }
            }
            ImageGraph {
                order: Vec::new(),
                diags: vec![Diagnostic::error(format!(
                    "image chain cycle: {} (source_image links never reach a base image)",
                    path.join(" -> ")
                ))],
            }
        }
    }
}

/// One bake decision per `<series>@<runtime>`, in bake order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BakePlan {
    pub decisions: Vec<(String, String, BakeDecision)>,
}

impl BakePlan {
    pub fn decision(&self, image: &str, runtime: &str) -> Option<&BakeDecision> {
        self.decisions
            .iter()
            .find(|(i, r, _)| i == image && r == runtime)
            .map(|(_, _, d)| d)
    }
}

/// The series an OS builder's entries bake (base images) and every image,
/// each on the runtimes of its image builders.
#[salsa::tracked(returns(ref))]
pub fn bake_plan(db: &dyn Db, tree: Tree, run: RunInput) -> BakePlan {
    let b = builders(db, tree);
    let opts = run.options(db);
    let runtime_of = |image_builder: &str| -> Option<String> {
        b.resolve(Vct::ImageBuilderModel, image_builder)
            .and_then(|d| d.base.runtime().map(str::to_string))
    };
    let mut series: Vec<(String, Vec<String>)> = Vec::new();
    for decl in b
        .by_class
        .get(&Vct::OsBuilderModel)
        .into_iter()
        .flat_map(|m| m.values())
    {
        if let BaseBuilder::Os(os) = &decl.base {
            let rts = os
                .runtimes
                .iter()
                .filter_map(|e| runtime_of(&e.image_builder))
                .collect();
            series.push((decl.name().to_string(), rts));
        }
    }
    for name in &image_graph(db, tree).order {
        let id = ItemId::new(db, ItemKind::IMAGES, name.clone());
        if let Some(Item::Image(img)) = structured_item(db, tree, id).item.as_deref() {
            let rts = img
                .runtimes
                .iter()
                .filter_map(|e| runtime_of(&e.image_builder))
                .collect();
            series.push((name.clone(), rts));
        }
    }
    let mut plan = BakePlan::default();
    for (name, runtimes) in series {
        let mut seen = Vec::new();
        for rt in runtimes {
            if seen.contains(&rt) {
                continue;
            }
            seen.push(rt.clone());
            // Selection and scope come first: --force-bake forces a bake
            // of what the run covers, never one outside it.
            let (bake, reason) = if !opts.selects(&name, &rt) {
                (false, "skip: not selected")
            } else if !opts.in_runtime_scope(&rt) {
                (false, "skip: outside the apply scope")
            } else if opts.force_bake.contains(&name) {
                (true, "bake: forced (--force-bake)")
            } else {
                (true, "bake: no build yet")
            };
            let decision = BakeDecision {
                bake,
                reason: reason.into(),
            };
            plan.decisions.push((name.clone(), rt, decision));
        }
    }
    plan
}
