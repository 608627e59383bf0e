//! Values from outside the tree (spec 003, docs/interpolation.md): the
//! engine's side of the `interpolate-external` pass. What the sources
//! declare (`interpolation: terraform:` in cfg/, read as written and never
//! interpolated), which files each entry reads (state files, `env_file:`),
//! and running the pass over one item or over cfg/'s builder lists.
//!
//! The files are read by the workspace, once each per invocation, into the
//! tree's aux files (salsa inputs): an entry reads only the files it names,
//! so an edit of a state file re-executes only the entries that read it.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{Diagnostic, DocPath, Origin, Seg, Value};
use csis_string_stage::Renderer;
use csis_string_stage::interp::{
    ENV_FILE_KEY, External, Outcome, Outputs, Source, Used, entry_reads, has_placeholder,
    tfstate_outputs,
};
use csis_string_stage::passes::{DEFAULT_DATEFORMAT, LAST_JINJA_ORDER, StageEnv};

use crate::db::{Db, SourceFile, Tree};
use crate::load::cfg::cfg_document;

/// The environment variable the cli's `--tolerate-missing-env` sets in the
/// load's environment snapshot (and that a user may set instead).
pub const TOLERATE_ENV: &str = "CSIS_TOLERATE_MISSING_ENV";

/// The `interpolation:` declaration of cfg/ and `tolerate_missing_env`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Declared {
    pub sources: Vec<Source>,
    pub tolerate_missing_env: bool,
    /// The document's `config.environment` ({environment}'s default).
    pub environment: Option<String>,
    pub diags: Vec<Diagnostic>,
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
        || flag(tree.env(db).get(TOLERATE_ENV).map(String::as_str));
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
                (None, Some(b)) => backend_location(&cfg.value, b, s.get("workspace")),
                _ => None,
            };
            match (name, location) {
                (Some(n), Some(l)) => out.sources.push(Source {
                    name: n.to_string(),
                    location: l,
                }),
                _ => out.diags.push(
                    Diagnostic::error(format!(
                        "interpolation.terraform[{i}] needs a name and either path: (a terraform.tfstate, relative to the root) or backend: (a local state backend) with workspace:"
                    ))
                    .at_opt(at(here)),
                ),
            }
        }
    }
    out
}

/// The state file a `local` state backend of the tree keeps a workspace's
/// state in: `<bucket>/<prefix><workspace>.tfstate` below the root
/// (`bucket` defaults to the backend's name; docs/configuration.md).
fn backend_location(cfg: &Value, backend: &Value, workspace: Option<&Value>) -> Option<String> {
    let name = backend.as_str()?;
    let workspace = workspace.and_then(Value::as_str)?;
    let decl = cfg
        .get("state_backends")
        .and_then(Value::as_seq)?
        .iter()
        .find(|b| b.get("name").and_then(Value::as_str) == Some(name))?;
    if decl.get("type").and_then(Value::as_str) != Some("local") {
        return None;
    }
    let key = |k: &str| {
        decl.get("config")
            .and_then(|c| c.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let bucket = key("bucket").unwrap_or_else(|| name.to_string());
    let prefix = key("prefix").unwrap_or_default();
    Some(format!("{bucket}/{prefix}{workspace}.tfstate"))
}

/// Every file interpolation reads (state files, `env_file:`s), relative
/// to the root, for the workspace to read once each.
pub fn interpolation_files(db: &dyn Db, tree: Tree) -> Vec<String> {
    let decl = declared(db, tree);
    let sections = db.registry().interpolatable_sections();
    let mut out = Vec::new();
    let mut add = |entry: &Value| {
        if !mentions(entry) {
            return;
        }
        let (locs, env_file) = entry_reads(entry, &decl.sources, decl.environment.as_deref());
        out.extend(locs);
        out.extend(env_file);
    };
    if let Some(top) = cfg_document(db, tree).value.as_map() {
        for (k, v) in top {
            if sections.contains(k) {
                v.as_seq().into_iter().flatten().for_each(&mut add);
            }
        }
    }
    for kind in db.registry().item_kinds() {
        if !sections.iter().any(|s| s == kind.key()) {
            continue;
        }
        for name in crate::load::items::item_index(db, tree).names(kind) {
            let id = crate::load::items::ItemId::new(db, kind, name.clone());
            if let Some(raw) = crate::load::items::raw_item(db, tree, id) {
                add(&raw.value);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether an entry holds a placeholder or an `env_file:`.
fn mentions(entry: &Value) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::Scalar { text, .. } => has_placeholder(text),
            Value::Seq(s) => s.iter().any(walk),
            Value::Map(m) => m.values().any(walk),
            Value::Null => false,
        }
    }
    entry.get(ENV_FILE_KEY).is_some() || walk(entry)
}

fn aux_file(db: &dyn Db, tree: Tree, path: &str) -> Option<SourceFile> {
    tree.aux_files(db)
        .iter()
        .find(|f| f.path(db).as_ref() == path)
        .copied()
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
        env: (**tree.env(db)).clone(),
        sources: decl.sources.clone(),
        environment: decl.environment.clone(),
        ..External::default()
    };
    for entry in entries {
        let (locs, env_file) = entry_reads(entry, &decl.sources, decl.environment.as_deref());
        for loc in locs {
            let parsed = match aux_file(db, tree, &loc) {
                Some(f) => state_outputs(db, f).clone(),
                None => Err("no such state file (paths are relative to the root)".to_string()),
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
    let mut doc = Value::Map(
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
        o.path.0.extend(p.0.iter().skip(2).cloned());
        Some(o)
    };
    report(outcome, locate, true)
}

/// The passes after the Jinja ones over `doc` with `ext`.
fn run_passes(db: &dyn Db, tree: Tree, doc: &mut Value, ext: External) -> Outcome {
    let mut st = StageEnv::new(
        &BTreeMap::new(),
        tree.start_unix(db),
        DEFAULT_DATEFORMAT,
        Default::default(),
    );
    st.external = Some(ext);
    let r = Renderer::new();
    for pass in db.registry().resolution_passes() {
        if pass.order > LAST_JINJA_ORDER {
            (pass.run)(doc, &st, &r);
        }
    }
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
    DocPath(path.0.iter().skip(2).cloned().collect::<Vec<Seg>>()).to_string()
}
