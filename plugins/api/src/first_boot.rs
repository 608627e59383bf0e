//! The tooling every base image carries so that its instances' launch
//! script runs at first boot (spec: "an image carries all tooling; launch
//! parameters carry only the bindings").
//!
//! An instance's user-data is a `#cloud-config` document whose
//! write_files puts the launch script at [`LAUNCH_SCRIPT`] (storages,
//! the group's subtree, the instance's own `userdata` lines, the
//! [`LAUNCH_APPLIED`] marker). Instance-setup runs no script (spec 004), so
//! the image runs it: a dormant systemd unit, installed by every base bake
//! on every runtime, ordered after cloud-init and instance-setup, that runs
//! the script once when it is present and not yet applied. On the local
//! runtime an instance's boot runs the same unit's command inside the
//! instance's root.

/// Where the instance's user-data puts its launch script.
pub const LAUNCH_SCRIPT: &str = "/var/lib/csis/launch.sh";

/// Left by the launch script when it has run: the unit's guard against a
/// second run.
pub const LAUNCH_APPLIED: &str = "/var/lib/csis/launch-applied";

/// The unit's path in the image.
pub const UNIT_PATH: &str = "/etc/systemd/system/csis-launch.service";

/// The link that enables the unit (what `systemctl enable` makes for its
/// `WantedBy=`), written directly so that a bake needs no running systemd.
pub const UNIT_WANTS_LINK: &str = "/etc/systemd/system/multi-user.target.wants/csis-launch.service";

/// What the unit runs, and what a local instance's boot runs.
pub const BOOT_COMMAND: [&str; 2] = ["/bin/bash", LAUNCH_SCRIPT];

/// The unit file.
pub fn unit_text() -> String {
    format!(
        "# Installed by csis in every base image: runs the instance's launch\n\
         # script (written by its user-data) once, at first boot.\n\
         [Unit]\n\
         Description=csis launch: storages, group subtree and user-data of this instance\n\
         After=network-online.target cloud-final.service instance-setup.service\n\
         Wants=network-online.target\n\
         ConditionPathExists={LAUNCH_SCRIPT}\n\
         ConditionPathExists=!{LAUNCH_APPLIED}\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         ExecStart={} {}\n\
         RemainAfterExit=yes\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        BOOT_COMMAND[0], BOOT_COMMAND[1]
    )
}

/// Shell lines that install and enable the unit, run as root inside the
/// image (a packer provisioner) with `CSIS_IMAGE_ROOT` empty, or from
/// outside with it naming the image's root.
pub fn install_lines() -> Vec<String> {
    let dir = UNIT_WANTS_LINK
        .rsplit_once('/')
        .map_or(UNIT_WANTS_LINK, |(d, _)| d);
    vec![
        format!("mkdir -p \"$CSIS_IMAGE_ROOT{dir}\" \"$CSIS_IMAGE_ROOT/var/lib/csis\""),
        format!(
            "printf '%s' {} > \"$CSIS_IMAGE_ROOT{UNIT_PATH}\"",
            crate::image_tests::shell_quote(&unit_text())
        ),
        format!("chmod 0644 \"$CSIS_IMAGE_ROOT{UNIT_PATH}\""),
        format!("ln -sf {UNIT_PATH} \"$CSIS_IMAGE_ROOT{UNIT_WANTS_LINK}\""),
    ]
}

/// What [`installed_assertion`] checks, as a build's record lists it.
pub const INSTALLED_CHECK: &str = "csis first-boot unit installed";

/// The in-bake assertion that the unit is installed and enabled.
pub fn installed_assertion() -> String {
    format!(
        "if ! {{ test -f {UNIT_PATH} && test -L {UNIT_WANTS_LINK}; }}; then echo {} >&2; exit 1; fi",
        crate::image_tests::shell_quote(
            "in-bake test failed: the csis first-boot unit (csis-launch.service) is not installed"
        )
    )
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the test lays an image root out by hand
mod tests {
    use super::*;

    #[test]
    fn the_install_lines_write_the_unit_and_its_link_and_the_assertion_checks_both() {
        let root = std::env::temp_dir().join(format!("csis-first-boot-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let check = installed_assertion().replace(" /etc", &format!(" {}/etc", root.display()));
        let sh = |s: &str| {
            std::process::Command::new("sh")
                .args(["-c", s])
                .env("CSIS_IMAGE_ROOT", &root)
                .output()
                .unwrap()
        };
        let before = sh(&check);
        assert_eq!(before.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&before.stderr),
            "in-bake test failed: the csis first-boot unit (csis-launch.service) is not installed\n"
        );
        let installed = sh(&install_lines().join("\n"));
        assert!(installed.status.success(), "{installed:?}");
        let unit = std::fs::read_to_string(root.join(UNIT_PATH.trim_start_matches('/'))).unwrap();
        assert_eq!(unit, unit_text());
        assert!(unit.contains("ExecStart=/bin/bash /var/lib/csis/launch.sh\n"));
        let link = root.join(UNIT_WANTS_LINK.trim_start_matches('/'));
        assert_eq!(
            std::fs::read_link(link).unwrap(),
            std::path::Path::new(UNIT_PATH)
        );
        assert!(sh(&check).status.success());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
