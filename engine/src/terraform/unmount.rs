//! `csis unmount storage <storage> --instance <n> [--confirm]`: before a
//! storage is detached, its mount point on the instance is unmounted (by
//! the instance's runtime, or by hand and confirmed by the operator), and
//! a receipt says so at `_private/unmount-receipts/<instance>/<storage>.json`,
//! success or not (spec history: an unmount ran with no receipt written).
//! `gate-plan --require-unmounted` refuses a planned detach without an ok
//! receipt.

use std::path::{Path, PathBuf};

use csis_model::models::Item;
use csis_model::{ItemKind, Vct};
use serde::{Deserialize, Serialize};
use serde_json::Value as J;

use crate::db::system::System;
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::terraform::{FAILED, Outcome, private_dir, run_id};
use crate::workspace::Workspace;

/// What an unmount leaves for the gate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub instance: String,
    pub storage: String,
    pub mount_point: String,
    pub ok: bool,
    /// Unmounted by hand, and the operator said so (`--confirm`).
    #[serde(default)]
    pub confirmed: bool,
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub run: String,
    #[serde(default)]
    pub at: String,
    #[serde(default)]
    pub detail: String,
}

/// Where every unmount receipt lives.
pub fn receipts_dir(root: &Path) -> PathBuf {
    private_dir(root).join("unmount-receipts")
}

/// `<root>/_private/unmount-receipts/<instance>/<storage>.json`.
pub fn receipt_path(root: &Path, instance: &str, storage: &str) -> PathBuf {
    receipts_dir(root)
        .join(instance)
        .join(format!("{storage}.json"))
}

/// One invocation.
pub struct Unmount<'a> {
    pub storage: &'a str,
    pub instance: &'a str,
    pub confirm: bool,
}

pub fn unmount(ws: &Workspace, system: &dyn System, req: &Unmount) -> Outcome {
    let (db, tree) = (&ws.db, ws.tree);
    let (instance, storage) = (req.instance, req.storage);
    let declared = item_index(db, tree)
        .names(ItemKind::INSTANCES)
        .any(|n| n == instance);
    let si = structured_item(
        db,
        ItemId::new(
            db,
            tree,
            ItemKind::INSTANCES,
            csis_model::naming::as_safe_name(instance),
        ),
    );
    let inst = match si.item.as_deref() {
        Some(Item::Instance(inst)) if declared => inst.clone(),
        _ => {
            return Outcome::failed(
                FAILED,
                format!("unmount: instance '{instance}' is not declared"),
            );
        }
    };
    // What is mounted is what the instance was launched with: a storage
    // whose attachment was just removed from the declaration is still in
    // the recorded launch parameters until the detach applies.
    let record = &crate::state::launch_params::launch_record(db, tree).value;
    let recorded: Vec<(String, String)> = record
        .instances
        .get(instance)
        .and_then(|r| r.params.get("mounts"))
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| {
            Some((
                m.get("storage")?.as_str()?.to_string(),
                m.get("mount_point")?.as_str()?.to_string(),
            ))
        })
        .collect();
    let declared_mounts: Vec<(String, String)> = si
        .storages
        .iter()
        .map(|m| (m.name.clone(), m.mount_point.clone()))
        .collect();
    let mount_point = recorded
        .iter()
        .chain(&declared_mounts)
        .find(|(s, _)| s == storage)
        .map(|(_, mp)| mp.clone());
    let Some(mount_point) = mount_point else {
        let mut attached: Vec<&str> = recorded
            .iter()
            .chain(&declared_mounts)
            .map(|(s, _)| s.as_str())
            .collect();
        attached.sort_unstable();
        attached.dedup();
        return Outcome::failed(
            FAILED,
            format!(
                "unmount: storage '{storage}' is not attached to instance '{instance}' (it attaches: [{}]) -- name one of its storages",
                attached.join(", ")
            ),
        );
    };
    let mut receipt = Receipt {
        instance: instance.to_string(),
        storage: storage.to_string(),
        mount_point: mount_point.clone(),
        ok: false,
        confirmed: false,
        operator: None,
        run: run_id(system),
        at: csis_string_stage::clock::iso_datetime(system.now_unix()),
        detail: String::new(),
    };
    if req.confirm {
        let env = system.env();
        let operator = ["USER", "USERNAME"]
            .iter()
            .find_map(|k| env.get(*k).map(|v| v.trim()).filter(|v| !v.is_empty()));
        let Some(operator) = operator else {
            return Outcome::failed(
                FAILED,
                "unmount --confirm: neither USER nor USERNAME is set, and the receipt must name who unmounted it by hand -- set USER to your name",
            );
        };
        receipt.ok = true;
        receipt.confirmed = true;
        receipt.operator = Some(operator.to_string());
        receipt.detail = format!("unmounted by hand, confirmed by {operator}");
        return match write_receipt(system, &ws.root, &receipt) {
            Ok(path) => Outcome::ok(vec![format!(
                "unmount: {mount_point} on {instance} confirmed unmounted by hand by {operator}; receipt {}",
                path.display()
            )]),
            Err(e) => Outcome::failed(FAILED, format!("unmount: {e}")),
        };
    }
    let declared = builders(&ws.db, ws.tree).instance_runtime(&inst);
    let runtime = builders(&ws.db, ws.tree)
        .resolve(Vct::RuntimeBuilderModel, &declared)
        .map_or_else(|| declared.clone(), |d| d.name().to_string());
    let asked = ask_runtime(ws, &declared, instance, &mount_point);
    let failure = asked.err().map(|(rc, tail)| {
        format!("unmount of {mount_point} on {instance} failed (exit {rc}): {tail}")
    });
    receipt.ok = failure.is_none();
    receipt.detail = failure
        .clone()
        .unwrap_or_else(|| format!("unmounted by runtime '{runtime}'"));
    let path = match write_receipt(system, &ws.root, &receipt) {
        Ok(p) => p,
        Err(e) => {
            let mut o = Outcome::failed(FAILED, format!("unmount: {e}"));
            o.err.extend(failure);
            return o;
        }
    };
    match failure {
        None => Outcome::ok(vec![format!(
            "unmount: {mount_point} on {instance} unmounted (runtime '{runtime}'); receipt {}",
            path.display()
        )]),
        Some(f) => Outcome::failed(
            FAILED,
            format!(
                "{f} -- a receipt with ok: false was written ({}); the gate's --require-unmounted refuses the detach until it is unmounted (or unmounted by hand and confirmed with --confirm)",
                path.display()
            ),
        ),
    }
}

/// The instance's runtime unmounts the mount point.
fn ask_runtime(
    ws: &Workspace,
    runtime: &str,
    instance: &str,
    mount_point: &str,
) -> Result<(), (i32, String)> {
    let b = builders(&ws.db, ws.tree);
    let decl = b
        .resolve(Vct::RuntimeBuilderModel, runtime)
        .ok_or_else(|| {
            (
                1,
                format!("instance '{instance}' names runtime '{runtime}', which is not configured"),
            )
        })?;
    let spec = crate::db::Db::registry(&ws.db)
        .model(decl.classification, decl.model)
        .ok_or_else(|| (1, format!("runtime '{runtime}' has no builder")))?;
    (spec.builder)(decl).unmount(&ws.root, instance, mount_point)
}

/// The receipt, written whole or not at all.
fn write_receipt(system: &dyn System, root: &Path, receipt: &Receipt) -> Result<PathBuf, String> {
    let path = receipt_path(root, &receipt.instance, &receipt.storage);
    let text = serde_json::to_string_pretty(receipt).map_err(|e| e.to_string())?;
    system
        .write_atomic(&path, format!("{text}\n").as_bytes(), false)
        .map_err(|e| format!("writing the receipt {}: {e}", path.display()))?;
    Ok(path)
}
