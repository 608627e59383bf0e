//! Whether a planfile is older than what it was planned from. A plan
//! reads every file of its OpenTofu root: the `.tf` and `.tf.json` files,
//! but also the `.tfbackend.hcl`, the `<instance>.user-data` files that
//! `file()` reads, variable files and local modules below it. So every
//! file below the root (the directory the gate was started in) counts,
//! except what is not an input of the plan:
//!
//! - `.terraform/` (what `tofu init` fetched and records, before the plan)
//!   and `terraform.tfstate.d/`;
//! - the local state (`terraform.tfstate`, `terraform.tfstate.backup`,
//!   `.terraform.tfstate.lock.info`): a state that moved on after the
//!   plan is what `tofu apply` itself refuses a saved plan for;
//! - planfiles (`*.tfplan`, the judged one among them): outputs of a plan,
//!   never inputs;
//! - csis's own files there: a begun migration's record
//!   (`<ws>.state-migration.json`), the migration's scratch root
//!   (`.csis-state-probe/`), a write that never reached its rename, and,
//!   should the root hold them, the unmount receipts and state backups.

use std::path::{Component, Path};
use std::time::SystemTime;

use crate::db::system::{System, is_unfinished_write};
use crate::terraform::shown;
use crate::terraform::state_backup::backup_dir;
use crate::terraform::state_migration::{BEGUN_SUFFIX, PROBE_DIR};
use crate::terraform::unmount::receipts_dir;

/// Directories directly in the root that hold no input of the plan.
const NOT_READ_DIRS: [&str; 3] = [".terraform", "terraform.tfstate.d", PROBE_DIR];

/// Files directly in the root that hold no input of the plan (the local
/// state and its lock).
const NOT_READ_FILES: [&str; 3] = [
    "terraform.tfstate",
    "terraform.tfstate.backup",
    ".terraform.tfstate.lock.info",
];

/// Whether `path`, a file below the OpenTofu root `cwd`, is one the plan
/// read (`root`: the configuration root, whose receipts and backups are
/// never inputs).
pub fn read_by_plan(path: &Path, cwd: &Path, root: &Path) -> bool {
    if path.starts_with(receipts_dir(root))
        || path.starts_with(backup_dir(root))
        || is_unfinished_write(path)
    {
        return false;
    }
    let Ok(rel) = path.strip_prefix(cwd) else {
        return false;
    };
    let parts: Vec<_> = rel.components().collect();
    let name = |c: &Component| c.as_os_str().to_string_lossy().to_string();
    match parts.as_slice() {
        [] => false,
        [file] => {
            let file = name(file);
            !(NOT_READ_FILES.contains(&file.as_str())
                || file.ends_with(".tfplan")
                || file.ends_with(BEGUN_SUFFIX))
        }
        [dir, ..] => !NOT_READ_DIRS.contains(&name(dir).as_str()),
    }
}

/// A problem when a file the plan read changed after the planfile was
/// written: the newest such file names it.
pub fn staleness(
    system: &dyn System,
    cwd: &Path,
    root: &Path,
    planfile: &Path,
) -> Result<Option<String>, String> {
    let plan_time = system
        .modified(planfile)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} vanished", planfile.display()))?;
    let mut newest: Option<(SystemTime, std::path::PathBuf)> = None;
    for f in system
        .list_files(cwd)
        .map_err(|e| format!("{}: {e}", cwd.display()))?
    {
        if f == planfile || !read_by_plan(&f, cwd, root) {
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
            "{plan} is stale: {} changed after it was planned (a planfile older than any file of its root is stale; .terraform/, the local state and planfiles aside) -- re-run tofu plan -out={plan}",
            shown(&f, cwd)
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_below_the_root_is_read_but_tofus_and_csiss_own() {
        let root = Path::new("/r");
        let cwd = Path::new("/r/_private/storage/aws/execution");
        let read = |rel: &str| read_by_plan(&cwd.join(rel), cwd, root);
        for input in [
            "main.tf",
            "main.tf.json",
            "ebs.tfbackend.hcl",
            "web.user-data",
            "terraform.tfvars",
            ".terraform.lock.hcl",
            "modules/m/x.tf",
            "files/boot.sh",
        ] {
            assert!(read(input), "{input} is an input");
        }
        for not in [
            ".terraform/providers/p",
            ".terraform/modules/modules.json",
            "terraform.tfstate",
            "terraform.tfstate.backup",
            ".terraform.tfstate.lock.info",
            "terraform.tfstate.d/ws/terraform.tfstate",
            "ebs.tfplan",
            "ebs-teardown-web.tfplan",
            "ebs.state-migration.json",
            ".csis-state-probe/x.tf",
            ".main.tf.csis-tmp-1",
        ] {
            assert!(!read(not), "{not} is not an input");
        }
        // The configuration root's receipts and backups, should the root be
        // above them (a gate started from the configuration root).
        assert!(!read_by_plan(
            Path::new("/r/_private/unmount-receipts/web/data.json"),
            root,
            root
        ));
        assert!(!read_by_plan(
            Path::new("/r/_private/state-backups/ebs.backup-R1.tfstate"),
            root,
            root
        ));
        assert!(read_by_plan(Path::new("/r/cfg/_config.yml"), root, root));
    }
}
