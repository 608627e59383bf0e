//! The template's top level: extends, metadata, image, target, baseline,
//! overlayPolicy, disk and packageRepositories read into their types;
//! systemConfig is handed to system_config.rs.

use csis_model::{DocPath, Value};

use super::Reader;
use super::system_config::SC_KEYS;
use crate::types::*;

pub(crate) const TOP_KEYS: &[&str] = &[
    "extends",
    "metadata",
    "image",
    "target",
    "baseline",
    "overlayPolicy",
    "disk",
    "packageRepositories",
    "systemConfig",
];

impl Reader<'_> {
    pub(super) fn template(&mut self, v: &Value) -> Template {
        let root = DocPath::root();
        let Some(m) = self.map(v, &root, TOP_KEYS) else {
            return Template::default();
        };
        let extends = match m.get("extends") {
            None | Some(Value::Null) => None,
            Some(Value::Scalar { text, .. }) => Some(text.clone()),
            Some(Value::Seq(_)) => {
                self.err(
                    &root.key("extends"),
                    false,
                    "extends names a single parent template (one path), not a list".to_string(),
                );
                None
            }
            Some(other) => {
                self.err(
                    &root.key("extends"),
                    false,
                    format!("extends must be a string, not a {}", other.kind_name()),
                );
                None
            }
        };
        let metadata = self.section(
            m,
            &root,
            "metadata",
            &["description", "use_cases", "keywords"],
            |r, m, p| Metadata {
                description: r.string(m, p, "description"),
                use_cases: r.strings(m, p, "use_cases"),
                keywords: r.strings(m, p, "keywords"),
            },
        );
        let image = self
            .section(m, &root, "image", &["name", "version"], |r, m, p| Image {
                name: r.string(m, p, "name"),
                version: r.string(m, p, "version"),
            })
            .unwrap_or_default();
        let target = self
            .section(
                m,
                &root,
                "target",
                &["os", "dist", "arch", "imageType"],
                |r, m, p| Target {
                    os: r.string(m, p, "os"),
                    dist: r.string(m, p, "dist"),
                    arch: r.string(m, p, "arch"),
                    image_type: r.string(m, p, "imageType"),
                },
            )
            .unwrap_or_default();
        let baseline = self.section(m, &root, "baseline", &["mode", "source"], |r, m, p| {
            Baseline {
                mode: r.string(m, p, "mode"),
                source: r.section(
                    m,
                    p,
                    "source",
                    &["path", "url", "format", "sbomPath"],
                    |r, m, p| BaselineSource {
                        path: r.string(m, p, "path"),
                        url: r.string(m, p, "url"),
                        format: r.string(m, p, "format"),
                        sbom_path: r.string(m, p, "sbomPath"),
                    },
                ),
            }
        });
        let overlay_policy = self.section(
            m,
            &root,
            "overlayPolicy",
            &[
                "packageOperation",
                "conflictPolicy",
                "kernelCmdline",
                "grubDefault",
                "allowPackageRemoval",
                "replaceKernel",
                "allowDiskResize",
            ],
            |r, m, p| OverlayPolicy {
                package_operation: r.string(m, p, "packageOperation"),
                conflict_policy: r.string(m, p, "conflictPolicy"),
                kernel_cmdline: r.string(m, p, "kernelCmdline"),
                grub_default: r.string(m, p, "grubDefault"),
                allow_package_removal: r.bool(m, p, "allowPackageRemoval"),
                replace_kernel: r.section(
                    m,
                    p,
                    "replaceKernel",
                    &[
                        "package",
                        "additionalPackages",
                        "enableExtraModules",
                        "version",
                    ],
                    |r, m, p| ReplaceKernel {
                        package: r.string(m, p, "package"),
                        additional_packages: r.strings(m, p, "additionalPackages"),
                        enable_extra_modules: r.string(m, p, "enableExtraModules"),
                        version: r.string(m, p, "version"),
                    },
                ),
                allow_disk_resize: r.bool(m, p, "allowDiskResize"),
            },
        );
        let disk = self.section(
            m,
            &root,
            "disk",
            &[
                "name",
                "path",
                "size",
                "maxSize",
                "partitionTableType",
                "artifacts",
                "partitions",
                "selectionPolicy",
                "extendLastPartitionToFillDisk",
            ],
            |r, m, p| Disk {
                name: r.string(m, p, "name"),
                path: r.string(m, p, "path"),
                size: r.string(m, p, "size"),
                max_size: r.string(m, p, "maxSize"),
                partition_table_type: r.string(m, p, "partitionTableType"),
                artifacts: r.list(m, p, "artifacts", |r, v, p| {
                    let m = r.map(v, p, &["type", "compression"])?;
                    Some(Artifact {
                        kind: r.string(m, p, "type"),
                        compression: r.string(m, p, "compression"),
                    })
                }),
                partitions: r.list(m, p, "partitions", |r, v, p| {
                    let m = r.map(
                        v,
                        p,
                        &[
                            "id",
                            "name",
                            "type",
                            "typeUUID",
                            "fsType",
                            "fsLabel",
                            "start",
                            "end",
                            "mountPoint",
                            "mountOptions",
                            "flags",
                        ],
                    )?;
                    Some(Partition {
                        id: r.string(m, p, "id"),
                        name: r.string(m, p, "name"),
                        kind: r.string(m, p, "type"),
                        type_uuid: r.string(m, p, "typeUUID"),
                        fs_type: r.string(m, p, "fsType"),
                        fs_label: r.string(m, p, "fsLabel"),
                        start: r.string(m, p, "start"),
                        end: r.string(m, p, "end"),
                        mount_point: r.string(m, p, "mountPoint"),
                        mount_options: r.string(m, p, "mountOptions"),
                        flags: r.strings(m, p, "flags"),
                    })
                }),
                selection_policy: r.carried(m, "selectionPolicy"),
                extend_last_partition_to_fill_disk: r.bool(m, p, "extendLastPartitionToFillDisk"),
            },
        );
        let package_repositories = self.list(m, &root, "packageRepositories", |r, v, p| {
            let m = r.map(
                v,
                p,
                &[
                    "codename",
                    "url",
                    "pkey",
                    "component",
                    "priority",
                    "allowPackages",
                    "AllowPackages",
                    "pkeys",
                    "packages",
                    "insecureSkipVerify",
                ],
            )?;
            let mut allow = r.strings(m, p, "allowPackages");
            if m.contains_key("AllowPackages") {
                if m.contains_key("allowPackages") {
                    r.err(
                        &p.key("AllowPackages"),
                        true,
                        format!("{p}: set allowPackages or its alias AllowPackages, not both"),
                    );
                } else {
                    allow = r.strings(m, p, "AllowPackages");
                }
            }
            Some(PackageRepository {
                codename: r.string(m, p, "codename"),
                url: r.string(m, p, "url"),
                pkey: r.string(m, p, "pkey"),
                component: r.string(m, p, "component"),
                priority: r.int(m, p, "priority"),
                allow_packages: allow,
                pkeys: r.strings(m, p, "pkeys"),
                packages: r.strings(m, p, "packages"),
                insecure_skip_verify: r.bool(m, p, "insecureSkipVerify"),
            })
        });
        let system_config = self.section(m, &root, "systemConfig", SC_KEYS, |r, m, p| {
            r.system_config(m, p)
        });
        Template {
            extends,
            metadata,
            image,
            target,
            baseline,
            overlay_policy,
            disk,
            package_repositories,
            system_config,
        }
    }
}
