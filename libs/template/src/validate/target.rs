//! image and target: the required identity of every template, and the
//! OS, dist, arch and image type it is built for.

use super::findings::{Findings, one_of, required, root};
use super::patterns::{image_name_re, version_re};
use crate::types::*;

pub(super) fn image(f: &mut Findings, t: &Template) {
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

pub(super) fn target(f: &mut Findings, t: &Template) {
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

pub(crate) const OSES: &[&str] = &[
    "azure-linux",
    "edge-microvisor-toolkit",
    "wind-river-elxr",
    "ubuntu",
    "redhat-compatible-distro",
    // Newer than the reference's table; ICT builds it.
    "debian",
];

/// The valid `dist` values of an OS; `None` when any is (redhat-compatible-distro).
pub(crate) fn dists(os: &str) -> Option<&'static [&'static str]> {
    match os {
        "azure-linux" => Some(&["azl3"]),
        "edge-microvisor-toolkit" => Some(&["emt3"]),
        // elxr13 and debian13: newer than the reference's table; ICT
        // builds them.
        "wind-river-elxr" => Some(&["elxr12", "elxr13"]),
        "debian" => Some(&["debian13"]),
        "ubuntu" => Some(&["ubuntu24", "ubuntu26"]),
        _ => None,
    }
}
