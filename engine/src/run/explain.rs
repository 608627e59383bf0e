//! `--explain`: why each bake is planned and why each generated file was
//! rewritten, as the chain of inputs that caused it: the input that changed
//! (named as docs/fingerprint.md names it), where it is declared (file, line
//! and column), and the lineage path of the series.
//!
//! A bake is explained against the build it replaces: lineage.yaml records a
//! digest per input of every build (`inputs`), so the changed field is named
//! exactly. A rewritten file is explained by comparing it with the file it
//! replaces, and each changed value is traced to the declaration that holds
//! it.

use std::collections::{BTreeMap, BTreeSet};

use csis_model::{ItemKind, Origin, Value, Vct};
use serde_json::Value as J;

use crate::db::run_input::RunInput;
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::{resolved_value, structured_item};
use crate::plan::bakes::bake_plan;
use crate::plan::fingerprint::{SeriesKey, chain_root, fingerprint_detail, input_fingerprint};
use crate::state::lineage::{BuildRecord, pins};
use crate::workspace::Workspace;

/// How deep a chain of parents re-baking is followed.
const MAX_DEPTH: usize = 8;
/// How many changed values of one rewritten file are listed.
const MAX_CHANGES: usize = 6;

/// Every planned bake, `<series>@<runtime>` with its explanation lines.
pub fn explain_bakes(ws: &Workspace, run: RunInput) -> Vec<(String, Vec<String>)> {
    bake_plan(&ws.db, ws.tree, run)
        .decisions
        .iter()
        .filter(|(_, _, d)| d.bake)
        .map(|(series, rt, d)| {
            let mut lines = Vec::new();
            explain_decision(ws, run, series, rt, &d.reason, 0, &mut lines);
            lines.push(lineage_path(ws, series, rt));
            (format!("{series}@{rt}"), lines)
        })
        .collect()
}

fn explain_decision(
    ws: &Workspace,
    run: RunInput,
    series: &str,
    rt: &str,
    reason: &str,
    depth: usize,
    out: &mut Vec<String>,
) {
    let (db, tree) = (&ws.db, ws.tree);
    let pad = "  ".repeat(depth);
    let head = crate::state::lineage::head_of(db, tree, series, rt);
    let reason = reason.strip_prefix("bake: ").unwrap_or(reason);
    if reason == "no build yet" {
        out.push(format!(
            "{pad}meta-state/lineage.yaml records no build of {series}@{rt}{}",
            declared_at(ws, series)
        ));
    } else if reason.starts_with("forced") {
        out.push(format!("{pad}--force-bake names {series}"));
    } else if let Some(parent) = reason
        .strip_prefix("parent ")
        .and_then(|r| r.split_once(" re-bakes this run"))
        .map(|(p, _)| p)
    {
        let parent_reason = bake_plan(db, tree, run)
            .decision(parent, rt)
            .map(|d| d.reason.clone())
            .unwrap_or_default();
        out.push(format!(
            "{pad}{series} follows its parent{} and {parent}@{rt} bakes ({parent_reason})",
            field_at(ws, series, "parent_fingerprint")
        ));
        if depth < MAX_DEPTH {
            explain_decision(ws, run, parent, rt, &parent_reason, depth + 1, out);
        }
    } else if let Some(build) = reason.strip_prefix("parent moved to ") {
        let build = build.split(' ').next().unwrap_or_default();
        let pinned = pins(db, tree)
            .value
            .images
            .get(&format!("{series}@{rt}"))
            .cloned()
            .unwrap_or_else(|| "nothing".into());
        out.push(format!(
            "{pad}meta-state/pins.yaml binds {series}@{rt} to {pinned}; its parent's head is {build}{}",
            field_at(ws, series, "parent_fingerprint")
        ));
    } else if reason.starts_with("inputs changed") {
        let key = SeriesKey::new(db, series.to_string(), rt.to_string());
        let current = fingerprint_detail(db, tree, key);
        match (head, current) {
            (Some(head), Some(current)) if !head.inputs.is_empty() => {
                changed_inputs(ws, series, rt, head, &current.inputs(), &pad, out);
            }
            (Some(head), _) => out.push(format!(
                "{pad}{} records no inputs (recorded before csis kept them): only the fingerprint tells the change",
                head.build_id
            )),
            _ => {}
        }
    } else if reason.starts_with("refresh due")
        && let Some(head) = head
    {
        out.push(format!(
            "{pad}{} was baked in run {}; the refresh period is set{}",
            head.build_id,
            head.run,
            field_at(ws, series, "update.refresh_days")
        ));
    }
}

/// Each input whose digest differs from the one `head` recorded.
fn changed_inputs(
    ws: &Workspace,
    series: &str,
    rt: &str,
    head: &BuildRecord,
    current: &BTreeMap<String, String>,
    pad: &str,
    out: &mut Vec<String>,
) {
    let keys: BTreeSet<&String> = head.inputs.keys().chain(current.keys()).collect();
    for k in keys {
        let what = match (head.inputs.get(k), current.get(k)) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(_), Some(_)) => "changed",
            (None, _) => "added",
            (_, None) => "removed",
        };
        let detail = if k == "parent_fingerprint" {
            parent_detail(ws, series, rt, head)
        } else if k.starts_with("template.") {
            String::new()
        } else if let Some(file) = k
            .split_once("].files.")
            .map(|(_, f)| f)
            .filter(|_| what == "changed")
        {
            format!(" (the content of {file})")
        } else {
            interpolated_from(ws, series, k)
        };
        out.push(format!(
            "{pad}{k} {what} since {}{detail}{}",
            head.build_id,
            field_at(ws, series, k)
        ));
        if let Some(field) = k.strip_prefix("template.") {
            out.extend(template_detail(ws, series, rt, field, pad));
        }
    }
}

/// Where a merged template's field comes from: the image template's
/// extends chain (and OS defaults), and the files of it that set the field,
/// each at its key.
fn template_detail(ws: &Workspace, series: &str, rt: &str, field: &str, pad: &str) -> Vec<String> {
    let (db, tree) = (&ws.db, ws.tree);
    let Some((_, r)) = crate::load::templates::template_on_runtime(db, tree, series, rt) else {
        return Vec::new();
    };
    let path = field
        .split('.')
        .fold(csis_model::DocPath::root(), |p, seg| p.key(seg));
    let set_in: Vec<String> = r
        .defaults
        .iter()
        .chain(r.chain.iter())
        .filter_map(|f| {
            let sf = ws.file(f)?;
            let parsed = crate::db::files::parse_file(db, sf);
            let span = parsed.positions.key(&path)?;
            Some(format!("{f}:{}:{}", span.line, span.col))
        })
        .collect();
    let defaults = r
        .defaults
        .as_ref()
        .map(|d| format!(" over OS defaults {d}"))
        .unwrap_or_default();
    let mut out = vec![format!(
        "{pad}  image template: extends chain {}{defaults}",
        r.chain.join(" -> ")
    )];
    if !set_in.is_empty() {
        out.push(format!("{pad}  {field} is set at {}", set_in.join(", ")));
    }
    out
}

/// ` (from env FOO, terraform output x of <state>)`: the sources of the
/// values `${env.*}` / `${terraform.*}` put under an image's input.
fn interpolated_from(ws: &Workspace, series: &str, input: &str) -> String {
    let (db, tree) = (&ws.db, ws.tree);
    let Some((image, false)) = series_origin(ws, series) else {
        return String::new();
    };
    let at = image_input_origin(ws, series, &image, input);
    let id = ItemId::new(db, tree, ItemKind::IMAGES, series);
    let mut sources: Vec<&str> = structured_item(db, id)
        .interpolated
        .iter()
        .filter(|u| {
            let p = image.path.joined(u.path.0.iter().skip(2).cloned());
            p.0.starts_with(&at.path.0)
        })
        .map(|u| u.source.as_str())
        .collect();
    sources.dedup();
    if sources.is_empty() {
        return String::new();
    }
    format!(" (interpolated from {})", sources.join(", "))
}

/// Why the parent's fingerprint moved: a new pin, or a re-baked parent.
fn parent_detail(ws: &Workspace, series: &str, rt: &str, head: &BuildRecord) -> String {
    let (db, tree) = (&ws.db, ws.tree);
    let Some((_, chain)) = chain_root(db, tree, series) else {
        return String::new();
    };
    let Some(parent) = chain.iter().rev().nth(1) else {
        return String::new();
    };
    match pins(db, tree).value.images.get(&format!("{series}@{rt}")) {
        Some(pin) if *pin != head.parent => {
            format!(
                " ({series}@{rt} is now pinned to {pin}, was {})",
                head.parent
            )
        }
        _ => match crate::state::lineage::head_of(db, tree, parent, rt) {
            Some(p) if p.build_id != head.parent => {
                format!(" ({parent} was re-baked as {})", p.build_id)
            }
            _ => format!(" ({parent}'s inputs changed)"),
        },
    }
}

/// `lineage: tiny (tiny-local-0001) -> base (base-local-0002) -> mid (no build)`.
fn lineage_path(ws: &Workspace, series: &str, rt: &str) -> String {
    let (db, tree) = (&ws.db, ws.tree);
    let chain = chain_root(db, tree, series)
        .map(|(_, c)| c)
        .unwrap_or_else(|| vec![series.to_string()]);
    let steps: Vec<String> = chain
        .iter()
        .map(|s| match crate::state::lineage::head_of(db, tree, s, rt) {
            Some(h) => format!("{s} ({})", h.build_id),
            None => format!("{s} (no build)"),
        })
        .collect();
    format!("lineage: {}", steps.join(" -> "))
}

/// The declaration of a series: an image item, or an OS builder in cfg/.
fn series_origin(ws: &Workspace, series: &str) -> Option<(Origin, bool)> {
    let (db, tree) = (&ws.db, ws.tree);
    let b = builders(db, tree);
    if let Some(o) = b.origins.get(&(Vct::OsBuilderModel, series.to_string())) {
        return Some((o.clone(), true));
    }
    let id = ItemId::new(db, tree, ItemKind::IMAGES, series);
    structured_item(db, id).origin.clone().map(|o| (o, false))
}

fn declared_at(ws: &Workspace, series: &str) -> String {
    series_origin(ws, series)
        .and_then(|(o, _)| ws.position(&o, false))
        .map(|p| format!(" (declared at {p})"))
        .unwrap_or_default()
}

/// ` at file:line:col` of the declaration an input (as docs/fingerprint.md
/// names it) comes from.
fn field_at(ws: &Workspace, series: &str, input: &str) -> String {
    let Some((origin, is_base)) = series_origin(ws, series) else {
        return String::new();
    };
    let origin = if input.starts_with("capabilities.") && !is_base {
        // Capabilities are the chain root's.
        let root = chain_root(&ws.db, ws.tree, series).map(|(r, _)| r);
        match root.and_then(|r| {
            builders(&ws.db, ws.tree)
                .origins
                .get(&(Vct::OsBuilderModel, r))
                .cloned()
        }) {
            Some(o) => o.key(input.trim_start_matches("capabilities.")),
            None => origin,
        }
    } else if is_base {
        base_input_origin(&origin, input)
    } else {
        image_input_origin(ws, series, &origin, input)
    };
    ws.position(&origin, true)
        .map(|p| format!(" at {p}"))
        .unwrap_or_default()
}

fn base_input_origin(decl: &Origin, input: &str) -> Origin {
    let (head, rest) = input.split_once('.').unwrap_or((input, ""));
    match head {
        "vendor" => match rest {
            "family" | "family_version" | "architecture" | "owners" | "query" => decl.key(rest),
            _ => decl.key("runtimes"),
        },
        "admin" if rest == "user" => decl.key("admin_user"),
        "admin" => decl.key("admin_public_keys"),
        "update" => decl.key("update"),
        "capabilities" => decl.key(rest),
        "verification" => decl.key("tests"),
        "template" | "distribution" => decl.key("runtimes"),
        "bake_disk_size" => decl.key("default_primary_disk_size"),
        _ => decl.clone(),
    }
}

fn image_input_origin(ws: &Workspace, series: &str, image: &Origin, input: &str) -> Origin {
    if let Some(rest) = input.strip_prefix("modifications[") {
        let Some((name, field)) = rest.split_once(']') else {
            return image.key("modifications");
        };
        let id = ItemId::new(&ws.db, ws.tree, ItemKind::IMAGES, series);
        let index = structured_item(&ws.db, id)
            .mods
            .iter()
            .position(|m| m.model.named.name == name);
        let Some(i) = index else {
            return image.key("modifications");
        };
        let m = image.key("modifications").index(i);
        let field = field.trim_start_matches('.');
        let (part, rest) = field.split_once('.').unwrap_or((field, ""));
        return match part {
            "fields" => m.key(rest.split('.').next().unwrap_or(rest)),
            "files" => m.key("scripts"),
            "config" => m.key("config"),
            _ => m.key("type"),
        };
    }
    let (head, rest) = input.split_once('.').unwrap_or((input, ""));
    match head {
        "parent_fingerprint" => image.key("source_image"),
        "verification" => image.key("tests").key(rest),
        "bake_disk_size" => image.key("primary_disk_size"),
        _ => image.clone(),
    }
}

/// Why a generated file was rewritten: the values that differ from the file
/// it replaces, each traced to where the configuration declares it, and the
/// bakes of the items it is named after.
pub fn explain_rewrite(
    ws: &Workspace,
    run: RunInput,
    rel: &str,
    old: Option<&[u8]>,
    new: &[u8],
) -> Vec<String> {
    let items = named_items(ws, rel);
    let plan = bake_plan(&ws.db, ws.tree, run);
    let mut lines = Vec::new();
    let changes = match old {
        Some(old) => changed_values(old, new),
        None => {
            lines.push("new file".into());
            Vec::new()
        }
    };
    for (path, before, after) in changes.iter().take(MAX_CHANGES) {
        let source = after
            .as_deref()
            .and_then(|v| trace_value(ws, &items, plan, v))
            .map(|s| format!(" <- {s}"))
            .unwrap_or_default();
        lines.push(format!(
            "{path}: {} -> {}{source}",
            shown(before.as_deref()),
            shown(after.as_deref())
        ));
    }
    if changes.len() > MAX_CHANGES {
        lines.push(format!("... and {} more", changes.len() - MAX_CHANGES));
    }
    for (_, name) in items.iter().filter(|(k, _)| *k == ItemKind::IMAGES) {
        for (_, rt, d) in plan
            .decisions
            .iter()
            .filter(|(s, _, d)| s == name && d.bake)
        {
            lines.push(format!("{name}@{rt} {}", d.reason));
        }
    }
    lines
}

/// Where a generated value comes from: a build lineage.yaml records, an
/// input fingerprint, a scalar the item declares, or a bake it names.
fn trace_value(
    ws: &Workspace,
    items: &[(ItemKind, String)],
    plan: &crate::plan::bakes::BakePlan,
    value: &str,
) -> Option<String> {
    let (db, tree) = (&ws.db, ws.tree);
    if crate::state::lineage::build_of(db, tree, value).is_some() {
        return Some(format!("meta-state/lineage.yaml (build {value})"));
    }
    for (series, rt, _) in &plan.decisions {
        let key = SeriesKey::new(db, series.clone(), rt.clone());
        if input_fingerprint(db, tree, key)
            .as_ref()
            .is_some_and(|f| f.hex == value)
        {
            return Some(format!("the input fingerprint of {series}@{rt}"));
        }
    }
    for (kind, name) in items {
        let id = ItemId::new(db, tree, *kind, name.as_str());
        let Some((origin, resolved)) = resolved_value(db, id) else {
            continue;
        };
        if let Some(at) = find_scalar(&resolved, value, origin) {
            let kind = kind.singular();
            return ws
                .position(&at, false)
                .map(|p| format!("{p} ({kind} {name})"));
        }
    }
    plan.decisions
        .iter()
        .filter(|(_, _, d)| d.bake)
        .find(|(s, rt, _)| {
            value.contains(&format!("-{s}."))
                || value.contains(&format!("{s}@{rt}"))
                || value.contains(&format!("/{s}-{rt}-"))
        })
        .map(|(s, rt, d)| format!("{s}@{rt} {}", d.reason))
}

fn shown(v: Option<&str>) -> String {
    match v {
        None => "(absent)".into(),
        Some(s) if s.chars().count() > 96 => {
            format!(
                "{:?}",
                format!("{}...", s.chars().take(93).collect::<String>())
            )
        }
        Some(s) => format!("{s:?}"),
    }
}

/// The values that differ: JSON leaves by path when both sides are JSON,
/// else lines by number.
fn changed_values(old: &[u8], new: &[u8]) -> Vec<(String, Option<String>, Option<String>)> {
    if let (Ok(a), Ok(b)) = (
        serde_json::from_slice::<J>(old),
        serde_json::from_slice::<J>(new),
    ) {
        let (mut la, mut lb) = (BTreeMap::new(), BTreeMap::new());
        json_leaves("", &a, &mut la);
        json_leaves("", &b, &mut lb);
        let keys: BTreeSet<&String> = la.keys().chain(lb.keys()).collect();
        return keys
            .into_iter()
            .filter(|k| la.get(*k) != lb.get(*k))
            .map(|k| ((*k).clone(), la.get(k).cloned(), lb.get(k).cloned()))
            .collect();
    }
    // Text: the lines between the common head and the common tail, removed
    // then added (a generated script mostly changes in one place).
    let a: Vec<&str> = std::str::from_utf8(old)
        .unwrap_or_default()
        .lines()
        .collect();
    let b: Vec<&str> = std::str::from_utf8(new)
        .unwrap_or_default()
        .lines()
        .collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let removed = a[head..a.len() - tail]
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("line {}", head + i + 1), Some(l.to_string()), None));
    let added = b[head..b.len() - tail]
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("line {}", head + i + 1), None, Some(l.to_string())));
    removed.chain(added).collect()
}

fn json_leaves(prefix: &str, v: &J, out: &mut BTreeMap<String, String>) {
    match v {
        J::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                json_leaves(&p, x, out);
            }
        }
        J::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                json_leaves(&format!("{prefix}[{i}]"), x, out);
            }
        }
        J::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// The items a generated file is named after (plugins name a file after the
/// item it holds), longest name first so `web-2` wins over `web`.
fn named_items(ws: &Workspace, rel: &str) -> Vec<(ItemKind, String)> {
    let file = rel.rsplit('/').next().unwrap_or(rel);
    let stem = file.split('.').next().unwrap_or(file);
    let index = item_index(&ws.db, ws.tree);
    let mut found: Vec<(ItemKind, String)> = ItemKind::CORE
        .iter()
        .flat_map(|k| index.names(*k).map(move |n| (*k, n.to_string())))
        .filter(|(_, n)| stem.ends_with(&format!("-{n}")) || stem == n)
        .collect();
    found.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.1.cmp(&b.1)));
    found.truncate(1);
    found
}

fn find_scalar(v: &Value, wanted: &str, at: Origin) -> Option<Origin> {
    match v {
        Value::Scalar { text, .. } if text == wanted => Some(at),
        Value::Seq(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| find_scalar(x, wanted, at.index(i))),
        Value::Map(m) => m
            .iter()
            .find_map(|(k, x)| find_scalar(x, wanted, at.key(k))),
        _ => None,
    }
}
