//! `csis apply-check --lifecycle <lc> --builder <b> [--runtime <rt>]`: the
//! last step before a root's `tofu apply`. The generation decided the root
//! may apply; this reads the tree's `config.apply_<lifecycle>` again NOW
//! (the one rule, `csis_model::apply_flags`) and refuses (exit 3) when it
//! no longer lets the root apply. A flag may not be encrypted: it is read
//! raw.

use csis_model::apply_flags::{ApplyFlag, apply_flag, flag_for_lifecycle};
use serde_json::Value as J;

use crate::load::builders::builders;
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
    let flag = apply_flag(&builders(&ws.db, ws.tree).config_map(), key);
    let value = raw.as_ref().map_or_else(|| "unset".to_string(), shown);
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

/// A flag's value as written: `true`, `[a, b]`, `unset`.
fn shown(v: &J) -> String {
    match v {
        J::Null => "unset".to_string(),
        J::String(s) => s.clone(),
        J::Array(items) => format!(
            "[{}]",
            items.iter().map(shown).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
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
