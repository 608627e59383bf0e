//! baseline and overlayPolicy: an overlay template builds on a baseline
//! image, so the systemConfig sections that shape a booted system are
//! refused there.

use csis_model::DocPath;

use super::findings::{Findings, one_of, required, root};
use super::patterns::{is_package_glob, modules_re, uri_scheme_re};
use crate::types::*;

pub(super) fn baseline(f: &mut Findings, t: &Template) {
    let r = root();
    let overlay = t.is_overlay();
    if let Some(b) = &t.baseline {
        let p = r.key("baseline");
        one_of(f, p.key("mode"), &b.mode, &["create", "overlay"]);
        match (&b.source, overlay) {
            (None, true) => f.err(
                p.key("mode"),
                "baseline.source is required when baseline.mode is overlay",
            ),
            (Some(_), false) if b.mode != "overlay" => f.err(
                p.key("source"),
                "baseline.source must be absent in create mode (set baseline.mode: overlay)",
            ),
            _ => {}
        }
        if let Some(s) = &b.source {
            let sp = p.key("source");
            if s.path.is_empty() == s.url.is_empty() {
                f.err(
                    sp.clone(),
                    "baseline.source must set exactly one of path and url",
                );
            }
            let https = s.url.starts_with("https://") && s.url.len() > "https://".len();
            if !s.url.is_empty() && !https {
                f.err(
                    sp.key("url"),
                    format!(
                        "baseline.source.url '{}' must be an https:// URL (plain http is rejected)",
                        s.url
                    ),
                );
            }
            for (k, v) in [("path", &s.path), ("sbomPath", &s.sbom_path)] {
                if uri_scheme_re().is_match(v) {
                    f.err(
                        sp.key(k),
                        format!("baseline.source.{k} '{v}' is a local path: no URI scheme"),
                    );
                }
            }
            one_of(
                f,
                sp.key("format"),
                &s.format,
                &["raw", "qcow2", "vhd", "vhdx"],
            );
        }
    }
    if let Some(op) = &t.overlay_policy {
        let p = r.key("overlayPolicy");
        if !overlay {
            f.err(
                p.clone(),
                "overlayPolicy may only be set when baseline.mode is overlay",
            );
        }
        one_of(
            f,
            p.key("packageOperation"),
            &op.package_operation,
            &["additive-only", "additive-and-upgrade"],
        );
        one_of(
            f,
            p.key("conflictPolicy"),
            &op.conflict_policy,
            &["fail", "allow-explicit"],
        );
        let upgrade = op.package_operation == "additive-and-upgrade";
        if op.allow_package_removal == Some(true) && !upgrade {
            f.err(
                p.key("allowPackageRemoval"),
                "overlayPolicy.allowPackageRemoval is only valid with packageOperation: additive-and-upgrade",
            );
        }
        if let Some(rk) = &op.replace_kernel {
            if !upgrade {
                f.err(
                    p.key("replaceKernel"),
                    "overlayPolicy.replaceKernel is only valid with packageOperation: additive-and-upgrade",
                );
            }
            let rp = p.key("replaceKernel");
            required(f, rp.key("package"), &rk.package, "");
            for (k, v) in std::iter::once(("package", &rk.package)).chain(
                rk.additional_packages
                    .iter()
                    .map(|x| ("additionalPackages", x)),
            ) {
                if !v.is_empty() && !is_package_glob(v) {
                    f.err(
                        rp.key(k),
                        format!(
                            "overlayPolicy.replaceKernel.{k}: '{v}' is not a package name or glob"
                        ),
                    );
                }
            }
            if !rk.enable_extra_modules.is_empty()
                && !modules_re().is_match(&rk.enable_extra_modules)
            {
                f.err(
                    rp.key("enableExtraModules"),
                    "overlayPolicy.replaceKernel.enableExtraModules is module names separated by single spaces",
                );
            }
        }
        grub_text(f, p.key("kernelCmdline"), &op.kernel_cmdline);
        grub_text(f, p.key("grubDefault"), &op.grub_default);
    }
    if overlay && let Some(sc) = &t.system_config {
        let p = r.key("systemConfig");
        let mut bad = Vec::new();
        if !sc.hostname.is_empty() {
            bad.push("hostname");
        }
        for (name, set) in [
            ("network", sc.network.is_some()),
            ("initramfs", sc.initramfs.is_some()),
            ("kernel", sc.kernel.is_some()),
            ("immutability", sc.immutability.is_some()),
            ("fde", sc.fde.is_some()),
            ("bootloader", sc.bootloader.is_some()),
        ] {
            if set {
                bad.push(name);
            }
        }
        if let Some(first) = bad.first() {
            f.err(
                p.key(first),
                format!(
                    "overlay mode cannot apply systemConfig sections: {} (configure them in the baseline image)",
                    bad.join(", ")
                ),
            );
        }
        if sc.oep_installer.is_some() {
            f.err(
                p.key("oepInstaller"),
                "systemConfig.oepInstaller is not supported in overlay mode",
            );
        }
    }
}

fn grub_text(f: &mut Findings, path: DocPath, v: &str) {
    if v.chars()
        .any(|c| matches!(c, '"' | '$' | '`' | '\\' | '\n'))
    {
        f.err(
            path.clone(),
            format!("{path} must not contain a double quote, dollar sign, backtick, backslash or newline"),
        );
    }
}
