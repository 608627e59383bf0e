//! `csis verify instance NAME [--record-only]` and `csis verify assert`:
//! the instance's runtime checks its machine (it exists, runs the build it
//! is pinned to, its storages are mounted) and runs the image's
//! `tests.post_bake` on it; the verdict goes to meta-state/verifications.yaml
//! (the last 500) and, for an image declaring post-bake tests, to
//! image-tests.yaml under the build, which `release` reads.

use csis_model::models::Item;
use csis_model::{ItemKind, Value, Vct};
use csis_plugin_api::{HookContext, Verdict, VerifyRequest};
use serde_json::{Value as J, json};

use crate::load::items::ItemId;
use crate::load::items_model::structured_item;
use crate::plan::hook_context::EngineContext;

use super::Ops;

const VERIFICATIONS: &str = "verifications.yaml";
const IMAGE_TESTS: &str = "image-tests.yaml";
/// verifications.yaml keeps this many verdicts, the newest last.
const KEPT: usize = 500;

/// What `verify instance` found.
pub enum VerifyOutcome {
    /// Every check held.
    Passed(String),
    /// A check failed: the spec's message; the verdict is recorded.
    Failed(String),
    /// The machine is stopped: nothing was checked or recorded.
    Skipped(String),
    /// A check failed on an ephemeral instance that has failed since
    /// longer than its `teardown_after`: the verdict is recorded as with
    /// `--record-only`, so the runner's next steps tear it down and the
    /// run fails once its records are forgotten. The message, then why it
    /// goes now.
    TeardownDue(String, String),
}

impl Ops<'_> {
    pub fn verify_instance(&self, name: &str) -> Result<VerifyOutcome, String> {
        let name = csis_model::naming::safe_name(name);
        let db = &self.ws.db;
        let id = ItemId::new(db, self.ws.tree, ItemKind::INSTANCES, name.as_str());
        let Some(Item::Instance(inst)) = structured_item(db, id).item.as_deref().cloned() else {
            return Err(format!("verify: instance '{name}' is not declared"));
        };
        let declared = crate::load::builders::builders(db, self.ws.tree).instance_runtime(&inst);
        let (runtime, hooks) = self.runtime_hooks("verify", &declared).map_err(|_| {
            format!("verify: instance '{name}' names runtime '{declared}', which is not configured")
        })?;
        let image = csis_model::naming::safe_name(inst.image.as_deref().unwrap_or_default());
        let post_bake = match self.image(&image).as_deref() {
            Some(Item::Image(img)) => img.tests.get("post_bake").and_then(Value::as_map).cloned(),
            _ => None,
        };
        let mounts: Vec<String> = post_bake
            .as_ref()
            .and_then(|p| p.get("mounts"))
            .and_then(Value::as_seq)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let pinned_build = self.pins()?.instances.get(&name).cloned();
        let ctx = EngineContext::outside_run(db, self.ws.tree);
        let storages = ctx
            .item(ItemKind::INSTANCES, &name)
            .map(|view| {
                view.storages
                    .iter()
                    .map(|s| (s.name.clone(), s.mount_point.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let req = VerifyRequest {
            instance: name.clone(),
            pinned_build: pinned_build.clone(),
            post_bake: post_bake
                .as_ref()
                .map(|p| csis_plugin_api::image_tests::in_bake_checks("", &[], p))
                .unwrap_or_default(),
            mounts,
            storages,
        };
        let checks = match hooks
            .verify_instance(&ctx, &self.ws.root, &req)
            .map_err(|e| format!("verify: instance '{name}' on runtime '{runtime}': {e}"))?
        {
            Verdict::Stopped => {
                return Ok(VerifyOutcome::Skipped(format!(
                    "verify {name}: SKIPPED -- the machine is STOPPED (switched off; not drift) and verification needs it running. Nothing is recorded (not a failure; start the machine or accept the skip)."
                )));
            }
            Verdict::Checked(checks) => checks,
        };
        let ok = checks.iter().all(|c| c.ok);
        let time = crate::db::reads::start_unix(db, self.ws.tree);
        let checks_json: Vec<J> = checks
            .iter()
            .map(|c| json!({"check": c.check, "ok": c.ok, "detail": c.detail}))
            .collect();
        let verdict = json!({
            "instance": name,
            "runtime": runtime,
            "build": pinned_build,
            "ok": ok,
            "run": self.run,
            "time": time,
            "checks": checks_json,
        });
        let failed = failed_checks(&verdict);
        let mut file: serde_json::Map<String, J> =
            crate::state::meta_state::read(self.system, &self.ws.root, VERIFICATIONS)?;
        let mut list = match file.remove("verifications") {
            Some(J::Array(a)) => a,
            _ => Vec::new(),
        };
        let message = failure(&name, &verdict);
        let due = if ok {
            None
        } else {
            self.teardown_due(&inst, &runtime, &list, time)
        };
        list.push(verdict);
        let excess = list.len().saturating_sub(KEPT);
        list.drain(..excess);
        file.insert("verifications".into(), J::Array(list));
        crate::state::meta_state::write(self.system, &self.ws.root, VERIFICATIONS, &file)?;
        if let (Some(_), Some(build)) = (&post_bake, &pinned_build) {
            let mut tests: serde_json::Map<String, J> =
                crate::state::meta_state::read(self.system, &self.ws.root, IMAGE_TESTS)?;
            tests.insert(
                build.clone(),
                json!({
                    "ok": ok,
                    "run": self.run,
                    "instance": name,
                    "runtime": runtime,
                    "time": time,
                    "checks": if ok { json!(checks.len()) } else { json!(failed) },
                }),
            );
            crate::state::meta_state::write(self.system, &self.ws.root, IMAGE_TESTS, &tests)?;
        }
        if ok {
            Ok(VerifyOutcome::Passed(format!(
                "verify {name}: ok ({} checks on {})",
                checks.len(),
                pinned_build.as_deref().unwrap_or("its build")
            )))
        } else if let Some(why) = due {
            Ok(VerifyOutcome::TeardownDue(message, why))
        } else {
            Ok(VerifyOutcome::Failed(message))
        }
    }

    /// Why an ephemeral instance that failed now is torn down by this
    /// run (spec: teardown_due): its `teardown_after` (else its runtime's)
    /// has passed since the first of the failed verdicts it has had since
    /// its last passing one. `runtime`: the one it runs on; `earlier`: the
    /// recorded verdicts, oldest first, without this one.
    fn teardown_due(
        &self,
        inst: &csis_model::models::Instance,
        runtime: &str,
        earlier: &[J],
        now: i64,
    ) -> Option<String> {
        if !inst.ephemeral {
            return None;
        }
        let name = inst.root.name();
        let after = inst.teardown_after.clone().or_else(|| {
            crate::load::builders::builders(&self.ws.db, self.ws.tree)
                .resolve(Vct::RuntimeBuilderModel, runtime)
                .and_then(|d| d.base.runtime_model())
                .and_then(|m| m.teardown_after.clone())
        })?;
        let seconds = crate::check::formats::duration_seconds(&after)?;
        let first_failed = earlier
            .iter()
            .rev()
            .filter(|v| v.get("instance").and_then(J::as_str) == Some(name))
            .take_while(|v| v.get("ok").and_then(J::as_bool) != Some(true))
            .filter_map(|v| v.get("time").and_then(J::as_i64))
            .last()
            .unwrap_or(now);
        ((now - first_failed) as f64 >= seconds).then(|| {
            format!(
                "it has failed verification since {} s ago, longer than its teardown_after ({after}): recorded only, so this run tears it down",
                now - first_failed
            )
        })
    }

    /// The failure of `instance`'s last verdict when this run recorded it
    /// and it failed (`instance <n> failed verification: ...`).
    pub fn failed_in_this_run(&self, instance: &str) -> Result<Option<String>, String> {
        let file: serde_json::Map<String, J> =
            crate::state::meta_state::read(self.system, &self.ws.root, VERIFICATIONS)?;
        let last = file
            .get("verifications")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
            .rev()
            .find(|v| v.get("instance").and_then(J::as_str) == Some(instance));
        Ok(last
            .filter(|v| v.get("run").and_then(J::as_str) == Some(self.run.as_str()))
            .filter(|v| v.get("ok").and_then(J::as_bool) != Some(true))
            .map(|v| failure(instance, v)))
    }

    /// `verify assert`: the last recorded verdict must be ok.
    pub fn verify_assert(&self) -> Result<String, String> {
        let file: serde_json::Map<String, J> =
            crate::state::meta_state::read(self.system, &self.ws.root, VERIFICATIONS)?;
        let last = file
            .get("verifications")
            .and_then(J::as_array)
            .and_then(|a| a.last())
            .ok_or("verify assert: no verification is recorded")?;
        let s = |k: &str| last.get(k).and_then(J::as_str).unwrap_or("?").to_string();
        if last.get("ok").and_then(J::as_bool) == Some(true) {
            Ok(format!(
                "verify assert: the last verification passed (instance {}, run {})",
                s("instance"),
                s("run")
            ))
        } else {
            Err(format!(
                "verify assert: the last verification failed: {} (run {})",
                failure(&s("instance"), last),
                s("run")
            ))
        }
    }
}

/// A recorded verdict's failed checks, each `check: detail`.
fn failed_checks(verdict: &J) -> Vec<String> {
    verdict
        .get("checks")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("ok").and_then(J::as_bool) != Some(true))
        .map(|c| {
            format!(
                "{}: {}",
                c.get("check").and_then(J::as_str).unwrap_or("?"),
                c.get("detail").and_then(J::as_str).unwrap_or("")
            )
        })
        .collect()
}

/// The spec's message for a failed verdict: `instance <n> failed
/// verification: <check>: <detail>; ...`.
fn failure(instance: &str, verdict: &J) -> String {
    format!(
        "instance {instance} failed verification: {}",
        failed_checks(verdict).join("; ")
    )
}
