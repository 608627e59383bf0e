//! One command executed as a process, from a lifecycle's directory (the
//! run-now commands) or its private mirror (the deferred ones), with the
//! environment every command sees.

use std::path::PathBuf;

use crate::db::system::{Process, ProcessOutput};
use crate::load::builders::builders;
use crate::run::Level;
use crate::run::script;
use crate::run::steps::Runner;

impl Runner<'_> {
    /// The environment every executed command sees.
    fn command_env(&self, lifecycle: &str) -> Vec<(String, String)> {
        let lock = self
            .req
            .lock_token
            .iter()
            .map(|t| (crate::db::lock::HELD_ENV.to_string(), t.clone()));
        let mut env = vec![
            (
                "CSIS_ROOT".into(),
                self.ws.root.to_string_lossy().to_string(),
            ),
            ("CSIS".into(), self.req.csis.to_string_lossy().to_string()),
            ("CSIS_RUN_ID".into(), self.run_id.clone()),
            ("CSIS_LIFECYCLE".into(), lifecycle.to_string()),
        ];
        env.extend(lock);
        env.extend(self.req.carried_env.iter().cloned());
        env
    }

    /// One command as the process that runs it from `dir`, and its shell
    /// line.
    pub(super) fn process(
        &self,
        lifecycle: &str,
        cmd: &csis_plugin_api::Command,
        dir: &std::path::Path,
    ) -> Result<(String, Process), String> {
        let b = builders(&self.ws.db, self.ws.tree);
        let line = script::command_line(cmd, &b.executables)?;
        let (binary, args) = script::argv(cmd, &b.executables)?;
        let env = self.command_env(lifecycle);
        let args = args.iter().map(|a| script::expand(a, &env)).collect();
        let dir = dir.to_path_buf();
        let process = Process {
            program: binary
                .map(PathBuf::from)
                .unwrap_or_else(|| self.req.csis.clone()),
            args,
            cwd: match &cmd.working_directory {
                Some(d) => dir.join(d),
                None => dir,
            },
            env,
        };
        Ok((line, process))
    }

    /// Execute one command from the lifecycle directory: its shell line and
    /// what it printed.
    pub(super) fn execute(
        &self,
        lifecycle: &str,
        cmd: &csis_plugin_api::Command,
        dir: &std::path::Path,
    ) -> Result<(String, ProcessOutput), String> {
        let (line, process) = self.process(lifecycle, cmd, dir)?;
        let out = self
            .system
            .run(&process)
            .map_err(|e| format!("[{lifecycle}] command failed: {line}: {e}"))?;
        Ok((line, out))
    }

    /// Execute one command as [`Runner::execute`] does, logging each line
    /// it prints, stdout and stderr alike, as `[at] line` the moment it
    /// comes.
    pub(super) fn execute_streaming(
        &mut self,
        lifecycle: &str,
        at: &str,
        cmd: &csis_plugin_api::Command,
        dir: &std::path::Path,
    ) -> Result<(String, ProcessOutput), String> {
        let (line, process) = self.process(lifecycle, cmd, dir)?;
        let system = self.system;
        let log = &mut *self.log;
        let out = system
            .run_streaming(&process, &mut |_, l| {
                log.line(Level::Info, format!("[{at}] {l}"))
            })
            .map_err(|e| format!("[{lifecycle}] command failed: {line}: {e}"))?;
        Ok((line, out))
    }
}
