//! The rules of the reference over a typed template. Each finding carries
//! the document path of its node, so a caller with the file's text gets
//! `file:line:col` (the `_located` forms); without it line and col are 0.

use std::path::Path;

use std::sync::OnceLock;

use csis_model::{DocPath, Seg, Value};
use regex::Regex;

use crate::types::*;
use crate::{Problem, Severity};

pub(crate) struct Finding {
    pub path: DocPath,
    pub message: String,
    pub severity: Severity,
}

#[derive(Default)]
pub(crate) struct Findings(pub Vec<Finding>);

impl Findings {
    pub fn err(&mut self, path: DocPath, message: impl Into<String>) {
        self.0.push(Finding {
            path,
            message: message.into(),
            severity: Severity::Error,
        });
    }

    pub fn warn(&mut self, path: DocPath, message: impl Into<String>) {
        self.0.push(Finding {
            path,
            message: message.into(),
            severity: Severity::Warning,
        });
    }

    fn into_problems(self, file: &Path, text: Option<&str>) -> Vec<Problem> {
        let parsed = text.and_then(|t| csis_yaml::parse(t).ok());
        self.0
            .into_iter()
            .map(|f| {
                // A scalar's own position; else the key of the nearest
                // node the text has (a section, or the one a missing
                // field belongs in).
                let (line, col) = parsed
                    .as_ref()
                    .and_then(|(v, p)| match node(v, &f.path) {
                        Some(Value::Scalar { .. }) => p.value(&f.path),
                        _ => p.nearest(&f.path, true),
                    })
                    .map(|s| (s.line, s.col))
                    .unwrap_or((0, 0));
                Problem {
                    file: file.to_path_buf(),
                    line,
                    col,
                    message: f.message,
                    severity: f.severity,
                }
            })
            .collect()
    }
}

/// The node at `path`, when the document has it.
fn node<'v>(v: &'v Value, path: &DocPath) -> Option<&'v Value> {
    let mut at = v;
    for seg in &path.0 {
        at = match seg {
            Seg::Key(k) => at.get(k)?,
            Seg::Index(i) => at.as_seq()?.get(*i)?,
        };
    }
    Some(at)
}

fn root() -> DocPath {
    DocPath::root()
}

/// Only image and target required (a user template), plus every rule on
/// what the template does set.
pub fn validate_user(file: &Path, t: &Template) -> Vec<Problem> {
    check(t, false).into_problems(file, None)
}

/// [`validate_user`] with positions from the file's text.
pub fn validate_user_located(file: &Path, text: &str, t: &Template) -> Vec<Problem> {
    check(t, false).into_problems(file, Some(text))
}

/// The merged template, validated in full (systemConfig required, every
/// cross-field rule of the reference).
pub fn validate_merged(file: &Path, t: &Template) -> Vec<Problem> {
    check(t, true).into_problems(file, None)
}

/// [`validate_merged`] with positions looked up in `text` (the leaf's
/// text, say: a node the leaf does not have gets line 0).
pub fn validate_merged_located(file: &Path, text: &str, t: &Template) -> Vec<Problem> {
    check(t, true).into_problems(file, Some(text))
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| {
        #[allow(clippy::unwrap_used)]
        Regex::new(pattern).unwrap()
    })
}

macro_rules! pattern {
    ($name:ident, $re:expr) => {
        fn $name() -> &'static Regex {
            static CELL: OnceLock<Regex> = OnceLock::new();
            re(&CELL, $re)
        }
    };
}

pattern!(image_name_re, r"^[a-zA-Z0-9]([a-zA-Z0-9\-_]*[a-zA-Z0-9])?$");
pattern!(
    version_re,
    r"^[0-9]+(\.([0-9]+|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)){0,2}(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
);
pattern!(package_glob_re, r"^[A-Za-z0-9][A-Za-z0-9+_.:~*?\[\]-]*$");

/// A package name, or a glob over names: the reference's replaceKernel note
/// says a package "accepts the same glob wildcards as an ordinary
/// systemConfig package (`*`, `?`, `[...]`)". It starts with a letter or
/// digit (so a glob-only `*` is refused), and every `[` opens a non-empty
/// class closed by `]` (no nesting, no stray `]`).
fn is_package_glob(s: &str) -> bool {
    if !package_glob_re().is_match(s) {
        return false;
    }
    let mut open: Option<usize> = None;
    for (i, c) in s.char_indices() {
        match (c, open) {
            ('[', None) => open = Some(i),
            ('[', Some(_)) => return false,
            (']', Some(o)) if i > o + 1 => open = None,
            (']', _) => return false,
            _ => {}
        }
    }
    open.is_none()
}
pattern!(offset_re, r"^-?[1-9][0-9]*(KiB|MiB|GiB|K|M|G|KB|MB|GB)$");
pattern!(
    size_re,
    r"^[1-9][0-9]*(KiB|MiB|GiB|TiB|K|M|G|T|KB|MB|GB|TB)$"
);
pattern!(script_name_re, r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$");
pattern!(script_final_re, r"^/[A-Za-z0-9._@%+/-]*[A-Za-z0-9._@%+-]$");
pattern!(arg_re, r"^[A-Za-z0-9._@%+:/=,-]{1,256}$");
pattern!(env_value_re, r"^[A-Za-z0-9._@%+:/=,-]{0,256}$");
pattern!(env_name_re, r"^[A-Za-z_][A-Za-z0-9_]{0,63}$");
pattern!(user_name_re, r"^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,31}$");
pattern!(dkms_module_re, r"^[A-Za-z0-9_.+-]+/[A-Za-z0-9_.+~-]+$");
pattern!(
    hostname_re,
    r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
);
pattern!(uri_scheme_re, r"^[A-Za-z][A-Za-z0-9+.-]*:");
pattern!(sha256_re, r"^[0-9a-fA-F]{64}$");
pattern!(
    modules_re,
    r"^[A-Za-z0-9_][A-Za-z0-9_.-]*( [A-Za-z0-9_][A-Za-z0-9_.-]*)*$"
);
pattern!(iface_re, r"^[a-zA-Z0-9][a-zA-Z0-9._-]{0,14}$");

pub(crate) const OSES: &[&str] = &[
    "azure-linux",
    "edge-microvisor-toolkit",
    "wind-river-elxr",
    "ubuntu",
    "redhat-compatible-distro",
    // Newer than the reference's table; ICT's published templates target it.
    "debian",
];

/// The valid `dist` values of an OS; `None` when any is (redhat-compatible-distro).
pub(crate) fn dists(os: &str) -> Option<&'static [&'static str]> {
    match os {
        "azure-linux" => Some(&["azl3"]),
        "edge-microvisor-toolkit" => Some(&["emt3"]),
        // elxr13 and debian13: newer than the reference's table; ICT's
        // published templates target them.
        "wind-river-elxr" => Some(&["elxr12", "elxr13"]),
        "debian" => Some(&["debian13"]),
        "ubuntu" => Some(&["ubuntu24", "ubuntu26"]),
        _ => None,
    }
}

fn one_of(f: &mut Findings, path: DocPath, value: &str, allowed: &[&str]) {
    if !value.is_empty() && !allowed.contains(&value) {
        let m = format!("{path}: '{value}' is not one of: {}", allowed.join(", "));
        f.err(path, m);
    }
}

fn required(f: &mut Findings, path: DocPath, value: &str, why: &str) {
    if value.is_empty() {
        let m = format!("{path} is required{why}");
        f.err(path, m);
    }
}

fn unique(f: &mut Findings, path: &DocPath, list: &[String], what: &str) {
    for (i, x) in list.iter().enumerate() {
        if list[..i].contains(x) {
            f.err(
                path.index(i),
                format!("{path}: {what} '{x}' is listed twice"),
            );
        }
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

/// An `https://` URL; GitHub page URLs (`/blob/`, `/tree/`) refused.
fn https_pinned(f: &mut Findings, path: DocPath, v: &str) {
    if v.is_empty() {
        return;
    }
    if !v.starts_with("https://") || v.len() <= "https://".len() {
        f.err(
            path.clone(),
            format!("{path}: '{v}' must be an https:// URL"),
        );
        return;
    }
    let host = v["https://".len()..].split('/').next().unwrap_or("");
    if (host == "github.com" || host == "www.github.com")
        && (v.contains("/blob/") || v.contains("/tree/"))
    {
        f.err(
            path.clone(),
            format!(
                "{path}: '{v}' is a GitHub page URL; use the file's raw.githubusercontent.com URL"
            ),
        );
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

pub(crate) fn check(t: &Template, merged: bool) -> Findings {
    let mut f = Findings::default();
    let r = root();
    image(&mut f, t);
    target(&mut f, t);
    baseline(&mut f, t);
    if let Some(d) = &t.disk {
        disk(&mut f, d, &t.target);
    }
    for (i, repo) in t.package_repositories.iter().enumerate() {
        repository(&mut f, r.key("packageRepositories").index(i), repo);
    }
    match &t.system_config {
        Some(sc) => system_config(&mut f, t, sc, merged),
        None if merged => f.err(
            r.key("systemConfig"),
            "systemConfig is required in the merged template",
        ),
        None => {}
    }
    if merged && t.target.image_type == "wsl2" {
        let dp = r.key("disk");
        match &t.disk {
            None => f.err(dp, "disk is required when target.imageType is wsl2 (name, and artifacts of type tar with compression gz)"),
            Some(d) => {
                required(&mut f, dp.key("name"), &d.name, " when target.imageType is wsl2");
                if d.artifacts.is_empty() {
                    f.err(
                        dp.key("artifacts"),
                        "disk.artifacts is required when target.imageType is wsl2 (type tar, compression gz)",
                    );
                }
            }
        }
    }
    f
}

fn image(f: &mut Findings, t: &Template) {
    let p = root().key("image");
    required(f, p.key("name"), &t.image.name, "");
    required(f, p.key("version"), &t.image.version, "");
    let n = &t.image.name;
    if !n.is_empty() && !image_name_re().is_match(n) {
        f.err(
            p.key("name"),
            format!(
                "image.name '{n}' must be letters and digits with inner hyphens and underscores"
            ),
        );
    }
    let v = &t.image.version;
    if !v.is_empty() && !version_re().is_match(v) {
        f.err(
            p.key("version"),
            format!("image.version '{v}' is not semver-like (1.0.0, 24.04, 1.0.0+build1)"),
        );
    }
}

fn target(f: &mut Findings, t: &Template) {
    let p = root().key("target");
    let tg = &t.target;
    for (k, v) in [
        ("os", &tg.os),
        ("dist", &tg.dist),
        ("arch", &tg.arch),
        ("imageType", &tg.image_type),
    ] {
        required(f, p.key(k), v, "");
    }
    one_of(f, p.key("os"), &tg.os, OSES);
    if let Some(ds) = dists(&tg.os)
        && !tg.dist.is_empty()
        && !ds.contains(&tg.dist.as_str())
    {
        f.err(
            p.key("dist"),
            format!(
                "target.dist '{}' is not a dist of {}: {}",
                tg.dist,
                tg.os,
                ds.join(", ")
            ),
        );
    }
    one_of(
        f,
        p.key("arch"),
        &tg.arch,
        &["x86_64", "aarch64", "armv7hl"],
    );
    one_of(
        f,
        p.key("imageType"),
        &tg.image_type,
        &["raw", "iso", "img", "wsl2"],
    );
}

fn baseline(f: &mut Findings, t: &Template) {
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

fn disk(f: &mut Findings, d: &Disk, tg: &Target) {
    let p = root().key("disk");
    let wsl = tg.image_type == "wsl2";
    required(f, p.key("name"), &d.name, "");
    if !d.path.is_empty()
        && (!d.path.starts_with("/dev/")
            || d.path.split('/').any(|c| c == ".." || c == ".")
            || d.path.contains("//")
            || d.path.ends_with('/'))
    {
        f.err(
            p.key("path"),
            format!("disk.path '{}' must be a clean /dev/... path", d.path),
        );
    }
    for (k, v) in [("size", &d.size), ("maxSize", &d.max_size)] {
        if !v.is_empty() && !size_re().is_match(v) {
            f.err(
                p.key(k),
                format!(
                    "disk.{k} '{v}' is not a size (a whole number with a unit, e.g. 4GiB or 8GB)"
                ),
            );
        }
    }
    if !d.max_size.is_empty() && d.size.is_empty() {
        f.err(
            p.key("maxSize"),
            "disk.maxSize requires disk.size to be set",
        );
    }
    one_of(
        f,
        p.key("partitionTableType"),
        &d.partition_table_type,
        &["gpt", "mbr"],
    );
    for (i, a) in d.artifacts.iter().enumerate() {
        let ap = p.key("artifacts").index(i);
        required(f, ap.key("type"), &a.kind, "");
        one_of(
            f,
            ap.key("type"),
            &a.kind,
            &["raw", "qcow2", "vhd", "vhdx", "vmdk", "vdi", "tar"],
        );
        one_of(
            f,
            ap.key("compression"),
            &a.compression,
            &["gz", "gzip", "xz", "zstd", "bz2"],
        );
        if wsl && (a.kind != "tar" || a.compression != "gz") {
            f.err(
                ap.clone(),
                format!("{ap}: a wsl2 image's artifacts must be type tar with compression gz"),
            );
        }
        if !wsl && a.kind == "tar" {
            f.err(
                ap.key("type"),
                format!("{ap}.type: tar is only for target.imageType wsl2"),
            );
        }
    }
    if wsl {
        if !d.partition_table_type.is_empty() {
            f.err(
                p.key("partitionTableType"),
                "disk.partitionTableType is not used for wsl2 templates",
            );
        }
        if !d.partitions.is_empty() {
            f.err(
                p.key("partitions"),
                "disk.partitions are not used for wsl2 templates",
            );
        }
    }
    let last = d.partitions.len().saturating_sub(1);
    for (i, part) in d.partitions.iter().enumerate() {
        let pp = p.key("partitions").index(i);
        for (k, v) in [("start", &part.start), ("end", &part.end)] {
            if v.is_empty() {
                continue;
            }
            if k == "end" && v == "0" {
                if i != last {
                    f.err(
                        pp.key("end"),
                        format!("{pp}.end: only the final partition may use end \"0\""),
                    );
                }
                continue;
            }
            if !offset_re().is_match(v) {
                f.err(
                    pp.key(k),
                    format!(
                        "{pp}.{k} '{v}' is not an offset: a non-zero whole number, optionally negative, with one of KiB MiB GiB K M G KB MB GB"
                    ),
                );
            }
        }
    }
}

fn repository(f: &mut Findings, p: DocPath, r: &PackageRepository) {
    required(f, p.key("codename"), &r.codename, "");
    // ICT's `packages` (package files by URL) stands in for `url`, its
    // `pkeys` for `pkey`: its published templates use them so.
    if r.packages.is_empty() {
        required(f, p.key("url"), &r.url, "");
    }
    if r.pkeys.is_empty() {
        required(f, p.key("pkey"), &r.pkey, "");
    }
    if !r.url.is_empty() && r.url != "<URL>" && !uri_scheme_re().is_match(&r.url) {
        f.err(p.key("url"), format!("{p}.url '{}' is not a URI", r.url));
    }
    if let Some(pr) = r.priority
        && !(-9999..=9999).contains(&pr)
    {
        f.err(
            p.key("priority"),
            format!("{p}.priority {pr} is outside -9999..9999"),
        );
    }
    for (i, a) in r.allow_packages.iter().enumerate() {
        if !is_package_glob(a) {
            f.err(
                p.key("allowPackages").index(i),
                format!("{p}.allowPackages: '{a}' is not a package name or glob"),
            );
        }
    }
}

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

fn system_config(f: &mut Findings, t: &Template, sc: &SystemConfig, merged: bool) {
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

/// The host of a URL (`scheme://host[:port]/...`).
fn host(url: &str) -> &str {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    authority.split(':').next().unwrap_or(authority)
}

/// APT pins by origin (host): an allowed and a not-allowed repository on
/// one host cannot be told apart. An empty list allows all.
fn apt_hosts(f: &mut Findings, p: &DocPath, allowed: &[String], repos: &[PackageRepository]) {
    if allowed.is_empty() {
        return;
    }
    for (i, name) in allowed.iter().enumerate() {
        let Some(a) = repos.iter().find(|r| &r.codename == name) else {
            continue;
        };
        let h = host(&a.url);
        if h.is_empty() {
            continue;
        }
        if let Some(b) = repos
            .iter()
            .find(|r| !allowed.contains(&r.codename) && host(&r.url) == h)
        {
            f.err(
                p.index(i),
                format!(
                    "systemConfig.aptPolicy: repositories '{}' (may upgrade) and '{}' (may not) are both on {h}, and APT pins by host: list both, or neither",
                    a.codename, b.codename
                ),
            );
        }
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

fn users(f: &mut Findings, p: &DocPath, users: &[User]) {
    for (i, u) in users.iter().enumerate() {
        let up = p.index(i);
        required(f, up.key("name"), &u.name, "");
        if !u.name.is_empty() && !user_name_re().is_match(&u.name) {
            f.err(
                up.key("name"),
                format!("{up}.name '{}' is not a user name", u.name),
            );
        }
        if !u.name.is_empty() && users[..i].iter().any(|v| v.name == u.name) {
            f.err(
                up.key("name"),
                format!("{p}: user '{}' is defined twice", u.name),
            );
        }
        one_of(
            f,
            up.key("hash_algo"),
            &u.hash_algo,
            &["bcrypt", "sha512", "sha256", "md5"],
        );
        if u.hash_algo == "md5" {
            f.warn(
                up.key("hash_algo"),
                format!("{up}.hash_algo md5 is insecure; avoid it in production"),
            );
        }
        if let Some(a) = u.password_max_age
            && a < 0
        {
            f.err(
                up.key("passwordMaxAge"),
                format!("{up}.passwordMaxAge must be 0 or more"),
            );
        }
        for (k, v) in [("home", &u.home), ("shell", &u.shell)] {
            if !v.is_empty() && !v.starts_with('/') {
                f.err(
                    up.key(k),
                    format!("{up}.{k} '{v}' must be an absolute path"),
                );
            }
        }
    }
}

fn provisioning(f: &mut Findings, p: &DocPath, pr: &Provisioning) {
    let sp = p.key("scripts");
    for (i, s) in pr.scripts.iter().enumerate() {
        let ip = sp.index(i);
        required(f, ip.key("name"), &s.name, "");
        required(f, ip.key("local"), &s.local, "");
        required(f, ip.key("final"), &s.final_path, "");
        if !s.name.is_empty() && !script_name_re().is_match(&s.name) {
            f.err(
                ip.key("name"),
                format!(
                    "{ip}.name '{}' must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]{{0,63}}$",
                    s.name
                ),
            );
        }
        if !s.name.is_empty() && pr.scripts[..i].iter().any(|o| o.name == s.name) {
            f.err(
                ip.key("name"),
                format!("{sp}: script name '{}' is used twice", s.name),
            );
        }
        if !s.final_path.is_empty() {
            if !script_final_re().is_match(&s.final_path)
                || s.final_path.split('/').any(|c| c == "." || c == "..")
            {
                f.err(
                    ip.key("final"),
                    format!(
                        "{ip}.final '{}' must be an absolute path of letters, digits and ._@%+-",
                        s.final_path
                    ),
                );
            }
            for (j, o) in pr.scripts[..i].iter().enumerate() {
                let (a, b) = (&s.final_path, &o.final_path);
                let inside = |x: &str, y: &str| x.starts_with(&format!("{y}/"));
                if a == b || inside(a, b) || inside(b, a) {
                    f.err(
                        ip.key("final"),
                        format!("{ip}.final '{a}' collides with {sp}[{j}].final '{b}'"),
                    );
                }
            }
        }
        one_of(f, ip.key("stage"), &s.stage, &["first-boot", "every-boot"]);
        if let Some(o) = s.order
            && o < 0
        {
            f.err(ip.key("order"), format!("{ip}.order must be 0 or more"));
        }
        if let Some(o) = s.timeout_sec
            && o < 0
        {
            f.err(
                ip.key("timeoutSec"),
                format!("{ip}.timeoutSec must be 0 or more"),
            );
        }
        for (j, a) in s.args.iter().enumerate() {
            if !arg_re().is_match(a) {
                f.err(
                    ip.key("args").index(j),
                    format!("{ip}.args: '{a}' must be 1-256 characters of letters, digits and ._@%+:/=,-"),
                );
            }
        }
        for (k, v) in &s.env {
            if !env_name_re().is_match(k) {
                f.err(
                    ip.key("env").key(k),
                    format!("{ip}.env: '{k}' is not a variable name"),
                );
            }
            if !env_value_re().is_match(v) {
                f.err(
                    ip.key("env").key(k),
                    format!(
                        "{ip}.env.{k} must be 0-256 characters of letters, digits and ._@%+:/=,-"
                    ),
                );
            }
        }
        if s.reboot_after == Some(true) && s.stage == "every-boot" {
            f.err(
                ip.key("rebootAfter"),
                format!("{ip}.rebootAfter is for first-boot scripts only"),
            );
        } else if s.reboot_after == Some(true) && Some(i) != last_to_run(&pr.scripts) {
            f.err(
                ip.key("rebootAfter"),
                format!(
                    "{ip}.rebootAfter is only allowed on the last script to run (the reboot would cut later scripts off)"
                ),
            );
        }
    }
}

/// The index of the script that runs last: the highest `order` (unset is
/// 0), ties in template order.
fn last_to_run(scripts: &[Script]) -> Option<usize> {
    scripts
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.order.unwrap_or(0), *i))
        .map(|(i, _)| i)
}

fn oep(f: &mut Findings, p: &DocPath, o: &OepInstaller, sc: &SystemConfig, merged: bool) {
    for (k, v) in [
        ("url", &o.url),
        ("sha256", &o.sha256),
        ("sbomUrl", &o.sbom_url),
        ("sbomSha256", &o.sbom_sha256),
        ("user", &o.user),
    ] {
        required(f, p.key(k), v, "");
    }
    if o.modules.is_empty() {
        f.err(
            p.key("modules"),
            "systemConfig.oepInstaller.modules is required",
        );
    }
    https_pinned(f, p.key("url"), &o.url);
    https_pinned(f, p.key("sbomUrl"), &o.sbom_url);
    for (k, v) in [("sha256", &o.sha256), ("sbomSha256", &o.sbom_sha256)] {
        if !v.is_empty() && !sha256_re().is_match(v) {
            f.err(
                p.key(k),
                format!("systemConfig.oepInstaller.{k} is not a hex SHA-256 digest"),
            );
        }
    }
    if o.user == "root" {
        f.err(
            p.key("user"),
            "systemConfig.oepInstaller.user must not be root",
        );
    } else if merged && !o.user.is_empty() && !sc.users.iter().any(|u| u.name == o.user) {
        f.err(
            p.key("user"),
            format!(
                "systemConfig.oepInstaller.user '{}' is not a systemConfig.users entry",
                o.user
            ),
        );
    }
    for (i, a) in o.args.iter().enumerate() {
        if !arg_re().is_match(a) {
            f.err(
                p.key("args").index(i),
                format!("systemConfig.oepInstaller.args: '{a}' has a character systemd would interpret (no spaces, quotes, $ or ;)"),
            );
        }
    }
}
