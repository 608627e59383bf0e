//! An instance's EC2 machine, as `verify instance` reaches it: found by the
//! launch tags the instance root writes (`csis_instance`, `csis_runtime`),
//! its power state and boot image from EC2, its commands run through
//! Systems Manager's `AWS-RunShellScript` document (SendCommand, then
//! GetCommandInvocation until the invocation ends: its ResponseCode is the
//! command's exit code).
//!
//! API references: EC2 DescribeInstances, StartInstances, StopInstances;
//! SSM SendCommand and GetCommandInvocation (whose invocation may not
//! exist yet right after SendCommand, and whose instance is not "valid"
//! until its agent has registered after a start).

use aws_sdk_ec2::types::InstanceStateName;
use aws_sdk_ssm::types::CommandInvocationStatus;
use csis_plugin_api::machine_verify::{Machine, Power, Ran};

use crate::reality::{filter, standing};
use crate::sdk::{Clients, said};

/// Seconds between two polls of a starting machine or a running command.
const POLL: u64 = 2;
/// How long a started machine may take to run and register with Systems
/// Manager.
const START_WAIT: u64 = 300;
/// How long one command may run.
const COMMAND_WAIT: u64 = 600;

pub struct Ec2Machine<'a> {
    clients: &'a Clients,
    instance: String,
    /// The EC2 instance id, when a machine of the instance exists.
    id: Option<String>,
}

impl<'a> Ec2Machine<'a> {
    /// The machine of `instance` on `runtime`: the one instance carrying
    /// both launch tags that is not terminated.
    pub fn find(clients: &'a Clients, runtime: &str, instance: &str) -> Result<Self, String> {
        let out = clients
            .block_on(
                clients
                    .ec2
                    .describe_instances()
                    .filters(filter("tag:csis_instance", &[instance]))
                    .filters(filter("tag:csis_runtime", &[runtime]))
                    .filters(standing())
                    .send(),
            )
            .map_err(|e| format!("EC2 DescribeInstances: {}", said(e)))?;
        let mut ids: Vec<String> = out
            .reservations()
            .iter()
            .flat_map(|r| r.instances())
            .filter_map(|i| i.instance_id().map(str::to_string))
            .collect();
        ids.sort();
        if ids.len() > 1 {
            return Err(format!(
                "more than one EC2 instance carries the launch tags of instance '{instance}' ({}): terminate the strays, then verify again",
                ids.join(", ")
            ));
        }
        Ok(Ec2Machine {
            clients,
            instance: instance.to_string(),
            id: ids.pop(),
        })
    }

    fn id(&self) -> Result<&str, String> {
        self.id
            .as_deref()
            .ok_or_else(|| format!("no EC2 instance of instance '{}'", self.instance))
    }

    fn described(&self) -> Result<aws_sdk_ec2::types::Instance, String> {
        let id = self.id()?;
        let out = self
            .clients
            .block_on(
                self.clients
                    .ec2
                    .describe_instances()
                    .instance_ids(id)
                    .send(),
            )
            .map_err(|e| format!("EC2 DescribeInstances {id}: {}", said(e)))?;
        out.reservations()
            .iter()
            .flat_map(|r| r.instances())
            .next()
            .cloned()
            .ok_or_else(|| format!("EC2 no longer knows instance {id}"))
    }

    /// Send one command; `None` while the instance's agent is not
    /// registered (SSM's InvalidInstanceId).
    fn send(&self, line: &str) -> Result<Option<String>, String> {
        let id = self.id()?;
        let sent = self.clients.block_on(
            self.clients
                .ssm
                .send_command()
                .instance_ids(id)
                .document_name("AWS-RunShellScript")
                .parameters("commands", vec![line.to_string()])
                .comment(format!("csis, for instance {}", self.instance))
                .send(),
        );
        match sent {
            Ok(out) => out
                .command()
                .and_then(|c| c.command_id())
                .map(|c| Some(c.to_string()))
                .ok_or_else(|| "SSM SendCommand answered without a command id".to_string()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_invalid_instance_id()) =>
            {
                Ok(None)
            }
            Err(e) => Err(format!("SSM SendCommand to {id}: {}", said(e))),
        }
    }

    /// Wait for one command's invocation to end.
    fn wait(&self, command: &str) -> Result<Ran, String> {
        let id = self.id()?;
        let mut waited = 0;
        loop {
            let got = self.clients.block_on(
                self.clients
                    .ssm
                    .get_command_invocation()
                    .command_id(command)
                    .instance_id(id)
                    .send(),
            );
            let pending = match got {
                Ok(inv) => match inv.status() {
                    Some(
                        CommandInvocationStatus::Pending
                        | CommandInvocationStatus::InProgress
                        | CommandInvocationStatus::Delayed,
                    ) => true,
                    Some(CommandInvocationStatus::Success) => {
                        return Ok(Ran {
                            code: Some(inv.response_code()),
                            stderr: inv.standard_error_content().unwrap_or_default().into(),
                        });
                    }
                    other => {
                        // Failed carries the script's exit code; TimedOut,
                        // Cancelled and the rest never finished it.
                        let finished = other == Some(&CommandInvocationStatus::Failed)
                            && inv.response_code() >= 0;
                        let status = other.map_or("no status", |s| s.as_str());
                        let stderr = inv.standard_error_content().unwrap_or_default();
                        return Ok(Ran {
                            code: finished.then(|| inv.response_code()),
                            stderr: if stderr.trim().is_empty() {
                                format!("SSM says {status}")
                            } else {
                                stderr.to_string()
                            },
                        });
                    }
                },
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|s| s.is_invocation_does_not_exist()) =>
                {
                    true
                }
                Err(e) => {
                    return Err(format!(
                        "SSM GetCommandInvocation {command} on {id}: {}",
                        said(e)
                    ));
                }
            };
            if pending && waited >= COMMAND_WAIT {
                return Ok(Ran {
                    code: None,
                    stderr: format!("SSM command {command} still running after {COMMAND_WAIT} s"),
                });
            }
            self.clients.sleep(POLL);
            waited += POLL;
        }
    }
}

impl Machine for Ec2Machine<'_> {
    fn describe(&self) -> String {
        format!("EC2 instance {}", self.id.as_deref().unwrap_or("(none)"))
    }

    fn power(&mut self) -> Result<Power, String> {
        if self.id.is_none() {
            return Ok(Power::Absent);
        }
        let state = self.described()?.state().and_then(|s| s.name()).cloned();
        Ok(match state {
            Some(InstanceStateName::Running) => Power::Running,
            Some(InstanceStateName::Stopped) => Power::Stopped,
            Some(InstanceStateName::Terminated | InstanceStateName::ShuttingDown) => Power::Absent,
            Some(other) => Power::Other(other.as_str().to_string()),
            None => Power::Other("in no state EC2 reports".into()),
        })
    }

    fn start(&mut self) -> Result<(), String> {
        let id = self.id()?.to_string();
        self.clients
            .block_on(self.clients.ec2.start_instances().instance_ids(&id).send())
            .map_err(|e| format!("EC2 StartInstances {id}: {}", said(e)))?;
        let mut waited = 0;
        while self.power()? != Power::Running {
            if waited >= START_WAIT {
                return Err(format!(
                    "{id} is not running {START_WAIT} s after its start"
                ));
            }
            self.clients.sleep(POLL);
            waited += POLL;
        }
        Ok(())
    }

    fn stop(&mut self) -> Result<(), String> {
        let id = self.id()?.to_string();
        self.clients
            .block_on(self.clients.ec2.stop_instances().instance_ids(&id).send())
            .map(|_| ())
            .map_err(|e| format!("EC2 StopInstances {id}: {}", said(e)))
    }

    fn boot_image(&mut self) -> Result<String, String> {
        let described = self.described()?;
        described
            .image_id()
            .map(str::to_string)
            .ok_or_else(|| format!("EC2 names no image for {}", self.describe()))
    }

    /// One command at a time, in order, as the checks run elsewhere: a
    /// post-bake command may depend on what the one before it left.
    fn run(&mut self, lines: &[String]) -> Result<Vec<Ran>, String> {
        let mut answers = Vec::new();
        for line in lines {
            let mut waited = 0;
            let command = loop {
                if let Some(c) = self.send(line)? {
                    break c;
                }
                if waited >= START_WAIT {
                    return Err(format!(
                        "{} has not registered with Systems Manager after {START_WAIT} s: is its SSM agent running, with an instance profile that allows it (AmazonSSMManagedInstanceCore)?",
                        self.describe()
                    ));
                }
                self.clients.sleep(POLL);
                waited += POLL;
            };
            answers.push(self.wait(&command)?);
        }
        Ok(answers)
    }
}
