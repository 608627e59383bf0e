//! What stands behind each `aws` runtime's credentials, read from the
//! shared config and the SSO token cache only (never a key, never a
//! token): the directory is CSIS_AWS_DIR, else ~/.aws (its `config` and
//! `credentials` where AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE
//! say, as the SDK reads them).
//!
//! The SDK's chain reads the environment's keys before any profile, so
//! with AWS_ACCESS_KEY_ID set that is the one source (static keys: no
//! expiry to read). Otherwise each runtime's profile (else AWS_PROFILE,
//! else `default`) is looked up in `config` and `credentials`:
//!
//! - an SSO profile (`sso_session`, or the older `sso_start_url`) has its
//!   token in `sso/cache/<sha1 of the session name or start URL>.json`;
//!   with a `refreshToken` the CLI refreshes it itself (the `expiresAt`
//!   is the access token's, not the session's), else `expiresAt` is when
//!   it lapses;
//! - a role chain, a `credential_process`, or static keys: present, with
//!   no expiry a cache holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use csis_plugin_api::sessions::{RawRuntime, Session, SessionEnv, Standing, runtimes_named};

/// One INI file: `section header → key → value`.
type Ini = BTreeMap<String, BTreeMap<String, String>>;

#[allow(clippy::disallowed_methods)] // the AWS CLI's own files, outside the tree
fn read_ini(path: &Path) -> Ini {
    let mut out = Ini::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = header.split_whitespace().collect::<Vec<_>>().join(" ");
            out.entry(section.clone()).or_default();
        } else if let Some((k, v)) = line.split_once('=') {
            out.entry(section.clone())
                .or_default()
                .insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    out
}

pub fn aws_dir(env: &SessionEnv) -> Option<PathBuf> {
    env.var("CSIS_AWS_DIR")
        .map(PathBuf::from)
        .or_else(|| env.home().map(|h| h.join(".aws")))
}

/// The sessions behind `runtimes`, one per credential source.
pub fn sessions(runtimes: &[RawRuntime], env: &SessionEnv) -> Vec<Session> {
    if runtimes.is_empty() {
        return Vec::new();
    }
    if env.var("AWS_ACCESS_KEY_ID").is_some() {
        return vec![Session {
            source: format!("aws environment keys ({})", runtimes_named(runtimes)),
            standing: Standing::Present {
                how: "AWS_ACCESS_KEY_ID is set: static keys, no readable expiry".into(),
            },
        }];
    }
    let mut by_profile: BTreeMap<(String, bool), Vec<&RawRuntime>> = BTreeMap::new();
    for rt in runtimes {
        let (profile, named) = match (&rt.profile, env.var("AWS_PROFILE")) {
            (Some(p), _) => (p.clone(), true),
            (None, Some(p)) => (p.to_string(), true),
            (None, None) => ("default".to_string(), false),
        };
        by_profile.entry((profile, named)).or_default().push(rt);
    }
    let dir = aws_dir(env);
    // The two files where the SDK reads them: its variables, else the
    // directory.
    let file = |var: &str, name: &str| {
        env.var(var)
            .map(PathBuf::from)
            .or_else(|| dir.as_ref().map(|d| d.join(name)))
    };
    let config = file("AWS_CONFIG_FILE", "config")
        .map(|p| read_ini(&p))
        .unwrap_or_default();
    let credentials = file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
        .map(|p| read_ini(&p))
        .unwrap_or_default();
    by_profile
        .into_iter()
        .map(|((profile, named), rts)| {
            let rts: Vec<RawRuntime> = rts.into_iter().cloned().collect();
            Session {
                source: format!("aws profile {profile} ({})", runtimes_named(&rts)),
                standing: standing(&profile, named, &config, &credentials, dir.as_deref(), env),
            }
        })
        .collect()
}

fn standing(
    profile: &str,
    named: bool,
    config: &Ini,
    credentials: &Ini,
    dir: Option<&Path>,
    env: &SessionEnv,
) -> Standing {
    let header = if profile == "default" {
        "default".to_string()
    } else {
        format!("profile {profile}")
    };
    let section = config.get(&header);
    let login = format!("run aws sso login --profile {profile}");
    let key = section.and_then(|s| {
        s.get("sso_session")
            .map(|session| (session.clone(), true))
            .or_else(|| s.get("sso_start_url").map(|url| (url.clone(), false)))
    });
    if let (Some((key, _)), Some(dir)) = (key, dir) {
        let cache = dir
            .join("sso")
            .join("cache")
            .join(format!("{}.json", sha1_smol::Sha1::from(&key).digest()));
        return sso_token(&cache, login, env.now);
    }
    let has = |s: Option<&BTreeMap<String, String>>, k: &str| s.is_some_and(|s| s.contains_key(k));
    if has(section, "role_arn") {
        return Standing::Present {
            how: "assumes a role; the role's session is made at each call".into(),
        };
    }
    if has(section, "credential_process") {
        return Standing::Present {
            how: "credential_process; its expiry is the process's".into(),
        };
    }
    if has(section, "aws_access_key_id") || has(credentials.get(profile), "aws_access_key_id") {
        return Standing::Present {
            how: "static keys, no readable expiry".into(),
        };
    }
    if section.is_some() || credentials.contains_key(profile) {
        return Standing::Present {
            how: "a profile with no SSO session and no keys; the SDK's chain decides".into(),
        };
    }
    let where_ = dir
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "~/.aws".into());
    if !named {
        return Standing::Refreshes {
            how: format!(
                "no keys, no AWS_PROFILE and no default profile in {where_}: the SDK's chain falls back to the machine's role"
            ),
        };
    }
    Standing::Absent {
        why: format!("profile {profile} is in neither {where_}/config nor {where_}/credentials"),
        repair: format!(
            "create it (aws configure sso --profile {profile}) or name another profile"
        ),
    }
}

#[allow(clippy::disallowed_methods)] // the AWS CLI's own cache, outside the tree
fn sso_token(cache: &Path, login: String, now: i64) -> Standing {
    let Ok(text) = std::fs::read_to_string(cache) else {
        return Standing::Absent {
            why: format!("no cached SSO token at {}", cache.display()),
            repair: login,
        };
    };
    let Ok(token) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Standing::Absent {
            why: format!("the cached SSO token {} is not JSON", cache.display()),
            repair: login,
        };
    };
    let text_of = |k: &str| {
        token
            .get(k)
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
    };
    if text_of("refreshToken").is_some() {
        return Standing::Refreshes {
            how: "an SSO session with a refresh token".into(),
        };
    }
    match text_of("expiresAt").and_then(expiry) {
        Some(at) => Standing::Expires {
            minutes_left: (at - now).div_euclid(60),
            repair: login,
        },
        None => Standing::Present {
            how: "an SSO token whose expiry cannot be read".into(),
        },
    }
}

/// An `expiresAt` (RFC 3339; older CLIs wrote `...UTC` for `Z`) in
/// seconds since the epoch.
fn expiry(at: &str) -> Option<i64> {
    use aws_smithy_types::date_time::{DateTime, Format};
    let at = at.trim();
    let at = match at.strip_suffix("UTC") {
        Some(head) => format!("{head}Z"),
        None => at.to_string(),
    };
    DateTime::from_str(&at, Format::DateTime)
        .ok()
        .map(|t| t.secs())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the tests set the files up by hand
mod tests {
    use super::*;

    fn env(dir: &Path, now: i64, vars: &[(&str, &str)]) -> SessionEnv {
        let mut v: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        v.insert("CSIS_AWS_DIR".into(), dir.display().to_string());
        SessionEnv { vars: v, now }
    }

    fn rt(name: &str, profile: Option<&str>) -> RawRuntime {
        RawRuntime {
            name: name.into(),
            model: "aws".into(),
            profile: profile.map(str::to_string),
            region: Some("us-east-1".into()),
        }
    }

    // 2026-12-06T00:00:00Z
    const NOW: i64 = 1_796_515_200;

    fn cache(dir: &Path, key: &str, body: &str) {
        let c = dir.join("sso/cache");
        std::fs::create_dir_all(&c).unwrap();
        let name = format!("{}.json", sha1_smol::Sha1::from(key).digest());
        std::fs::write(c.join(name), body).unwrap();
    }

    #[test]
    fn an_sso_session_profile_reads_its_tokens_expiry_from_the_cache_named_by_the_session() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("config"),
            "[profile corp]\nsso_session = corp-sso\nsso_account_id = 1\n[sso-session corp-sso]\nsso_start_url = https://example.invalid/start\n[profile old]\nsso_start_url = https://old.invalid/start\n",
        )
        .unwrap();
        cache(
            d.path(),
            "corp-sso",
            r#"{"startUrl":"x","expiresAt":"2026-12-06T00:42:30Z","accessToken":"never-read"}"#,
        );
        cache(
            d.path(),
            "https://old.invalid/start",
            r#"{"expiresAt":"2026-12-05T23:55:00UTC"}"#,
        );
        let got = sessions(
            &[
                rt("a", Some("corp")),
                rt("b", Some("old")),
                rt("c", Some("corp")),
            ],
            &env(d.path(), NOW, &[]),
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].source, "aws profile corp (runtimes a, c)");
        assert_eq!(
            got[0].standing,
            Standing::Expires {
                minutes_left: 42,
                repair: "run aws sso login --profile corp".into()
            }
        );
        assert_eq!(
            got[1].line(30),
            "aws profile old (runtime b): EXPIRED 5 minutes ago; run aws sso login --profile old"
        );
    }

    #[test]
    fn a_refresh_token_is_a_session_that_refreshes_itself_and_a_missing_cache_is_absent() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("config"),
            "[profile r]\nsso_session = s\n[profile gone]\nsso_session = g\n",
        )
        .unwrap();
        cache(
            d.path(),
            "s",
            r#"{"expiresAt":"2026-12-05T00:00:00Z","refreshToken":"x"}"#,
        );
        let got = sessions(
            &[rt("a", Some("r")), rt("b", Some("gone"))],
            &env(d.path(), NOW, &[]),
        );
        assert!(matches!(got[1].standing, Standing::Refreshes { .. }));
        assert_eq!(
            got[0].line(30),
            format!(
                "aws profile gone (runtime b): ABSENT: no cached SSO token at {}/sso/cache/{}.json; run aws sso login --profile gone",
                d.path().display(),
                sha1_smol::Sha1::from("g").digest()
            )
        );
    }

    #[test]
    fn environment_keys_win_and_an_unknown_named_profile_is_absent() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("credentials"),
            "[static]\naws_access_key_id = never-read\n",
        )
        .unwrap();
        let got = sessions(
            &[rt("a", None)],
            &env(d.path(), NOW, &[("AWS_ACCESS_KEY_ID", "x")]),
        );
        assert_eq!(
            got[0].line(30),
            "aws environment keys (runtime a): present (AWS_ACCESS_KEY_ID is set: static keys, no readable expiry)"
        );
        let got = sessions(
            &[rt("a", Some("static")), rt("b", Some("nope"))],
            &env(d.path(), NOW, &[]),
        );
        assert_eq!(
            got[0].line(30),
            format!(
                "aws profile nope (runtime b): ABSENT: profile nope is in neither {0}/config nor {0}/credentials; create it (aws configure sso --profile nope) or name another profile",
                d.path().display()
            )
        );
        assert_eq!(
            got[1].line(30),
            "aws profile static (runtime a): present (static keys, no readable expiry)"
        );
    }
}
