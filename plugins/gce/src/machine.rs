//! An instance's Compute Engine machine, as `verify instance` reaches it,
//! through the Google Cloud CLI (`gcloud` on PATH, logged in as the
//! operator or the CI's workload): `compute instances describe` for its
//! power state and boot disk, `compute disks describe` for the image that
//! disk was made from, `compute instances start|stop`, and `compute ssh
//! --tunnel-through-iap` for each command (the runtime's `iap` session:
//! no external address and no open port 22 needed, access governed by
//! IAM and OS Login). ssh exits with the remote command's status, and 255
//! when it could not connect.
//!
//! References: the gcloud reference pages of `compute instances
//! describe|start|stop`, `compute disks describe` and `compute ssh`;
//! Compute Engine's instance lifecycle (PROVISIONING, STAGING, RUNNING,
//! STOPPING, SUSPENDING, SUSPENDED, REPAIRING, TERMINATED).

use std::process::Command;

use csis_plugin_api::image_tests::shell_quote;
use csis_plugin_api::machine_verify::{Machine, Power, Ran};
use serde_json::Value as J;

/// ssh's own exit status when the connection, not the command, failed.
const SSH_FAILED: i32 = 255;

pub struct GceMachine {
    project: String,
    zone: String,
    name: String,
    described: Option<J>,
}

impl GceMachine {
    pub fn new(project: &str, zone: &str, name: &str) -> GceMachine {
        GceMachine {
            project: project.to_string(),
            zone: zone.to_string(),
            name: name.to_string(),
            described: None,
        }
    }

    fn where_args(&self) -> [String; 2] {
        [
            format!("--project={}", self.project),
            format!("--zone={}", self.zone),
        ]
    }

    /// `gcloud ARGS`: its exit code, stdout and stderr.
    fn gcloud(&self, args: &[String]) -> Result<(Option<i32>, String, String), String> {
        let out = Command::new("gcloud")
            .args(args)
            .output()
            .map_err(|e| format!("could not run gcloud (the Google Cloud CLI) on PATH: {e}"))?;
        Ok((
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// `gcloud ARGS --format=json`, parsed; `Ok(None)` when gcloud says
    /// the resource was not found.
    fn describe_json(&self, args: &[String]) -> Result<Option<J>, String> {
        let mut args = args.to_vec();
        args.push("--format=json".into());
        let (code, stdout, stderr) = self.gcloud(&args)?;
        if code == Some(0) {
            return serde_json::from_str(&stdout)
                .map(Some)
                .map_err(|e| format!("gcloud {}: not JSON: {e}", args.join(" ")));
        }
        if stderr.contains("was not found") {
            return Ok(None);
        }
        Err(format!(
            "gcloud {} exited {}: {}",
            args.join(" "),
            code.map_or("by a signal".into(), |c| c.to_string()),
            stderr.trim()
        ))
    }

    fn instance(&mut self) -> Result<Option<J>, String> {
        let mut args = vec![
            "compute".to_string(),
            "instances".into(),
            "describe".into(),
            self.name.clone(),
        ];
        args.extend(self.where_args());
        let got = self.describe_json(&args)?;
        self.described = got.clone();
        Ok(got)
    }

    fn power_change(&self, verb: &str) -> Result<(), String> {
        let mut args = vec![
            "compute".to_string(),
            "instances".into(),
            verb.into(),
            self.name.clone(),
        ];
        args.extend(self.where_args());
        match self.gcloud(&args)? {
            (Some(0), ..) => Ok(()),
            (code, _, stderr) => Err(format!(
                "gcloud compute instances {verb} {} exited {}: {}",
                self.name,
                code.map_or("by a signal".into(), |c| c.to_string()),
                stderr.trim()
            )),
        }
    }
}

impl Machine for GceMachine {
    fn describe(&self) -> String {
        format!(
            "GCE instance {} in {}/{}",
            self.name, self.project, self.zone
        )
    }

    fn power(&mut self) -> Result<Power, String> {
        let Some(instance) = self.instance()? else {
            return Ok(Power::Absent);
        };
        Ok(
            match instance.get("status").and_then(J::as_str).unwrap_or("") {
                "RUNNING" => Power::Running,
                // A TERMINATED instance is a stopped one that keeps its
                // disks (Compute Engine's word for it).
                "TERMINATED" | "STOPPED" => Power::Stopped,
                "" => Power::Other("in no state gcloud reports".into()),
                other => Power::Other(other.to_ascii_lowercase()),
            },
        )
    }

    fn start(&mut self) -> Result<(), String> {
        self.power_change("start")
    }

    fn stop(&mut self) -> Result<(), String> {
        self.power_change("stop")
    }

    fn boot_image(&mut self) -> Result<String, String> {
        let instance = match self.described.clone() {
            Some(i) => i,
            None => self
                .instance()?
                .ok_or_else(|| format!("{} no longer exists", self.describe()))?,
        };
        let disk = instance
            .get("disks")
            .and_then(J::as_array)
            .into_iter()
            .flatten()
            .find(|d| d.get("boot").and_then(J::as_bool) == Some(true))
            .and_then(|d| d.get("source"))
            .and_then(J::as_str)
            .ok_or_else(|| format!("gcloud names no boot disk of {}", self.describe()))?;
        let args = [
            "compute".to_string(),
            "disks".into(),
            "describe".into(),
            disk.to_string(),
        ];
        let described = self
            .describe_json(&args)?
            .ok_or_else(|| format!("the boot disk {disk} was not found"))?;
        described
            .get("sourceImage")
            .and_then(J::as_str)
            .and_then(|i| i.rsplit('/').next())
            .filter(|i| !i.is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("the boot disk {disk} names no source image"))
    }

    fn run(&mut self, lines: &[String]) -> Result<Vec<Ran>, String> {
        let mut answers = Vec::new();
        for line in lines {
            let mut args = vec![
                "compute".to_string(),
                "ssh".into(),
                self.name.clone(),
                "--tunnel-through-iap".into(),
                "--quiet".into(),
            ];
            args.extend(self.where_args());
            args.push(format!("--command=sudo -n sh -c {}", shell_quote(line)));
            let (code, _, stderr) = self.gcloud(&args)?;
            if code == Some(SSH_FAILED) {
                return Err(format!(
                    "gcloud compute ssh could not reach {} through IAP: {}",
                    self.describe(),
                    stderr.trim()
                ));
            }
            answers.push(Ran { code, stderr });
        }
        Ok(answers)
    }
}
