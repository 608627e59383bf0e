//! Encrypted values: `ENC[age:<base64 of an age file>]` markers, the
//! identities that open them, and the read-time refusals of markers where
//! one may not stand.
//!
//! A marker is decrypted only where a field is declared encrypted (user
//! names, first and last names and emails; group members and admins). The
//! plaintext is remembered with its marker, so anything emitted refers to
//! the ciphertext, never the text.

use std::io::{Read, Write};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use csis_model::path::Step;
use csis_model::{Diagnostic, DocPath, Origin, Value};

mod encrypt_fields;

pub use encrypt_fields::encrypt_fields_in_text;

pub const PREFIX: &str = "ENC[age:";

/// The ciphertext of a whole-value marker.
pub fn marker_payload(s: &str) -> Option<&str> {
    s.strip_prefix(PREFIX)?.strip_suffix(']')
}

pub fn is_marker(s: &str) -> bool {
    marker_payload(s).is_some_and(|p| !p.is_empty() && !p.contains(']'))
}

/// A marker standing inside a longer string.
pub fn is_embedded(s: &str) -> bool {
    s.contains(PREFIX) && !is_marker(s)
}

/// Encrypt `plaintext` to every recipient (`age1...`), as a marker.
pub fn encrypt(plaintext: &str, recipients: &[String]) -> Result<String, String> {
    if recipients.is_empty() {
        return Err("encryption.recipients in cfg/_config.yml names no age public key".into());
    }
    let parsed: Vec<age::x25519::Recipient> = recipients
        .iter()
        .map(|r| {
            r.trim()
                .parse()
                .map_err(|e| format!("recipient '{r}': {e}"))
        })
        .collect::<Result<_, _>>()?;
    let encryptor =
        age::Encryptor::with_recipients(parsed.iter().map(|r| r as &dyn age::Recipient))
            .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut w = encryptor.wrap_output(&mut out).map_err(|e| e.to_string())?;
    w.write_all(plaintext.as_bytes())
        .map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    Ok(format!("{PREFIX}{}]", B64.encode(out)))
}

/// The identities CSIS_CONFIG_IDENTITY names, read at start; what it says
/// is wrong is kept and reported only when a marker needs an identity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum IdentitySource {
    #[default]
    Unset,
    /// AGE-SECRET-KEY-1 strings, tried in order. Never printed.
    Keys(Vec<SecretKey>),
    /// Why the variable names nothing usable.
    Invalid(String),
}

/// An identity's text; Debug never shows it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SecretKey(pub String);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(***)")
    }
}

/// The AGE-SECRET-KEY-1 lines of an identity file's text.
pub fn keys_in(text: &str) -> Vec<SecretKey> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("AGE-SECRET-KEY-1"))
        .map(|l| SecretKey(l.to_string()))
        .collect()
}

/// Open a marker with the first identity that can.
pub fn decrypt(marker: &str, identities: &IdentitySource) -> Result<String, String> {
    let keys = match identities {
        IdentitySource::Unset => {
            return Err("an encrypted value is present but CSIS_CONFIG_IDENTITY is not set".into());
        }
        IdentitySource::Invalid(why) => return Err(why.clone()),
        IdentitySource::Keys(k) => k,
    };
    let payload = marker_payload(marker).ok_or("not an ENC[age:...] marker")?;
    let bytes = B64
        .decode(payload.trim())
        .map_err(|e| format!("the marker is not base64: {e}"))?;
    let parsed: Vec<age::x25519::Identity> = keys.iter().filter_map(|k| k.0.parse().ok()).collect();
    let decryptor = age::Decryptor::new(&bytes[..])
        .map_err(|e| format!("the marker is not an age file: {e}"))?;
    let mut reader = decryptor
        .decrypt(parsed.iter().map(|i| i as &dyn age::Identity))
        .map_err(|_| {
            format!(
                "no identity in CSIS_CONFIG_IDENTITY can decrypt this value ({} tried; it was encrypted to other recipients)",
                parsed.len()
            )
        })?;
    let mut out = String::new();
    reader
        .read_to_string(&mut out)
        .map_err(|e| format!("the decrypted value is not text: {e}"))?;
    Ok(out)
}

/// Paths read before the configuration loads (no identity available), as
/// (top-level key, nested key) prefixes of cfg/.
const EXEMPT: [&[&str]; 7] = [
    &["encryption"],
    &["public_safe"],
    &["config", "apply_identity"],
    &["config", "apply_storage"],
    &["config", "apply_instances"],
    &["config", "apply_release"],
    &["config", "preflight"],
];

/// Every marker standing where one may not: a mapping key, a declaration's
/// name or type, inside a longer string, or at a path read raw. Needs no
/// identity.
pub fn refuse_markers_at(file: &str, doc: &Value, cfg: bool) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    walk(file, doc, &mut Vec::new(), cfg, &mut out);
    out
}

fn exempt(path: &[Step<'_>]) -> bool {
    let keys: Vec<&str> = path
        .iter()
        .filter_map(|s| match s {
            Step::Key(k) => Some(*k),
            Step::Index(_) => None,
        })
        .collect();
    let credentials = path.first() == Some(&Step::Key("runtime_builders"))
        && (keys.contains(&"profile_name") || keys.contains(&"profile"));
    credentials || EXEMPT.iter().any(|p| keys.starts_with(p))
}

/// Whether `s` holds the marker prefix anywhere: a byte search for its
/// `[` rules out nearly every string before the substring search.
fn holds_prefix(s: &str) -> bool {
    s.as_bytes().contains(&b'[') && s.contains(PREFIX)
}

/// `path` is the place of `v`, extended and restored on the way down,
/// borrowed from the document: the owned place is made for a refusal only
/// (every node of every file is walked).
fn walk<'a>(
    file: &str,
    v: &'a Value,
    path: &mut Vec<Step<'a>>,
    cfg: bool,
    out: &mut Vec<Diagnostic>,
) {
    let refuse = |out: &mut Vec<Diagnostic>, steps: &[Step<'_>], why: &str| {
        let p = DocPath::root().with_steps(steps);
        out.push(
            Diagnostic::error(format!("{file}: {p}: {why}"))
                .at(Origin::new(file, p))
                .help("move the secret into a whole value the loader reads, or leave it clear"),
        );
    };
    match v {
        Value::Map(m) => {
            for (k, child) in m.iter() {
                path.push(Step::Key(k));
                if holds_prefix(k) {
                    refuse(out, path, "a mapping KEY may not be encrypted");
                }
                walk(file, child, path, cfg, out);
                path.pop();
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                walk(file, item, path, cfg, out);
                path.pop();
            }
        }
        Value::Scalar { text, .. } if !holds_prefix(text) => {}
        Value::Scalar { text, .. } if is_embedded(text) => refuse(
            out,
            path,
            "an encrypted value is embedded in a longer string; make the marker the ENTIRE value",
        ),
        Value::Scalar { text, .. } if is_marker(text) => {
            let declaration = match path.as_slice() {
                [.., Step::Index(_), Step::Key(k)] | [Step::Key(k)] => {
                    (*k == "name" || *k == "type").then_some(*k)
                }
                _ => None,
            };
            if let Some(k) = declaration {
                refuse(
                    out,
                    path,
                    &format!("a declaration's '{k}' may not be encrypted"),
                );
            } else if cfg && exempt(path) {
                refuse(
                    out,
                    path,
                    "this value may not be encrypted -- it is read before the configuration loads, with no identity available",
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keypair() -> (String, String) {
        let id = age::x25519::Identity::generate();
        (
            age::secrecy::ExposeSecret::expose_secret(&id.to_string()).to_string(),
            id.to_public().to_string(),
        )
    }

    #[test]
    fn a_marker_round_trips_and_only_its_recipients_open_it() {
        let (key, recipient) = keypair();
        let (other, _) = keypair();
        let m = encrypt("avery.alpha", &[recipient]).unwrap();
        assert!(is_marker(&m), "{m}");
        let ids = IdentitySource::Keys(vec![SecretKey(key)]);
        assert_eq!(decrypt(&m, &ids).unwrap(), "avery.alpha");
        let wrong = IdentitySource::Keys(vec![SecretKey(other)]);
        assert_eq!(
            decrypt(&m, &wrong).unwrap_err(),
            "no identity in CSIS_CONFIG_IDENTITY can decrypt this value (1 tried; it was encrypted to other recipients)"
        );
        assert_eq!(
            decrypt(&m, &IdentitySource::Unset).unwrap_err(),
            "an encrypted value is present but CSIS_CONFIG_IDENTITY is not set"
        );
        assert_eq!(
            format!("{:?}", SecretKey("AGE-SECRET-KEY-1X".into())),
            "SecretKey(***)"
        );
    }

    #[test]
    fn markers_where_none_may_stand() {
        let (doc, _) = csis_yaml::parse(
            "encryption:\n  recipients: [\"ENC[age:AAAA]\"]\nuser_builders:\n  - name: \"ENC[age:AAAA]\"\n    type: basic\nconfig:\n  \"ENC[age:AAAA]\": 1\n  greeting: \"hi ENC[age:AAAA]\"\n  fine: \"ENC[age:AAAA]\"\n",
        )
        .unwrap();
        let msgs: Vec<String> = refuse_markers_at("cfg/_config.yml", &doc, true)
            .into_iter()
            .map(|d| d.message)
            .collect();
        assert_eq!(
            msgs,
            [
                "cfg/_config.yml: encryption.recipients[0]: this value may not be encrypted -- it is read before the configuration loads, with no identity available",
                "cfg/_config.yml: user_builders[0].name: a declaration's 'name' may not be encrypted",
                "cfg/_config.yml: config.ENC[age:AAAA]: a mapping KEY may not be encrypted",
                "cfg/_config.yml: config.greeting: an encrypted value is embedded in a longer string; make the marker the ENTIRE value",
            ]
        );
    }
}

/// `encryption.recipients` of cfg/_config.yml, read as text: no identity
/// and no load needed.
pub fn recipients_from_config(text: &str) -> Result<Vec<String>, String> {
    let (doc, _) = csis_yaml::parse(text).map_err(|e| format!("cfg/_config.yml: {}", e.message))?;
    Ok(doc
        .get("encryption")
        .and_then(|e| e.get("recipients"))
        .and_then(Value::as_seq)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default())
}

/// Every marker in a text, with its 1-based line.
pub fn markers_in(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // Asked of every user's email: one byte search rules most texts out
    // before a substring search is set up for each line.
    if !text.contains('[') {
        return out;
    }
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find(PREFIX) {
            let after = &rest[i..];
            match after.find(']') {
                Some(j) => {
                    out.push((n + 1, after[..=j].to_string()));
                    rest = &after[j + 1..];
                }
                None => break,
            }
        }
    }
    out
}

/// Re-encrypt every marker of a text to `recipients`; the first marker no
/// identity opens stops it (the caller writes nothing then).
pub fn rotate_text(
    text: &str,
    identities: &IdentitySource,
    recipients: &[String],
) -> Result<(String, usize), String> {
    let mut out = text.to_string();
    let mut count = 0;
    for (line, marker) in markers_in(text) {
        let plain = decrypt(&marker, identities).map_err(|e| format!("line {line}: {e}"))?;
        out = out.replacen(&marker, &encrypt(&plain, recipients)?, 1);
        count += 1;
    }
    Ok((out, count))
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn markers_are_found_with_their_lines() {
        let found = markers_in("a: \"ENC[age:AA]\"\nb: [\"ENC[age:BB]\", \"ENC[age:CC]\"]\n");
        assert_eq!(
            found,
            [
                (1, "ENC[age:AA]".to_string()),
                (2, "ENC[age:BB]".into()),
                (2, "ENC[age:CC]".into())
            ]
        );
    }
}
