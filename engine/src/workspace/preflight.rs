//! `csis preflight`: the credential sessions every declared runtime
//! stands on, read before the tree loads (a load validates the runtimes
//! against their clouds and would die on an expired session before
//! anything could say so).
//!
//! Read raw, in file-name order: each cfg/*.yml's `runtime_builders`
//! (name, type, `credentials.profile_name` else `profile`, region) and
//! `config.preflight.expected_run_minutes` from cfg/ and then the
//! overlays (a non-integer falls back to 30). No template is rendered and
//! no marker decrypted: a value that is not plain text there is reported,
//! never guessed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use csis_model::{Value, Vct};
use csis_plugin_api::sessions::{RawRuntime, Session, SessionEnv};

use crate::db::system::System;
use crate::registry::Registry;
use crate::workspace::read_named;

pub const DEFAULT_EXPECTED_RUN_MINUTES: i64 = 30;

/// The prefixes of the variables a credential lives in; one set but empty
/// is reported by name.
const CREDENTIAL_PREFIXES: [&str; 5] = ["AWS_", "GOOGLE_", "OKTA_", "TF_VAR_", "CSIS_"];

/// What preflight found.
#[derive(Debug, Default)]
pub struct Preflight {
    pub window: i64,
    pub sessions: Vec<Session>,
    /// `runtime <name>: <who>` or why it could not be asked.
    pub identities: Vec<(String, Result<String, String>)>,
    /// Variables set but empty.
    pub empty_variables: Vec<String>,
    /// What could not be read raw.
    pub notes: Vec<String>,
}

impl Preflight {
    /// What blocks a strict preflight, one line each.
    pub fn blocking(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .sessions
            .iter()
            .filter(|s| s.blocking(self.window))
            .map(|s| format!("session {}", s.source))
            .collect();
        out.extend(
            self.identities
                .iter()
                .filter(|(_, who)| who.is_err())
                .map(|(rt, _)| format!("runtime {rt}: its provider did not say who it is")),
        );
        out.extend(
            self.empty_variables
                .iter()
                .map(|v| format!("{v} is set but empty")),
        );
        out
    }

    /// The report, one line per finding.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.sessions {
            let mark = if s.blocking(self.window) {
                "blocking: "
            } else {
                ""
            };
            out.push(format!("{mark}session: {}", s.line(self.window)));
        }
        for (rt, who) in &self.identities {
            out.push(match who {
                Ok(who) => format!("identity: runtime {rt}: {who}"),
                Err(why) => format!("blocking: identity: runtime {rt}: {why}"),
            });
        }
        for v in &self.empty_variables {
            out.push(format!(
                "blocking: empty_environment_credentials: {v} is set but empty (unset it, or give it its value)"
            ));
        }
        out.extend(self.notes.iter().map(|n| format!("note: {n}")));
        out
    }
}

/// Preflight `root` (with `overlays`): sessions from each runtime's
/// plugin; its provider asked who the credentials are unless `offline`.
pub fn preflight(
    system: &dyn System,
    registry: &Registry,
    root: &Path,
    overlays: &[PathBuf],
    env: &SessionEnv,
    offline: bool,
    max_bytes: u64,
) -> Preflight {
    let mut out = Preflight {
        window: DEFAULT_EXPECTED_RUN_MINUTES,
        ..Preflight::default()
    };
    let mut docs = Vec::new();
    let mut cfg: Vec<PathBuf> = system
        .list_files(&root.join("cfg"))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.parent() == Some(&root.join("cfg")))
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    cfg.sort();
    for path in cfg.iter().chain(overlays) {
        match read_named(system, path, max_bytes)
            .map_err(|e| e.to_string())
            .and_then(|t| csis_yaml::parse_value(&t).map_err(|e| e.message))
        {
            Ok(doc) => docs.push((path.clone(), doc)),
            Err(e) => out.notes.push(format!(
                "{} could not be read raw ({e}); its runtimes are not looked at",
                path.display()
            )),
        }
    }
    let mut runtimes: Vec<RawRuntime> = Vec::new();
    for (path, doc) in &docs {
        if let Some(minutes) = doc
            .get("config")
            .and_then(|c| c.get("preflight"))
            .and_then(|p| p.get("expected_run_minutes"))
        {
            out.window = minutes
                .as_str()
                .and_then(|m| m.trim().parse::<i64>().ok())
                .unwrap_or(DEFAULT_EXPECTED_RUN_MINUTES);
        }
        if !cfg.contains(path) {
            continue;
        }
        for entry in doc
            .get("runtime_builders")
            .and_then(Value::as_seq)
            .unwrap_or_default()
        {
            if let Some(rt) = raw_runtime(entry, path, &mut out.notes) {
                runtimes.push(rt);
            }
        }
    }
    let mut by_plugin: BTreeMap<&'static str, (&'static dyn csis_plugin_api::Plugin, Vec<_>)> =
        BTreeMap::new();
    for rt in runtimes {
        if let Some(plugin) = registry.owner(Vct::RuntimeBuilderModel, &rt.model) {
            by_plugin
                .entry(plugin.name())
                .or_insert_with(|| (plugin, Vec::new()))
                .1
                .push(rt);
        }
    }
    for (plugin, rts) in by_plugin.values() {
        out.sessions.extend(plugin.sessions(rts, env));
        if offline {
            continue;
        }
        for rt in rts {
            if let Some(who) = plugin.caller_identity(rt, env) {
                out.identities.push((rt.name.clone(), who));
            }
        }
    }
    out.identities.sort();
    out.empty_variables = env
        .vars
        .iter()
        .filter(|(k, v)| v.is_empty() && CREDENTIAL_PREFIXES.iter().any(|p| k.starts_with(p)))
        .map(|(k, _)| k.clone())
        .collect();
    out
}

/// One `runtime_builders` entry's credential fields, raw; a field that is
/// not plain text is a note.
fn raw_runtime(entry: &Value, file: &Path, notes: &mut Vec<String>) -> Option<RawRuntime> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::trim).map(str::to_string);
    let name = text(entry.get("name"))?;
    let model = text(entry.get("type")).unwrap_or_default();
    let mut plain = |field: &str, v: Option<&Value>| {
        let value = text(v)?;
        if value.contains("{{") || value.contains("{%") || csis_secrets::is_marker(&value) {
            notes.push(format!(
                "runtime {name} in {}: {field} is not plain text (preflight reads it before the load, so it may not be a template or encrypted)",
                file.display()
            ));
            return None;
        }
        Some(value)
    };
    let profile = match entry.get("credentials").and_then(|c| c.get("profile_name")) {
        Some(p) => plain("credentials.profile_name", Some(p)),
        None => plain("profile", entry.get("profile")),
    };
    // The region only places the STS call, which falls back to
    // AWS_REGION: one that is not plain text is no finding.
    let region =
        text(entry.get("region")).filter(|r| !r.contains("{{") && !csis_secrets::is_marker(r));
    Some(RawRuntime {
        name,
        model,
        profile,
        region,
    })
}

/// The session lines of a loaded tree (every run's, and `state query`'s):
/// preflight's sessions from the caches only, asking no provider.
pub fn sessions(ws: &crate::workspace::Workspace, system: &dyn System) -> Preflight {
    use crate::db::Db;
    let overlays: Vec<PathBuf> = ws
        .tree
        .overlays(&ws.db)
        .iter()
        .map(|f| PathBuf::from(f.path(&ws.db).to_string()))
        .collect();
    let env = session_env(system);
    preflight(
        system,
        ws.db.registry(),
        &ws.root,
        &overlays,
        &env,
        true,
        crate::workspace::DEFAULT_MAX_FILE_SIZE,
    )
}

/// The environment and the clock preflight reads, from `system`.
pub fn session_env(system: &dyn System) -> SessionEnv {
    SessionEnv {
        vars: system.env(),
        now: system.now_unix(),
    }
}
