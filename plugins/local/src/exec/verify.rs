//! `csis verify instance` on the local runtime: the machine is the
//! instance's root in the store. Its checks, in order: the machine exists;
//! it runs the build it is pinned to (its `instance.json`); each declared
//! storage is mounted at its mount point (the launch's link to the
//! storage); each mount point the post-bake tests name holds one; then
//! each post-bake assertion, run inside the instance's root in the sandbox
//! with its storages bound, as a check on a real machine would run there.
//!
//! A machine whose `power` file says `stopped` is switched off: nothing is
//! checked (the local runtime cannot start one), and the verification is
//! a skip.

use std::fs;
use std::path::Path;

use csis_plugin_api::machine_verify::{boot_image_check, fail, failure_detail, pass};
use csis_plugin_api::{Verdict, VerifyRequest};
use serde_json::Value as J;

use super::sandbox::Sandbox;
use super::store::{confined_link, entry, io_err};

pub fn verify(store: &Path, network: bool, req: &VerifyRequest) -> Result<Verdict, String> {
    let dir = entry(store, "instances", "instance name", &req.instance)?;
    let root = dir.join("root");
    if !root.is_dir() {
        return Ok(Verdict::Checked(vec![fail(
            "machine",
            format!(
                "no machine of instance '{}' in the store {}: launch it first",
                req.instance,
                store.display()
            ),
        )]));
    }
    if fs::read_to_string(dir.join("power")).is_ok_and(|p| p.trim() == "stopped") {
        return Ok(Verdict::Stopped);
    }
    let record = dir.join("instance.json");
    let text = fs::read_to_string(&record).map_err(io_err(&record))?;
    let record: J =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", record.display()))?;
    let mut out = vec![pass("machine", format!("{}", root.display()))];
    let running = record.get("build").and_then(J::as_str).unwrap_or_default();
    out.push(boot_image_check(running, req));
    let mut mounted = Vec::new();
    let mut sandbox = Sandbox::new(&root)
        .network(network)
        .hostname(field(&record, "hostname").unwrap_or(&req.instance));
    for s in record
        .pointer("/spec/storages")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(name), Some(at)) = (field(s, "name"), field(s, "mount_point")) else {
            continue;
        };
        let check = format!("mount {at}");
        let storage = entry(store, "storages", "storage name", name)?;
        let link = confined_link(
            &dir.join("mounts"),
            "mount point",
            at.trim_start_matches('/'),
        )?;
        let holds = fs::read_link(&link).is_ok_and(|t| t == storage) && storage.is_dir();
        if holds {
            out.push(pass(&check, format!("storage {name}")));
            mounted.push(at.to_string());
            sandbox = sandbox.bind_dir(&storage, at);
        } else {
            out.push(fail(&check, format!("storage {name} is not mounted there")));
        }
    }
    for at in &req.mounts {
        if !mounted.contains(at) {
            out.push(fail(
                &format!("post-bake mount {at}"),
                "no storage is mounted there".into(),
            ));
        }
    }
    let what = format!("verifying instance '{}'", req.instance);
    for c in &req.post_bake {
        let (code, stderr) = sandbox.output_bash(&what, &c.line)?;
        out.push(match code {
            Some(0) => pass(&format!("post-bake {}", c.what), String::new()),
            _ => fail(&format!("post-bake {}", c.what), failure_detail(&stderr)),
        });
    }
    Ok(Verdict::Checked(out))
}

fn field<'a>(v: &'a J, key: &str) -> Option<&'a str> {
    v.get(key)
        .or_else(|| v.pointer(&format!("/spec/{key}")))
        .and_then(J::as_str)
}
