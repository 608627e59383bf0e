//! `--explain RULE`: what a rule refuses and what lets a value through,
//! and, for a text, why each of its matches stood. Never the value: a
//! match is shown by its six-character excerpt, its length and entropy.

use crate::rules::{self, CODE_RULES, Check, Layer, RULES};
use crate::{Allow, entropy, excerpt, value};

/// A rule as `--explain` and SARIF show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleInfo {
    pub id: &'static str,
    pub layer: Layer,
    pub description: &'static str,
    /// Where the format comes from.
    pub source: &'static str,
}

/// Every rule: the pattern table, then the rules that are code.
pub fn all_rules() -> Vec<RuleInfo> {
    RULES
        .iter()
        .map(|r| RuleInfo {
            id: r.id,
            layer: r.layer,
            description: r.description,
            source: r.source,
        })
        .chain(
            CODE_RULES
                .iter()
                .map(|&(id, layer, description, source)| RuleInfo {
                    id,
                    layer,
                    description,
                    source,
                }),
        )
        .collect()
}

pub fn describe(id: &str) -> Option<RuleInfo> {
    all_rules().into_iter().find(|r| r.id == id)
}

fn layer_text(layer: Layer) -> &'static str {
    match layer {
        Layer::Hard => "hard: applies everywhere and to every meta-state write",
        Layer::Soft => {
            "soft: skipped for *.md, docs/*, Python tests and conftest.py, and on meta-state writes"
        }
    }
}

fn check_text(check: Check) -> &'static str {
    match check {
        Check::Placeholder => {
            "a placeholder (EXAMPLE, sample, dummy, fake, changeme, your_..., xxxx, <...>, ***, ...) or a run of one character is let through"
        }
        Check::Runs => {
            "a run of one character (AKIAXXXXXXXXXXXXXXXX) is let through; the spec pins AWS's documented example key as a finding"
        }
        Check::Always => "every match is a finding",
        Check::Literal => {
            "the value must be a literal: a ${...}, {{ ... }} or $VAR reference, ENC[...] ciphertext, an empty value or a placeholder is let through"
        }
        Check::Assignment => {
            "the key must name a secret by its last word (password, passwd, pwd, pass, secret, token, credentials, auth; key after api, private, secret, access, signing, client, ...), not public material and not a description of one (password_file, token_url, secret_name); the value must be a literal (not a reference, not an expression in code, no spaces, not a placeholder): a password six characters or more, a token twelve or more with entropy of 3 bits per character or more"
        }
        Check::Jwt => {
            "one segment that decodes to a JSON document naming no secret (a lone header, base64 of a config) is let through"
        }
        Check::PemBody => "a block whose body is empty, ... or words is let through",
        Check::Base64PrivateKey => "a finding only when the base64 decodes to a PRIVATE KEY block",
        Check::EitherPlaceholder => {
            "a placeholder (EXAMPLE, sample, dummy, xxxx, <...>, ...) or a run of one character, in whichever form of the value matched, is let through"
        }
        Check::EitherLiteral => {
            "the value (whichever of its forms matched) must be a literal: a ${...}, {{ ... }}, $VAR or %VAR% reference, ENC[...] ciphertext, an empty value or a placeholder is let through"
        }
    }
}

/// The explanation of a rule, or None for an unknown id.
pub fn explain(id: &str) -> Option<String> {
    let info = describe(id)?;
    let mut out = format!(
        "{}: {}\n  source: {}\n  layer: {}\n",
        info.id,
        info.description,
        info.source,
        layer_text(info.layer)
    );
    if let Some(rule) = rules::rule(id) {
        out.push_str(&format!("  pattern: {}\n", rule.regex));
        out.push_str(&format!("  let through: {}\n", check_text(rule.check)));
        out.push_str(&format!(
            "  tested: {} example(s) caught, {} passed\n",
            rule.positives.len(),
            rule.negatives.len()
        ));
    }
    Some(out)
}

fn shape(v: &str) -> String {
    format!(
        "{} character(s), entropy {:.2} bits per character",
        v.chars().count(),
        entropy::entropy(v)
    )
}

/// Why each match of rule `id` in a text stands, one line per finding:
/// `<excerpt>: <reason>`.
pub fn reasons(path: &str, text: &str, allow: &Allow, id: &str) -> Vec<String> {
    let findings = crate::scan_text(path, text, allow, false);
    let mut out = Vec::new();
    if !findings.iter().any(|f| f.rule == id) {
        return out;
    }
    let blanked = crate::blank_public(text);
    if let Some((i, rule)) = RULES.iter().enumerate().find(|(_, r)| r.id == id) {
        let Some(re) = rules::COMPILED.each.get(i) else {
            return out;
        };
        for caps in re.captures_iter(&blanked) {
            let Some(m) = caps.get(0) else { continue };
            if !rules::stands(rule, &caps, path) {
                continue;
            }
            let v = caps.get(rule.group).map_or(m.as_str(), |g| g.as_str());
            let why = match rule.check {
                Check::Assignment => {
                    let key = caps.get(1).map_or("", |k| k.as_str());
                    let kind = match value::secret_key(key) {
                        Some(value::SecretKey::Password) => "a password",
                        _ => "a token, key or secret",
                    };
                    let v = [2, 3, 4]
                        .iter()
                        .find_map(|&g| caps.get(g))
                        .map_or("", |g| g.as_str());
                    format!(
                        "the key {key:?} names {kind} (words {:?}) and its value is a literal of {}",
                        value::key_words(key),
                        shape(v)
                    )
                }
                _ => format!(
                    "matches the {} pattern; the value ({}) is not a placeholder or reference",
                    rule.id,
                    shape(v)
                ),
            };
            out.push(format!("{}: {why}", excerpt(m.as_str())));
        }
    } else if id == "high-entropy" {
        for r in entropy::high_entropy_spans(&blanked) {
            let v = blanked.get(r).unwrap_or_default();
            out.push(format!(
                "{}: {} of base64 mixing lower case, upper case and digits; the threshold for its length is {:.2}, and it is no hex, path, URL, alphabet, placeholder or base64 of text",
                excerpt(v),
                shape(v),
                entropy::base64_threshold(v.len())
            ));
        }
    } else {
        for f in findings.iter().filter(|f| f.rule == id) {
            let why = describe(id).map_or("", |d| d.description);
            out.push(format!("{}: {why}", f.excerpt));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_explains_itself() {
        for r in all_rules() {
            let e = explain(r.id).unwrap_or_default();
            assert!(e.starts_with(&format!("{}: ", r.id)), "{e}");
            // Every rule names the format and where it comes from.
            assert!(
                e.lines()
                    .any(|l| l.starts_with("  source: ") && l.len() > 12),
                "{e}"
            );
        }
        assert!(explain("no-such-rule").is_none());
    }

    #[test]
    fn reasons_show_the_shape_never_the_value() {
        let text = "DB_PASSWORD=Falcon_06falcon$\nsession: Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8Qw0\n";
        let r = reasons("a.env", text, &Allow::default(), "secret-assignment");
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(
            r[0].starts_with("DB_PAS: the key \"DB_PASSWORD\" names a password"),
            "{r:?}"
        );
        assert!(!r[0].contains("Falcon_06"), "{r:?}");
        let r = reasons("a.env", text, &Allow::default(), "high-entropy");
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].contains("45 character(s)"), "{r:?}");
        assert!(!r[0].contains("Zx9Qw3Er"), "{r:?}");
    }
}
