//! The rules of the reference over a typed template. Each finding carries
//! the document path of its node, so a caller with the file's text gets
//! `file:line:col` (the `_located` forms); without it line and col are 0.
//!
//! This file holds the entry points and the order the sections are checked
//! in; each section's rules are in their own file, the reporting helpers in
//! findings.rs and the value patterns in patterns.rs.

use std::path::Path;

use crate::Problem;
use crate::types::*;

mod disk;
mod findings;
mod overlay;
mod patterns;
mod repositories;
mod system_config;
mod target;
mod users_and_scripts;

use disk::disk;
use findings::{Findings, required, root};
use overlay::baseline;
use repositories::repository;
use system_config::system_config;
use target::{image, target};

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
