//! The runner's `verify instance` step after a launch (docs/verification.md,
//! "In a real run"), as every instance builder defers it: a failed
//! verification stops the runner, unless the instance is ephemeral and its
//! `on_failure` is `teardown`: then the verdict is recorded
//! (`--record-only`), the machine is torn down by the steps after it, and
//! the run fails once its records are forgotten.

use csis_model::Vct;
use csis_model::models::Instance;

use crate::builder::HookContext;

/// An ephemeral instance's `on_failure`: its own, else that of the
/// runtime it is launched on (its instance builder's, else its own
/// `runtime`), else `keep` (a failed machine is left standing to be looked
/// at).
pub fn failure_policy(ctx: &dyn HookContext, inst: &Instance) -> String {
    let runtime = ctx
        .builder(Vct::InstanceBuilderModel, &inst.root.named.type_)
        .and_then(|b| b.base.runtime().map(str::to_string))
        .unwrap_or_else(|| inst.runtime.clone());
    inst.on_failure
        .clone()
        .or_else(|| {
            ctx.builder(Vct::RuntimeBuilderModel, &runtime)
                .and_then(|r| r.base.runtime_model().and_then(|m| m.on_failure.clone()))
        })
        .unwrap_or_else(|| "keep".into())
}

/// The words of the step after `csis --root-dir <root>`.
pub fn verify_words(ctx: &dyn HookContext, inst: &Instance) -> Vec<String> {
    let mut words = vec![
        "verify".to_string(),
        "instance".into(),
        inst.root.name().to_string(),
    ];
    if inst.ephemeral && failure_policy(ctx, inst) == "teardown" {
        words.push("--record-only".into());
    }
    words
}
