//! High entropy: how random a value is for its length, the thresholds a
//! random value reaches, and the values of a text that read as secrets by
//! themselves in a secret's context (the high-entropy rule).

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::value::{base64_of_text, ethereum_address, placeholder};

/// Shannon entropy in bits per character.
pub fn entropy(s: &str) -> f64 {
    let b = s.as_bytes();
    if b.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &c in b {
        counts[c as usize] += 1;
    }
    let n = b.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// The entropy a random base62/base64 value of this length reaches in all
/// but about one case in a thousand (measured on 20,000 random values per
/// length); below it a value reads as words or structure.
pub fn base64_threshold(len: usize) -> f64 {
    const TABLE: [(usize, f64); 6] = [
        (24, 3.70),
        (32, 4.03),
        (40, 4.30),
        (48, 4.49),
        (64, 4.75),
        (100, 5.10),
    ];
    let mut prev = TABLE[0];
    if len <= prev.0 {
        return prev.1;
    }
    for &(l, t) in &TABLE[1..] {
        if len <= l {
            let f = (len - prev.0) as f64 / (l - prev.0) as f64;
            return prev.1 + f * (t - prev.1);
        }
        prev = (l, t);
    }
    prev.1
}

static URL: LazyLock<Regex> =
    LazyLock::new(|| crate::re(r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>`]+"#));

/// Keys on the line before a value that say it is public or a digest.
const NOT_SECRET_CONTEXT: &[&str] = &[
    "public",
    "pubkey",
    "checksum",
    "digest",
    "integrity",
    "fingerprint",
    "sha1",
    "sha256",
    "sha512",
    "hash",
    "etag",
    "signature",
    "certificate",
    "sitekey",
    "site_key",
    "site-key",
];

/// Words on the line before a value that say it holds a secret.
const SECRET_CONTEXT: &[&str] = &[
    "key", "secret", "token", "pass", "pwd", "auth", "cred", "private", "bearer", "session",
    "cookie", "salt",
];

fn base64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'_' | b'-')
}

/// Bits per character added to [`base64_threshold`] before a value counts
/// as high entropy: the highest margin at which the high-entropy rule's F1
/// on the corpus peaks (libs/public-safe/tests/corpus.rs measures the
/// curve from -1.5 to +0.5 and fails when this is not that point). Below
/// the random-value thresholds: a value must sit in a secret's context
/// already, and there the lower bar finds 14 more of the corpus's secrets
/// and no more harmless values.
pub const ENTROPY_MARGIN: f64 = -0.8;

/// A value that reads as a secret by itself: mixed case and digits,
/// high entropy for its length, and none of hex, a path, an alphabet, a
/// placeholder or base64 of plain text.
pub fn high_entropy_value(token: &str) -> bool {
    high_entropy_value_with(token, ENTROPY_MARGIN)
}

fn high_entropy_value_with(token: &str, margin: f64) -> bool {
    let b = token.as_bytes();
    let count = |f: fn(&u8) -> bool| b.iter().filter(|c| f(c)).count();
    if count(u8::is_ascii_lowercase) < 2
        || count(u8::is_ascii_uppercase) < 2
        || count(u8::is_ascii_digit) < 2
    {
        return false;
    }
    if b.iter().all(u8::is_ascii_hexdigit) || token.starts_with('/') || ethereum_address(token) {
        return false;
    }
    // A path: a `/`-separated segment that is a lower-case word
    // (`com/machine_type/EKKQh8...`, `src/components/...`).
    if token.contains('/')
        && token.split('/').any(|seg| {
            seg.len() >= 3
                && seg
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c == b'_' || c == b'-')
        })
    {
        return false;
    }
    let successive = b
        .windows(2)
        .filter(|w| w[1] == w[0].wrapping_add(1))
        .count();
    if successive * 2 >= b.len() {
        return false;
    }
    entropy(token) >= base64_threshold(b.len()) + margin
        && !placeholder(token)
        && !base64_of_text(token)
}

/// The values of a text that read as secrets by themselves (the
/// high-entropy rule): the text split on quotes, `=`, `:`, `.`, `~`,
/// whitespace and the like into runs of base64 characters of 32 or more,
/// outside URLs and not behind a public or digest key.
pub fn high_entropy_spans(text: &str) -> Vec<Range<usize>> {
    high_entropy_spans_with(text, ENTROPY_MARGIN)
}

/// [`high_entropy_spans`] with another margin over the thresholds: what
/// the corpus test measures the curve with.
pub fn high_entropy_spans_with(text: &str, margin: f64) -> Vec<Range<usize>> {
    const MIN: usize = 32;
    let b = text.as_bytes();
    let scheme = if text.contains("://") { text } else { "" };
    let mut urls = URL.find_iter(scheme).map(|m| m.range()).peekable();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !base64_char(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && base64_char(b[i]) {
            i += 1;
        }
        if i - start < MIN {
            continue;
        }
        while urls.peek().is_some_and(|u| u.end <= start) {
            urls.next();
        }
        if urls.peek().is_some_and(|u| u.start <= start) {
            continue;
        }
        let Some(token) = text.get(start..i) else {
            continue;
        };
        if !high_entropy_value_with(token, margin) {
            continue;
        }
        let line_start = text[..start].rfind('\n').map_or(0, |p| p + 1);
        let before = text[line_start..start].to_ascii_lowercase();
        if NOT_SECRET_CONTEXT.iter().any(|k| before.contains(k)) {
            continue;
        }
        // A random-looking value alone is a hash, an id, ciphertext or
        // a public key more often than a secret: it counts only where the
        // line says it holds one (issue 39's measurement: this trades 2 of
        // 720 secrets of the corpus for 10 of 38 false findings).
        if !SECRET_CONTEXT.iter().any(|k| before.contains(k)) {
            continue;
        }
        out.push(start..i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_is_measured_on_the_value() {
        assert!(high_entropy_value(
            "Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8Qw0"
        ));
        for s in [
            "AbstractSingletonProxyFactoryBeanConfigurationV2Impl",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "0123456789abcdef0123456789ABCDEF0123",
            "IyEvYmluL2Jhc2gKc2V0IC1ldW8gcGlwZWZhaWwKYXB0LWdldCB1cGRhdGUK",
            "com/machine_type/EKKQh8KqRptSdsUfeHBTYV9x",
        ] {
            assert!(!high_entropy_value(s), "{s}");
        }
        let t = "doc: https://docs.google.com/document/d/1aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9/edit";
        assert!(high_entropy_spans(t).is_empty());
        let t = "public_key: Yh7YYUvmIo2qI6jaG0ey5Mhp8KND2e9pZCLiC8UfCdA9xQ2";
        assert!(high_entropy_spans(t).is_empty());
        // Only where the line says it holds a secret.
        assert_eq!(
            high_entropy_spans("session: Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8Qw0").len(),
            1
        );
        assert!(high_entropy_spans("k: Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8Qw0").is_empty());
    }

    #[test]
    fn thresholds_rise_with_length() {
        assert!(base64_threshold(20) < base64_threshold(40));
        assert!((base64_threshold(36) - 4.165).abs() < 0.01);
        assert!((base64_threshold(500) - 5.10).abs() < 1e-9);
    }
}
