//! What stands behind the `gce` runtimes' credentials: the Application
//! Default Credentials file (GOOGLE_APPLICATION_CREDENTIALS, else
//! gcloud's `application_default_credentials.json` in CLOUDSDK_CONFIG or
//! ~/.config/gcloud), looked at for its presence and its `type` only.

use std::path::PathBuf;

use csis_plugin_api::sessions::{RawRuntime, Session, SessionEnv, Standing, runtimes_named};

#[allow(clippy::disallowed_methods)] // gcloud's own file, outside the tree
pub fn sessions(runtimes: &[RawRuntime], env: &SessionEnv) -> Vec<Session> {
    if runtimes.is_empty() {
        return Vec::new();
    }
    let source = format!(
        "gcp application default credentials ({})",
        runtimes_named(runtimes)
    );
    let path = env
        .var("GOOGLE_APPLICATION_CREDENTIALS")
        .map(PathBuf::from)
        .or_else(|| {
            env.var("CLOUDSDK_CONFIG")
                .map(PathBuf::from)
                .or_else(|| env.home().map(|h| h.join(".config").join("gcloud")))
                .map(|d| d.join("application_default_credentials.json"))
        });
    let repair = "run gcloud auth application-default login".to_string();
    let Some(path) = path else {
        return vec![Session {
            source,
            standing: Standing::Absent {
                why: "no HOME and no GOOGLE_APPLICATION_CREDENTIALS".into(),
                repair,
            },
        }];
    };
    let kind = std::fs::read_to_string(&path).ok().map(|text| {
        serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("type")?.as_str().map(str::to_string))
    });
    let standing = match kind {
        None => Standing::Absent {
            why: format!("no credentials file at {}", path.display()),
            repair,
        },
        Some(Some(t)) if t == "authorized_user" => Standing::Refreshes {
            how: "a user's credentials (authorized_user)".into(),
        },
        Some(Some(t)) => Standing::Present {
            how: format!("credentials of type {t}"),
        },
        Some(None) => Standing::Present {
            how: format!("{} names no type", path.display()),
        },
    };
    vec![Session { source, standing }]
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // the tests set the files up by hand
mod tests {
    use super::*;

    fn rt(name: &str) -> RawRuntime {
        RawRuntime {
            name: name.into(),
            model: "gce".into(),
            ..RawRuntime::default()
        }
    }

    #[test]
    fn the_application_default_credentials_are_looked_at_for_presence_and_type() {
        let d = tempfile::tempdir().unwrap();
        let env = |vars: &[(&str, String)]| SessionEnv {
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            now: 0,
        };
        let home = d.path().display().to_string();
        assert_eq!(
            sessions(&[rt("g")], &env(&[("HOME", home.clone())]))[0].line(30),
            format!(
                "gcp application default credentials (runtime g): ABSENT: no credentials file at {home}/.config/gcloud/application_default_credentials.json; run gcloud auth application-default login"
            )
        );
        let key = d.path().join("sa.json");
        std::fs::write(
            &key,
            r#"{"type":"service_account","private_key":"never-read"}"#,
        )
        .unwrap();
        assert_eq!(
            sessions(
                &[rt("g"), rt("h")],
                &env(&[("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string())])
            )[0]
            .line(30),
            "gcp application default credentials (runtimes g, h): present (credentials of type service_account)"
        );
    }
}
