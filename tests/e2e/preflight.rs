//! `csis preflight`: the sessions behind fixtures/clouds' runtimes, read
//! from credential caches laid out here (an SSO token cache, gcloud's
//! application default credentials), before the tree loads; and, against
//! moto, STS asked who the credentials are.

use std::path::Path;
use std::process::Command;

use crate::support::{append, edit};

/// 2026-12-06T00:00:00Z.
const NOW: i64 = 1_796_515_200;

/// `csis preflight ARGS` over `root` with exactly `env` (and PATH): the
/// operator's own ~/.aws and gcloud files are never read.
fn preflight(root: &Path, env: &[(&str, String)], args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(root)
        .arg("preflight")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("CSIS_NOW", NOW.to_string())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    (
        o.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// An ~/.aws whose profile `csis` is an SSO profile on session
/// `corp-sso`, its cached token expiring at `expires_at`.
fn aws_dir(home: &Path, expires_at: &str) {
    let aws = home.join(".aws");
    std::fs::create_dir_all(aws.join("sso/cache")).unwrap();
    std::fs::write(
        aws.join("config"),
        "[profile csis]\nsso_session = corp-sso\nsso_account_id = 111111111111\nsso_role_name = builder\nregion = us-east-1\n\n[sso-session corp-sso]\nsso_start_url = https://corp.example.invalid/start\nsso_region = us-east-1\n",
    )
    .unwrap();
    // The cache is named by the SHA-1 of the session's name.
    std::fs::write(
        aws.join("sso/cache/6f41fd3fbc69a076873a4656707fd9925e5c1f07.json"),
        format!(
            r#"{{"startUrl": "https://corp.example.invalid/start", "region": "us-east-1", "accessToken": "not-a-real-token", "expiresAt": "{expires_at}"}}"#
        ),
    )
    .unwrap();
}

/// gcloud's application default credentials of a user, under `home`.
fn gcloud_adc(home: &Path) {
    let dir = home.join(".config/gcloud");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("application_default_credentials.json"),
        r#"{"type": "authorized_user", "client_id": "x", "refresh_token": "not-a-real-token"}"#,
    )
    .unwrap();
}

#[test]
fn an_expired_sso_session_blocks_a_strict_preflight_even_when_the_tree_would_not_load() {
    let t = csis_test_support::tree("clouds");
    // The load would refuse this; preflight reads cfg/ raw before it.
    edit(t.path(), "images/chain.yml", "images:", "images: [");
    let home = tempfile::tempdir().unwrap();
    aws_dir(home.path(), "2026-12-05T23:50:00Z");
    gcloud_adc(home.path());
    let env = vec![
        ("HOME", home.path().display().to_string()),
        ("TF_VAR_region", String::new()),
    ];
    let (code, out) = preflight(t.path(), &env, &["--strict", "--offline"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out,
        "blocking: session: aws profile csis (runtime aws): EXPIRED 10 minutes ago; run aws sso login --profile csis\n\
         session: gcp application default credentials (runtime gce): refreshes itself (a user's credentials (authorized_user); no fixed expiry)\n\
         blocking: empty_environment_credentials: TF_VAR_region is set but empty (unset it, or give it its value)\n\
         preflight: 2 sessions, 2 blocking (expected run: 30 minutes)\n\
         error: preflight --strict: session aws profile csis (runtime aws); TF_VAR_region is set but empty\n"
    );
    // Without --strict it reports and succeeds.
    assert_eq!(preflight(t.path(), &env, &["--offline"]).0, Some(0));
}

#[test]
fn a_session_that_would_lapse_within_the_expected_run_blocks() {
    let t = csis_test_support::tree("clouds");
    let home = tempfile::tempdir().unwrap();
    aws_dir(home.path(), "2026-12-06T01:00:00Z");
    gcloud_adc(home.path());
    let env = vec![("HOME", home.path().display().to_string())];
    let (code, out) = preflight(t.path(), &env, &["--strict", "--offline"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("session: aws profile csis (runtime aws): valid, expires in 60 minutes\n"),
        "{out}"
    );
    // A 90-minute run would outlive it.
    append(
        t.path(),
        "cfg/_config.yml",
        "  preflight:\n    expected_run_minutes: 90\n",
    );
    let (code, out) = preflight(t.path(), &env, &["--strict", "--offline"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.starts_with("blocking: session: aws profile csis (runtime aws): expires in 60 minutes, within the expected run of 90 minutes; run aws sso login --profile csis\n"),
        "{out}"
    );
}

#[test]
fn preflight_asks_sts_who_each_aws_runtimes_credentials_are() {
    let Some(moto) = crate::moto::Moto::start() else {
        return;
    };
    let t = csis_test_support::tree("clouds");
    let home = tempfile::tempdir().unwrap();
    gcloud_adc(home.path());
    let mut env: Vec<(&str, String)> = moto.env();
    env.push(("HOME", home.path().display().to_string()));
    let (code, out) = preflight(t.path(), &env, &["--strict"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("session: aws environment keys (runtime aws): present (AWS_ACCESS_KEY_ID is set: static keys, no readable expiry)\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "identity: runtime aws: account 123456789012 as arn:aws:sts::123456789012:user/moto\n"
        ),
        "{out}"
    );
    drop(moto);
    // The provider gone, the identity is not known: strict refuses.
    let (code, out) = preflight(t.path(), &env, &["--strict"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "blocking: identity: runtime aws: STS GetCallerIdentity failed: dispatch failure"
        ),
        "{out}"
    );
}
