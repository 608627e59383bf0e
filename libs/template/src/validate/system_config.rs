//! systemConfig: packages, kernel, bootloader, network, immutability,
//! fde, dkms, proxy and the cross-field rules; users, scripts and the OEP
//! installer are users_and_scripts.rs's.

use csis_model::DocPath;

use super::findings::{Findings, one_of, required, root, unique};
use super::patterns::{dkms_module_re, hostname_re, iface_re, is_package_glob};
use super::repositories::apt_hosts;
use super::users_and_scripts::{oep, provisioning, users};
use crate::types::*;

fn packages(f: &mut Findings, p: &DocPath, list: &[String]) {
    for (i, x) in list.iter().enumerate() {
        if !is_package_glob(x) {
            f.err(
                p.index(i),
                format!("{p}: '{x}' is not a valid package name or glob"),
            );
        }
    }
    unique(f, p, list, "package");
}

pub(super) fn system_config(f: &mut Findings, t: &Template, sc: &SystemConfig, merged: bool) {
    let p = root().key("systemConfig");
    if !sc.hostname.is_empty() && !hostname_re().is_match(&sc.hostname) {
        f.err(
            p.key("hostname"),
            format!(
                "systemConfig.hostname '{}' is not an RFC 1123 host name",
                sc.hostname
            ),
        );
    }
    packages(f, &p.key("packages"), &sc.packages);
    if let Some(k) = &sc.kernel {
        packages(f, &p.key("kernel").key("packages"), &k.packages);
        if t.target.image_type == "wsl2" {
            f.err(
                p.key("kernel"),
                "systemConfig.kernel is not allowed for wsl2 templates",
            );
        }
    }
    if let Some(b) = &sc.bootloader {
        let bp = p.key("bootloader");
        one_of(f, bp.key("bootType"), &b.boot_type, &["efi", "legacy"]);
        one_of(
            f,
            bp.key("provider"),
            &b.provider,
            &["grub", "grub2", "systemd-boot"],
        );
        one_of(
            f,
            bp.key("bootEntryPolicy"),
            &b.boot_entry_policy,
            &["preserve", "exclusive"],
        );
    }
    if let Some(n) = &sc.network {
        network(f, &p.key("network"), n);
    }
    if let Some(i) = &sc.immutability {
        let ip = p.key("immutability");
        if i.enabled.is_none() {
            f.err(
                ip.key("enabled"),
                "systemConfig.immutability.enabled is required",
            );
        }
        let any = [
            &i.secure_boot_db_key,
            &i.secure_boot_db_crt,
            &i.secure_boot_db_cer,
        ]
        .iter()
        .any(|s| !s.is_empty());
        let all = [
            &i.secure_boot_db_key,
            &i.secure_boot_db_crt,
            &i.secure_boot_db_cer,
        ]
        .iter()
        .all(|s| !s.is_empty());
        if any && (!all || i.enabled != Some(true)) {
            f.err(
                ip,
                "systemConfig.immutability: a secure-boot field is set, so secureBootDBKey, secureBootDBCrt and secureBootDBCer must all be set and enabled must be true",
            );
        }
    }
    if let Some(d) = &sc.fde {
        let fp = p.key("fde");
        if d.enabled.is_none() {
            f.err(fp.key("enabled"), "systemConfig.fde.enabled is required");
        }
        // ICT's inline `passphrase` stands in for the file.
        if d.enabled == Some(true) && d.passphrase.is_empty() {
            required(
                f,
                fp.key("passphraseFile"),
                &d.passphrase_file,
                " when fde.enabled is true",
            );
        }
        one_of(f, fp.key("unlock"), &d.unlock, &["auto", "manual"]);
    }
    if let Some(d) = &sc.dkms {
        dkms(f, &p.key("dkms"), d);
    }
    users(f, &p.key("users"), &sc.users);
    if merged
        && sc
            .users
            .iter()
            .any(|u| !u.ssh_authorized_keys.is_empty() || !u.ssh_authorized_keys_files.is_empty())
        && !sc.packages.iter().any(|x| x == "openssh-server")
    {
        f.warn(
            p.key("packages"),
            "a user has SSH keys but systemConfig.packages has no openssh-server: key-based login needs it",
        );
    }
    if let Some(i) = &sc.initramfs {
        required(f, p.key("initramfs").key("template"), &i.template, "");
    }
    for (i, a) in sc.additional_files.iter().enumerate() {
        let ap = p.key("additionalFiles").index(i);
        required(f, ap.key("local"), &a.local, "");
        required(f, ap.key("final"), &a.final_path, "");
        if !a.stage.is_empty() && a.stage != "pre-initramfs" {
            f.err(
                ap.key("stage"),
                format!(
                    "{ap}.stage '{}' is not one of: \"\" (default), pre-initramfs",
                    a.stage
                ),
            );
        }
    }
    for (i, c) in sc.configurations.iter().enumerate() {
        required(f, p.key("configurations").index(i).key("cmd"), &c.cmd, "");
    }
    if let Some(x) = &sc.proxy {
        let pp = p.key("proxy");
        proxy_url(f, pp.key("httpProxy"), &x.http_proxy);
        proxy_url(f, pp.key("httpsProxy"), &x.https_proxy);
        proxy_url(f, pp.key("ftpProxy"), &x.ftp_proxy);
        if x.no_proxy.chars().any(char::is_whitespace) {
            f.err(
                pp.key("noProxy"),
                "systemConfig.proxy.noProxy is comma-separated with no spaces",
            );
        }
    }
    if let Some(pr) = &sc.provisioning {
        provisioning(f, &p.key("provisioning"), pr);
    }
    if let Some(c) = &sc.cloud_init
        && !c.network_config_file.is_empty()
        && sc.network.is_some()
    {
        f.warn(
            p.key("cloudInit").key("networkConfigFile"),
            "systemConfig.cloudInit.networkConfigFile and systemConfig.network are both set and may conflict",
        );
    }
    if let Some(a) = &sc.apt_policy {
        let ap = p.key("aptPolicy").key("upgradeAllowedRepos");
        let allowed = a.upgrade_allowed_repos.as_deref().unwrap_or_default();
        for (i, x) in allowed.iter().enumerate() {
            required(f, ap.index(i), x, "");
        }
        apt_hosts(f, &ap, allowed, &t.package_repositories);
    }
    if let Some(o) = &sc.oep_installer {
        oep(f, &p.key("oepInstaller"), o, sc, merged);
    }
}

/// A URL with a scheme, no credentials, no query, no fragment.
fn proxy_url(f: &mut Findings, path: DocPath, v: &str) {
    if v.is_empty() {
        return;
    }
    let Some((scheme, rest)) = v.split_once("://") else {
        f.err(
            path.clone(),
            format!("{path}: '{v}' is not a URL (scheme://host[:port])"),
        );
        return;
    };
    if !["http", "https", "socks5", "socks5h"].contains(&scheme) {
        f.err(
            path.clone(),
            format!("{path}: scheme '{scheme}' is not one of: http, https, socks5, socks5h"),
        );
    }
    let authority = rest.split('/').next().unwrap_or("");
    if authority.contains('@') {
        f.err(
            path.clone(),
            format!("{path}: a proxy URL must not contain credentials (they would land in world-readable files)"),
        );
    }
    if rest.contains('?') || rest.contains('#') {
        f.err(
            path.clone(),
            format!("{path}: a proxy URL must not contain a query string or fragment"),
        );
    }
    if authority.is_empty() {
        f.err(path.clone(), format!("{path}: '{v}' names no host"));
    }
}

fn network(f: &mut Findings, p: &DocPath, n: &Network) {
    required(
        f,
        p.key("backend"),
        &n.backend,
        " when systemConfig.network is present",
    );
    one_of(
        f,
        p.key("backend"),
        &n.backend,
        &["systemd-networkd", "netplan"],
    );
    for (i, x) in n.interfaces.iter().enumerate() {
        let ip = p.key("interfaces").index(i);
        required(f, ip.key("name"), &x.name, "");
        if !x.name.is_empty() && !iface_re().is_match(&x.name) {
            f.err(
                ip.key("name"),
                format!("{ip}.name '{}' is not an interface name", x.name),
            );
        }
        if (x.dhcp4 == Some(true) || x.dhcp6 == Some(true)) && !x.addresses.is_empty() {
            f.err(
                ip.key("addresses"),
                format!("{ip}: static addresses must not be set together with DHCP"),
            );
        }
        for (j, a) in x.addresses.iter().enumerate() {
            if !is_cidr(a) {
                f.err(
                    ip.key("addresses").index(j),
                    format!("{ip}.addresses: '{a}' is not an address in CIDR form"),
                );
            }
        }
        for (j, rt) in x.routes.iter().enumerate() {
            let rp = ip.key("routes").index(j);
            required(f, rp.key("to"), &rt.to, "");
            required(f, rp.key("via"), &rt.via, "");
            if !rt.to.is_empty() && rt.to != "default" && !is_cidr(&rt.to) {
                f.err(
                    rp.key("to"),
                    format!("{rp}.to '{}' is not default or a CIDR", rt.to),
                );
            }
            if !rt.via.is_empty() && rt.via.parse::<std::net::IpAddr>().is_err() {
                f.err(
                    rp.key("via"),
                    format!("{rp}.via '{}' is not an IP address", rt.via),
                );
            }
        }
        for (j, ns) in x.nameservers.iter().enumerate() {
            if ns.parse::<std::net::IpAddr>().is_err() {
                f.err(
                    ip.key("nameservers").index(j),
                    format!("{ip}.nameservers: '{ns}' is not an IP address"),
                );
            }
        }
    }
}

fn is_cidr(s: &str) -> bool {
    let Some((a, n)) = s.split_once('/') else {
        return false;
    };
    let Ok(n) = n.parse::<u8>() else { return false };
    match a.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => n <= 32,
        Ok(std::net::IpAddr::V6(_)) => n <= 128,
        Err(_) => false,
    }
}

fn dkms(f: &mut Findings, p: &DocPath, d: &Dkms) {
    if d.enabled.is_none() {
        f.err(p.key("enabled"), "systemConfig.dkms.enabled is required");
    }
    for (i, m) in d.modules.iter().enumerate() {
        if !dkms_module_re().is_match(m) {
            f.err(
                p.key("modules").index(i),
                format!("systemConfig.dkms.modules: '{m}' is not name/version"),
            );
        }
    }
    let Some(sb) = &d.secure_boot else { return };
    let sp = p.key("secureBoot");
    if sb.enabled.is_none() {
        f.err(
            sp.key("enabled"),
            "systemConfig.dkms.secureBoot.enabled is required",
        );
    }
    if sb.enabled == Some(true) {
        if d.enabled != Some(true) {
            f.err(
                sp.key("enabled"),
                "systemConfig.dkms.secureBoot.enabled requires systemConfig.dkms.enabled: true",
            );
        }
        required(
            f,
            sp.key("signingKeyPath"),
            &sb.signing_key_path,
            " when secureBoot.enabled is true",
        );
        required(
            f,
            sp.key("signingCertPath"),
            &sb.signing_cert_path,
            " when secureBoot.enabled is true",
        );
    }
    if sb.retain_signing_identity == Some(true) {
        if sb.enabled != Some(true) {
            f.err(
                sp.key("retainSigningIdentity"),
                "systemConfig.dkms.secureBoot.retainSigningIdentity requires secureBoot.enabled: true",
            );
        }
        required(
            f,
            sp.key("targetKeyPath"),
            &sb.target_key_path,
            " when retainSigningIdentity is true",
        );
        required(
            f,
            sp.key("targetCertPath"),
            &sb.target_cert_path,
            " when retainSigningIdentity is true",
        );
    }
}
