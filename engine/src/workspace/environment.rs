//! What a load takes from the process environment: the snapshot
//! templates and interpolation read, and the age identities
//! CSIS_CONFIG_IDENTITY names.

use std::collections::BTreeMap;
use std::path::Path;

use crate::db::system::System;
use crate::workspace::LoadOptions;
use crate::workspace::read::{Place, read_limited};

/// The identities CSIS_CONFIG_IDENTITY names: an AGE-SECRET-KEY-1 string,
/// an identity file, or a directory of *.age-identity files.
pub(super) fn identities(
    system: &dyn System,
    max_bytes: u64,
) -> std::io::Result<csis_secrets::IdentitySource> {
    use csis_secrets::{IdentitySource, keys_in};
    let Some(v) = system.env().get("CSIS_CONFIG_IDENTITY").cloned() else {
        return Ok(IdentitySource::Unset);
    };
    let v = v.trim().to_string();
    if v.starts_with("AGE-SECRET-KEY-1") {
        return Ok(IdentitySource::Keys(keys_in(&v)));
    }
    let path = Path::new(&v);
    if system.is_dir(path) {
        let mut keys = Vec::new();
        for p in system.list_files(path)? {
            if p.parent() == Some(path) && p.extension().is_some_and(|e| e == "age-identity") {
                let mut refused = Vec::new();
                let shown = p.to_string_lossy().to_string();
                let text = read_limited(system, &p, &shown, Place::Given, max_bytes, &mut refused)
                    .map(|read| read.text);
                if let Some(d) = refused.first() {
                    return Ok(IdentitySource::Invalid(format!(
                        "CSIS_CONFIG_IDENTITY={v}: {}",
                        d.message
                    )));
                }
                keys.extend(keys_in(&text.unwrap_or_default()));
            }
        }
        return Ok(if keys.is_empty() {
            IdentitySource::Invalid(format!(
                "CSIS_CONFIG_IDENTITY={v}: no *.age-identity files in that directory"
            ))
        } else {
            IdentitySource::Keys(keys)
        });
    }
    let mut refused = Vec::new();
    let text =
        read_limited(system, path, &v, Place::Given, max_bytes, &mut refused).map(|read| read.text);
    if let Some(d) = refused.first() {
        return Ok(IdentitySource::Invalid(format!(
            "CSIS_CONFIG_IDENTITY={}",
            d.message
        )));
    }
    Ok(match text {
        Some(text) if !keys_in(&text).is_empty() => IdentitySource::Keys(keys_in(&text)),
        _ => IdentitySource::Invalid(format!(
            "CSIS_CONFIG_IDENTITY={v}: not an AGE-SECRET-KEY-1 string, an identity file or a directory"
        )),
    })
}

/// The environment snapshot of a load, with `--tolerate-missing-env`.
pub(super) fn load_env(system: &dyn System, options: &LoadOptions) -> BTreeMap<String, String> {
    let mut env = system.env();
    if options.tolerate_missing_env {
        env.insert(
            crate::load::interp::TOLERATE_ENV.to_string(),
            "1".to_string(),
        );
    }
    env
}
