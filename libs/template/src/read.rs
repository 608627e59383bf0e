//! Text to [`Template`]: `${name}` substitution, then typing field by
//! field. Unknown keys and wrong types are refused with the node's
//! position; value rules (enumerations, patterns) are validate.rs's.

use std::path::Path;

use csis_model::{DocPath, Map, Value, value::Typed};
use csis_yaml::Positions;
use indexmap::IndexMap;

use crate::Problem;
use crate::types::*;
use crate::vars::Variables;

/// Parse one template file; the positions come back for later messages.
pub(crate) fn parse_located(
    file: &Path,
    text: &str,
    vars: &Variables,
) -> Result<(Template, Positions), Vec<Problem>> {
    let (mut value, positions) = match csis_yaml::parse(text) {
        Ok(v) => v,
        Err(e) => {
            return Err(vec![Problem::error(
                file,
                e.span.line,
                e.span.col,
                e.message,
            )]);
        }
    };
    let mut rd = Reader {
        file,
        pos: &positions,
        problems: Vec::new(),
    };
    rd.substitute(&mut value, &DocPath::root(), vars);
    if !rd.problems.is_empty() {
        return Err(rd.problems);
    }
    let t = rd.template(&value);
    if rd.problems.is_empty() {
        Ok((t, positions))
    } else {
        Err(rd.problems)
    }
}

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

struct Reader<'a> {
    file: &'a Path,
    pos: &'a Positions,
    problems: Vec<Problem>,
}

fn where_(path: &DocPath) -> String {
    if path.is_root() {
        "the template".to_string()
    } else {
        path.to_string()
    }
}

impl Reader<'_> {
    fn err(&mut self, path: &DocPath, key: bool, message: String) {
        let span = if key {
            self.pos.key(path).or_else(|| self.pos.nearest(path, true))
        } else {
            self.pos.nearest(path, false)
        };
        let (line, col) = span.map(|s| (s.line, s.col)).unwrap_or((0, 0));
        self.problems
            .push(Problem::error(self.file, line, col, message));
    }

    fn substitute(&mut self, v: &mut Value, path: &DocPath, vars: &Variables) {
        match v {
            // The scalar keeps its style: a plain `${x}` is typed by its
            // field after substitution (`sudo: ${admin}` reads a boolean).
            Value::Scalar { text, .. } => {
                if text.contains("${") {
                    match vars.expand(text) {
                        Ok(new) => *text = new,
                        Err(m) => self.err(path, false, m),
                    }
                }
            }
            Value::Seq(items) => {
                for (i, x) in items.iter_mut().enumerate() {
                    self.substitute(x, &path.index(i), vars);
                }
            }
            Value::Map(m) => {
                for (k, x) in m.iter_mut() {
                    let p = path.key(k);
                    self.substitute(x, &p, vars);
                }
            }
            Value::Null => {}
        }
    }

    /// A mapping whose keys are all in `allowed`; `None` (after a
    /// problem) when it is not a mapping.
    fn map<'v>(&mut self, v: &'v Value, path: &DocPath, allowed: &[&str]) -> Option<&'v Map> {
        match v {
            Value::Map(m) => {
                for k in m.keys() {
                    if !allowed.contains(&k.as_str()) {
                        self.err(
                            &path.key(k),
                            true,
                            format!(
                                "unknown key '{k}' in {}; expected one of: {}",
                                where_(path),
                                allowed.join(", ")
                            ),
                        );
                    }
                }
                Some(m)
            }
            Value::Null => None,
            other => {
                self.err(
                    path,
                    false,
                    format!(
                        "{} must be a mapping, not a {}",
                        where_(path),
                        other.kind_name()
                    ),
                );
                None
            }
        }
    }

    fn string(&mut self, m: &Map, path: &DocPath, k: &str) -> String {
        let p = path.key(k);
        match m.get(k) {
            None | Some(Value::Null) => String::new(),
            Some(Value::Scalar { text, .. }) => text.clone(),
            Some(other) => {
                self.err(
                    &p,
                    false,
                    format!("{p} must be a string, not a {}", other.kind_name()),
                );
                String::new()
            }
        }
    }

    fn bool(&mut self, m: &Map, path: &DocPath, k: &str) -> Option<bool> {
        let p = path.key(k);
        let v = m.get(k)?;
        match v.typed() {
            Typed::Null => None,
            Typed::Bool(b) => Some(b),
            _ => {
                self.err(&p, false, format!("{p} must be true or false"));
                None
            }
        }
    }

    fn int(&mut self, m: &Map, path: &DocPath, k: &str) -> Option<i64> {
        let p = path.key(k);
        let v = m.get(k)?;
        match v.typed() {
            Typed::Null => None,
            Typed::Int(i) => Some(i),
            _ => {
                self.err(&p, false, format!("{p} must be an integer"));
                None
            }
        }
    }

    /// A list of strings, `None` when absent (`Some(vec![])` for `[]`).
    fn opt_strings(&mut self, m: &Map, path: &DocPath, k: &str) -> Option<Vec<String>> {
        let p = path.key(k);
        match m.get(k)? {
            Value::Null => None,
            Value::Seq(items) => {
                let mut out = Vec::new();
                for (i, x) in items.iter().enumerate() {
                    match x {
                        Value::Scalar { text, .. } => out.push(text.clone()),
                        other => {
                            let pi = p.index(i);
                            self.err(
                                &pi,
                                false,
                                format!("{pi} must be a string, not a {}", other.kind_name()),
                            );
                        }
                    }
                }
                Some(out)
            }
            other => {
                self.err(
                    &p,
                    false,
                    format!("{p} must be a list of strings, not a {}", other.kind_name()),
                );
                None
            }
        }
    }

    fn strings(&mut self, m: &Map, path: &DocPath, k: &str) -> Vec<String> {
        self.opt_strings(m, path, k).unwrap_or_default()
    }

    /// A list of mappings, each read by `f`.
    fn list<T>(
        &mut self,
        m: &Map,
        path: &DocPath,
        k: &str,
        mut f: impl FnMut(&mut Self, &Value, &DocPath) -> Option<T>,
    ) -> Vec<T> {
        let p = path.key(k);
        match m.get(k) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Seq(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(i, x)| f(self, x, &p.index(i)))
                .collect(),
            Some(other) => {
                self.err(
                    &p,
                    false,
                    format!("{p} must be a list, not a {}", other.kind_name()),
                );
                Vec::new()
            }
        }
    }

    /// A section: `None` when absent; a present empty or null section is
    /// `Some(default)`.
    fn section<T: Default>(
        &mut self,
        m: &Map,
        path: &DocPath,
        k: &str,
        allowed: &[&str],
        f: impl FnOnce(&mut Self, &Map, &DocPath) -> T,
    ) -> Option<T> {
        let v = m.get(k)?;
        let p = path.key(k);
        match self.map(v, &p, allowed) {
            Some(inner) => Some(f(self, inner, &p)),
            None if v.is_null() => Some(T::default()),
            None => None,
        }
    }

    fn template(&mut self, v: &Value) -> Template {
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

    fn system_config(&mut self, m: &Map, p: &DocPath) -> SystemConfig {
        SystemConfig {
            name: self.string(m, p, "name"),
            description: self.string(m, p, "description"),
            hostname: self.string(m, p, "hostname"),
            packages: self.strings(m, p, "packages"),
            kernel: self.section(
                m,
                p,
                "kernel",
                &[
                    "version",
                    "cmdline",
                    "packages",
                    "enableExtraModules",
                    "uki",
                    "name",
                ],
                |r, m, p| Kernel {
                    version: r.string(m, p, "version"),
                    cmdline: r.string(m, p, "cmdline"),
                    packages: r.strings(m, p, "packages"),
                    enable_extra_modules: r.string(m, p, "enableExtraModules"),
                    uki: r.bool(m, p, "uki"),
                    name: r.string(m, p, "name"),
                },
            ),
            bootloader: self.section(
                m,
                p,
                "bootloader",
                &["bootType", "provider", "bootEntryPolicy"],
                |r, m, p| Bootloader {
                    boot_type: r.string(m, p, "bootType"),
                    provider: r.string(m, p, "provider"),
                    boot_entry_policy: r.string(m, p, "bootEntryPolicy"),
                },
            ),
            network: self.section(m, p, "network", &["backend", "interfaces"], |r, m, p| {
                Network {
                    backend: r.string(m, p, "backend"),
                    interfaces: r.list(m, p, "interfaces", |r, v, p| {
                        let m = r.map(
                            v,
                            p,
                            &[
                                "name",
                                "dhcp4",
                                "dhcp6",
                                "addresses",
                                "routes",
                                "nameservers",
                            ],
                        )?;
                        Some(Interface {
                            name: r.string(m, p, "name"),
                            dhcp4: r.bool(m, p, "dhcp4"),
                            dhcp6: r.bool(m, p, "dhcp6"),
                            addresses: r.strings(m, p, "addresses"),
                            routes: r.list(m, p, "routes", |r, v, p| {
                                let m = r.map(v, p, &["to", "via"])?;
                                Some(Route {
                                    to: r.string(m, p, "to"),
                                    via: r.string(m, p, "via"),
                                })
                            }),
                            nameservers: r.strings(m, p, "nameservers"),
                        })
                    }),
                }
            }),
            immutability: self.section(
                m,
                p,
                "immutability",
                &[
                    "enabled",
                    "secureBootDBKey",
                    "secureBootDBCrt",
                    "secureBootDBCer",
                ],
                |r, m, p| Immutability {
                    enabled: r.bool(m, p, "enabled"),
                    secure_boot_db_key: r.string(m, p, "secureBootDBKey"),
                    secure_boot_db_crt: r.string(m, p, "secureBootDBCrt"),
                    secure_boot_db_cer: r.string(m, p, "secureBootDBCer"),
                },
            ),
            fde: self.section(
                m,
                p,
                "fde",
                &[
                    "enabled",
                    "passphraseFile",
                    "partitions",
                    "unlock",
                    "passphrase",
                ],
                |r, m, p| Fde {
                    enabled: r.bool(m, p, "enabled"),
                    passphrase_file: r.string(m, p, "passphraseFile"),
                    partitions: r.strings(m, p, "partitions"),
                    unlock: r.string(m, p, "unlock"),
                    passphrase: r.string(m, p, "passphrase"),
                },
            ),
            dkms: self.section(
                m,
                p,
                "dkms",
                &["enabled", "modules", "secureBoot"],
                |r, m, p| Dkms {
                    enabled: r.bool(m, p, "enabled"),
                    modules: r.strings(m, p, "modules"),
                    secure_boot: r.section(
                        m,
                        p,
                        "secureBoot",
                        &[
                            "enabled",
                            "signingKeyPath",
                            "signingCertPath",
                            "retainSigningIdentity",
                            "targetKeyPath",
                            "targetCertPath",
                        ],
                        |r, m, p| DkmsSecureBoot {
                            enabled: r.bool(m, p, "enabled"),
                            signing_key_path: r.string(m, p, "signingKeyPath"),
                            signing_cert_path: r.string(m, p, "signingCertPath"),
                            retain_signing_identity: r.bool(m, p, "retainSigningIdentity"),
                            target_key_path: r.string(m, p, "targetKeyPath"),
                            target_cert_path: r.string(m, p, "targetCertPath"),
                        },
                    ),
                },
            ),
            users: self.list(m, p, "users", |r, v, p| {
                let m = r.map(
                    v,
                    p,
                    &[
                        "name",
                        "password",
                        "hash_algo",
                        "passwordMaxAge",
                        "startupScript",
                        "groups",
                        "sudo",
                        "home",
                        "shell",
                        "sshAuthorizedKeys",
                        "sshAuthorizedKeysFiles",
                    ],
                )?;
                Some(User {
                    name: r.string(m, p, "name"),
                    password: r.string(m, p, "password"),
                    hash_algo: r.string(m, p, "hash_algo"),
                    password_max_age: r.int(m, p, "passwordMaxAge"),
                    startup_script: r.string(m, p, "startupScript"),
                    groups: r.strings(m, p, "groups"),
                    sudo: r.bool(m, p, "sudo"),
                    home: r.string(m, p, "home"),
                    shell: r.string(m, p, "shell"),
                    ssh_authorized_keys: r.strings(m, p, "sshAuthorizedKeys"),
                    ssh_authorized_keys_files: r.strings(m, p, "sshAuthorizedKeysFiles"),
                })
            }),
            initramfs: self.section(m, p, "initramfs", &["template"], |r, m, p| Initramfs {
                template: r.string(m, p, "template"),
            }),
            additional_files: self.list(m, p, "additionalFiles", |r, v, p| {
                let m = r.map(v, p, &["local", "final", "stage"])?;
                Some(AdditionalFile {
                    local: r.string(m, p, "local"),
                    final_path: r.string(m, p, "final"),
                    stage: r.string(m, p, "stage"),
                })
            }),
            configurations: self.list(m, p, "configurations", |r, v, p| {
                let m = r.map(v, p, &["cmd"])?;
                Some(Configuration {
                    cmd: r.string(m, p, "cmd"),
                })
            }),
            proxy: self.section(
                m,
                p,
                "proxy",
                &["httpProxy", "httpsProxy", "ftpProxy", "noProxy"],
                |r, m, p| Proxy {
                    http_proxy: r.string(m, p, "httpProxy"),
                    https_proxy: r.string(m, p, "httpsProxy"),
                    ftp_proxy: r.string(m, p, "ftpProxy"),
                    no_proxy: r.string(m, p, "noProxy"),
                },
            ),
            provisioning: self.section(
                m,
                p,
                "provisioning",
                &["beforeLogin", "scripts"],
                |r, m, p| Provisioning {
                    before_login: r.bool(m, p, "beforeLogin"),
                    scripts: r.list(m, p, "scripts", |r, v, p| r.script(v, p)),
                },
            ),
            cloud_init: self.section(
                m,
                p,
                "cloudInit",
                &[
                    "enabled",
                    "userDataFile",
                    "metaDataFile",
                    "networkConfigFile",
                    "configFiles",
                ],
                |r, m, p| CloudInit {
                    enabled: r.bool(m, p, "enabled"),
                    user_data_file: r.string(m, p, "userDataFile"),
                    meta_data_file: r.string(m, p, "metaDataFile"),
                    network_config_file: r.string(m, p, "networkConfigFile"),
                    config_files: r.strings(m, p, "configFiles"),
                },
            ),
            apt_policy: self.section(m, p, "aptPolicy", &["upgradeAllowedRepos"], |r, m, p| {
                AptPolicy {
                    upgrade_allowed_repos: r.opt_strings(m, p, "upgradeAllowedRepos"),
                }
            }),
            oep_installer: self.section(
                m,
                p,
                "oepInstaller",
                &[
                    "url",
                    "sha256",
                    "sbomUrl",
                    "sbomSha256",
                    "modules",
                    "user",
                    "args",
                ],
                |r, m, p| OepInstaller {
                    url: r.string(m, p, "url"),
                    sha256: r.string(m, p, "sha256"),
                    sbom_url: r.string(m, p, "sbomUrl"),
                    sbom_sha256: r.string(m, p, "sbomSha256"),
                    modules: r.strings(m, p, "modules"),
                    user: r.string(m, p, "user"),
                    args: r.strings(m, p, "args"),
                },
            ),
            installer_payload: self.carried(m, "installerPayload"),
        }
    }

    /// A field ICT reads and the reference does not describe: its value
    /// as written (`None` when absent or null), not checked.
    fn carried(&mut self, m: &Map, k: &str) -> Option<Carried> {
        match m.get(k)? {
            Value::Null => None,
            v => Some(v.clone()),
        }
    }

    fn script(&mut self, v: &Value, p: &DocPath) -> Option<Script> {
        let m = self.map(
            v,
            p,
            &[
                "name",
                "local",
                "final",
                "stage",
                "order",
                "args",
                "env",
                "timeoutSec",
                "rebootAfter",
            ],
        )?;
        let mut env = IndexMap::new();
        if let Some(e) = m.get("env") {
            let ep = p.key("env");
            match e {
                Value::Map(em) => {
                    for (k, x) in em {
                        match x {
                            Value::Scalar { text, .. } => {
                                env.insert(k.clone(), text.clone());
                            }
                            Value::Null => {
                                env.insert(k.clone(), String::new());
                            }
                            other => {
                                let kp = ep.key(k);
                                self.err(
                                    &kp,
                                    false,
                                    format!("{kp} must be a string, not a {}", other.kind_name()),
                                );
                            }
                        }
                    }
                }
                Value::Null => {}
                other => self.err(
                    &ep,
                    false,
                    format!("{ep} must be a mapping, not a {}", other.kind_name()),
                ),
            }
        }
        Some(Script {
            name: self.string(m, p, "name"),
            local: self.string(m, p, "local"),
            final_path: self.string(m, p, "final"),
            stage: self.string(m, p, "stage"),
            order: self.int(m, p, "order"),
            args: self.strings(m, p, "args"),
            env,
            timeout_sec: self.int(m, p, "timeoutSec"),
            reboot_after: self.bool(m, p, "rebootAfter"),
        })
    }
}

pub(crate) const SC_KEYS: &[&str] = &[
    "name",
    "description",
    "hostname",
    "packages",
    "kernel",
    "bootloader",
    "network",
    "immutability",
    "fde",
    "dkms",
    "users",
    "initramfs",
    "additionalFiles",
    "configurations",
    "proxy",
    "provisioning",
    "cloudInit",
    "aptPolicy",
    "oepInstaller",
    "installerPayload",
];
