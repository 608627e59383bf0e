//! `csis public-safe --format json|sarif` and `--explain RULE` through the
//! binary (issue 18).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::git;
use csis_test_support::plain_tree;

fn csis(root: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_csis")));
    if let Some(r) = root {
        c.current_dir(r).arg("--root-dir").arg(r);
    }
    c.args(args).env("CSIS_NOW", "1796226804").output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// fixtures/local-run in a repository, with one leaked password.
fn leaky() -> tempfile::TempDir {
    let t = plain_tree("local-run");
    git(t.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(
        t.path().join("leak.yml"),
        "db:\n  password: \"Orchid!42river\"\n",
    )
    .unwrap();
    t
}

#[test]
fn explain_prints_a_rule_without_a_tree() {
    let out = csis(None, &["public-safe", "--explain", "high-entropy"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).starts_with("high-entropy: A value"),
        "{}",
        stdout(&out)
    );
    let out = csis(None, &["public-safe", "--explain", "gitlab-token"]);
    let text = stdout(&out);
    assert!(text.contains("  pattern: "), "{text}");
    assert!(
        text.contains("\n  source: GitLab token prefixes (docs.gitlab.com"),
        "{text}"
    );
    assert!(text.contains("  let through: "), "{text}");
    let out = csis(None, &["public-safe", "--explain", "no-such-rule"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no public-safe rule \"no-such-rule\""));
}

#[test]
fn explain_with_a_path_says_why_each_finding_matched_never_the_value() {
    let t = leaky();
    let out = csis(
        Some(t.path()),
        &["public-safe", "--explain", "secret-assignment", "."],
    );
    assert_eq!(out.status.code(), Some(3));
    let text = stdout(&out);
    assert!(
        text.contains("leak.yml: passwo: the key \"password\" names a password"),
        "{text}"
    );
    assert!(!text.contains("Orchid"), "{text}");
}

#[test]
fn json_lists_the_findings_and_exits_3() {
    let t = leaky();
    let out = csis(Some(t.path()), &["public-safe", "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["findings"],
        serde_json::json!([{"path": "leak.yml", "rule": "secret-assignment", "excerpt": "passwo"}])
    );
    assert!(v["scanned"].as_u64().unwrap() > 1);
    std::fs::remove_file(t.path().join("leak.yml")).unwrap();
    let out = csis(Some(t.path()), &["public-safe", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["findings"], serde_json::json!([]));
}

#[test]
fn sarif_is_what_code_scanning_reads() {
    let t = leaky();
    let out = csis(Some(t.path()), &["public-safe", "--format", "sarif"]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "csis public-safe");
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for id in [
        "jwt",
        "aws-access-key",
        "secret-assignment",
        "high-entropy",
        "refused-name",
    ] {
        assert!(rules.contains(&id), "{id}: {rules:?}");
    }
    let result = &run["results"][0];
    assert_eq!(result["ruleId"], "secret-assignment");
    assert_eq!(result["level"], "error");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "leak.yml"
    );
    assert!(!stdout(&out).contains("Orchid"));
}

/// Every example tree the repository publishes passes its own gate.
#[test]
fn every_public_fixture_tree_passes_public_safe() {
    for name in ["config", "clouds", "local-run"] {
        let t = plain_tree(name);
        let out = csis(Some(t.path()), &["public-safe"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "fixtures/{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout(&out).ends_with(" file(s) scanned, no findings\n"),
            "{name}"
        );
    }
}

/// A file refused by its name says the rule, not an excerpt of the name,
/// and never suggests allowing a value in it.
#[test]
fn a_refused_name_says_its_rule() {
    let t = plain_tree("local-run");
    std::fs::create_dir_all(t.path().join("state")).unwrap();
    std::fs::write(t.path().join("state/network.tfstate"), "{}\n").unwrap();
    let out = csis(Some(t.path()), &["public-safe"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "state/network.tfstate: refused-name: *.tfstate files are never public: keep them out of the tree or gitignored\n\
         error: Refusing the tree: material that must not be public -- state/network.tfstate: refused-name: *.tfstate files are never public: keep them out of the tree or gitignored; a file refused by its name is never read, so no value in it can be allowed: move it out of the tree or gitignore it\n"
    );
}
