//! systemConfig read into its type, section by section, with a
//! provisioning script's env mapping.

use csis_model::{DocPath, Map, Value};
use indexmap::IndexMap;

use super::Reader;
use crate::types::*;

impl Reader<'_> {
    pub(super) fn system_config(&mut self, m: &Map, p: &DocPath) -> SystemConfig {
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
                    for (k, x) in em.iter() {
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
