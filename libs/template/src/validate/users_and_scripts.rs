//! systemConfig's users, provisioning scripts and OEP installer: the
//! accounts of the image and what runs on it after boot, as whom.

use csis_model::DocPath;

use super::findings::{Findings, one_of, required};
use super::patterns::{
    arg_re, env_name_re, env_value_re, script_final_re, script_name_re, sha256_re, user_name_re,
};
use crate::types::*;

pub(super) fn users(f: &mut Findings, p: &DocPath, users: &[User]) {
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

pub(super) fn provisioning(f: &mut Findings, p: &DocPath, pr: &Provisioning) {
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

pub(super) fn oep(
    f: &mut Findings,
    p: &DocPath,
    o: &OepInstaller,
    sc: &SystemConfig,
    merged: bool,
) {
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
