//! Values from outside the tree (spec 003, docs/interpolation.md): the
//! engine's side of the `interpolate-external` pass. What the sources
//! declare (`interpolation: terraform:` in cfg/, read as written and never
//! interpolated), which files each entry reads (state files, `env_file:`),
//! and running the pass over one item or over cfg/'s builder lists.
//!
//! The files are read by the workspace, once each per invocation, into the
//! tree's aux files (salsa inputs): an entry reads only the files it names,
//! so an edit of a state file re-executes only the entries that read it.
//! A source on a remote state backend (s3, gcs) is read the same way, by
//! the command its backend's plugin gives (`Plugin::state_reader`): the
//! workspace runs it once per distinct object and keeps its stdout as the
//! aux file named by the object's location (`s3://<bucket>/<key>`).

use std::sync::Arc;

use csis_model::{Diagnostic, DocPath, Fields, Origin, Value, Vct};
use csis_plugin_api::BuilderDecl;
use csis_plugin_api::state_object::{StateObject, StateRead};
use csis_string_stage::Renderer;
use csis_string_stage::interp::{
    External, Outcome, Outputs, REFUSED_READ, Source, Tokens, Used, entry_reads, substitute_tokens,
    tfstate_outputs,
};
use csis_string_stage::passes::{DEFAULT_DATEFORMAT, LAST_JINJA_ORDER, StageEnv};

use crate::db::ItemSource;
use crate::db::files::aux_file;
use crate::db::{Db, SourceFile, Tree};
use crate::load::cfg::cfg_document;
use crate::load::items::mentions;

/// The environment variable the cli's `--tolerate-missing-env` sets in the
/// load's environment snapshot (and that a user may set instead).
pub const TOLERATE_ENV: &str = "CSIS_TOLERATE_MISSING_ENV";

/// The `interpolation:` declaration of cfg/ and `tolerate_missing_env`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Declared {
    pub sources: Vec<Source>,
    /// The sources on a remote state backend (s3, gcs): read by a command
    /// its plugin gives, not from a file.
    pub remote: Vec<RemoteSource>,
    pub tolerate_missing_env: bool,
    /// The document's `config.environment` ({environment}'s default).
    pub environment: Option<String>,
    pub diags: Vec<Diagnostic>,
}

/// A source on a state backend whose plugin reads its state by a command
/// (`Plugin::state_reader`): the backend as declared and the workspace,
/// tokens unsubstituted. Its [`Source`]'s location is the state object's
/// (`s3://<bucket>/<key>`, `gcs://<bucket>/<prefix>/default.tfstate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSource {
    pub source: String,
    pub backend: Arc<BuilderDecl>,
    pub workspace: String,
}

/// The sources as written in cfg/ (the declarations are not interpolated).
#[salsa::tracked(returns(ref))]
pub fn declared(db: &dyn Db, tree: Tree) -> Declared {
    let cfg = cfg_document(db, tree);
    let mut out = Declared::default();
    let doc = &cfg.value;
    let flag = |t: Option<&str>| {
        t.is_some_and(|t| matches!(t.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
    };
    out.tolerate_missing_env = flag(doc.get("tolerate_missing_env").and_then(Value::as_str))
        || flag(crate::db::reads::env_var(db, tree, TOLERATE_ENV).map(String::as_str));
    out.environment = doc
        .get("config")
        .and_then(|c| c.get("environment"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(interp) = doc.get("interpolation") else {
        return out;
    };
    let at = |p: DocPath| cfg.origin(&p);
    let base = DocPath::root().key("interpolation");
    let Some(m) = interp.as_map() else {
        out.diags.push(
            Diagnostic::error("'interpolation' must be a mapping (terraform: [...])")
                .at_opt(at(base)),
        );
        return out;
    };
    for (k, v) in m {
        if k != "terraform" {
            out.diags.push(
                Diagnostic::error(format!(
                    "interpolation: unknown key '{k}'; csis reads interpolation: terraform:"
                ))
                .at_opt(at(base.key(k)))
                .on_key(),
            );
            continue;
        }
        let Some(list) = v.as_seq() else {
            out.diags.push(
                Diagnostic::error("interpolation.terraform must be a list of {name, path} sources")
                    .at_opt(at(base.key(k))),
            );
            continue;
        };
        for (i, s) in list.iter().enumerate() {
            let here = base.key(k).index(i);
            let name = s.get("name").and_then(Value::as_str);
            let location = match (s.get("path").and_then(Value::as_str), s.get("backend")) {
                (Some(p), None) => Some(p.to_string()),
                (None, Some(b)) => match backend_source(db, &cfg.value, b, s.get("workspace")) {
                    Ok(BackendSource::File(path)) => Some(path),
                    Ok(BackendSource::Remote {
                        location,
                        backend,
                        workspace,
                    }) => {
                        if let Some(n) = name {
                            out.remote.push(RemoteSource {
                                source: n.to_string(),
                                backend,
                                workspace,
                            });
                        }
                        Some(location)
                    }
                    Err(Some(why)) => {
                        out.diags.push(
                            Diagnostic::error(format!(
                                "interpolation.terraform[{i}]{}: {why}",
                                name.map(|n| format!(" ('{n}')")).unwrap_or_default()
                            ))
                            .at_opt(at(here.key("backend"))),
                        );
                        continue;
                    }
                    Err(None) => None,
                },
                _ => None,
            };
            match (name, location) {
                (Some(n), Some(l)) => out.sources.push(Source {
                    name: n.to_string(),
                    location: l,
                }),
                _ => out.diags.push(
                    Diagnostic::error(format!(
                        "interpolation.terraform[{i}] needs a name and either path: (a terraform.tfstate, relative to the root) or backend: (a state backend of the tree: local, s3 or gcs) with workspace:"
                    ))
                    .at_opt(at(here)),
                ),
            }
        }
    }
    out
}

/// Where a `backend:` + `workspace:` source reads its state.
enum BackendSource {
    /// A file below the root (tokens unsubstituted).
    File(String),
    /// The state object's location (tokens unsubstituted), read by the
    /// command the backend's plugin gives.
    Remote {
        location: String,
        backend: Arc<BuilderDecl>,
        workspace: String,
    },
}

/// The state of `workspace` on the state backend named `backend`: the
/// object `StateObject::of` places it at, read as the plugin owning the
/// backend's type says (`Plugin::state_reader`): a `local` backend's file
/// `<bucket>/<prefix><workspace>.tfstate` below the root, an s3 or gcs
/// object by its CLI. `Err(None)`: a name or workspace is missing;
/// `Err(Some(why))`: the backend cannot be a source.
fn backend_source(
    db: &dyn Db,
    cfg: &Value,
    backend: &Value,
    workspace: Option<&Value>,
) -> Result<BackendSource, Option<String>> {
    let name = backend.as_str().ok_or(None)?;
    let workspace = workspace.and_then(Value::as_str).ok_or(None)?;
    let list = cfg.get("state_backends").and_then(Value::as_seq);
    let declared_names = || {
        list.into_iter()
            .flatten()
            .filter_map(|b| b.get("name").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(m) = list
        .into_iter()
        .flatten()
        .find(|b| b.get("name").and_then(Value::as_str) == Some(name))
        .and_then(Value::as_map)
    else {
        return Err(Some(format!(
            "backend '{name}' is no state backend of the tree (state_backends: [{}])",
            declared_names()
        )));
    };
    let type_name = m.get("type").and_then(Value::as_str).unwrap_or_default();
    // The backend's own declaration is structured (and refused, when it
    // must be) by the builders' load; here it only places the object.
    let Some(spec) = db.registry().model(Vct::StateBackendModel, type_name) else {
        return Err(Some(format!(
            "state backend '{name}' has type '{type_name}', which no linked plugin registers"
        )));
    };
    let mut ignored = Vec::new();
    let origin = Origin::new("cfg/_config.yml", DocPath::root().key("state_backends"));
    let decl = spec.declare(Fields::new(m, origin, "state backend", &mut ignored));
    let object = StateObject::of(&decl, workspace);
    match db.registry().state_reader(&decl, &object) {
        Some(StateRead::File(path)) => Ok(BackendSource::File(path)),
        Some(StateRead::Command(_) | StateRead::Fetch(_)) => Ok(BackendSource::Remote {
            location: object.location(),
            backend: Arc::new(decl),
            workspace: workspace.to_string(),
        }),
        None => Err(Some(format!(
            "state backend '{name}' ({}): its plugin gives no way to read a workspace's state, so it cannot be a source",
            decl.model
        ))),
    }
}

/// A remote state object an entry reads: its resolved location (the key
/// of its text among the aux files), the source and backend it comes
/// from, and how it is read (a command that prints it, or the plugin's
/// own fetch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRead {
    pub location: String,
    pub source: String,
    pub backend: String,
    pub backend_type: String,
    pub read: StateRead,
}

/// What interpolation reads: files below the root (state files,
/// `env_file:`s) and remote state objects, each once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reads {
    pub files: Vec<String>,
    pub remote: Vec<RemoteRead>,
}

/// Whether a resolved location is a remote state object's (read by a
/// command), not a file below the root.
pub fn is_remote_location(location: &str) -> bool {
    location.contains("://")
}

/// Every file interpolation reads (state files, `env_file:`s), relative
/// to the root, and every remote state object, for the workspace to read
/// once each.
pub fn interpolation_files(db: &dyn Db, tree: Tree) -> Reads {
    let decl = declared(db, tree);
    let sections = db.registry().interpolatable_sections();
    let mut out = Reads::default();
    let mut add = |entry: &Value, interpolates: bool| {
        if !interpolates {
            return;
        }
        let (locs, env_file) = entry_reads(entry, &decl.sources, decl.environment.as_deref());
        let tokens = Tokens::of(entry, decl.environment.as_deref());
        for loc in locs {
            if !is_remote_location(&loc) {
                out.files.push(loc);
                continue;
            }
            if out.remote.iter().any(|r| r.location == loc) {
                continue;
            }
            if let Some(read) = remote_read(db, decl, &loc, &tokens) {
                out.remote.push(read);
            }
        }
        out.files.extend(env_file);
    };
    if let Some(top) = cfg_document(db, tree).value.as_map() {
        for (k, v) in top {
            if sections.contains(k) {
                v.as_seq()
                    .into_iter()
                    .flatten()
                    .for_each(|e| add(e, mentions(e)));
            }
        }
    }
    let no_overlays = tree.overlays(db).is_empty();
    for kind in db.registry().item_kinds() {
        if !sections.iter().any(|s| s == kind.key()) {
            continue;
        }
        let index = crate::load::items::item_index(db, tree);
        // The entries of the file the last item came from: a file's items
        // follow one another in the index.
        let mut last: Option<(SourceFile, &crate::load::items::ItemFileEntries)> = None;
        for (name, source) in index.items.get(&kind).into_iter().flatten() {
            // An entry of the tree that no overlay changes is read in
            // place; the load asks this of every item, on one thread.
            if let ItemSource::Tree { file, index: n } = source
                && no_overlays
            {
                let entries = match last {
                    Some((f, entries)) if f == *file => entries,
                    _ => crate::load::items::item_file_entries(db, *file),
                };
                last = Some((*file, entries));
                if let Some(entry) = entries.items.get(*n)
                    && entry.interpolates
                {
                    add(&entry.value.unpack(), true);
                }
                continue;
            }
            let id = crate::load::items::ItemId::new(db, tree, kind, &**name);
            if let Some(raw) = crate::load::items::raw_item(db, tree, id)
                && raw.interpolates
            {
                add(&raw.value.unpack(), true);
            }
        }
    }
    out.files.sort();
    out.files.dedup();
    out.remote.sort_by(|a, b| a.location.cmp(&b.location));
    out
}

/// The command reading the remote source whose location, with `tokens`,
/// is `loc`.
fn remote_read(db: &dyn Db, decl: &Declared, loc: &str, tokens: &Tokens) -> Option<RemoteRead> {
    decl.remote.iter().find_map(|r| {
        let src = decl.sources.iter().find(|s| s.name == r.source)?;
        if substitute_tokens(&src.location, tokens).ok()? != loc {
            return None;
        }
        let workspace = substitute_tokens(&r.workspace, tokens).ok()?;
        let object = StateObject::of(&r.backend, &workspace);
        match db.registry().state_reader(&r.backend, &object)? {
            StateRead::File(_) => None,
            read => Some(RemoteRead {
                location: loc.to_string(),
                source: r.source.clone(),
                backend: r.backend.name().to_string(),
                backend_type: r.backend.model.to_string(),
                read,
            }),
        }
    })
}

/// One state file's outputs, parsed once per revision of its text.
#[salsa::tracked(returns(ref))]
pub fn state_outputs(db: &dyn Db, file: SourceFile) -> Result<Arc<Outputs>, String> {
    tfstate_outputs(file.text(db)).map(Arc::new)
}

/// What the pass needs for `entries`: only the files they read.
fn external_for(db: &dyn Db, tree: Tree, entries: &[&Value]) -> External {
    let decl = declared(db, tree);
    let mut ext = External {
        sections: db.registry().interpolatable_sections(),
        tolerate_missing_env: decl.tolerate_missing_env,
        env: (**crate::db::reads::whole_env(db, tree)).clone(),
        sources: decl.sources.clone(),
        environment: decl.environment.clone(),
        ..External::default()
    };
    for entry in entries {
        let (locs, env_file) = entry_reads(entry, &decl.sources, decl.environment.as_deref());
        for loc in locs {
            let parsed = match aux_file(db, tree, &loc) {
                // Refused when read, and reported there: no second error.
                Some(f) if &**f.text(db) == REFUSED_READ => Err(REFUSED_READ.to_string()),
                Some(f) => state_outputs(db, f).clone(),
                None if is_remote_location(&loc) => Err(
                    "the state object could not be read (the error reading it is reported above)"
                        .to_string(),
                ),
                // A path that would leave the root was never read: say
                // why (the one confinement rule), not "no such file".
                None => Err(csis_model::confine::relative_path_problem("path", &loc)
                    .unwrap_or_else(|| {
                        "no such state file (paths are relative to the root)".to_string()
                    })),
            };
            ext.states.insert(loc, parsed);
        }
        if let Some(p) = env_file {
            let text = aux_file(db, tree, &p).map(|f| f.text(db).clone());
            ext.env_files.insert(p, text);
        }
    }
    ext
}

/// What interpolating one entry (or cfg/'s lists) gave.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Interpolated {
    pub used: Vec<Used>,
    pub diags: Vec<Diagnostic>,
    /// Values from `sensitive: true` outputs, with the placeholder they
    /// print as.
    pub secrets: Vec<csis_model::models::Secret>,
}

/// The passes after the Jinja ones over one item (as a one-entry document
/// under its section), when the item mentions interpolation at all.
pub fn interpolate_item(
    db: &dyn Db,
    tree: Tree,
    section: &str,
    value: &mut Value,
    origin: &Origin,
) -> Interpolated {
    if !mentions(value) {
        return Interpolated::default();
    }
    let ext = external_for(db, tree, &[value]);
    let mut doc = Value::map(
        [(section.to_string(), Value::Seq(vec![std::mem::take(value)]))]
            .into_iter()
            .collect(),
    );
    let outcome = run_passes(db, tree, &mut doc, ext);
    if let Value::Map(mut m) = doc
        && let Some(Value::Seq(mut items)) = m.shift_remove(section)
        && let Some(v) = items.pop()
    {
        *value = v;
    }
    let locate = |p: &DocPath| {
        let mut o = origin.clone();
        o.path = o.path.joined(p.0.iter().skip(2).cloned());
        Some(o)
    };
    report(outcome, locate, true)
}

/// The passes after the Jinja ones over `doc` with `ext`.
fn run_passes(db: &dyn Db, tree: Tree, doc: &mut Value, ext: External) -> Outcome {
    let looked = csis_string_stage::looked::Looked::new();
    let mut st = StageEnv::new(
        Default::default(),
        crate::db::reads::start_for_templates(db, tree),
        DEFAULT_DATEFORMAT,
        Default::default(),
        looked.clone(),
    );
    st.external = Some(ext);
    let r = Renderer::new();
    for pass in db.registry().resolution_passes() {
        if pass.order > LAST_JINJA_ORDER {
            (pass.run)(doc, &st, &r);
        }
    }
    crate::db::reads::note_looked(db, &looked);
    st.take_interpolation()
}

/// What the pass needs over cfg/'s rendered document (builder lists), or
/// None when nothing there mentions interpolation (then no file is read).
pub fn external_for_cfg(db: &dyn Db, tree: Tree, doc: &Value) -> Option<External> {
    let sections = db.registry().interpolatable_sections();
    let top = doc.as_map()?;
    let entries: Vec<&Value> = top
        .iter()
        .filter(|(k, _)| sections.contains(k))
        .flat_map(|(_, v)| v.as_seq().into_iter().flatten())
        .filter(|e| mentions(e))
        .collect();
    (!entries.is_empty()).then(|| external_for(db, tree, &entries))
}

/// Diagnostics of an outcome; with `secrets_ok` false (cfg/), a sensitive
/// output is refused.
pub fn report(
    outcome: Outcome,
    locate: impl Fn(&DocPath) -> Option<Origin>,
    secrets_ok: bool,
) -> Interpolated {
    let mut out = Interpolated::default();
    for f in &outcome.failures {
        out.diags.push(
            Diagnostic::error(format!(
                "interpolation: {} entry '{}', field '{}': {}",
                f.section,
                f.entry,
                field_of(&f.path),
                f.message
            ))
            .help("docs/interpolation.md: ${env.NAME}, ${terraform.KEY}, env_file:, --tolerate-missing-env")
            .at_opt(locate(&f.path)),
        );
    }
    for (path, name) in &outcome.missing_env {
        out.diags.push(
            Diagnostic::warning(format!(
                "{MISSING_ENV_WARNING} '{name}' is not set; substituted <missing env {name}> (tolerate-missing-env)"
            ))
            .at_opt(locate(path)),
        );
    }
    for u in &outcome.used {
        if u.sensitive {
            if secrets_ok {
                out.secrets.push(csis_model::models::Secret {
                    plaintext: u.text.clone(),
                    marker: u.placeholder.clone(),
                });
            } else {
                out.diags.push(
                    Diagnostic::error(format!(
                        "interpolation: {} is a sensitive output; csis interpolates sensitive outputs into items only, never into a builder declaration",
                        u.placeholder
                    ))
                    .at_opt(locate(&u.path)),
                );
            }
        }
    }
    out.used = outcome.used;
    out
}

/// The start of the tolerate-missing warning (one per name is kept).
pub const MISSING_ENV_WARNING: &str = "environment variable";

/// The field below the entry (`tags.team`).
fn field_of(path: &DocPath) -> String {
    DocPath(path.0.iter().skip(2).cloned().collect()).to_string()
}
