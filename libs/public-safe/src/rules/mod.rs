//! The rules as data: every pattern rule with its id, description, layer,
//! the check applied to what it matched, and its own positive and negative
//! examples (each tested). The table is compiled once into a `RegexSet`
//! (one pass tells which rules can match a file) and one `Regex` per rule
//! (run only for the rules the set reported).
//!
//! Vendor formats follow each vendor's documented token shape (prefix,
//! alphabet, length). Every example token is random in the vendor's
//! alphabet, none a real key.
//!
//! The rules are written in one file per family (spec.rs, vendor.rs,
//! key_files.rs, generic.rs); this file puts them in order and holds what
//! every rule shares: its type, its compiled form and its check.

use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

use crate::value;

/// Where a rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// Everywhere, and on every meta-state write.
    Hard,
    /// Not in docs and Python tests (the spec's soft-rule skips), not on
    /// meta-state writes.
    Soft,
}

/// What is checked on a match before it becomes a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Placeholder markers (EXAMPLE, xxxx, `<...>`, ...) and runs of one
    /// character suppress a match.
    Placeholder,
    /// Only runs of one character suppress: the spec pins AWS's documented
    /// example key as a finding.
    Runs,
    /// Nothing suppresses a match.
    Always,
    /// The rule's group is a value that must be a literal: not a
    /// reference (`${...}`, `{{ ... }}`, `$VAR`), not a placeholder.
    Literal,
    /// A secret-sounding key assigned a literal with enough entropy for
    /// its length.
    Assignment,
    /// A JWT; one segment decoding to a JSON document naming no secret
    /// (a lone header, base64 of a config) is not a token.
    Jwt,
    /// A PEM private-key header; a block whose body is empty or a
    /// placeholder is not a key.
    PemBody,
    /// Base64 of a PEM block: a finding only when it holds a private key.
    Base64PrivateKey,
    /// The value is whichever capture group took part (a quoted or a bare
    /// form, an attribute or an element's text); it must be a literal.
    EitherLiteral,
    /// As [`Check::Placeholder`], on whichever capture group took part.
    EitherPlaceholder,
}

#[derive(Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    pub description: &'static str,
    /// Where the format comes from: the spec, a vendor's documentation,
    /// a tool's manual (`--explain` prints it).
    pub source: &'static str,
    pub regex: &'static str,
    pub layer: Layer,
    /// The capture group holding the value (0: the whole match).
    pub group: usize,
    pub check: Check,
    /// Empty: the pattern has a literal prefix and joins the `RegexSet`.
    /// Otherwise the rule runs alone, and only on a text containing one of
    /// these (case-sensitive; `""` always): a pattern with no literal
    /// prefix would make the set's automaton slow for every rule.
    pub needles: &'static [&'static str],
    pub positives: &'static [&'static str],
    pub negatives: &'static [&'static str],
}

use Check::*;
use Layer::*;

mod generic;
mod key_files;
mod spec;
mod vendor;

/// The table. The spec's eight hard rules come first, under their ids.
pub static RULES: &[Rule] = &TABLE;

/// The families in the order their rules are tried: a rule's index in
/// [`RULES`] is its place here.
static TABLE: [Rule; LEN] = concat([
    spec::SPEC,
    vendor::VENDOR_TOKENS,
    key_files::KEY_FILES,
    generic::GENERIC,
]);

const LEN: usize = spec::SPEC.len()
    + vendor::VENDOR_TOKENS.len()
    + key_files::KEY_FILES.len()
    + generic::GENERIC.len();

/// The families one after the other: one array built at compile time, so
/// the table stays a plain `&'static [Rule]` and a rule's index is fixed.
const fn concat<const N: usize>(parts: [&[Rule]; 4]) -> [Rule; N] {
    let mut out = [parts[0][0]; N];
    let mut k = 0;
    let mut p = 0;
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            out[k] = parts[p][i];
            k += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(k == N);
    out
}

/// Rules that are code, not one pattern: listed for `--explain`.
pub static CODE_RULES: &[(&str, Layer, &str, &str)] = &[
    (
        "refused-name",
        Hard,
        "A file whose name is refused at any depth whatever it holds: tfplan, *.tfplan, *.tfstate, *.tfstate.*, *.tfvars, *.tfvars.json, .envrc, *.pem, .private_key.*, .public_key.json (spec), and the key stores *.p12, *.pfx, *.jks, *.keystore.",
        "spec 000 (public_safe.py REFUSED_PATHS); the key-store extensions of PKCS #12 and Java",
    ),
    (
        "kubernetes-secret",
        Soft,
        "A Kubernetes Secret manifest (kind: Secret) whose data: holds a value, or whose stringData: holds a literal.",
        "Kubernetes Secrets (kubernetes.io/docs/concepts/configuration/secret: data is base64, stringData is plain)",
    ),
    (
        "email",
        Soft,
        "An e-mail address whose domain is not example.com, example.org, example.net, .invalid, .test or localhost (spec).",
        "spec 000 (public_safe.py soft rules); RFC 2606 reserved domains",
    ),
    (
        "high-entropy",
        Soft,
        "A value (the text split on quotes, =, :, whitespace and the like) of 32 or more base64 characters mixing lower case, upper case and digits whose Shannon entropy is high for its length; hex, UUIDs, URLs, paths, alphabets, base64 of plain text and values behind public/checksum/digest/signature/certificate keys are not secrets by themselves; and only on a line that names a secret before the value (key, secret, token, pass, pwd, auth, cred, private, bearer, session, cookie, salt).",
        "spec 000 (public_safe.py soft rules), narrowed by issue 39 to values in a secret's context; thresholds measured on random values of each length",
    ),
    (
        "archive-bound",
        Hard,
        "An archive that expands past the scanner's bounds (total uncompressed bytes, members, nesting depth): refused rather than expanded.",
        "issue 20 (archives are expanded within bounds)",
    ),
    (
        "uninspectable-archive",
        Hard,
        "An archive, or an archive member, the scanner cannot read: encrypted, an unsupported compression method (a zip's bzip2, LZMA, deflate64, ...), truncated or corrupt, or an archive format recognised but not opened (bzip2, lzip, compress, lz4, rar, cab, xar). What was not read is refused, never passed; the finding names the archive and member and says why. Read: zip (stored, deflate), gzip, tar, xz, zstd and 7z (unencrypted).",
        "issue 20 (an archive not read is refused, never passed)",
    ),
];

pub struct Compiled {
    /// The rules with a literal prefix, in one automaton.
    pub set: RegexSet,
    /// For each entry of `set`, its index in [`RULES`].
    pub in_set: Vec<usize>,
    /// Every rule's own pattern, by index in [`RULES`].
    pub each: Vec<Regex>,
}

pub static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let in_set: Vec<usize> = (0..RULES.len())
        .filter(|&i| RULES[i].needles.is_empty())
        .collect();
    Compiled {
        set: RegexSet::new(in_set.iter().map(|&i| RULES[i].regex))
            .unwrap_or_else(|e| panic!("built-in rule table: {e}")),
        in_set,
        each: RULES
            .iter()
            .map(|r| {
                Regex::new(r.regex).unwrap_or_else(|e| panic!("built-in pattern {}: {e}", r.regex))
            })
            .collect(),
    }
});

/// The rules that may match a text, by index in [`RULES`]: one pass of
/// the set, and the needles of the rules that run alone.
pub fn candidates(text: &str) -> Vec<usize> {
    let c = &*COMPILED;
    let mut out: Vec<usize> = c
        .set
        .matches(text)
        .iter()
        .filter_map(|k| c.in_set.get(k).copied())
        .collect();
    out.extend(
        RULES
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.needles.is_empty() && r.needles.iter().any(|n| text.contains(n)))
            .map(|(i, _)| i),
    );
    out.sort_unstable();
    out
}

pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Whether a match stands: the rule's check on what it captured. `path`
/// tells code (where an unquoted value is an expression) from data.
pub fn stands(rule: &Rule, caps: &Captures<'_>, path: &str) -> bool {
    let whole = caps.get(0).map_or("", |m| m.as_str());
    let value = caps.get(rule.group).map(|m| m.as_str());
    match rule.check {
        Always => true,
        Runs => !value::one_char_run(value.unwrap_or(whole)),
        Placeholder => !value::placeholder(value.unwrap_or(whole)),
        Literal => value.is_some_and(|v| value::literal(v.trim_matches(['"', '\'']))),
        Jwt => !value::not_a_jwt(whole),
        PemBody => value.is_none_or(|body| !value::placeholder_body(body)),
        Base64PrivateKey => value::base64_private_key(whole),
        EitherLiteral => (1..caps.len())
            .find_map(|i| caps.get(i))
            .is_some_and(|m| value::literal(m.as_str())),
        EitherPlaceholder => (1..caps.len())
            .find_map(|i| caps.get(i))
            .is_some_and(|m| !value::placeholder(m.as_str())),
        Assignment => {
            let key = caps.get(1).map_or("", |m| m.as_str());
            let (v, quoted) = match (caps.get(2), caps.get(3), caps.get(4)) {
                (Some(m), _, _) | (_, Some(m), _) => (m.as_str(), true),
                (_, _, Some(m)) => (m.as_str(), false),
                _ => return false,
            };
            value::secret_assignment(key, v, quoted, path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(rule: &Rule, i: usize, text: &str) -> bool {
        COMPILED.each[i]
            .captures_iter(text)
            .any(|c| stands(rule, &c, "x.yml"))
    }

    #[test]
    fn every_rule_catches_its_positives_and_passes_its_negatives() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        ids.extend(CODE_RULES.iter().map(|c| c.0));
        assert!(CODE_RULES.iter().all(|c| !c.3.is_empty()));
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "rule ids are unique");
        for (i, rule) in RULES.iter().enumerate() {
            assert!(!rule.positives.is_empty(), "{}", rule.id);
            assert!(!rule.negatives.is_empty(), "{}", rule.id);
            assert!(!rule.description.is_empty(), "{}", rule.id);
            assert!(!rule.source.is_empty(), "{} names no source", rule.id);
            for p in rule.positives {
                assert!(
                    candidates(p).contains(&i),
                    "{}: the set or needles miss {p}",
                    rule.id
                );
                assert!(hits(rule, i, p), "{}: misses {p}", rule.id);
            }
            for n in rule.negatives {
                assert!(!hits(rule, i, n), "{}: catches {n}", rule.id);
            }
        }
    }
}
