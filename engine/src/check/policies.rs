//! Policies (the spec's validate row "policies"): an image's
//! `parent_policy`, `retention` and `release`; an instance's
//! `image_policy`, `on_failure` and `teardown_after`; a runtime builder's
//! `retention_keep`, `on_failure` and `teardown_after`. Each value is one
//! of the words the plan and the run act on, or a shape they read; a value
//! outside them is refused where it is written, before a plan acts on it.

use csis_model::models::{Image, Instance};
use csis_model::{Origin, Value, Vct};

use crate::check::context::Checks;
use crate::check::formats::duration_ok;

impl Checks<'_> {
    /// An image's parent policy, retention and release.
    pub(super) fn image_policies(&mut self, img: &Image, at: &dyn Fn(&str) -> Option<Origin>) {
        let name = img.root.name();
        let parent_policy = img.parent_policy.as_str();
        if !matches!(parent_policy, "pinned" | "follow") {
            self.err(
                format!("image '{name}': parent_policy '{parent_policy}' is not one of ('pinned', 'follow')"),
                at("parent_policy"),
            );
        }
        if let Some(r) = img.retention.as_ref() {
            let keep_ok = r.len() == 1
                && r.get("keep")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.parse::<u64>().is_ok());
            if !keep_ok {
                self.err(
                    format!("image '{name}': retention must be {{keep: <non-negative int>}}"),
                    at("retention"),
                );
            }
        }
        if let Some(r) = img.release.as_ref() {
            let ok = r.len() == 1
                && r.get("model")
                    .and_then(Value::as_str)
                    .is_some_and(|m| !m.trim().is_empty());
            if !ok {
                self.err(
                    format!("image '{name}': release must be {{model: <name>}}"),
                    at("release"),
                );
            }
        }
    }

    /// An instance's image policy, failure policy and teardown delay.
    pub(super) fn instance_policies(
        &mut self,
        inst: &Instance,
        at: &dyn Fn(&str) -> Option<Origin>,
    ) {
        let name = inst.root.name();
        if !matches!(inst.image_policy.as_str(), "pinned" | "follow") {
            self.err(
                format!(
                    "instance '{name}': image_policy '{}' is not one of ('pinned', 'follow')",
                    inst.image_policy
                ),
                at("image_policy"),
            );
        }
        if let Some(p) = inst.on_failure.as_deref()
            && !matches!(p, "keep" | "teardown")
        {
            self.err(
                format!("instance '{name}': on_failure '{p}' is not one of ('keep', 'teardown')"),
                at("on_failure"),
            );
        }
        if let Some(d) = inst.teardown_after.as_deref()
            && !duration_ok(d)
        {
            self.err(
                format!(
                    "instance '{name}': teardown_after: duration '{d}' must be <number><m|h|d>"
                ),
                at("teardown_after"),
            );
        }
    }

    /// Every runtime builder's retention, failure policy and teardown
    /// delay.
    pub(super) fn runtime_policies(&mut self) {
        let b = self.b;
        for d in b
            .by_class
            .get(&Vct::RuntimeBuilderModel)
            .into_iter()
            .flat_map(|m| m.values())
        {
            let Some(rt) = d.base.runtime_model() else {
                continue;
            };
            let at = |k: &str| {
                self.b
                    .origins
                    .get(&(Vct::RuntimeBuilderModel, d.name().to_string()))
                    .map(|o| o.key(k))
            };
            if let Some(k) = rt.retention_keep
                && k < 0
            {
                self.err(
                    format!(
                        "runtime '{}': retention_keep must be a non-negative int",
                        d.name()
                    ),
                    at("retention_keep"),
                );
            }
            if let Some(p) = rt.on_failure.as_deref()
                && !matches!(p, "keep" | "teardown")
            {
                self.err(
                    format!(
                        "runtime '{}': on_failure '{p}' is not one of ('keep', 'teardown')",
                        d.name()
                    ),
                    at("on_failure"),
                );
            }
            if let Some(t) = rt.teardown_after.as_deref()
                && !duration_ok(t)
            {
                self.err(
                    format!(
                        "runtime '{}': teardown_after: duration '{t}' must be <number><m|h|d>",
                        d.name()
                    ),
                    at("teardown_after"),
                );
            }
        }
    }
}
