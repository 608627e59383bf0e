//! Where a workspace's terraform state lives on its state backend: the one
//! rule that both the engine's record (meta-state/state-locations.yaml, the
//! move guard's reference) and the tofu plugin's `<workspace>.tfbackend.hcl`
//! follow, so the recorded location is the object the backend writes.
//!
//! A backend's settings are its `config:`: `bucket` (default: the
//! backend's name) and `prefix` (default: empty). Each root keeps one
//! state, in OpenTofu's `default` workspace:
//!
//! - `s3`: the object `key` = `<prefix><workspace>.tfstate` in `bucket`.
//! - `gcs`: the backend's `prefix` = `<prefix><workspace>`; the gcs backend
//!   stores a workspace's state in the object `<prefix>/<name>.tfstate`
//!   (OpenTofu, "Backend Type: gcs", argument `prefix`:
//!   <https://opentofu.org/docs/language/settings/backends/gcs/>), so the
//!   object is `<prefix><workspace>/default.tfstate`.
//! - `local`: the file `<bucket>/<prefix><workspace>.tfstate` below the
//!   configuration root.
//! - another plugin's type: `<bucket>/<prefix><workspace>.tfstate`.

use crate::BuilderDecl;

/// The state object of one workspace on one backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateObject {
    S3 {
        bucket: String,
        key: String,
    },
    /// `prefix` is the gcs backend's setting; the object is
    /// `<prefix>/default.tfstate`.
    Gcs {
        bucket: String,
        prefix: String,
    },
    /// `path` is relative to the configuration root.
    Local {
        path: String,
    },
    Other {
        model: String,
        bucket: String,
        key: String,
    },
}

impl StateObject {
    /// The state object of `workspace` on `backend`.
    pub fn of(backend: &BuilderDecl, workspace: &str) -> StateObject {
        let bucket = backend
            .config_str("bucket")
            .unwrap_or(backend.name())
            .to_string();
        let prefix = backend.config_str("prefix").unwrap_or_default();
        let key = format!("{prefix}{workspace}.tfstate");
        match backend.model {
            "s3" => StateObject::S3 { bucket, key },
            "gcs" => StateObject::Gcs {
                bucket,
                prefix: format!("{prefix}{workspace}"),
            },
            "local" => StateObject::Local {
                path: format!("{bucket}/{key}"),
            },
            model => StateObject::Other {
                model: model.to_string(),
                bucket,
                key,
            },
        }
    }

    /// The location meta-state/state-locations.yaml records:
    /// `s3://<bucket>/<key>`, `gcs://<bucket>/<prefix>/default.tfstate`,
    /// `local://<path>`, `<type>://<bucket>/<key>`.
    pub fn location(&self) -> String {
        match self {
            StateObject::S3 { bucket, key } => format!("s3://{bucket}/{key}"),
            StateObject::Gcs { bucket, prefix } => {
                format!("gcs://{bucket}/{prefix}/default.tfstate")
            }
            StateObject::Local { path } => format!("local://{path}"),
            StateObject::Other { model, bucket, key } => format!("{model}://{bucket}/{key}"),
        }
    }
}

/// How csis reads one state object's JSON for a `${terraform.KEY}` source
/// on a state backend (`interpolation: terraform: [{backend:, workspace:}]`,
/// docs/interpolation.md): the answer of [`crate::Plugin::state_reader`]
/// from the plugin that owns the backend's type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StateRead {
    /// A file, relative to the configuration root (the `local` backend).
    File(String),
    /// A command that prints the state JSON on its stdout (a remote
    /// backend's CLI). The engine runs it once per invocation per object.
    Command(StateCommand),
    /// The plugin reads the object itself, through its provider's API
    /// (the s3 backend through the AWS SDK); once per invocation per
    /// object.
    Fetch(StateFetch),
}

/// A state object a plugin reads through its provider's API. Two are the
/// same read when they name the same request (the function is the
/// plugin's, and function addresses are not comparable).
#[derive(Clone, Debug)]
pub struct StateFetch {
    /// The request as messages name it (`S3 GetObject
    /// s3://corp/csis/net.tfstate (region eu-west-1, profile ops)`).
    pub request: String,
    /// What `fetch` is given: the object's coordinates and the
    /// backend's settings it reads (`bucket`, `key`, `region`, `profile`).
    pub fields: Vec<(String, String)>,
    /// What to check when it fails (credentials, the object).
    pub help: String,
    /// The object's bytes, or why not (the provider's own words).
    pub fetch: Fetch,
}

/// A plugin's read of a state object: its `fields` in, the bytes out.
pub type Fetch = fn(&[(String, String)]) -> Result<Vec<u8>, String>;

impl PartialEq for StateFetch {
    fn eq(&self, other: &Self) -> bool {
        (&self.request, &self.fields, &self.help) == (&other.request, &other.fields, &other.help)
    }
}

impl Eq for StateFetch {}

impl std::hash::Hash for StateFetch {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.request, &self.fields, &self.help).hash(state);
    }
}

/// A command line that prints a state object on stdout.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StateCommand {
    /// The executable, looked up on PATH (`aws`, `gcloud`).
    pub program: String,
    pub args: Vec<String>,
    /// What the program is and why csis runs it, for the message when it
    /// is not on PATH (`the AWS CLI (aws) to read the state object from
    /// S3`).
    pub what: String,
    /// What to check when it fails (credentials, the CLI's login).
    pub help: String,
}

impl StateCommand {
    /// The command line as a shell would show it (arguments with a space
    /// or a quote quoted).
    pub fn line(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(|a| {
                if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c))
                {
                    format!("'{}'", a.replace('\'', "'\\''"))
                } else {
                    a.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A state backend's declaration from its type, name and `config:` keys,
/// read as a cfg/ entry is: for tests of a backend's rules, here and in
/// the plugins that own a backend type. What reading refuses is dropped:
/// callers give valid keys, and a backend rule is what they test.
pub fn backend_decl(model: &'static str, name: &str, config: &[(&str, &str)]) -> BuilderDecl {
    use csis_model::models::BaseModelKind;
    use csis_model::{DocPath, Fields, Map, Origin, Value, Vct};
    let mut m = Map::default();
    m.insert("name".into(), Value::str(name));
    m.insert("type".into(), Value::str(model));
    let mut c = Map::default();
    for (k, v) in config {
        c.insert((*k).into(), Value::str(*v));
    }
    m.insert("config".into(), Value::map(c));
    let mut diags = Vec::new();
    let mut f = Fields::new(
        &m,
        Origin::new("cfg/x.yml", DocPath::default()),
        "state backend",
        &mut diags,
    );
    let base = BaseModelKind::State.read(&mut f);
    f.finish();
    BuilderDecl {
        model,
        classification: Vct::StateBackendModel,
        base,
        extra: Map::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_type_names_the_object_it_writes() {
        let cfg = [("bucket", "corp-state"), ("prefix", "csis/")];
        let s3 = StateObject::of(&backend_decl("s3", "tfstate", &cfg), "web");
        assert_eq!(
            s3,
            StateObject::S3 {
                bucket: "corp-state".into(),
                key: "csis/web.tfstate".into()
            }
        );
        assert_eq!(s3.location(), "s3://corp-state/csis/web.tfstate");
        let gcs = StateObject::of(&backend_decl("gcs", "gstate", &cfg), "web");
        assert_eq!(
            gcs,
            StateObject::Gcs {
                bucket: "corp-state".into(),
                prefix: "csis/web".into()
            }
        );
        assert_eq!(gcs.location(), "gcs://corp-state/csis/web/default.tfstate");
        let local = StateObject::of(&backend_decl("local", "disk", &[]), "web");
        assert_eq!(
            local,
            StateObject::Local {
                path: "disk/web.tfstate".into()
            }
        );
        assert_eq!(local.location(), "local://disk/web.tfstate");
        let other = StateObject::of(&backend_decl("dummy", "d", &[("prefix", " p/ ")]), "web");
        assert_eq!(other.location(), "dummy://d/p/web.tfstate");
    }
}
