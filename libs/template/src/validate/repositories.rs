//! packageRepositories: each repository's fields, and the aptPolicy rule
//! that reads them by host.

use csis_model::DocPath;

use super::findings::{Findings, required};
use super::patterns::{is_package_glob, uri_scheme_re};
use crate::types::*;

pub(super) fn repository(f: &mut Findings, p: DocPath, r: &PackageRepository) {
    required(f, p.key("codename"), &r.codename, "");
    // ICT's `packages` (package files by URL) stands in for `url`, its
    // `pkeys` for `pkey`: ICT's reader accepts either.
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

/// The host of a URL (`scheme://host[:port]/...`).
fn host(url: &str) -> &str {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    authority.split(':').next().unwrap_or(authority)
}

/// APT pins by origin (host): an allowed and a not-allowed repository on
/// one host cannot be told apart. An empty list allows all.
pub(super) fn apt_hosts(
    f: &mut Findings,
    p: &DocPath,
    allowed: &[String],
    repos: &[PackageRepository],
) {
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
