//! `csis apply-check --lifecycle <lc> --builder <b> [--runtime <rt>]`: the
//! last step before a root's `tofu apply`. The generation decided the root
//! may apply; this reads the tree's `config.apply_<lifecycle>` again NOW
//! (the one rule, `csis_model::apply_flags`) and refuses (exit 3) when it
//! no longer lets the root apply. A flag may not be encrypted: it is read
//! raw.
//!
//! The flag is read only from a tree that loads whole: a cfg/ file or an
//! overlay that does not parse (a YAML error, a key written twice, a top
//! level that is not a mapping), or any file of the tree the load could
//! not read at all (over the size limit, not UTF-8, not a regular file,
//! a missing overlay), is a refusal naming it: the flag read from the
//! files that did load may be one the broken file overrides.

use csis_model::apply_flags::{ApplyFlag, apply_flag, flag_for_lifecycle};
use csis_model::{Diagnostic, Value};
use serde_json::Value as J;

use crate::db::files::{file_document, parse_file};
use crate::load::builders::builders;
use crate::load::overlay::overlay_document;
use crate::load::render::raw_tree;
use crate::terraform::{FAILED, Outcome, REFUSED};
use crate::workspace::Workspace;

/// One invocation.
pub struct ApplyCheck<'a> {
    pub lifecycle: &'a str,
    pub builder: &'a str,
    pub runtime: Option<&'a str>,
}

pub fn apply_check(ws: &Workspace, req: &ApplyCheck) -> Outcome {
    let Some(key) = flag_for_lifecycle(req.lifecycle) else {
        return Outcome::failed(
            FAILED,
            format!(
                "apply-check: lifecycle '{}' has no apply flag (lifecycles with one: identity, storage, instance-image, release)",
                req.lifecycle
            ),
        );
    };
    let unloaded = unloaded(ws);
    if !unloaded.is_empty() {
        let n = unloaded.len();
        let mut err: Vec<String> = unloaded
            .iter()
            .map(|u| format!("apply-check: REFUSED: {u}"))
            .collect();
        let (files, them) = if n == 1 {
            ("1 file above".to_string(), "it")
        } else {
            (format!("{n} files above"), "them")
        };
        err.push(format!(
            "apply-check: REFUSED: config.{key} is not read from a tree that does not load ({files}); the {} root stops after its plan and gate -- fix {them} (csis validate shows {them}) and rerun",
            req.lifecycle,
        ));
        return Outcome {
            code: REFUSED,
            out: Vec::new(),
            err,
        };
    }
    let raw = raw_tree(&ws.db, ws.tree)
        .get("config")
        .and_then(|c| c.get(key))
        .cloned();
    if raw.as_ref().is_some_and(encrypted) {
        return Outcome::failed(
            REFUSED,
            format!(
                "apply-check: REFUSED: config.{key} is encrypted; an apply flag may not be (apply-check reads it raw) -- write it in the clear in cfg/_config.yml"
            ),
        );
    }
    // The value decided on, overlays applied and templates rendered, is
    // the value the message states.
    let config = builders(&ws.db, ws.tree).config_map();
    let flag = apply_flag(&config, key);
    let value = config.get(key).map_or_else(|| "unset".to_string(), shown);
    let root = match req.runtime {
        Some(rt) => format!("builder '{}' (runtime '{rt}')", req.builder),
        None => format!("builder '{}'", req.builder),
    };
    if flag.allows(req.builder, req.runtime) {
        return Outcome::ok(vec![format!(
            "apply-check: config.{key} is {value}: the {} root of {root} applies",
            req.lifecycle
        )]);
    }
    let how = match flag {
        ApplyFlag::Only(_) => format!(
            "list '{}'{} in it, or set it to true",
            req.builder,
            req.runtime
                .map(|rt| format!(" or '{rt}'"))
                .unwrap_or_default()
        ),
        _ => format!(
            "set it to true, or to a list naming '{}'{}",
            req.builder,
            req.runtime
                .map(|rt| format!(" or '{rt}'"))
                .unwrap_or_default()
        ),
    };
    Outcome::failed(
        REFUSED,
        format!(
            "apply-check: REFUSED: config.{key} is now {value}, which does not let {root} apply; the {} root stops after its plan and gate -- to apply it, {how}",
            req.lifecycle
        ),
    )
}

/// A flag's value as read: `true`, `[a, b]`, `unset`.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "unset".to_string(),
        Value::Scalar { text, .. } => text.clone(),
        Value::Seq(items) => format!(
            "[{}]",
            items.iter().map(shown).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{k}: {}", shown(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Every file the load could not read, and every cfg/ file and overlay
/// that does not parse: `file:line:col: why` each (the place when known).
fn unloaded(ws: &Workspace) -> Vec<String> {
    let db = &ws.db;
    let mut out: Vec<String> = ws
        .read_diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| located(ws, d))
        .collect();
    for file in ws.tree.cfg_files(db) {
        let doc = file_document(db, *file);
        if doc.value.is_none() {
            out.extend(doc.diags.iter().map(|d| located(ws, d)));
        }
    }
    for file in ws.tree.overlays(db) {
        let parsed = parse_file(db, *file);
        let loads = parsed.error.is_none()
            && parsed
                .value
                .as_deref()
                .is_some_and(|v| v.as_map().is_some());
        if !loads {
            let doc = overlay_document(db, *file);
            out.extend(
                doc.diags
                    .iter()
                    .filter(|d| d.is_error())
                    .map(|d| located(ws, d)),
            );
        }
    }
    out
}

/// `file:line:col: message` when the diagnostic has a place, the file
/// named once, and what to write instead when it says.
fn located(ws: &Workspace, d: &Diagnostic) -> String {
    let place = d.origin.as_ref().and_then(|o| ws.position(o, false));
    let said = match (place, &d.origin) {
        (Some(place), Some(origin)) => {
            let file = format!("{}: ", origin.file);
            let message = d.message.strip_prefix(&file).unwrap_or(&d.message);
            csis_model::escape_controls(&format!("{place}: {message}")).into_owned()
        }
        _ => ws.describe(d),
    };
    match &d.help {
        Some(help) => format!("{said} -- {help}"),
        None => said,
    }
}

/// Whether a flag's raw value holds an `ENC[age:...]` marker.
fn encrypted(v: &J) -> bool {
    match v {
        J::String(s) => s.contains(csis_secrets::PREFIX),
        J::Array(items) => items.iter().any(encrypted),
        J::Object(m) => m.values().any(encrypted),
        _ => false,
    }
}
