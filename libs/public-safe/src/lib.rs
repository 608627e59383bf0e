//! The public-safe gate: one scanner behind every meta-state write, the
//! `public-safe` command, the pre-commit hook and `--commit`.
//!
//! It reads bytes; a zip or gzip member is opened and scanned. Structural
//! public material (ciphertext, scp-style git URLs, age public keys,
//! lock-file hashes, SSH public keys) is blanked before any rule runs. A
//! finding names the path, the rule and a six-character excerpt, never the
//! value.

use std::io::Read;
use std::sync::LazyLock;

use regex::Regex;

/// File names refused at any depth, whatever they hold.
pub const REFUSED_PATHS: [&str; 10] = [
    "tfplan",
    "*.tfplan",
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
    "*.tfvars.json",
    ".envrc",
    "*.pem",
    ".private_key.*",
    ".public_key.json",
];

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Finding {
    pub path: String,
    pub rule: &'static str,
    /// The first six characters of what matched.
    pub excerpt: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.path, self.rule, self.excerpt)
    }
}

/// What `public_safe.allow` lets through by decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allow {
    /// Lower-cased substrings a matched span may contain.
    pub substrings: Vec<String>,
    /// `path:<glob>` entries: files accepted whole, by path or basename.
    pub paths: Vec<String>,
}

impl Allow {
    pub fn from_entries(entries: &[String]) -> Allow {
        let mut a = Allow::default();
        for e in entries {
            match e.strip_prefix("path:") {
                Some(g) => a.paths.push(g.trim().to_string()),
                None => a.substrings.push(e.trim().to_lowercase()),
            }
        }
        a
    }

    /// `public_safe.allow` read as text from cfg/_config.yml, so a tree
    /// that cannot load is still gated.
    pub fn from_config_text(text: &str) -> Allow {
        let entries = csis_yaml::parse(text)
            .ok()
            .and_then(|(doc, _)| {
                doc.get("public_safe")
                    .and_then(|p| p.get("allow"))
                    .and_then(csis_model::Value::as_seq)
                    .map(|s| {
                        s.iter()
                            .filter_map(csis_model::Value::as_str)
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
            })
            .unwrap_or_default();
        Allow::from_entries(&entries)
    }

    fn accepts_file(&self, path: &str) -> bool {
        let base = path.rsplit('/').next().unwrap_or(path);
        self.paths.iter().any(|g| glob(g, path) || glob(g, base))
    }

    fn accepts_span(&self, span: &str) -> bool {
        let s = span.to_lowercase();
        self.substrings
            .iter()
            .any(|a| !a.is_empty() && s.contains(a))
    }
}

/// A shell-style glob: `*` any run within a segment, `**` across segments,
/// `?` one character.
pub fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some('*'), _) if p.get(1) == Some(&'*') => (0..=t.len()).any(|i| go(&p[2..], &t[i..])),
            (Some('*'), _) => (0..=t.len())
                .take_while(|&i| i == 0 || t[i - 1] != '/')
                .any(|i| go(&p[1..], &t[i..])),
            (Some('?'), Some(c)) if *c != '/' => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

/// Whether a path's name is refused at any depth.
pub fn refused_name(path: &str) -> bool {
    path.split('/')
        .any(|seg| REFUSED_PATHS.iter().any(|g| glob(g, seg)))
}

fn re(s: &str) -> Regex {
    Regex::new(s).unwrap_or_else(|e| panic!("built-in pattern {s}: {e}"))
}

static BLANK: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    vec![
        re(r"ENC\[age:[A-Za-z0-9+/=]*\]"),
        re(r"\b[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~/-]+(\.git)?\b"),
        re(r"\bage1[0-9a-z]{58}\b"),
        re(r"\b(h1|zh):[A-Za-z0-9+/=]+"),
        re(r"\b(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp[0-9]+|sk-[A-Za-z0-9@.-]+) [A-Za-z0-9+/=]+"),
    ]
});

static HARD: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    vec![
        ("jwt", re(r"\beyJ[A-Za-z0-9_-]{20,}")),
        (
            "pem-private-key",
            re(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"),
        ),
        ("aws-access-key", re(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b")),
        (
            "gcp-service-account",
            re(r#""private_key_id"\s*:\s*"[^"\s]+""#),
        ),
        ("slack-token", re(r"\bxox[baprs]-[A-Za-z0-9-]{10,}")),
        ("github-token", re(r"\bgh[pousr]_[A-Za-z0-9]{20,}")),
        ("age-identity", re(r"AGE-SECRET-KEY-1[0-9A-Z]{58}")),
        (
            "tfvar-assignment",
            re(r#"\bTF_VAR_[A-Za-z0-9_]+=("[^"$\s][^"]*"|'[^'$\s][^']*'|[^\s"'$][^\s]*)"#),
        ),
    ]
});

static SERVICE_ACCOUNT: LazyLock<Regex> = LazyLock::new(|| re(r#""type"\s*:\s*"service_account""#));
static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b"));
static ENTROPY: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9+/=_-]{40,}"));

/// Files the soft rules (email, high-entropy) skip.
fn soft_skipped(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    path.ends_with(".md")
        || path.starts_with("docs/")
        || path.starts_with("tests/") && path.ends_with(".py")
        || path.contains("/tests/") && path.ends_with(".py")
        || (base.starts_with("test_") && base.ends_with(".py"))
        || base == "conftest.py"
}

fn public_domain(domain: &str) -> bool {
    let d = domain.to_lowercase();
    ["example.com", "example.org", "example.net"]
        .iter()
        .any(|e| d == *e || d.ends_with(&format!(".{e}")))
        || d.ends_with(".invalid")
        || d.ends_with(".test")
        || d == "localhost"
}

fn mixed(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_lowercase())
        && s.chars().any(|c| c.is_ascii_uppercase())
        && s.chars().any(|c| c.is_ascii_digit())
}

fn excerpt(s: &str) -> String {
    s.chars().take(6).collect()
}

/// Scan one text: blank the structural public material, then run the
/// hard rules, and the soft ones unless `hard_only` or the path skips them.
pub fn scan_text(path: &str, text: &str, allow: &Allow, hard_only: bool) -> Vec<Finding> {
    if allow.accepts_file(path) {
        return Vec::new();
    }
    let mut blanked = text.to_string();
    for r in BLANK.iter() {
        blanked = r
            .replace_all(&blanked, |c: &regex::Captures<'_>| " ".repeat(c[0].len()))
            .into_owned();
    }
    let mut out = Vec::new();
    let mut found = |rule: &'static str, span: &str| {
        if !allow.accepts_span(span) {
            out.push(Finding {
                path: path.to_string(),
                rule,
                excerpt: excerpt(span),
            });
        }
    };
    // A span a hard rule claims is not looked at again by the soft rules.
    let mut claimed: Vec<std::ops::Range<usize>> = Vec::new();
    for (rule, r) in HARD.iter() {
        for m in r.find_iter(&blanked) {
            found(rule, m.as_str());
            claimed.push(m.range());
        }
    }
    for range in claimed {
        blanked.replace_range(range.clone(), &" ".repeat(range.len()));
    }
    if blanked.contains("\"private_key\"")
        && let Some(m) = SERVICE_ACCOUNT.find(&blanked)
    {
        found("gcp-service-account", m.as_str());
    }
    if !hard_only && !soft_skipped(path) {
        for m in EMAIL.find_iter(&blanked) {
            let domain = m.as_str().rsplit('@').next().unwrap_or_default();
            if !public_domain(domain) {
                found("email", m.as_str());
            }
        }
        for m in ENTROPY.find_iter(&blanked) {
            if mixed(m.as_str()) {
                found("high-entropy", m.as_str());
            }
        }
    }
    out
}

/// Scan a file's bytes: refused names, zip and gzip members, then text.
pub fn scan_bytes(path: &str, bytes: &[u8], allow: &Allow) -> Vec<Finding> {
    let mut out = Vec::new();
    if refused_name(path) && !allow.accepts_file(path) {
        out.push(Finding {
            path: path.to_string(),
            rule: "refused-name",
            excerpt: excerpt(path.rsplit('/').next().unwrap_or(path)),
        });
        return out;
    }
    if bytes.starts_with(b"PK\x03\x04") {
        if let Ok(mut archive) = zip::ZipArchive::new(std::io::Cursor::new(bytes)) {
            for i in 0..archive.len() {
                let Ok(mut member) = archive.by_index(i) else {
                    continue;
                };
                let name = format!("{path}!{}", member.name());
                let mut data = Vec::new();
                if member.read_to_end(&mut data).is_ok() {
                    out.extend(scan_bytes(&name, &data, allow));
                }
            }
        }
        return out;
    }
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut data = Vec::new();
        if flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut data)
            .is_ok()
        {
            let inner = path.strip_suffix(".gz").unwrap_or(path);
            out.extend(scan_bytes(&format!("{inner}!gz"), &data, allow));
        }
        return out;
    }
    out.extend(scan_text(
        path,
        &String::from_utf8_lossy(bytes),
        allow,
        false,
    ));
    out
}

/// The refusal listing the first twelve findings.
pub fn refusal(what: &str, findings: &[Finding]) -> String {
    let listed: Vec<String> = findings.iter().take(12).map(Finding::to_string).collect();
    let more = findings.len().saturating_sub(12);
    format!(
        "Refusing {what}: material that must not be public -- {}{} (public-safe by construction; allow a value by decision in cfg/_config.yml public_safe.allow)",
        listed.join("; "),
        if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(path: &str, text: &str, allow: &Allow) -> Vec<&'static str> {
        scan_bytes(path, text.as_bytes(), allow)
            .into_iter()
            .map(|f| f.rule)
            .collect()
    }

    #[test]
    fn refused_names_at_any_depth() {
        for p in [
            "tfplan",
            "a/b/plan.tfplan",
            "x.tfstate",
            "x.tfstate.backup",
            "prod.tfvars",
            "a.tfvars.json",
            ".envrc",
            "k/server.pem",
            ".private_key.txt",
            "d/.public_key.json",
        ] {
            assert!(refused_name(p), "{p}");
        }
        assert!(!refused_name("terraform.tf"));
        let f = scan_bytes("deploy/prod.tfvars", b"region = \"x\"", &Allow::default());
        assert_eq!(f[0].rule, "refused-name");
        assert_eq!(f[0].excerpt, "prod.t");
    }

    #[test]
    fn a_finding_shows_six_characters_never_the_value() {
        let f = scan_text(
            "a.txt",
            "k = AKIAIOSFODNN7EXAMPLE",
            &Allow::default(),
            false,
        );
        assert_eq!(
            f,
            [Finding {
                path: "a.txt".into(),
                rule: "aws-access-key",
                excerpt: "AKIAIO".into()
            }]
        );
        assert_eq!(f[0].to_string(), "a.txt: aws-access-key: AKIAIO");
    }

    #[test]
    fn allowances_by_substring_and_by_path() {
        let text = "email: build-bot@ci.corp-mail.com";
        assert_eq!(rules("a.yml", text, &Allow::default()), ["email"]);
        let allow = Allow::from_entries(&["CI.Corp-Mail.com".into()]);
        assert!(rules("a.yml", text, &allow).is_empty());
        let allow = Allow::from_entries(&["path:fixtures/**".into()]);
        assert!(rules("fixtures/x/a.yml", text, &allow).is_empty());
        let allow = Allow::from_entries(&["path:a.yml".into()]);
        assert!(
            rules("deep/dir/a.yml", text, &allow).is_empty(),
            "a basename matches"
        );
        let allow = Allow::from_config_text("id: x\npublic_safe:\n  allow: [corp-mail.com]\n");
        assert!(rules("a.yml", text, &allow).is_empty());
    }

    #[test]
    fn the_soft_rules_skip_docs_and_python_tests() {
        let text = "mail jordan@corp-mail.com";
        for p in [
            "README.md",
            "docs/x.txt",
            "tests/t.py",
            "pkg/tests/t.py",
            "test_x.py",
            "conftest.py",
        ] {
            assert!(rules(p, text, &Allow::default()).is_empty(), "{p}");
        }
        // Hard rules still apply there.
        assert_eq!(
            rules("README.md", "AKIAIOSFODNN7EXAMPLE", &Allow::default()),
            ["aws-access-key"]
        );
    }

    #[test]
    fn zip_and_gzip_members_are_scanned() {
        use std::io::Write;
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut z = zip::ZipWriter::new(&mut buf);
            z.start_file(
                "tfplan/inner.json",
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
            z.write_all(b"{\"token\": \"ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\"}")
                .unwrap();
            z.finish().unwrap();
        }
        let f = scan_bytes("plan.zip", buf.get_ref(), &Allow::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].path, "plan.zip!tfplan/inner.json");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"xoxb-123456789012-abcdefghij").unwrap();
        let f = scan_bytes("log.txt.gz", &gz.finish().unwrap(), &Allow::default());
        assert_eq!(f[0].path, "log.txt!gz");
        assert_eq!(f[0].rule, "slack-token");
    }

    #[test]
    fn the_refusal_lists_twelve() {
        let findings: Vec<Finding> = (0..14)
            .map(|i| Finding {
                path: format!("f{i}"),
                rule: "jwt",
                excerpt: "eyJhbG".into(),
            })
            .collect();
        let r = refusal("meta-state/pins.yaml", &findings);
        assert!(r.starts_with(
            "Refusing meta-state/pins.yaml: material that must not be public -- f0: jwt: eyJhbG; f1"
        ));
        assert!(r.contains("f11: jwt: eyJhbG; and 2 more (public-safe by construction; allow a value by decision in cfg/_config.yml public_safe.allow)"));
        assert!(!r.contains("f12:"));
    }

    /// The corpus of fixtures/public-safe/corpus.tsv: every case's verdict,
    /// and the recall and precision docs/public-safe.md reports.
    #[test]
    fn the_corpus() {
        let text = include_str!("../../../fixtures/public-safe/corpus.tsv");
        let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
        let mut wrong = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let mut cols = line.splitn(3, '\t');
            let (want, path, body) = (
                cols.next().unwrap(),
                cols.next().unwrap(),
                cols.next().unwrap(),
            );
            let body = body.replace("\\n", "\n");
            let got = rules(path, &body, &Allow::default());
            match (want == "-", got.is_empty()) {
                (false, false) if got.contains(&want) => tp += 1,
                (false, _) => {
                    fn_ += 1;
                    wrong.push(format!("missed {want} in {path}"));
                }
                (true, true) => tn += 1,
                (true, false) => {
                    fp += 1;
                    wrong.push(format!("false {got:?} in {path}"));
                }
            }
        }
        assert_eq!((tp, fn_, tn, fp), (15, 1, 13, 1), "{wrong:?}");
        assert_eq!(
            wrong,
            [
                "false [\"high-entropy\"] in fp1.yml",
                "missed email in fn1.yml"
            ]
        );
    }
}
