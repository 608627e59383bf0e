//! `csis state backup --workspace <ws> [--tofu <bin>]`: the state a runner
//! keeps before any `tofu state rm` it decided on, pulled from the
//! initialised root it entered into
//! `_private/state-backups/<ws>.backup-<run>.tfstate` (spec history
//! 2026-09-23: a backup run from the configuration root pulled nothing and
//! let the removal proceed). A directory that is not an initialised root,
//! a pull that fails and a location holding no state each refuse (exit 1)
//! and so stop the runner before anything leaves state.

use std::path::{Path, PathBuf};

use crate::db::system::System;
use crate::terraform::{
    FAILED, Outcome, PulledState, Tofu, confined_dir, private_dir, read_pulled,
    run_id_in_file_name, write_new,
};

/// One invocation.
pub struct StateBackup<'a> {
    pub root: &'a Path,
    pub cwd: &'a Path,
    pub workspace: &'a str,
    pub tofu: &'a str,
}

/// Where a workspace's backups go, relative to the root.
pub const BACKUP_DIR: &str = "_private/state-backups";

/// Where a workspace's backups go.
pub fn backup_dir(root: &Path) -> PathBuf {
    private_dir(root).join("state-backups")
}

/// Where a backup is written, and under which name (`<ws>.backup-<run>`):
/// refused when the workspace or the run id would make the name a path,
/// or the backup directory is a symlink out of the root (the confinement
/// rule, [`csis_model::confine`]), so a backup is never written outside
/// the tree.
pub fn backup_target(
    system: &dyn System,
    root: &Path,
    workspace: &str,
) -> Result<(PathBuf, String), String> {
    if let Some(problem) = csis_model::confine::file_name_problem("--workspace", workspace) {
        return Err(problem);
    }
    let run = run_id_in_file_name(system)?;
    let dir = confined_dir(system, root, "the backup directory", BACKUP_DIR)?;
    Ok((dir, format!("{workspace}.backup-{run}")))
}

pub fn state_backup(system: &dyn System, req: &StateBackup) -> Outcome {
    match backup(system, req) {
        Ok((state, path)) => Outcome::ok(vec![format!(
            "state backup for workspace '{}': serial {}, {} resource(s) kept in {}",
            req.workspace,
            state.serial,
            state.resources,
            path.display()
        )]),
        Err(e) => Outcome::failed(FAILED, e),
    }
}

/// Pull and keep the workspace's state: the state and where it was kept,
/// or the refusal.
pub fn backup(system: &dyn System, req: &StateBackup) -> Result<(PulledState, PathBuf), String> {
    let ws = req.workspace;
    let (dir, stem) = backup_target(system, req.root, ws).map_err(|e| {
        format!("state backup for workspace '{ws}' REFUSED: {e}; nothing is written and nothing is removed from state")
    })?;
    if !system.is_dir(&req.cwd.join(".terraform")) {
        return Err(format!(
            "state backup for workspace '{ws}' REFUSED: {} is not an initialised terraform root; nothing is removed from state -- initialise the root against its location (tofu init) and rerun",
            req.cwd.display()
        ));
    }
    let tofu = Tofu {
        system,
        binary: req.tofu,
        cwd: req.cwd,
    };
    let failed = |e: String| {
        format!("state backup for workspace '{ws}' FAILED; nothing is removed from state: {e}")
    };
    let pulled = tofu.run(&["state", "pull"]).map_err(failed)?;
    let state = read_pulled(&pulled).map_err(failed)?;
    let Some(state) = state.filter(|s| s.resources > 0) else {
        return Err(format!(
            "state backup for workspace '{ws}' REFUSED: the location holds no state, yet a state rm is due -- initialise the root against its location and rerun"
        ));
    };
    let path = write_new(system, &dir, &stem, ".tfstate", state.text.as_bytes()).map_err(failed)?;
    Ok((state, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::MemorySystem;

    const STATE: &str =
        r#"{"version":4,"serial":36,"lineage":"l-1","resources":[{"type":"aws_instance"}]}"#;

    fn req<'a>(cwd: &'a Path) -> StateBackup<'a> {
        StateBackup {
            root: Path::new("/r"),
            cwd,
            workspace: "vm",
            tofu: "tofu",
        }
    }

    #[test]
    fn the_backup_keeps_the_pulled_state_under_the_private_root_and_refuses_everything_else() {
        let sys = MemorySystem::new().with_env("CSIS_RUN_ID", "R1");
        let cwd = Path::new("/r/_private/instance-image/vm/execution");
        let o = state_backup(&sys, &req(cwd));
        assert_eq!(
            (o.code, o.err),
            (1, vec!["state backup for workspace 'vm' REFUSED: /r/_private/instance-image/vm/execution is not an initialised terraform root; nothing is removed from state -- initialise the root against its location (tofu init) and rerun".to_string()])
        );
        sys.write(&cwd.join(".terraform/terraform.tfstate"), "{}");
        sys.answer(
            "tofu state pull",
            1,
            "",
            "Error: Failed to load state: AccessDenied\n",
        );
        assert_eq!(
            state_backup(&sys, &req(cwd)).err,
            [
                "state backup for workspace 'vm' FAILED; nothing is removed from state: 'tofu state pull' exited 1: Error: Failed to load state: AccessDenied"
            ]
        );
        sys.answer("tofu state pull", 0, "", "");
        assert_eq!(
            state_backup(&sys, &req(cwd)).err,
            [
                "state backup for workspace 'vm' REFUSED: the location holds no state, yet a state rm is due -- initialise the root against its location and rerun"
            ]
        );
        sys.answer("tofu state pull", 0, STATE, "");
        let o = state_backup(&sys, &req(cwd));
        assert_eq!(
            o.out,
            [
                "state backup for workspace 'vm': serial 36, 1 resource(s) kept in /r/_private/state-backups/vm.backup-R1.tfstate"
            ]
        );
        assert_eq!(
            sys.read(Path::new("/r/_private/state-backups/vm.backup-R1.tfstate")),
            STATE
        );
        // A second backup in the same run never overwrites the first.
        let o = state_backup(&sys, &req(cwd));
        assert!(
            o.out[0].ends_with("/r/_private/state-backups/vm.backup-R1-2.tfstate"),
            "{o:?}"
        );
    }

    /// A workspace or run id that would make the backup's name a path is
    /// refused before tofu is asked, naming the key; nothing is written.
    #[test]
    fn a_workspace_or_run_id_that_makes_the_name_a_path_is_refused_unasked() {
        let cwd = Path::new("/r/_private/instance-image/vm/execution");
        for (ws, run, key) in [
            ("../../../x", "R1", "--workspace '../../../x'"),
            ("/tmp/x", "R1", "--workspace '/tmp/x'"),
            ("..", "R1", "--workspace '..'"),
            ("vm", "R1/../../x", "CSIS_RUN_ID 'R1/../../x'"),
        ] {
            let sys = MemorySystem::new().with_env("CSIS_RUN_ID", run);
            sys.write(&cwd.join(".terraform/terraform.tfstate"), "{}");
            sys.answer("tofu state pull", 0, STATE, "");
            let o = state_backup(
                &sys,
                &StateBackup {
                    workspace: ws,
                    ..req(cwd)
                },
            );
            assert_eq!(o.code, 1);
            let prefix = format!("state backup for workspace '{ws}' REFUSED: {key} ");
            assert!(o.err[0].starts_with(&prefix), "{o:?}");
            assert!(
                o.err[0].ends_with("; nothing is written and nothing is removed from state"),
                "{o:?}"
            );
            // Nothing but the root's own file: no backup anywhere.
            assert_eq!(
                sys.list_files(Path::new("/")).unwrap(),
                [cwd.join(".terraform/terraform.tfstate")]
            );
        }
    }
}
