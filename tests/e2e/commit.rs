//! `--commit` and `public-safe` in real git repositories.

use crate::support::git;
use csis_test_support::tree;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// fixtures/local-run in a fresh repository with one commit.
fn repo() -> tempfile::TempDir {
    let t = tree("local-run");
    git(t.path(), &["init", "-q", "-b", "main"]);
    git(t.path(), &["add", "-A"]);
    git(t.path(), &["commit", "-q", "-m", "the tree"]);
    t
}

fn csis(root: &Path, args: &[&str]) -> Output {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_csis"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    crate::support::with_git_identity(
        Command::new(&bin)
            .current_dir(root)
            .arg("--root-dir")
            .arg(root)
            .args(args)
            .env("CSIS_NOW", "1796226804")
            .env("PATH", path),
    )
    .output()
    .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn commit_stages_meta_state_and_the_generated_tree_and_names_the_run() {
    let t = repo();
    let r = t.path();
    let out = csis(r, &["run", "all", "--commit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sha = git(r, &["rev-parse", "HEAD"]).trim().to_string();
    assert!(
        stderr(&out).contains(&format!("meta-state commit: {sha}")),
        "{}",
        stderr(&out)
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(r.join("generated/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["meta_state_commit"], sha.as_str());
    let message = git(r, &["log", "-1", "--format=%s"]);
    assert_eq!(
        message.trim(),
        "csis run 2026_12_02T15_53_24: identity, storage, base-image, instance-image, release, retention"
    );
    let files = git(r, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.contains("meta-state/runs.yaml"), "{files}");
    assert!(
        files.contains("generated/instance-image/run-instance-image.sh"),
        "{files}"
    );
    assert!(
        !files.contains("run-summary.json"),
        "the summary is run-local: {files}"
    );
    // Nothing changed: nothing to commit.
    let again = csis(r, &["run", "storage", "--commit"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
}

#[test]
fn one_finding_refuses_the_whole_commit_and_stages_nothing() {
    let t = repo();
    let r = t.path();
    std::fs::create_dir_all(r.join("meta-state")).unwrap();
    std::fs::write(
        r.join("meta-state/notes.yaml"),
        "key: AKIAIOSFODNN7EXAMPLE\n",
    )
    .unwrap();
    std::fs::write(r.join("meta-state/plan.tfplan"), "binary plan").unwrap();
    let out = csis(r, &["run", "storage", "--commit"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("warning: Meta-state commit: never staging meta-state/plan.tfplan (plans, state and key material carry decrypted values)"), "{err}");
    assert!(err.contains("error: Refusing the run's meta-state commit: material that must not be public -- meta-state/notes.yaml: aws-access-key: AKIAIO (public-safe by construction; allow a value by decision in cfg/_config.yml public_safe.allow)"), "{err}");
    assert_eq!(
        git(r, &["diff", "--cached", "--name-only"]),
        "",
        "nothing staged"
    );
    assert_eq!(git(r, &["log", "--format=%s"]).lines().count(), 1);
}

#[test]
fn outside_a_repository_the_commit_is_skipped_with_a_warning() {
    let t = tree("local-run");
    let out = csis(t.path(), &["run", "storage", "--commit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!(
        "warning: Config root {} is not inside a git repository; meta-state commit skipped",
        t.path().display()
    )));
}

#[test]
fn public_safe_scans_the_tree_the_index_and_guards_commits_with_a_hook() {
    let t = repo();
    let r = t.path();
    let clean = csis(r, &["public-safe"]);
    assert_eq!(clean.status.code(), Some(0), "{}", stderr(&clean));
    std::fs::write(
        r.join("leak.txt"),
        "token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n",
    )
    .unwrap();
    let out = csis(r, &["public-safe"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("leak.txt: github-token: ghp_AB"),
        "{}",
        stderr(&out)
    );
    // Ignored files are not the tree's.
    std::fs::write(r.join(".gitignore"), "leak.txt\n").unwrap();
    assert_eq!(csis(r, &["public-safe"]).status.code(), Some(0));
    // The index, and the hook that reads it.
    assert!(stderr(&csis(r, &["public-safe", "--install-hook"])).is_empty());
    std::fs::write(r.join("staged.txt"), "xoxb-123456789012-abcdefghij\n").unwrap();
    git(r, &["add", "staged.txt"]);
    let out = csis(r, &["public-safe", "--staged"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("staged.txt: slack-token: xoxb-1"),
        "{}",
        stderr(&out)
    );
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_csis"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let commit = Command::new("git")
        .current_dir(r)
        .args(["commit", "-q", "-m", "leak"])
        .env("PATH", path)
        .env("GIT_AUTHOR_NAME", "A")
        .env("GIT_AUTHOR_EMAIL", "a@example.com")
        .env("GIT_COMMITTER_NAME", "A")
        .env("GIT_COMMITTER_EMAIL", "a@example.com")
        .output()
        .unwrap();
    assert!(!commit.status.success(), "the hook refused the commit");
}

/// A tree that keeps its generated tree out of git commits its
/// meta-state and says so, as spec 000 has it; `--dry-run` and
/// `--no-commit` are the defaults, spelled out.
#[test]
fn a_gitignored_generated_tree_is_left_out_of_the_commit_with_a_warning() {
    let t = repo();
    let r = t.path();
    std::fs::write(r.join(".gitignore"), "generated/\n").unwrap();
    git(r, &["add", ".gitignore"]);
    git(r, &["commit", "-q", "-m", "ignore generated"]);
    let out = csis(r, &["run", "all", "--dry-run", "--commit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "warning: Meta-state commit: generated is gitignored here; not committing it\n"
        ),
        "{}",
        stderr(&out)
    );
    let files = git(r, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.contains("meta-state/runs.yaml"), "{files}");
    assert!(!files.contains("generated/"), "{files}");

    let before = git(r, &["rev-parse", "HEAD"]);
    let out = csis(r, &["run", "all", "--dry-run", "--no-commit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(git(r, &["rev-parse", "HEAD"]), before);
    for clash in [["--dry-run", "--no-dry-run"], ["--commit", "--no-commit"]] {
        let mut args = vec!["run", "all"];
        args.extend(clash);
        assert_eq!(csis(r, &args).status.code(), Some(2), "{args:?}");
    }
}
