//! What a matched value is: a placeholder, a reference, a literal, a
//! secret-named key's value, public material. Pure functions of text;
//! how random a value is lives in entropy.rs.

use base64::Engine;

/// Markers of a value that stands for a secret without being one
/// (case-insensitive substrings).
const MARKERS: &[&str] = &[
    "example",
    "sample",
    "dummy",
    "fake",
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "placeholder",
    "your_",
    "your-",
    "yourkey",
    "xxxx",
    "***",
    "...",
    "redacted",
    "replace",
    "insert_",
    "todo",
    "fixme",
    "<",
    ">",
    "not_a_real",
    "notreal",
    "_here",
];

/// Whole values that are words, not secrets (case-insensitive).
const WORDS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "pass",
    "test",
    "none",
    "null",
    "nil",
    "undefined",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "empty",
    "string",
    "str",
    "value",
    "key",
    "apikey",
    "api_key",
    "required",
    "optional",
    "hidden",
    "sensitive",
    "masked",
    "bearer",
];

/// A run of one character covering half the value or more, or three
/// distinct characters or fewer in twelve or more: `AKIAXXXXXXXXXXXXXXXX`,
/// `0000...`.
pub fn one_char_run(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() < 8 {
        return false;
    }
    let (mut longest, mut run) = (1, 1);
    for w in b.windows(2) {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        longest = longest.max(run);
    }
    if longest * 2 >= b.len() {
        return true;
    }
    let mut seen = [false; 256];
    let mut distinct = 0;
    for &c in b.iter().filter(|c| c.is_ascii_alphanumeric()) {
        if !seen[c as usize] {
            seen[c as usize] = true;
            distinct += 1;
        }
    }
    b.len() >= 12 && distinct <= 3
}

/// A placeholder: a marker, a bare word, or a run of one character.
pub fn placeholder(v: &str) -> bool {
    let l = v.trim().to_ascii_lowercase();
    let b = l.as_bytes();
    MARKERS.iter().any(|m| l.contains(m))
        || WORDS.contains(&l.as_str())
        || one_char_run(&l)
        // `[PASSWORD]`, `yyy`
        || (l.starts_with('[') && l.ends_with(']'))
        || (b.len() >= 3 && b.iter().all(|&c| c == b[0]))
}

/// A reference to a value held elsewhere: `${...}`, `{{ ... }}`, `$VAR`,
/// `%(name)s`, `ENC[age:...]`, a YAML tag (`!vault`), `#{...}`.
pub fn reference(v: &str) -> bool {
    let t = v.trim();
    t.starts_with('$')
        || t.contains("${")
        || t.contains("{{")
        || t.contains("}}")
        || t.contains("%(")
        || t.contains("ENC[")
        || t.starts_with('!')
        || t.starts_with("#{")
        || t.starts_with("@Microsoft.KeyVault")
        // 1Password, Vault, GCP and AWS secret-store references.
        || t.starts_with("op://")
        || t.starts_with("sm://")
        || t.starts_with("vault:")
        || t.starts_with("arn:aws:secretsmanager:")
        || t.starts_with("arn:aws:ssm:")
        || (t.len() > 2 && t.starts_with('%') && t.ends_with('%'))
}

/// A literal: not empty, not a reference, not a placeholder.
pub fn literal(v: &str) -> bool {
    let t = v.trim();
    !t.is_empty() && !reference(t) && !placeholder(t)
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let config = GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone);
    let t = s.trim_end_matches('=');
    // A length of 1 mod 4 cannot be base64: drop the last character.
    let t = if t.len() % 4 == 1 {
        t.get(..t.len() - 1)?
    } else {
        t
    };
    let alphabet = if t.contains(['-', '_']) {
        &base64::alphabet::URL_SAFE
    } else {
        &base64::alphabet::STANDARD
    };
    GeneralPurpose::new(alphabet, config).decode(t).ok()
}

/// Base64 of plain text (a script, a JSON document, a public PEM block):
/// encoded, not secret by itself.
pub fn base64_of_text(s: &str) -> bool {
    let Some(d) = decode_base64(s) else {
        return false;
    };
    if d.len() < 12 {
        return false;
    }
    let text = String::from_utf8_lossy(&d);
    if text.contains("-----BEGIN") {
        return !text.contains("PRIVATE");
    }
    let printable = d
        .iter()
        .filter(|&&c| c == b'\n' || c == b'\t' || c == b'\r' || (0x20..0x7f).contains(&c))
        .count();
    printable * 100 >= d.len() * 95
}

/// Base64 of a PEM private-key block.
pub fn base64_private_key(s: &str) -> bool {
    decode_base64(s).is_some_and(|d| String::from_utf8_lossy(&d).contains("PRIVATE KEY"))
}

/// What starts `eyJ` but is no credential: one segment that is a lone JWT
/// header (`{"alg": ...}`) or base64 of a JSON document naming no secret
/// (standard base64 of any JSON object starts `eyJ`); a header and claims
/// with no signature, which authenticate nothing; a signed token whose
/// claims give it Supabase's `anon` role, which Supabase documents as
/// public (the browser holds it; row-level security guards the data).
pub fn not_a_jwt(s: &str) -> bool {
    let segments: Vec<&str> = s.split('.').collect();
    match segments.as_slice() {
        [one] => plain_json_segment(one),
        // The match may start at a later segment: only a JWT header
        // (`"alg"`) before the claims makes it the unsigned whole.
        [head, _] | [head, _, ""] => {
            decode_base64(head).is_some_and(|d| String::from_utf8_lossy(&d).contains("\"alg\""))
        }
        [_, claims, _] => decode_base64(claims).is_some_and(|d| {
            let t: String = String::from_utf8_lossy(&d)
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            t.contains("\"role\":\"anon\"") && t.contains("supabase")
        }),
        _ => false,
    }
}

fn plain_json_segment(s: &str) -> bool {
    decode_base64(s).is_some_and(|d| {
        let printable = d
            .iter()
            .filter(|&&c| c == b'\n' || c == b'\t' || c == b'\r' || (0x20..0x7f).contains(&c))
            .count();
        let t = String::from_utf8_lossy(&d).to_ascii_lowercase();
        printable * 100 >= d.len() * 95
            && t.trim_start().starts_with('{')
            && !["private_key", "private key", "password", "secret", "token"]
                .iter()
                .any(|w| t.contains(w))
    })
}

/// The body of a PEM block that is empty, `...`, a placeholder or words
/// (no upper case, no digit): not key material.
pub fn placeholder_body(body: &str) -> bool {
    let b = body.trim();
    b.is_empty()
        || placeholder(b)
        || !b
            .chars()
            .any(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// The words of a key: split on punctuation and camelCase, lower-cased,
/// trailing digits dropped (`DB_PASSWORD2`, `secretKey`).
pub fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
        .into_iter()
        .map(|w| w.trim_end_matches(|c: char| c.is_ascii_digit()).to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretKey {
    /// A password: a human-made literal of six characters or more.
    Password,
    /// A token, key or secret: twelve characters or more with entropy.
    Token,
}

/// Whether a key names a secret, and which kind: by its last word
/// (`DB_PASSWORD`, `client_secret`, `id_token`), or `key` after a word
/// that makes it one (`api_key`, `private_key`, `aws_secret_access_key`).
/// A key naming public material, or ending in a word that describes the
/// secret rather than holding it (`password_file`, `token_url`,
/// `secret_name`, `max_tokens`), is not one.
pub fn secret_key(key: &str) -> Option<SecretKey> {
    let mut words = key_words(key);
    if words
        .iter()
        .any(|w| matches!(w.as_str(), "public" | "pub" | "publishable" | "pubkey"))
    {
        return None;
    }
    while words.len() > 1
        && matches!(
            words.last().map(String::as_str),
            Some(
                "value"
                    | "b64"
                    | "base64"
                    | "raw"
                    | "plain"
                    | "plaintext"
                    | "base"
                    | "str"
                    | "literal"
            )
        )
    {
        words.pop();
    }
    let last = words.last()?.as_str();
    let before = words
        .len()
        .checked_sub(2)
        .and_then(|i| words.get(i))
        .map(String::as_str);
    match last {
        "password" | "passwd" | "pwd" | "pass" | "passphrase" | "passcode" | "psk" | "bindpw"
        | "rootpw" | "requirepass" | "masterauth" => Some(SecretKey::Password),
        "secret" | "token" | "apikey" | "credential" | "credentials" | "creds" | "auth" | "pat" => {
            Some(SecretKey::Token)
        }
        // One word that ends in one (`PGPASSWORD`, `dbpassword`,
        // `clientsecret`, `authtoken`).
        w if w.len() > 8 && (w.ends_with("password") || w.ends_with("passwd")) => {
            Some(SecretKey::Password)
        }
        w if w.len() > 6
            && (w.ends_with("secret") || w.ends_with("token") || w.ends_with("apikey")) =>
        {
            Some(SecretKey::Token)
        }
        "key" => match before {
            Some(
                "api" | "private" | "secret" | "access" | "signing" | "encryption" | "master"
                | "account" | "client" | "app" | "auth" | "license" | "service" | "shared"
                | "session" | "storage" | "webhook" | "deploy" | "admin" | "root" | "ingest"
                | "write" | "read" | "sdk" | "server" | "hmac" | "jwt" | "cookie" | "routing"
                | "integration",
            ) => Some(SecretKey::Token),
            _ => None,
        },
        _ => None,
    }
}

/// Files whose unquoted values are expressions, not literals.
pub fn code_file(path: &str) -> bool {
    let ext = path
        .rsplit('/')
        .next()
        .and_then(|b| b.rsplit_once('.'))
        .map(|(_, e)| e);
    matches!(
        ext,
        Some(
            "tf" | "hcl"
                | "py"
                | "js"
                | "ts"
                | "jsx"
                | "tsx"
                | "mjs"
                | "cjs"
                | "go"
                | "rb"
                | "java"
                | "kt"
                | "kts"
                | "rs"
                | "php"
                | "cs"
                | "c"
                | "h"
                | "cpp"
                | "hpp"
                | "swift"
                | "scala"
                | "groovy"
                | "lua"
                | "pl"
                | "ex"
                | "exs"
                | "dart"
        )
    )
}

/// `process.env.API_KEY`, `self.token`, `var.db_password`, `get_token()`:
/// an expression, not a literal.
fn expression(v: &str) -> bool {
    let head = v.split(['(', '[']).next().unwrap_or(v);
    let parts: Vec<&str> = head.split('.').collect();
    // A name in code: an identifier, short, with few digits (a token's
    // parts are long or mix letters and digits: `s.CCgdFkNmt8s92j3P...`).
    // A part ending in a digit reads as a password's tail
    // (`Ember08.saffron9`), not a name in code.
    let ident = |p: &str| {
        p.len() <= 24
            && p.chars().filter(char::is_ascii_digit).count() <= 2
            && !p.ends_with(|c: char| c.is_ascii_digit())
            && p.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    (parts.len() >= 2 || v.contains('(')) && parts.iter().all(|p| ident(p))
}

/// Lower-case words joined by `-`, `_` or `.` (`bert-base-uncased`): a
/// name, not a token.
fn wordy(v: &str) -> bool {
    v.chars()
        .all(|c| c.is_ascii_lowercase() || matches!(c, '-' | '_' | '.'))
}

/// An Ethereum address (a token contract's, a wallet's): `0x` and 40 hex
/// digits, mixed case when checksummed. Public by design.
pub(crate) fn ethereum_address(v: &str) -> bool {
    v.len() == 42 && v.starts_with("0x") && v[2..].bytes().all(|c| c.is_ascii_hexdigit())
}

/// An assignment of a literal to a secret-sounding key, with enough
/// entropy for its length.
pub fn secret_assignment(key: &str, value: &str, quoted: bool, path: &str) -> bool {
    let Some(kind) = secret_key(key) else {
        return false;
    };
    if !quoted && code_file(path) {
        return false;
    }
    let v = if quoted {
        value
    } else {
        value.trim_end_matches([',', ';', ')', '}', ']'])
    };
    if !literal(v) || v.chars().any(char::is_whitespace) || (!quoted && expression(v)) {
        return false;
    }
    if ethereum_address(v) {
        return false;
    }
    let distinct = {
        let mut c: Vec<char> = v.chars().collect();
        c.sort_unstable();
        c.dedup();
        c.len()
    };
    match kind {
        SecretKey::Password => v.len() >= 6 && distinct >= 4,
        SecretKey::Token => v.len() >= 12 && crate::entropy::entropy(v) >= 3.0 && !wordy(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        for p in [
            "AKIAXXXXXXXXXXXXXXXX",
            "xoxb-xxxxxxxxxxxx",
            "YOUR_API_KEY_HERE",
            "<your-password>",
            "changeme",
            "********",
            "0000000000000000",
            "EXAMPLE_KEY",
        ] {
            assert!(placeholder(p), "{p}");
        }
        for s in [
            "Orchid!42river",
            "AKIAKVMJOJGWY6V24VCD",
            "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        ] {
            assert!(!placeholder(s), "{s}");
        }
    }

    #[test]
    fn key_words_and_secret_keys() {
        assert_eq!(key_words("secretKeyRef"), ["secret", "key", "ref"]);
        assert_eq!(key_words("DB_PASSWORD2"), ["db", "password"]);
        assert_eq!(key_words("_authToken"), ["auth", "token"]);
        assert_eq!(secret_key("DB_PASSWORD"), Some(SecretKey::Password));
        assert_eq!(secret_key("aws_secret_access_key"), Some(SecretKey::Token));
        assert_eq!(secret_key("SECRET_KEY_BASE"), Some(SecretKey::Token));
        for k in [
            "secretKeyRef",
            "password_file",
            "token_url",
            "max_tokens",
            "public_key",
            "api_key_header",
            "tokenizer",
            "key",
        ] {
            assert_eq!(secret_key(k), None, "{k}");
        }
    }
}
