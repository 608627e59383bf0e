//! Credential sessions, as `csis preflight` (and the session lines of every
//! run) report them: read from the credential CACHES of each cloud, before
//! the configuration loads, and never a credential value.
//!
//! The core reads each runtime declaration raw ([`RawRuntime`]) and asks
//! the plugin that registered its type; the plugin says what stands behind
//! it ([`Session`]). Whether a session blocks is the core's rule
//! ([`Session::blocking`]): expired, absent, or expiring within the run's
//! expected length.

use std::collections::BTreeMap;

/// A runtime declaration read raw from cfg/, before the load: only the
/// fields a credential source is found by. A field that is not plain text
/// there (a template, an encrypted marker) is `None`, and preflight says so.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawRuntime {
    pub name: String,
    /// The `type:` as written.
    pub model: String,
    /// `credentials.profile_name`, else `profile`.
    pub profile: Option<String>,
    pub region: Option<String>,
}

/// What preflight may look at: the environment (by name; a plugin reads a
/// variable's value only where it names a file or a profile) and the clock.
#[derive(Clone, Debug, Default)]
pub struct SessionEnv {
    pub vars: BTreeMap<String, String>,
    /// Seconds since the epoch.
    pub now: i64,
}

impl SessionEnv {
    /// A variable that is set and not empty.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The user's home directory.
    pub fn home(&self) -> Option<std::path::PathBuf> {
        self.var("HOME").map(std::path::PathBuf::from)
    }
}

/// One credential source and how it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// What it is and whose: `aws profile corp (runtime aws)`.
    pub source: String,
    pub standing: Standing,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// A session with a readable expiry: minutes left (zero or fewer:
    /// expired).
    Expires { minutes_left: i64, repair: String },
    /// A session the provider's own tooling refreshes: no fixed expiry to
    /// read (`how` says which).
    Refreshes { how: String },
    /// Present, with no expiry a cache holds (static keys, a role chain,
    /// a service account file).
    Present { how: String },
    /// Nothing found where it must be; `repair` says what to run.
    Absent { why: String, repair: String },
}

impl Session {
    /// Blocks a strict preflight: expired (minutes left known and at most
    /// zero), absent, or expiring within `window` minutes.
    pub fn blocking(&self, window: i64) -> bool {
        match &self.standing {
            Standing::Expires { minutes_left, .. } => *minutes_left <= window,
            Standing::Absent { .. } => true,
            Standing::Refreshes { .. } | Standing::Present { .. } => false,
        }
    }

    /// The `session:` line (without the prefix).
    pub fn line(&self, window: i64) -> String {
        let state = match &self.standing {
            Standing::Expires {
                minutes_left,
                repair,
            } if *minutes_left <= 0 => format!(
                "EXPIRED {} ago; {repair}",
                minutes(minutes_left.saturating_neg())
            ),
            Standing::Expires {
                minutes_left,
                repair,
            } if *minutes_left <= window => format!(
                "expires in {}, within the expected run of {}; {repair}",
                minutes(*minutes_left),
                minutes(window)
            ),
            Standing::Expires { minutes_left, .. } => {
                format!("valid, expires in {}", minutes(*minutes_left))
            }
            Standing::Refreshes { how } => format!("refreshes itself ({how}; no fixed expiry)"),
            Standing::Present { how } => format!("present ({how})"),
            Standing::Absent { why, repair } => format!("ABSENT: {why}; {repair}"),
        };
        format!("{}: {state}", self.source)
    }
}

/// `runtime a` or `runtimes a, b`: whose a session is, in its source.
pub fn runtimes_named(runtimes: &[RawRuntime]) -> String {
    let names: Vec<&str> = runtimes.iter().map(|r| r.name.as_str()).collect();
    format!(
        "runtime{} {}",
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    )
}

fn minutes(n: i64) -> String {
    if n == 1 {
        "1 minute".into()
    } else {
        format!("{n} minutes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expires(minutes_left: i64) -> Session {
        Session {
            source: "aws profile p (runtime aws)".into(),
            standing: Standing::Expires {
                minutes_left,
                repair: "run aws sso login --profile p".into(),
            },
        }
    }

    #[test]
    fn a_session_with_zero_minutes_left_is_expired_and_one_inside_the_window_blocks() {
        assert!(expires(0).blocking(30));
        assert_eq!(
            expires(0).line(30),
            "aws profile p (runtime aws): EXPIRED 0 minutes ago; run aws sso login --profile p"
        );
        assert!(expires(30).blocking(30));
        assert_eq!(
            expires(12).line(30),
            "aws profile p (runtime aws): expires in 12 minutes, within the expected run of 30 minutes; run aws sso login --profile p"
        );
        assert!(!expires(31).blocking(30));
        assert_eq!(
            expires(31).line(30),
            "aws profile p (runtime aws): valid, expires in 31 minutes"
        );
    }

    #[test]
    fn a_refreshing_or_static_source_never_blocks_and_an_absent_one_does() {
        let refreshes = Session {
            source: "s".into(),
            standing: Standing::Refreshes { how: "sso".into() },
        };
        assert!(!refreshes.blocking(30));
        let absent = Session {
            source: "s".into(),
            standing: Standing::Absent {
                why: "no cached token".into(),
                repair: "log in".into(),
            },
        };
        assert!(absent.blocking(30));
        assert_eq!(absent.line(30), "s: ABSENT: no cached token; log in");
    }
}
