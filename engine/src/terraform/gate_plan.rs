//! `csis gate-plan`: the apply gate over `tofu show -json <planfile>`
//! (spec: commands/gate.py). The plan is read against the documented JSON
//! output format ([`plan_json`]): a plan it does not understand is
//! refused, never judged from what could be read of it. Every planned
//! destroy (a `delete`, a replace too) must match a whitelisted address or
//! prefix; a planfile older than any file its plan read is stale
//! ([`freshness`]); with `--require-unmounted` every planned detach of a
//! storage needs an ok unmount receipt. Every problem is listed, then the
//! gate refuses (exit 3). `tofu show` runs under a timeout and its output
//! under a bound; a tofu that cannot answer, or a document that is not a
//! plan, is an error (exit 1).
//!
//! [`plan_json`]: crate::terraform::plan_json
//! [`freshness`]: crate::terraform::freshness

use std::path::Path;
use std::time::Duration;

use serde_json::Value as J;

use crate::db::system::{LimitedRun, RunLimits, System};
use crate::terraform::freshness::staleness;
use crate::terraform::plan_json::{ResourceChange, Unjudged, read_plan};
use crate::terraform::unmount::{Receipt, receipt_path};
use crate::terraform::{FAILED, Outcome, REFUSED, Tofu};
use crate::workspace::human_bytes;

/// The resource types that attach a storage to an instance: a planned
/// delete of one is a detach, keyed `"<instance>/<storage>"`.
pub const ATTACHMENT_TYPES: [&str; 2] = ["aws_volume_attachment", "google_compute_attached_disk"];

/// How long `tofu show -json` may take by default (`--show-timeout`): it
/// starts the root's providers to read their schemas, seconds when they
/// are installed; five minutes is a hang, not a slow machine.
pub const DEFAULT_SHOW_TIMEOUT: Duration = Duration::from_secs(300);

/// The most bytes of plan JSON read by default (`--max-plan-size`): a
/// root of csis's is a few volumes or instances, kilobytes to a few
/// megabytes of JSON; 256 MiB is far past any of them and still fits in
/// memory (the plan is read without building a JSON tree of it).
pub const DEFAULT_MAX_PLAN_BYTES: u64 = 256 << 20;

/// One invocation.
pub struct GatePlan<'a> {
    /// The configuration root (the unmount receipts live under it).
    pub root: &'a Path,
    /// The OpenTofu root the runner entered; the planfile is relative to it.
    pub cwd: &'a Path,
    pub planfile: &'a str,
    pub tofu: &'a str,
    pub whitelist: &'a [String],
    pub require_unmounted: bool,
    /// How long `tofu show -json` may run.
    pub show_timeout: Duration,
    /// The most bytes of plan JSON read.
    pub max_plan_bytes: u64,
}

/// What the gate found in one plan.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Judgement {
    /// Entries that change something (neither no-op nor read).
    pub changes: usize,
    pub destroys_whitelisted: usize,
    pub detaches_unmounted: usize,
    pub problems: Vec<String>,
}

/// An unmount receipt as the gate sees it.
#[derive(Debug, PartialEq, Eq)]
pub enum ReceiptState {
    Missing,
    Ok,
    Failed(String),
    Unreadable(String),
}

pub fn gate_plan(system: &dyn System, req: &GatePlan) -> Outcome {
    let planfile = req.cwd.join(req.planfile);
    let plan = match plan_of(system, req, &planfile) {
        Ok(p) => p,
        Err(outcome) => return outcome,
    };
    let receipts =
        |instance: &str, storage: &str| receipt_state(system, req.root, instance, storage);
    let mut judged = judge(&plan, req.whitelist, req.require_unmounted, &receipts);
    match staleness(system, req.cwd, req.root, &planfile) {
        Ok(Some(problem)) => judged.problems.insert(0, problem),
        Ok(None) => {}
        Err(e) => return Outcome::failed(FAILED, format!("gate-plan: {e}")),
    }
    let mut passed = format!(
        "gate-plan: {}: {} change(s), {} destroy(s) whitelisted",
        req.planfile, judged.changes, judged.destroys_whitelisted
    );
    if req.require_unmounted {
        passed.push_str(&format!(
            ", {} detach(es) unmounted",
            judged.detaches_unmounted
        ));
    }
    if judged.problems.is_empty() {
        return Outcome::ok(vec![format!("{passed}: pass")]);
    }
    let mut err: Vec<String> = judged
        .problems
        .iter()
        .map(|p| format!("gate-plan: REFUSED: {p}"))
        .collect();
    err.push(format!(
        "gate-plan: {}: refused, {} problem(s); nothing is applied",
        req.planfile,
        judged.problems.len()
    ));
    Outcome {
        code: REFUSED,
        out: vec![passed],
        err,
    }
}

/// `tofu show -json <planfile>` under the request's bounds, read as a
/// plan; else the outcome that says why not.
fn plan_of(
    system: &dyn System,
    req: &GatePlan,
    planfile: &Path,
) -> Result<Vec<ResourceChange>, Outcome> {
    let failed = |e: String| Outcome::failed(FAILED, format!("gate-plan: {e}"));
    let exists = system
        .modified(planfile)
        .map_err(|e| failed(format!("{}: {e}", planfile.display())))?
        .is_some();
    if !exists {
        return Err(failed(format!(
            "no planfile {} in {} -- run tofu plan -out={} there first",
            req.planfile,
            req.cwd.display(),
            req.planfile
        )));
    }
    let tofu = Tofu {
        system,
        binary: req.tofu,
        cwd: req.cwd,
    };
    let args = ["show", "-json", req.planfile];
    let limits = RunLimits {
        timeout: req.show_timeout,
        max_stdout: req.max_plan_bytes,
    };
    let show = format!("'{} show -json {}'", req.tofu, req.planfile);
    let text = match tofu.run_limited(&args, limits).map_err(failed)? {
        LimitedRun::Finished(out) => tofu.answer(&args, out).map_err(failed)?,
        LimitedRun::TimedOut => {
            return Err(failed(format!(
                "{show} did not finish within {} s (--show-timeout); it was stopped and the plan is not judged -- check that tofu can start the root's providers, or raise --show-timeout",
                req.show_timeout.as_secs()
            )));
        }
        LimitedRun::TooMuchOutput => {
            return Err(Outcome::failed(
                REFUSED,
                format!(
                    "gate-plan: {show} printed more than {} of plan JSON (--max-plan-size); the plan is refused unread -- raise --max-plan-size if the plan is really that large",
                    human_bytes(req.max_plan_bytes)
                ),
            ));
        }
    };
    read_plan(&text).map_err(|why| match why {
        Unjudged::NotJson(e) => failed(format!("{show} printed no JSON document: {e}")),
        Unjudged::NotAPlan(e) => failed(format!("{}: {e}", req.planfile)),
        Unjudged::Refused(problems) => {
            let mut err: Vec<String> = problems.iter().map(|p| format!("gate-plan: {p}")).collect();
            err.push(format!(
                "gate-plan: {}: refused, the plan is not one csis understands; nothing is applied",
                req.planfile
            ));
            Outcome {
                code: REFUSED,
                out: Vec::new(),
                err,
            }
        }
    })
}

/// The plan's changes judged: destroys against the whitelist, detaches
/// against their receipts (when `require_unmounted`).
pub fn judge(
    plan: &[ResourceChange],
    whitelist: &[String],
    require_unmounted: bool,
    receipts: &dyn Fn(&str, &str) -> ReceiptState,
) -> Judgement {
    let mut out = Judgement::default();
    for rc in plan {
        let address = rc.address.as_str();
        if !rc.actions.changes() {
            continue;
        }
        out.changes += 1;
        if !rc.actions.destroys() {
            continue;
        }
        let what = if rc.actions.replaces() {
            "replace"
        } else {
            "destroy"
        };
        if whitelisted(address, whitelist) {
            out.destroys_whitelisted += 1;
        } else {
            out.problems.push(format!(
                "planned {what} of {address} (actions: {}) is not whitelisted -- whitelist it in the builder that owns the root (--whitelist {address}), or change the declaration so nothing is destroyed",
                rc.actions.names()
            ));
        }
        if !require_unmounted || !ATTACHMENT_TYPES.contains(&rc.ty.as_str()) {
            continue;
        }
        let key = rc.index.as_ref().and_then(J::as_str).unwrap_or_default();
        let Some((instance, storage)) = key.split_once('/') else {
            out.problems.push(format!(
                "planned detach {address} is not keyed \"<instance>/<storage>\", so no unmount receipt can vouch for it; refusing the detach"
            ));
            continue;
        };
        let again = format!("csis unmount storage {storage} --instance {instance}");
        match receipts(instance, storage) {
            ReceiptState::Ok => out.detaches_unmounted += 1,
            ReceiptState::Missing => out.problems.push(format!(
                "planned detach {address} of storage '{storage}' from instance '{instance}' has no unmount receipt -- run {again} first (or unmount it by hand and run it with --confirm)"
            )),
            ReceiptState::Failed(detail) => out.problems.push(format!(
                "planned detach {address} of storage '{storage}' from instance '{instance}': its unmount receipt says the unmount failed ({detail}) -- unmount it ({again}, or by hand and --confirm) and plan again"
            )),
            ReceiptState::Unreadable(e) => out.problems.push(format!(
                "planned detach {address} of storage '{storage}' from instance '{instance}': its unmount receipt cannot be read ({e}) -- run {again} again"
            )),
        }
    }
    out
}

/// The address equals an entry, or starts with it followed by `[` or `.`.
pub fn whitelisted(address: &str, whitelist: &[String]) -> bool {
    whitelist.iter().any(|w| {
        address == w
            || address
                .strip_prefix(w.as_str())
                .is_some_and(|rest| rest.starts_with('[') || rest.starts_with('.'))
    })
}

/// The receipt of an unmount of `storage` from `instance`, as the gate
/// reads it.
pub fn receipt_state(
    system: &dyn System,
    root: &Path,
    instance: &str,
    storage: &str,
) -> ReceiptState {
    let path = receipt_path(root, instance, storage);
    match system.read_to_string(&path) {
        Ok(None) => ReceiptState::Missing,
        Err(e) => ReceiptState::Unreadable(format!("{}: {e}", path.display())),
        Ok(Some(text)) => match serde_json::from_str::<Receipt>(&text) {
            Err(e) => ReceiptState::Unreadable(format!("{}: {e}", path.display())),
            Ok(r) if r.ok => ReceiptState::Ok,
            Ok(r) => ReceiptState::Failed(r.detail),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::MemorySystem;
    use serde_json::json;

    fn change(address: &str, ty: &str, index: J, actions: &[&str]) -> J {
        json!({"address": address, "mode": "managed", "type": ty, "name": "x", "index": index,
               "change": {"actions": actions, "before": {}, "after": null}})
    }

    fn plan(changes: Vec<J>) -> J {
        json!({"format_version": "1.2", "terraform_version": "1.8.0", "resource_changes": changes})
    }

    /// The plan's changes as the gate reads them.
    fn read(plan: J) -> Vec<ResourceChange> {
        read_plan(&plan.to_string()).unwrap()
    }

    fn none(_: &str, _: &str) -> ReceiptState {
        ReceiptState::Missing
    }

    #[test]
    fn the_whitelist_matches_an_address_or_a_prefix_before_a_bracket_or_a_dot() {
        let w = vec!["aws_instance.web".to_string(), "module.data".to_string()];
        assert!(whitelisted("aws_instance.web", &w));
        assert!(whitelisted("aws_instance.web[\"a\"]", &w));
        assert!(whitelisted("module.data.aws_ebs_volume.v", &w));
        assert!(!whitelisted("aws_instance.webby", &w));
        assert!(!whitelisted("module.database.x", &w));
    }

    #[test]
    fn every_unwhitelisted_destroy_and_replace_is_a_problem() {
        let p = plan(vec![
            change(
                "aws_instance.web",
                "aws_instance",
                J::Null,
                &["delete", "create"],
            ),
            change(
                "aws_ebs_volume.data",
                "aws_ebs_volume",
                J::Null,
                &["delete"],
            ),
            change("aws_instance.db", "aws_instance", J::Null, &["update"]),
            change("aws_instance.same", "aws_instance", J::Null, &["no-op"]),
        ]);
        let j = judge(&read(p), &["aws_instance.web".to_string()], false, &none);
        assert_eq!((j.changes, j.destroys_whitelisted), (3, 1));
        assert_eq!(
            j.problems,
            [
                "planned destroy of aws_ebs_volume.data (actions: delete) is not whitelisted -- whitelist it in the builder that owns the root (--whitelist aws_ebs_volume.data), or change the declaration so nothing is destroyed"
            ]
        );
    }

    #[test]
    fn a_detach_needs_an_ok_receipt_under_require_unmounted() {
        let p = plan(vec![
            change(
                "aws_volume_attachment.attach[\"web/data\"]",
                "aws_volume_attachment",
                json!("web/data"),
                &["delete"],
            ),
            change(
                "google_compute_attached_disk.attach[\"db/logs\"]",
                "google_compute_attached_disk",
                json!("db/logs"),
                &["delete"],
            ),
            change(
                "google_compute_attached_disk.attach[\"db/ok\"]",
                "google_compute_attached_disk",
                json!("db/ok"),
                &["delete"],
            ),
        ]);
        let w = vec![
            "aws_volume_attachment.attach".to_string(),
            "google_compute_attached_disk.attach".to_string(),
        ];
        let receipts = |i: &str, s: &str| match (i, s) {
            ("db", "logs") => {
                ReceiptState::Failed("unmount of /srv/logs on db failed (exit 32): busy".into())
            }
            ("db", "ok") => ReceiptState::Ok,
            _ => ReceiptState::Missing,
        };
        let p = read(p);
        assert!(judge(&p, &w, false, &receipts).problems.is_empty());
        let j = judge(&p, &w, true, &receipts);
        assert_eq!((j.destroys_whitelisted, j.detaches_unmounted), (3, 1));
        assert_eq!(
            j.problems,
            [
                "planned detach aws_volume_attachment.attach[\"web/data\"] of storage 'data' from instance 'web' has no unmount receipt -- run csis unmount storage data --instance web first (or unmount it by hand and run it with --confirm)",
                "planned detach google_compute_attached_disk.attach[\"db/logs\"] of storage 'logs' from instance 'db': its unmount receipt says the unmount failed (unmount of /srv/logs on db failed (exit 32): busy) -- unmount it (csis unmount storage logs --instance db, or by hand and --confirm) and plan again",
            ]
        );
    }

    /// The gate over `s.tfplan` in `cwd`, root /r, with the defaults.
    fn request(cwd: &Path) -> GatePlan<'_> {
        GatePlan {
            root: Path::new("/r"),
            cwd,
            planfile: "s.tfplan",
            tofu: "tofu",
            whitelist: &[],
            require_unmounted: false,
            show_timeout: DEFAULT_SHOW_TIMEOUT,
            max_plan_bytes: DEFAULT_MAX_PLAN_BYTES,
        }
    }

    #[test]
    fn the_gate_runs_tofu_show_in_the_root_and_refuses_a_stale_planfile() {
        let sys = MemorySystem::new();
        let cwd = Path::new("/r/_private/storage/aws/execution");
        sys.write(&cwd.join("main.tf"), "");
        sys.write(&cwd.join("s.tfplan"), "binary");
        sys.set_modified(&cwd.join("main.tf"), 200);
        sys.set_modified(&cwd.join("s.tfplan"), 100);
        let doc = plan(vec![change(
            "aws_ebs_volume.v",
            "aws_ebs_volume",
            J::Null,
            &["create"],
        )]);
        sys.answer("tofu show -json s.tfplan", 0, &doc.to_string(), "");
        let req = request(cwd);
        let o = gate_plan(&sys, &req);
        assert_eq!(o.code, 3);
        assert_eq!(
            o.err,
            [
                "gate-plan: REFUSED: s.tfplan is stale: main.tf changed after it was planned (a planfile older than any file of its root is stale; .terraform/, the local state and planfiles aside) -- re-run tofu plan -out=s.tfplan",
                "gate-plan: s.tfplan: refused, 1 problem(s); nothing is applied"
            ]
        );
        assert_eq!(
            sys.ran(),
            [("tofu show -json s.tfplan".to_string(), cwd.to_path_buf())]
        );
        sys.set_modified(&cwd.join("s.tfplan"), 300);
        let o = gate_plan(&sys, &req);
        assert_eq!(o.code, 0);
        assert_eq!(
            o.out,
            ["gate-plan: s.tfplan: 1 change(s), 0 destroy(s) whitelisted: pass"]
        );
    }

    #[test]
    fn a_tofu_that_cannot_answer_is_an_error() {
        let sys = MemorySystem::new();
        let cwd = Path::new("/r/x");
        sys.write(&cwd.join("s.tfplan"), "binary");
        let req = request(cwd);
        let o = gate_plan(&sys, &req);
        assert_eq!(o.code, 1);
        assert_eq!(
            o.err,
            [
                "gate-plan: 'tofu show -json s.tfplan' could not start: the in-memory system runs no processes (tofu) -- install OpenTofu, or pass --tofu <binary>"
            ]
        );
        sys.answer(
            "tofu show -json s.tfplan",
            1,
            "",
            "Error: Failed to read the given file as a state or plan file\n",
        );
        assert_eq!(
            gate_plan(&sys, &req).err,
            [
                "gate-plan: 'tofu show -json s.tfplan' exited 1: Error: Failed to read the given file as a state or plan file"
            ]
        );
    }

    #[test]
    fn a_show_that_hangs_is_stopped_and_a_plan_over_the_bound_is_refused_unread() {
        let sys = MemorySystem::new();
        let cwd = Path::new("/r/x");
        sys.write(&cwd.join("s.tfplan"), "binary");
        let mut req = GatePlan {
            max_plan_bytes: 10,
            ..request(cwd)
        };
        sys.answer("tofu show -json s.tfplan", 0, &plan(vec![]).to_string(), "");
        let o = gate_plan(&sys, &req);
        assert_eq!((o.code, o.err.as_slice()), (3, [
            "gate-plan: 'tofu show -json s.tfplan' printed more than 10 bytes of plan JSON (--max-plan-size); the plan is refused unread -- raise --max-plan-size if the plan is really that large".to_string()
        ].as_slice()));
        req.max_plan_bytes = DEFAULT_MAX_PLAN_BYTES;
        assert_eq!(gate_plan(&sys, &req).code, 0);
        sys.hang("tofu show -json s.tfplan");
        let o = gate_plan(&sys, &req);
        assert_eq!((o.code, o.err.as_slice()), (1, [
            "gate-plan: 'tofu show -json s.tfplan' did not finish within 300 s (--show-timeout); it was stopped and the plan is not judged -- check that tofu can start the root's providers, or raise --show-timeout".to_string()
        ].as_slice()));
    }

    #[test]
    fn a_plan_the_gate_does_not_understand_is_refused_with_what_and_where() {
        let sys = MemorySystem::new();
        let cwd = Path::new("/r/x");
        sys.write(&cwd.join("s.tfplan"), "binary");
        let req = request(cwd);
        let doc = plan(vec![
            change("aws_instance.a", "aws_instance", J::Null, &["no-op"]),
            change("aws_instance.web", "aws_instance", J::Null, &["obliterate"]),
        ]);
        sys.answer("tofu show -json s.tfplan", 0, &doc.to_string(), "");
        let o = gate_plan(&sys, &req);
        assert_eq!(o.code, 3);
        assert!(o.out.is_empty());
        assert_eq!(
            o.err,
            [
                "gate-plan: resource_changes[1] (aws_instance.web): unknown action \"obliterate\"; the plan is refused (csis reads no-op, create, read, update, delete and the two replace pairs)",
                "gate-plan: s.tfplan: refused, the plan is not one csis understands; nothing is applied"
            ]
        );
    }
}
