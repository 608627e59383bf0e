//! MergeConfigurations(child, parent): the reference's merge table and
//! chain table, one function used for every layer of a chain and for the
//! OS defaults underneath.

use crate::types::*;

fn s(child: &str, parent: &str) -> String {
    if child.is_empty() { parent } else { child }.to_string()
}

fn v<T: Clone>(child: &[T], parent: &[T]) -> Vec<T> {
    if child.is_empty() { parent } else { child }.to_vec()
}

/// Merge `child` over `parent` by key: parent's entries in place (a
/// same-key child entry merged into it in place), new ones appended in
/// the child's order. ICT's order here is not stable; csis keeps this
/// first-seen order.
fn merge_by_key<T: Clone>(
    child: &[T],
    parent: &[T],
    key: impl Fn(&T) -> &str,
    join: impl Fn(&T, &T) -> T,
) -> Vec<T> {
    let mut out: Vec<T> = parent.to_vec();
    for c in child {
        match out.iter().position(|p| key(p) == key(c)) {
            Some(i) => out[i] = join(c, &out[i]),
            None => out.push(c.clone()),
        }
    }
    out
}

fn dedup(list: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in list {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// MergeConfigurations(child, parent).
pub fn merge(child: &Template, parent: &Template) -> Template {
    let system_config = match (&child.system_config, &parent.system_config) {
        (None, None) => None,
        (c, p) => Some(merge_system_config(
            c.as_ref().unwrap_or(&SystemConfig::default()),
            p.as_ref().unwrap_or(&SystemConfig::default()),
            child.is_overlay(),
        )),
    };
    Template {
        extends: None,
        metadata: child.metadata.clone().or_else(|| parent.metadata.clone()),
        image: Image {
            name: s(&child.image.name, &parent.image.name),
            version: s(&child.image.version, &parent.image.version),
        },
        target: if child.target.is_empty() {
            parent.target.clone()
        } else {
            child.target.clone()
        },
        baseline: child.baseline.clone().or_else(|| parent.baseline.clone()),
        overlay_policy: child
            .overlay_policy
            .clone()
            .or_else(|| parent.overlay_policy.clone()),
        disk: match &child.disk {
            Some(d) if !d.is_empty() => Some(d.clone()),
            _ => parent.disk.clone(),
        },
        package_repositories: merge_by_key(
            &child.package_repositories,
            &parent.package_repositories,
            |r| r.codename.as_str(),
            |c, _| c.clone(),
        ),
        system_config,
    }
}

fn merge_system_config(c: &SystemConfig, p: &SystemConfig, overlay: bool) -> SystemConfig {
    SystemConfig {
        name: s(&c.name, &p.name),
        description: s(&c.description, &p.description),
        hostname: s(&c.hostname, &p.hostname),
        packages: if overlay {
            // The overlay caveat: exactly the overlay layer's packages.
            dedup(c.packages.iter().cloned())
        } else {
            dedup(p.packages.iter().chain(&c.packages).cloned())
        },
        kernel: both(&c.kernel, &p.kernel, |c, p| Kernel {
            version: s(&c.version, &p.version),
            cmdline: s(&c.cmdline, &p.cmdline),
            packages: v(&c.packages, &p.packages),
            enable_extra_modules: s(&c.enable_extra_modules, &p.enable_extra_modules),
            uki: c.uki.or(p.uki),
            name: s(&c.name, &p.name),
        }),
        bootloader: both(&c.bootloader, &p.bootloader, |c, p| Bootloader {
            boot_type: s(&c.boot_type, &p.boot_type),
            provider: s(&c.provider, &p.provider),
            boot_entry_policy: s(&c.boot_entry_policy, &p.boot_entry_policy),
        }),
        network: both(&c.network, &p.network, |c, p| Network {
            backend: s(&c.backend, &p.backend),
            interfaces: v(&c.interfaces, &p.interfaces),
        }),
        immutability: both(&c.immutability, &p.immutability, |c, p| Immutability {
            enabled: c.enabled.or(p.enabled),
            secure_boot_db_key: s(&c.secure_boot_db_key, &p.secure_boot_db_key),
            secure_boot_db_crt: s(&c.secure_boot_db_crt, &p.secure_boot_db_crt),
            secure_boot_db_cer: s(&c.secure_boot_db_cer, &p.secure_boot_db_cer),
        }),
        fde: both(&c.fde, &p.fde, |c, p| Fde {
            enabled: c.enabled.or(p.enabled),
            passphrase_file: s(&c.passphrase_file, &p.passphrase_file),
            partitions: v(&c.partitions, &p.partitions),
            unlock: s(&c.unlock, &p.unlock),
            passphrase: s(&c.passphrase, &p.passphrase),
        }),
        dkms: both(&c.dkms, &p.dkms, |c, p| Dkms {
            enabled: c.enabled.or(p.enabled),
            modules: v(&c.modules, &p.modules),
            secure_boot: both(&c.secure_boot, &p.secure_boot, |c, p| DkmsSecureBoot {
                enabled: c.enabled.or(p.enabled),
                signing_key_path: s(&c.signing_key_path, &p.signing_key_path),
                signing_cert_path: s(&c.signing_cert_path, &p.signing_cert_path),
                retain_signing_identity: c.retain_signing_identity.or(p.retain_signing_identity),
                target_key_path: s(&c.target_key_path, &p.target_key_path),
                target_cert_path: s(&c.target_cert_path, &p.target_cert_path),
            }),
        }),
        users: merge_by_key(&c.users, &p.users, |u| u.name.as_str(), merge_user),
        initramfs: match &c.initramfs {
            Some(i) if !i.template.is_empty() => Some(i.clone()),
            _ => p.initramfs.clone().or_else(|| c.initramfs.clone()),
        },
        additional_files: merge_by_key(
            &c.additional_files,
            &p.additional_files,
            |f| f.final_path.as_str(),
            |c, _| c.clone(),
        ),
        configurations: p
            .configurations
            .iter()
            .chain(&c.configurations)
            .cloned()
            .collect(),
        // Replaced as a whole; `proxy: {}` clears (stays an empty section,
        // so it clears the OS defaults' proxy too).
        proxy: c.proxy.clone().or_else(|| p.proxy.clone()),
        provisioning: both(&c.provisioning, &p.provisioning, |c, p| Provisioning {
            before_login: c.before_login.or(p.before_login),
            scripts: merge_by_key(
                &c.scripts,
                &p.scripts,
                |s| s.name.as_str(),
                |c, _| c.clone(),
            ),
        }),
        cloud_init: c.cloud_init.clone().or_else(|| p.cloud_init.clone()),
        apt_policy: c.apt_policy.clone().or_else(|| p.apt_policy.clone()),
        oep_installer: c.oep_installer.clone().or_else(|| p.oep_installer.clone()),
        // ICT's, not the reference's: a child's value replaces when set.
        installer_payload: c
            .installer_payload
            .clone()
            .or_else(|| p.installer_payload.clone()),
    }
}

/// Same-name users merged field by field (non-empty / set child values win).
fn merge_user(c: &User, p: &User) -> User {
    User {
        name: c.name.clone(),
        password: s(&c.password, &p.password),
        hash_algo: s(&c.hash_algo, &p.hash_algo),
        password_max_age: c.password_max_age.or(p.password_max_age),
        startup_script: s(&c.startup_script, &p.startup_script),
        groups: v(&c.groups, &p.groups),
        sudo: c.sudo.or(p.sudo),
        home: s(&c.home, &p.home),
        shell: s(&c.shell, &p.shell),
        ssh_authorized_keys: v(&c.ssh_authorized_keys, &p.ssh_authorized_keys),
        ssh_authorized_keys_files: v(&c.ssh_authorized_keys_files, &p.ssh_authorized_keys_files),
    }
}

/// A section merged only when the child provides it.
fn both<T: Clone>(c: &Option<T>, p: &Option<T>, f: impl Fn(&T, &T) -> T) -> Option<T> {
    match (c, p) {
        (Some(c), Some(p)) => Some(f(c, p)),
        (Some(c), None) => Some(c.clone()),
        (None, p) => p.clone(),
    }
}
