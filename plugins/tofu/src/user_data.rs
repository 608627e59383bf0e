//! The cloud-config user-data a tofu instance boots with: its canonical
//! hostname, its image group's accounts (the same code the local runtime
//! uses), and two files: the launch script (the spec's
//! user_data_template: hostname, each block storage waited for, formatted
//! when blank, put in fstab by UUID and mounted, the group's subtree with
//! the storage's share mode, the instance's own `userdata` lines, the
//! marker /var/lib/csis/launch-applied) and /var/lib/csis/instance.

use csis_plugin_api::HookContext;
use csis_plugin_api::cloud_config::{UserData, WriteFile};

/// One block storage the launch script mounts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub storage: String,
    pub mount_point: String,
    /// The device the attachment asks for (`/dev/xvdf`; on GCE the by-id
    /// path itself).
    pub device: String,
    /// The stable path: on Nitro an EBS volume never appears as
    /// /dev/xvdf, only as an NVMe device whose by-id name carries the
    /// volume id (entered by terraform reference); on GCE
    /// /dev/disk/by-id/google-<device name>.
    pub by_id: String,
    pub share_mode: String,
}

/// What one instance's document is made of.
pub struct Launch<'a> {
    pub instance: &'a str,
    pub builder_model: &'a str,
    pub image: &'a str,
    pub group: Option<&'a str>,
    pub hostname: &'a str,
    pub userdata: &'a str,
    pub mounts: &'a [Mount],
}

/// A word as a POSIX shell reads it back unchanged.
fn sh(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The launch script.
pub fn script(l: &Launch<'_>) -> String {
    let mut s = format!(
        "#!/usr/bin/env bash\n# csis user-data for instance {} ({})\nset -euo pipefail\nhostnamectl set-hostname {host} || hostname {host}\n",
        l.instance,
        l.builder_model,
        host = sh(l.hostname)
    );
    if !l.mounts.is_empty() {
        s.push_str(
            "# csis_mount STABLE REQUESTED STORAGE MOUNT_POINT: wait for the device under either name, format it when blank, mount it by UUID.\n\
             csis_mount() {\n  dev=\"\"\n  for _ in $(seq 1 60); do\n    for d in \"$1\" \"$2\"; do\n      if [ -b \"$d\" ]; then dev=\"$d\"; break 2; fi\n    done\n    sleep 5\n  done\n  if [ -z \"$dev\" ]; then echo \"csis: storage $3: neither $1 nor $2 appeared\" >&2; exit 1; fi\n  blkid \"$dev\" >/dev/null 2>&1 || mkfs.ext4 -q \"$dev\"\n  uuid=\"$(blkid -s UUID -o value \"$dev\")\"\n  mkdir -p \"$4\"\n  grep -q \"^UUID=$uuid \" /etc/fstab || echo \"UUID=$uuid $4 ext4 defaults,nofail 0 2\" >> /etc/fstab\n  mountpoint -q \"$4\" || mount \"$4\"\n}\n",
        );
        for m in l.mounts {
            s.push_str(&format!(
                "csis_mount {} {} {} {}\n",
                sh(&m.by_id),
                sh(&m.device),
                sh(&m.storage),
                sh(&m.mount_point)
            ));
            if let Some(g) = l.group {
                s.push_str(&format!(
                    "install -d -m {} -g {} {}\n",
                    sh(&m.share_mode),
                    sh(g),
                    sh(&format!("{}/{g}", m.mount_point.trim_end_matches('/')))
                ));
            }
        }
    }
    s.push_str(l.userdata);
    if !l.userdata.is_empty() && !l.userdata.ends_with('\n') {
        s.push('\n');
    }
    s.push_str("mkdir -p /var/lib/csis\ntouch /var/lib/csis/launch-applied\n");
    s
}

/// The document.
pub fn document(ctx: &dyn HookContext, l: &Launch<'_>) -> UserData {
    UserData {
        hostname: l.hostname.to_string(),
        accounts: ctx.group_accounts(l.group),
        write_files: vec![
            WriteFile {
                path: "/var/lib/csis/launch.sh".into(),
                content: script(l),
                permissions: "0755".into(),
            },
            WriteFile {
                path: "/var/lib/csis/instance".into(),
                content: format!(
                    "instance {}\nimage {}\nhostname {}\n",
                    l.instance, l.image, l.hostname
                ),
                permissions: "0644".into(),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_mounts_by_the_stable_path_first_and_ends_with_the_marker() {
        let mounts = [Mount {
            storage: "data".into(),
            mount_point: "/srv/data".into(),
            device: "/dev/xvdf".into(),
            by_id: "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_@@csis-volume:data@@".into(),
            share_mode: "2770".into(),
        }];
        let s = script(&Launch {
            instance: "web",
            builder_model: "tofu-aws",
            image: "web",
            group: Some("ops"),
            hostname: "web-001",
            userdata: "echo it's up",
            mounts: &mounts,
        });
        assert!(s.starts_with("#!/usr/bin/env bash\n# csis user-data for instance web (tofu-aws)\nset -euo pipefail\nhostnamectl set-hostname web-001 || hostname web-001\n"), "{s}");
        assert!(s.contains("\ncsis_mount /dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_@@csis-volume:data@@ /dev/xvdf data /srv/data\ninstall -d -m 2770 -g ops /srv/data/ops\necho it's up\nmkdir -p /var/lib/csis\ntouch /var/lib/csis/launch-applied\n"), "{s}");
        // Nothing terraform's templates would read: the file is read with
        // file(), and only the volume tokens are replaced.
        assert!(!s.contains("${"), "{s}");
        assert_eq!(sh("a b'c"), "'a b'\\''c'");
    }
}
