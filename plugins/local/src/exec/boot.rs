//! A local instance's first boot, done as a machine does it: instance-setup
//! applies the cloud-config (`setup.rs`), then the image's csis first-boot
//! unit runs the launch script the cloud-config wrote, once. Both run
//! inside the instance's root in the sandbox, with its storages bound at
//! their mount points and its hostname set.

use std::path::{Path, PathBuf};

use csis_plugin_api::first_boot::{
    BOOT_COMMAND, LAUNCH_APPLIED, LAUNCH_SCRIPT, UNIT_PATH, UNIT_WANTS_LINK,
};
use serde_json::Value as J;

use super::sandbox::{Sandbox, exit_text, resolve_inside};
use super::setup::setup_script;

/// What one instance boots with.
pub(super) struct Machine<'a> {
    pub name: &'a str,
    pub root: &'a Path,
    pub hostname: &'a str,
    /// Storage directory on the host, mount point inside.
    pub mounts: Vec<(PathBuf, String)>,
    /// The runtime's `network: true`.
    pub network: bool,
}

/// Boot `m` with its cloud-config `doc`: setup, then the first-boot unit.
pub(super) fn boot(m: &Machine, doc: &J) -> Result<(), String> {
    let what = format!("instance '{}'", m.name);
    let sandbox = m.mounts.iter().fold(
        Sandbox::new(m.root).hostname(m.hostname).network(m.network),
        |s, (host, at)| s.bind_dir(host, at),
    );
    let setup = setup_script(doc).map_err(|e| format!("{what}: {e}"))?;
    match sandbox.run_bash(&what, &setup)? {
        Some(0) => {}
        code => {
            return Err(format!(
                "{what}: applying its cloud-config failed (exit {})",
                exit_text(code)
            ));
        }
    }
    if resolve_inside(m.root, UNIT_PATH).is_none()
        || resolve_inside(m.root, UNIT_WANTS_LINK).is_none()
    {
        return Err(format!(
            "{what}: its image has no csis first-boot unit ({UNIT_PATH}, enabled), so its launch script would never run; bake its base image again (every base bake installs the unit)"
        ));
    }
    // The unit's conditions: a launch script, not yet applied.
    if resolve_inside(m.root, LAUNCH_SCRIPT).is_none()
        || resolve_inside(m.root, LAUNCH_APPLIED).is_some()
    {
        return Ok(());
    }
    match sandbox.run(&what, &BOOT_COMMAND)? {
        Some(0) => Ok(()),
        code => Err(format!(
            "{what}: its launch script failed at first boot (exit {})",
            exit_text(code)
        )),
    }
}
