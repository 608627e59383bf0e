//! Canonical text: YAML (or JSON) in the reference's field order, with
//! `extends` stripped and, when asked, secrets redacted.

use crate::types::Template;

/// What a redacted value reads.
pub const REDACTED: &str = "<redacted>";

/// `t` with user passwords, `hash_algo` values, `fde.passphrase` and the
/// secure-boot key and
/// certificate paths (immutability's `secureBootDB*`, dkms.secureBoot's
/// signing and target key/cert paths) replaced with `<redacted>`; empty
/// values stay empty.
pub fn redact(t: &Template) -> Template {
    fn r(s: &mut String) {
        if !s.is_empty() {
            *s = REDACTED.to_string();
        }
    }
    let mut t = t.clone();
    if let Some(sc) = t.system_config.as_mut() {
        for u in &mut sc.users {
            r(&mut u.password);
            r(&mut u.hash_algo);
        }
        if let Some(fde) = sc.fde.as_mut() {
            r(&mut fde.passphrase);
        }
        if let Some(i) = sc.immutability.as_mut() {
            r(&mut i.secure_boot_db_key);
            r(&mut i.secure_boot_db_crt);
            r(&mut i.secure_boot_db_cer);
        }
        if let Some(sb) = sc.dkms.as_mut().and_then(|d| d.secure_boot.as_mut()) {
            r(&mut sb.signing_key_path);
            r(&mut sb.signing_cert_path);
            r(&mut sb.target_key_path);
            r(&mut sb.target_cert_path);
        }
    }
    t
}

fn json(t: &Template, redact_: bool) -> serde_json::Value {
    let t = if redact_ { redact(t) } else { t.clone() };
    serde_json::to_value(&t).unwrap_or(serde_json::Value::Null)
}

/// YAML in the reference's field order; `extends` stripped.
pub fn to_yaml(t: &Template, redact: bool) -> String {
    csis_yaml::emit::to_yaml(&json(t, redact))
}

/// Pretty JSON, same content and order as [`to_yaml`], newline-terminated.
pub fn to_json(t: &Template, redact: bool) -> String {
    let mut s = serde_json::to_string_pretty(&json(t, redact)).unwrap_or_default();
    s.push('\n');
    s
}
