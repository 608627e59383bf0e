//! Bake decisions: the image graph (parents before children, cycles
//! refused) and, per `<series>@<runtime>`, whether this run bakes it and
//! why, from the run's selection, lineage, pins and input fingerprints;
//! the run's apply scope.

use std::collections::HashMap;

use csis_model::models::{BaseBuilder, Item};
use csis_model::{Diagnostic, ItemKind, Vct};
use csis_plugin_api::BakeDecision;
use petgraph::algo::toposort;
use petgraph::graph::DiGraph;

use crate::db::run_input::{RunInput, RunOptions};
use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, indexed_of_kind, item_index};
use crate::load::items_model::structured_item;
pub use crate::load::kept_world::ImageSeries;
use crate::load::kept_world::kept_series;
use crate::plan::fingerprint::{SeriesKey, input_fingerprint};
use crate::state::lineage::{Pins, head_of, pins, run_time, short_fingerprint};

/// Images in bake order (every parent before its children), and the cycle
/// refusal when there is no such order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageGraph {
    pub order: Vec<String>,
    /// Each of `order`'s images by its place in index order
    /// (`indexed_of_kind`): what reads the order takes the image's id from
    /// there instead of interning its name again.
    pub places: Vec<usize>,
    pub diags: Vec<Diagnostic>,
}

/// The image → parent graph. A parent that is an OS builder roots the
/// chain; a parent that names nothing is left to validation.
#[salsa::tracked(returns(ref))]
pub fn image_graph(db: &dyn Db, tree: Tree) -> ImageGraph {
    let images = item_index(db, tree).items.get(&ItemKind::IMAGES);
    // Every image's id in index order: a kind's items are declared only
    // under its own directory, so this is the index's order, and an
    // image's place here is its place in the index.
    let ids = indexed_of_kind(db, tree, ItemKind::IMAGES);
    let mut graph = DiGraph::<usize, ()>::with_capacity(ids.len(), ids.len());
    // An image's node is its place in the index: a parent is found by the
    // index's hash, not by an ordered map of every name built again.
    let nodes: Vec<_> = (0..ids.len()).map(|place| graph.add_node(place)).collect();
    for (child, id) in ids.iter().enumerate() {
        let Some((parent, _)) = image_series(db, *id)
            .as_ref()
            .and_then(|s| s.parent.as_ref())
        else {
            continue;
        };
        let parent = images
            .and_then(|m| m.get_index_of(parent.as_str()))
            .and_then(|p| nodes.get(p));
        if let (Some(&p), Some(&c)) = (parent, nodes.get(child)) {
            graph.add_edge(p, c, ());
        }
    }
    match toposort(&graph, None) {
        Ok(order) => {
            let places: Vec<usize> = order.into_iter().map(|n| graph[n]).collect();
            ImageGraph {
                order: places
                    .iter()
                    .map(|p| ids[*p].name(db).to_string())
                    .collect(),
                places,
                diags: Vec::new(),
            }
        }
        Err(cycle) => {
            let start = ids[graph[cycle.node_id()]].name(db).to_string();
            let mut path = vec![start.clone()];
            let mut at = start.clone();
            // Walk parents until the start comes round again.
            for _ in 0..ids.len() {
                let id = ItemId::new(db, tree, ItemKind::IMAGES, at.as_str());
                let next = image_series(db, id)
                    .as_ref()
                    .and_then(|s| s.parent.as_ref())
                    .map(|(p, _)| p.clone());
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
                places: Vec::new(),
                diags: vec![Diagnostic::error(format!(
                    "image chain cycle: {} (source_image links never reach a base image)",
                    path.join(" -> ")
                ))],
            }
        }
    }
}

/// An image's parent series and its parent_policy.
type Parent = (String, String);

/// What the plan reads of one image, a query of its own, so an edit to
/// anything else of the image (a description, a script) rebuilds neither
/// the image graph nor the plan's series list. Kept by the persisted
/// cache with the world's files (`load::kept_world`): a process that took
/// them structures no image for it.
#[salsa::tracked(returns(ref))]
pub(crate) fn image_series<'db>(db: &'db dyn Db, id: ItemId<'db>) -> Option<ImageSeries> {
    let tree = id.tree(db);
    if let Some(kept) = kept_series(db, tree, id.name(db).as_str()) {
        return Some(kept);
    }
    let Some(Item::Image(img)) = structured_item(db, id).item.as_deref() else {
        return None;
    };
    let b = builders(db, tree);
    Some(ImageSeries {
        runtimes: img
            .runtimes
            .iter()
            .filter_map(|e| {
                b.resolve(Vct::ImageBuilderModel, &e.image_builder)
                    .and_then(|d| d.base.runtime().map(str::to_string))
            })
            .collect(),
        parent: img
            .source_image
            .as_deref()
            .map(|p| (csis_model::naming::safe_name(p), img.parent_policy.clone())),
    })
}

/// One bake decision per `<series>@<runtime>`, in bake order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BakePlan {
    pub decisions: Vec<(String, String, BakeDecision)>,
    /// Where each (series, runtime) sits in `decisions`: a child's decision
    /// reads its parent's, and a linear search made a plan quadratic.
    at: HashMap<(String, String), usize>,
}

impl BakePlan {
    pub fn decision(&self, image: &str, runtime: &str) -> Option<&BakeDecision> {
        let i = self.at.get(&(image.to_string(), runtime.to_string()))?;
        self.decisions.get(*i).map(|(_, _, d)| d)
    }

    fn push(&mut self, series: String, runtime: String, decision: BakeDecision) {
        self.at
            .insert((series.clone(), runtime.clone()), self.decisions.len());
        self.decisions.push((series, runtime, decision));
    }
}

/// A series a plan decides: its name, the runtimes it bakes on, its parent.
type Series = (String, Vec<String>, Option<Parent>);

/// Every series a plan decides, in bake order: the base images an OS
/// builder's entries bake, then every image after its parent, each on the
/// runtimes of its image builders.
#[salsa::tracked(returns(ref))]
fn bake_series(db: &dyn Db, tree: Tree) -> Vec<Series> {
    let b = builders(db, tree);
    let runtime_of = |image_builder: &str| -> Option<String> {
        b.resolve(Vct::ImageBuilderModel, image_builder)
            .and_then(|d| d.base.runtime().map(str::to_string))
    };
    let mut series: Vec<Series> = Vec::new();
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
            series.push((decl.name().to_string(), rts, None));
        }
    }
    let ids = indexed_of_kind(db, tree, ItemKind::IMAGES);
    let graph = image_graph(db, tree);
    for (name, place) in graph.order.iter().zip(&graph.places) {
        if let Some(spec) = ids
            .get(*place)
            .and_then(|id| image_series(db, *id).as_ref())
        {
            series.push((name.clone(), spec.runtimes.clone(), spec.parent.clone()));
        }
    }
    series
}

/// A series' runtimes, each once, in entry order.
fn distinct(runtimes: &[String]) -> Vec<&String> {
    let mut seen: Vec<&String> = Vec::new();
    for rt in runtimes {
        if !seen.contains(&rt) {
            seen.push(rt);
        }
    }
    seen
}

/// Every `(series, runtime)` a plan decides, in bake order: what a plan
/// computes the input fingerprint of, on every core before it decides
/// (`prewarm::fingerprints`). Asked while deciding, a tree with builds
/// computed them one after another on one core.
pub fn bake_keys(db: &dyn Db, tree: Tree) -> Vec<(String, String)> {
    bake_series(db, tree)
        .iter()
        .flat_map(|(name, runtimes, _)| {
            distinct(runtimes)
                .into_iter()
                .map(move |rt| (name.clone(), rt.clone()))
        })
        .collect()
}

/// One decision per `<series>@<runtime>` of [`bake_series`], in its order.
#[salsa::tracked(returns(ref))]
pub fn bake_plan(db: &dyn Db, tree: Tree, run: RunInput) -> BakePlan {
    let opts = run.options(db);
    let pins = &pins(db, tree).value;
    // Read only where a refresh is due or not: a plan the clock does not
    // decide is kept whole across processes (run/plan_record.rs).
    let now = || crate::db::reads::start_unix(db, tree);
    let mut plan = BakePlan::default();
    for (name, runtimes, parent) in bake_series(db, tree) {
        for rt in distinct(runtimes) {
            let reason = decide(db, tree, opts, pins, &plan, &now, name, rt, parent.as_ref());
            let decision = BakeDecision {
                bake: reason.starts_with("bake:"),
                reason,
            };
            plan.push(name.clone(), rt.clone(), decision);
        }
    }
    plan
}

/// One decision of the plan, as its own query: what reads one decision
/// (a bake's emission) is recomputed only when that decision changed.
#[salsa::tracked(returns(ref))]
pub fn bake_decision<'db>(
    db: &'db dyn Db,
    tree: Tree,
    run: RunInput,
    key: SeriesKey<'db>,
) -> Option<BakeDecision> {
    bake_plan(db, tree, run)
        .decision(key.series(db), key.runtime(db))
        .cloned()
}

/// Why `<series>@<runtime>` bakes in this run, or why not, in the order the
/// reasons are checked. Selection and scope come first: --force-bake forces
/// a bake of what the run covers, never one outside it.
#[allow(clippy::too_many_arguments)]
fn decide(
    db: &dyn Db,
    tree: Tree,
    opts: &RunOptions,
    pins: &Pins,
    plan: &BakePlan,
    now: &dyn Fn() -> i64,
    series: &str,
    runtime: &str,
    parent: Option<&Parent>,
) -> String {
    if !opts.selects(series, runtime) {
        return "skip: not selected".into();
    }
    if !opts.in_runtime_scope(runtime) {
        return "skip: outside the apply scope".into();
    }
    if opts.force_bake.iter().any(|f| f == series) {
        return "bake: forced (--force-bake)".into();
    }
    let Some(head) = head_of(db, tree, series, runtime) else {
        return "bake: no build yet".into();
    };
    if let Some((parent, policy)) = parent
        && policy == "follow"
    {
        if plan.decision(parent, runtime).is_some_and(|d| d.bake) {
            return format!("bake: parent {parent} re-bakes this run (parent_policy: follow)");
        }
        let pinned = pins.images.get(&format!("{series}@{runtime}"));
        if let (Some(pinned), Some(parent_head)) = (pinned, head_of(db, tree, parent, runtime))
            && *pinned != parent_head.build_id
        {
            return format!(
                "bake: parent moved to {} (parent_policy: follow)",
                parent_head.build_id
            );
        }
    }
    let key = SeriesKey::new(db, series.to_string(), runtime.to_string());
    if let Some(fp) = input_fingerprint(db, tree, key)
        && fp.hex != head.input_fingerprint
    {
        return format!(
            "bake: inputs changed (fingerprint {} -> {})",
            short_fingerprint(&head.input_fingerprint),
            short_fingerprint(&fp.hex)
        );
    }
    if let Some(days) = refresh_days(db, tree, series)
        && let Some(built) = run_time(&head.run)
        && now().saturating_sub(built) >= days.saturating_mul(86_400)
    {
        return format!(
            "bake: refresh due (update.refresh_days: {days}; {} is {} days old)",
            head.build_id,
            now().saturating_sub(built) / 86_400
        );
    }
    "skip: current".into()
}

/// update.refresh_days of a base image's OS builder.
fn refresh_days(db: &dyn Db, tree: Tree, series: &str) -> Option<i64> {
    match &builders(db, tree)
        .resolve(Vct::OsBuilderModel, series)?
        .base
    {
        BaseBuilder::Os(os) => os.effective_update().refresh_days,
        _ => None,
    }
}

/// `--only` and `--force-bake` name images (`--only` also
/// `<image>@<runtime>`) or base-image series (OS builders).
pub fn check_selection(db: &dyn Db, tree: Tree, opts: &RunOptions) -> Result<(), String> {
    let index = item_index(db, tree);
    let b = builders(db, tree);
    let known_image = |i: &str| {
        index.contains(ItemKind::IMAGES, i) || b.resolve(Vct::OsBuilderModel, i).is_some()
    };
    // Each flag's unknown names, once each, in the order given.
    let unknown = |names: &mut dyn Iterator<Item = &str>| {
        let mut out: Vec<String> = Vec::new();
        for n in names {
            if !known_image(n) && !out.iter().any(|o| o == n) {
                out.push(n.to_string());
            }
        }
        out
    };
    let only = unknown(
        &mut opts
            .only
            .iter()
            .flatten()
            .map(|s| s.split_once('@').map_or(s.as_str(), |(i, _)| i)),
    );
    let forced = unknown(&mut opts.force_bake.iter().map(String::as_str));
    let mut said: Vec<String> = Vec::new();
    for (flag, names) in [("--only", only), ("--force-bake", forced)] {
        if !names.is_empty() {
            said.push(format!(
                "{flag} names unknown image(s): {}",
                names.join(", ")
            ));
        }
    }
    // Known: what --only and --force-bake accept, the images and the OS
    // builders whose base images bake.
    let mut known: Vec<&str> = index
        .names(ItemKind::IMAGES)
        .chain(b.names(Vct::OsBuilderModel))
        .collect();
    known.sort_unstable();
    let mut problems = Vec::new();
    if !said.is_empty() {
        problems.push(format!("{}; known: {}", said.join("; "), known.join(", ")));
    }
    // A runtime scope that names no runtime would plan nothing and say
    // nothing of why. --apply-runtime first: it implies --only-runtime,
    // and the name is said once, by the flag the user gave.
    let runtimes = b.names(Vct::RuntimeBuilderModel);
    let only_runtime = opts
        .only_runtime
        .as_ref()
        .filter(|_| opts.only_runtime != opts.apply_runtime);
    for (flag, rt) in [
        ("--apply-runtime", opts.apply_runtime.as_ref()),
        ("--only-runtime", only_runtime),
    ] {
        if let Some(rt) = rt
            && !runtimes.contains(&rt.as_str())
        {
            let hint = csis_model::suggest::hint(rt, runtimes.iter().copied());
            problems.push(format!(
                "{flag} names unknown runtime '{rt}'; declared: {}{hint}",
                runtimes.join(", ")
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The runtimes a run applies to, when that is a proper subset of the
/// declared ones: `--apply-runtime`, or the runtimes (named directly or
/// through a root's builder) in `config.apply_storage` / `apply_instances`
/// lists. `true` anywhere, or nothing named, means no scope.
pub fn apply_scope(db: &dyn Db, tree: Tree, opts: &RunOptions) -> Option<Vec<String>> {
    let b = builders(db, tree);
    let all = b.names(Vct::RuntimeBuilderModel);
    let mut scope: Vec<String> = Vec::new();
    if let Some(rt) = &opts.apply_runtime {
        scope.push(rt.clone());
    } else {
        let config = b.config_map();
        for key in ["apply_storage", "apply_instances"] {
            let names = match csis_model::apply_flags::apply_flag(&config, key) {
                csis_model::apply_flags::ApplyFlag::All => return None,
                csis_model::apply_flags::ApplyFlag::Off => Vec::new(),
                csis_model::apply_flags::ApplyFlag::Only(names) => names,
            };
            for n in names {
                let rt = if all.contains(&n.as_str()) {
                    Some(n)
                } else {
                    [Vct::StorageBuilderModel, Vct::InstanceBuilderModel]
                        .iter()
                        .find_map(|v| {
                            b.resolve(*v, &n)
                                .and_then(|d| d.base.runtime().map(str::to_string))
                        })
                };
                scope.extend(rt);
            }
        }
    }
    scope.sort();
    scope.dedup();
    (!scope.is_empty() && scope.len() < all.len()).then_some(scope)
}

/// The scope check: the bakes a plan would make outside the run's apply
/// scope, as the refusal (or, in a dry run, the warning) says them.
pub fn unscoped_bakes(db: &dyn Db, tree: Tree, run: RunInput) -> Option<String> {
    let opts = run.options(db);
    let explicit = opts.only.is_some() || opts.only_runtime.is_some();
    if explicit || opts.allow_unscoped_bakes {
        return None;
    }
    let scope = apply_scope(db, tree, opts)?;
    let outside: Vec<String> = bake_plan(db, tree, run)
        .decisions
        .iter()
        .filter(|(_, rt, d)| d.bake && !scope.contains(rt))
        .map(|(s, rt, _)| format!("{s}@{rt}"))
        .collect();
    (!outside.is_empty()).then(|| {
        format!(
            "run scope: bake(s) outside the apply scope [{}]: {} -- pass --allow-unscoped-bakes, or select images with --only / --only-runtime",
            scope.join(", "),
            outside.join(", ")
        )
    })
}
