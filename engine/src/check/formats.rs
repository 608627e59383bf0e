//! The formats rules check values against, as pure predicates: a duration
//! (`teardown_after`), a hostname label (RFC 1123), an OpenSSH public-key
//! line (admin keys, users' keys). Each says why a value fails in the words
//! the refusals quote, so every rule that meets the format says it alike.

/// A duration: a non-negative number and a unit, `m`, `h` or `d`.
pub(crate) fn duration_ok(d: &str) -> bool {
    duration_seconds(d).is_some()
}

/// A `<number><m|h|d>` duration in seconds.
pub(crate) fn duration_seconds(d: &str) -> Option<f64> {
    let d = d.trim();
    let unit = match d.chars().last()? {
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => return None,
    };
    let n: f64 = d.get(..d.len() - 1)?.parse().ok()?;
    (n >= 0.0 && n.is_finite()).then_some(n * unit)
}

/// Why a hostname is no RFC 1123 label, if it is not.
pub fn hostname_problem(h: &str) -> Option<&'static str> {
    if h.len() > 63 {
        return Some("is over 63 characters");
    }
    if !h.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Some("has characters other than letters, digits and hyphens");
    }
    if h.starts_with('-') || h.ends_with('-') {
        return Some("starts or ends with a hyphen");
    }
    None
}

/// Why an admin key is not one OpenSSH public-key line.
pub fn public_key_problem(key: &str) -> Option<&'static str> {
    let k = key.trim();
    if k.is_empty() {
        return Some("empty key");
    }
    if k.contains("PRIVATE KEY") || k.contains("-----BEGIN") {
        return Some("PRIVATE key material (never allowed; the config repo is public)");
    }
    if k.lines().count() > 1 {
        return Some("multi-line value");
    }
    let kind = k.split_whitespace().next().unwrap_or_default();
    let known = ["ssh-ed25519", "ssh-rsa", "ssh-dss"].contains(&kind)
        || kind.starts_with("ecdsa-sha2-nistp")
        || kind.starts_with("sk-");
    if !known || k.split_whitespace().nth(1).is_none() {
        return Some("not an OpenSSH public key line");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_and_keys() {
        assert_eq!(hostname_problem("web-001"), None);
        assert_eq!(
            hostname_problem("web_1-001"),
            Some("has characters other than letters, digits and hyphens")
        );
        assert_eq!(
            hostname_problem(&"a".repeat(64)),
            Some("is over 63 characters")
        );
        assert_eq!(public_key_problem("ssh-ed25519 AAAAC3 me@x"), None);
        assert_eq!(
            public_key_problem("-----BEGIN OPENSSH PRIVATE KEY-----"),
            Some("PRIVATE key material (never allowed; the config repo is public)")
        );
        assert_eq!(
            public_key_problem("hello"),
            Some("not an OpenSSH public key line")
        );
        assert_eq!(
            public_key_problem("ssh-rsa A\nssh-rsa B"),
            Some("multi-line value")
        );
        assert!(
            duration_ok("30m") && duration_ok("2h") && duration_ok("1.5d") && !duration_ok("soon")
        );
    }
}
