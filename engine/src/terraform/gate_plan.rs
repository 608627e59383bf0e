//! `csis gate-plan`: the apply gate over `tofu show -json <planfile>`
//! (spec: commands/gate.py). Every planned destroy (an entry of
//! `resource_changes` whose `change.actions` holds "delete", a replace
//! too) must match a whitelisted address or prefix; a plan file older than
//! the newest .tf in its root is stale; with `--require-unmounted` every
//! planned detach of a storage needs an ok unmount receipt. Every problem
//! is listed, then the gate refuses (exit 3); a tofu that cannot answer or
//! a document that is not a plan is an error (exit 1).

use std::path::{Path, PathBuf};

use serde_json::Value as J;

use crate::db::system::System;
use crate::terraform::unmount::{Receipt, receipt_path};
use crate::terraform::{FAILED, Outcome, REFUSED, Tofu, shown};

/// The resource types that attach a storage to an instance: a planned
/// delete of one is a detach, keyed `"<instance>/<storage>"`.
pub const ATTACHMENT_TYPES: [&str; 2] = ["aws_volume_attachment", "google_compute_attached_disk"];

/// The plan JSON format this gate reads (`format_version` 1.x).
const FORMAT_MAJOR: &str = "1";

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
    let plan = match read_plan(system, req, &planfile) {
        Ok(p) => p,
        Err(e) => return Outcome::failed(FAILED, format!("gate-plan: {e}")),
    };
    let receipts =
        |instance: &str, storage: &str| receipt_state(system, req.root, instance, storage);
    let mut judged = judge(&plan, req.whitelist, req.require_unmounted, &receipts);
    match staleness(system, req.cwd, &planfile) {
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

/// `tofu show -json <planfile>`, read and checked to be a plan.
fn read_plan(system: &dyn System, req: &GatePlan, planfile: &Path) -> Result<J, String> {
    let exists = system
        .modified(planfile)
        .map_err(|e| format!("{}: {e}", planfile.display()))?
        .is_some();
    if !exists {
        return Err(format!(
            "no planfile {} in {} -- run tofu plan -out={} there first",
            req.planfile,
            req.cwd.display(),
            req.planfile
        ));
    }
    let tofu = Tofu {
        system,
        binary: req.tofu,
        cwd: req.cwd,
    };
    let text = tofu.run(&["show", "-json", req.planfile])?;
    let doc: J = serde_json::from_str(&text).map_err(|e| {
        format!(
            "'{} show -json {}' printed no JSON document: {e}",
            req.tofu, req.planfile
        )
    })?;
    is_plan(&doc).map_err(|e| format!("{}: {e}", req.planfile))?;
    Ok(doc)
}

/// A plan document in the format this gate reads: `format_version` 1.x
/// and the plan's own keys (a state's JSON has neither).
pub fn is_plan(doc: &J) -> Result<(), String> {
    let version = doc
        .get("format_version")
        .and_then(J::as_str)
        .ok_or("not a plan document: it has no format_version")?;
    if version.split('.').next() != Some(FORMAT_MAJOR) {
        return Err(format!(
            "plan format_version '{version}' is not one this gate reads (1.x); refusing to judge it"
        ));
    }
    if doc.get("resource_changes").is_none() && doc.get("planned_values").is_none() {
        return Err(
            "not a plan document: it has neither resource_changes nor planned_values (a state?)"
                .into(),
        );
    }
    Ok(())
}

/// The plan's changes judged: destroys against the whitelist, detaches
/// against their receipts (when `require_unmounted`).
pub fn judge(
    plan: &J,
    whitelist: &[String],
    require_unmounted: bool,
    receipts: &dyn Fn(&str, &str) -> ReceiptState,
) -> Judgement {
    let mut out = Judgement::default();
    let empty = Vec::new();
    let changes = plan
        .get("resource_changes")
        .and_then(J::as_array)
        .unwrap_or(&empty);
    for rc in changes {
        let address = rc
            .get("address")
            .and_then(J::as_str)
            .unwrap_or("(no address)");
        let actions: Vec<&str> = rc
            .pointer("/change/actions")
            .and_then(J::as_array)
            .map(|a| a.iter().filter_map(J::as_str).collect())
            .unwrap_or_default();
        if actions.iter().all(|a| *a == "no-op" || *a == "read") {
            continue;
        }
        out.changes += 1;
        if !actions.contains(&"delete") {
            continue;
        }
        let what = if actions.contains(&"create") {
            "replace"
        } else {
            "destroy"
        };
        if whitelisted(address, whitelist) {
            out.destroys_whitelisted += 1;
        } else {
            out.problems.push(format!(
                "planned {what} of {address} (actions: {}) is not whitelisted -- whitelist it in the builder that owns the root (--whitelist {address}), or change the declaration so nothing is destroyed",
                actions.join(", ")
            ));
        }
        let ty = rc.get("type").and_then(J::as_str).unwrap_or_default();
        if !require_unmounted || !ATTACHMENT_TYPES.contains(&ty) {
            continue;
        }
        let key = rc.get("index").and_then(J::as_str).unwrap_or_default();
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

/// A problem when the planfile is older than the newest .tf (or .tf.json)
/// directly in its root.
fn staleness(system: &dyn System, cwd: &Path, planfile: &Path) -> Result<Option<String>, String> {
    let plan_time = system
        .modified(planfile)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} vanished", planfile.display()))?;
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for f in system
        .list_files(cwd)
        .map_err(|e| format!("{}: {e}", cwd.display()))?
    {
        let name = f.file_name().map(|n| n.to_string_lossy().to_string());
        let is_tf = name.is_some_and(|n| n.ends_with(".tf") || n.ends_with(".tf.json"));
        if f.parent() != Some(cwd) || !is_tf {
            continue;
        }
        if let Some(t) = system.modified(&f).map_err(|e| e.to_string())?
            && newest.as_ref().is_none_or(|(n, _)| t > *n)
        {
            newest = Some((t, f));
        }
    }
    Ok(newest.filter(|(t, _)| *t > plan_time).map(|(_, f)| {
        let plan = shown(planfile, cwd);
        format!(
            "{plan} is stale: {} changed after it was planned (a plan file older than the newest .tf in its root is stale) -- re-run tofu plan -out={plan}",
            shown(&f, cwd)
        )
    }))
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
        let j = judge(&p, &["aws_instance.web".to_string()], false, &none);
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

    #[test]
    fn a_document_that_is_not_a_version_1_plan_is_refused() {
        assert!(is_plan(&plan(vec![])).is_ok());
        assert_eq!(
            is_plan(&json!({"format_version": "2.0", "resource_changes": []})).unwrap_err(),
            "plan format_version '2.0' is not one this gate reads (1.x); refusing to judge it"
        );
        assert_eq!(
            is_plan(&json!({"format_version": "1.0", "values": {}})).unwrap_err(),
            "not a plan document: it has neither resource_changes nor planned_values (a state?)"
        );
        assert_eq!(
            is_plan(&json!({"resource_changes": []})).unwrap_err(),
            "not a plan document: it has no format_version"
        );
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
        let req = GatePlan {
            root: Path::new("/r"),
            cwd,
            planfile: "s.tfplan",
            tofu: "tofu",
            whitelist: &[],
            require_unmounted: false,
        };
        let o = gate_plan(&sys, &req);
        assert_eq!(o.code, 3);
        assert_eq!(
            o.err,
            [
                "gate-plan: REFUSED: s.tfplan is stale: main.tf changed after it was planned (a plan file older than the newest .tf in its root is stale) -- re-run tofu plan -out=s.tfplan",
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
        let req = GatePlan {
            root: Path::new("/r"),
            cwd,
            planfile: "s.tfplan",
            tofu: "tofu",
            whitelist: &[],
            require_unmounted: false,
        };
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
}
