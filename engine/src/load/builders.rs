//! Structuring cfg/: the builder declarations, the executables and the
//! top-level IAConfig, after the string stage.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::models::{BaseBuilder, ExecutableModel, IAConfig};
use csis_model::vct::BUILDER_KEYS;
use csis_model::{Diagnostic, DocPath, Fields, Map, Origin, Subject, Value, Vct};
use csis_plugin_api::BuilderDecl;
use indexmap::IndexMap;

use crate::db::{Db, Tree};
use crate::load::builder_labels::list_label;
use crate::load::cfg::{CfgDocument, cfg_document};
use crate::load::strings::rendered_cfg;

/// Every builder declaration by classification, the defaults, the
/// executables and the top-level settings.
#[derive(Debug, PartialEq, Eq, Clone, Default)]
pub struct Builders {
    /// By sanitized model classification, then name, in declared order.
    /// foldhash, not SipHash: a large tree resolves some 200,000 builder
    /// references.
    pub by_class: BTreeMap<Vct, IndexMap<String, Arc<BuilderDecl>, foldhash::fast::RandomState>>,
    /// The default builder's name per classification.
    pub defaults: BTreeMap<Vct, String>,
    /// Alias to name per classification.
    aliases: BTreeMap<Vct, BTreeMap<String, String>>,
    /// Where each builder is declared, by classification and name.
    pub origins: BTreeMap<(Vct, String), Origin>,
    /// Where each executable is declared.
    pub executable_origins: BTreeMap<String, Origin>,
    pub executables: IndexMap<String, ExecutableModel>,
    pub config: Option<Arc<IAConfig>>,
    pub diags: Vec<Diagnostic>,
}

impl Builders {
    /// The runtime an instance's machine runs on: the one its instance
    /// builder launches on, else the instance's own `runtime` (whose
    /// default is the default runtime). An instance of a builder on
    /// another runtime than its own `runtime` runs where it is launched.
    pub fn instance_runtime(&self, inst: &csis_model::models::Instance) -> String {
        self.resolve(Vct::InstanceBuilderModel, &inst.root.named.type_)
            .and_then(|b| b.base.runtime())
            .unwrap_or(inst.runtime.as_str())
            .to_string()
    }

    /// The builder a reference names: `default` is the registered default,
    /// otherwise a name or an alias.
    pub fn resolve(&self, vct: Vct, reference: &str) -> Option<&Arc<BuilderDecl>> {
        let vct = vct.sanitize();
        let by_name = self.by_class.get(&vct)?;
        if reference == "default" {
            return by_name.get(self.defaults.get(&vct)?.as_str());
        }
        // Declared names are safe names, so a reference found as written
        // is its own safe name: no normalized copy for nearly every one of
        // the 200,000 references a large tree resolves.
        if let Some(decl) = by_name.get(reference) {
            return Some(decl);
        }
        let safe = csis_model::naming::safe_name(reference);
        match by_name.get(&safe) {
            Some(decl) => Some(decl),
            None => by_name.get(self.aliases.get(&vct)?.get(&safe)?.as_str()),
        }
    }

    /// A builder by `<classification>::<model>::<name>`.
    pub fn by_global_id(&self, id: &str) -> Option<&Arc<BuilderDecl>> {
        let (class, rest) = id.split_once("::")?;
        let vct = Vct::parse(class)?.sanitize();
        let (_, name) = rest.split_once("::")?;
        self.by_class
            .get(&vct)?
            .get(name)
            .filter(|d| d.global_id() == id)
    }

    pub fn names(&self, vct: Vct) -> Vec<&str> {
        self.by_class
            .get(&vct.sanitize())
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// The declared names of a classification, for "declared: [...]".
    pub fn declared(&self, vct: Vct) -> String {
        format!("[{}]", self.names(vct).join(", "))
    }

    /// `id` of cfg/_config.yml, empty when absent (a load error).
    pub fn tree_id(&self) -> String {
        self.config
            .as_ref()
            .map(|c| c.id.trim().to_string())
            .unwrap_or_default()
    }

    /// `config:` of cfg/_config.yml (after overlays), empty when absent.
    pub fn config_map(&self) -> Map {
        self.config
            .as_ref()
            .map(|c| c.config.clone())
            .unwrap_or_default()
    }
}

/// Every declared runtime with the hooks of its model's builder, in
/// declaration order (a runtime whose model no plugin registers is left
/// out: the load refused it already).
pub fn runtime_hooks(
    db: &dyn Db,
    tree: Tree,
) -> Vec<(Arc<BuilderDecl>, Box<dyn csis_plugin_api::Builder>)> {
    builders(db, tree)
        .by_class
        .get(&Vct::RuntimeBuilderModel)
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(|d| {
            let spec = db.registry().model(d.classification, d.model)?;
            Some((d.clone(), (spec.builder)(d)))
        })
        .collect()
}

#[salsa::tracked(returns(ref))]
pub fn builders(db: &dyn Db, tree: Tree) -> Builders {
    let doc = cfg_document(db, tree);
    let rendered = rendered_cfg(db, tree);
    let mut out = Builders {
        diags: rendered.diags.clone(),
        ..Builders::default()
    };
    let Some(top) = rendered.value.as_map() else {
        return out;
    };
    if doc.map().is_none_or(|m| m.is_empty()) && !doc.diags.is_empty() {
        return out;
    }
    read_executables(top, doc, &mut out);
    for (key, vct) in BUILDER_KEYS {
        read_builder_list(db, top, doc, key, vct, &mut out);
    }
    if out.names(Vct::RuntimeBuilderModel).is_empty() {
        let msg = if db
            .registry()
            .model_names(Vct::RuntimeBuilderModel)
            .is_empty()
        {
            "No runtime providers configured."
        } else {
            "No runtime builders found in config file."
        };
        // Every runtime builder refused leaves none: then this follows.
        let runtimes = Subject::Builder(Vct::RuntimeBuilderModel, None);
        out.diags.push(
            Diagnostic::error(msg)
                .help("declare a runtime_builders: entry in cfg/, for example type: local")
                .refusing(runtimes.clone())
                .following(runtimes),
        );
    }
    check_builder_runtimes(&mut out);
    finalize_builders(db, &mut out);
    read_ia_config(top, doc, &mut out);
    out
}

fn origin_of(doc: &CfgDocument, path: DocPath) -> Origin {
    doc.origin(&path)
        .unwrap_or_else(|| Origin::new("cfg", path))
}

fn read_executables(top: &Map, doc: &CfgDocument, out: &mut Builders) {
    let Some(v) = top.get("executables") else {
        return;
    };
    let Some(items) = v.as_seq() else {
        out.diags.push(
            Diagnostic::error("'executables' must be a list of named entries")
                .at(origin_of(doc, DocPath::root().key("executables"))),
        );
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let origin = origin_of(doc, DocPath::root().key("executables").index(i));
        let Some(m) = item.as_map() else {
            out.diags
                .push(Diagnostic::error(format!("executables[{i}] must be a mapping")).at(origin));
            continue;
        };
        let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
        let mut f = Fields::new(
            m,
            origin.clone(),
            format!("Executable '{name}'"),
            &mut out.diags,
        );
        let exe = ExecutableModel::read(&mut f);
        f.finish();
        if out.executables.contains_key(exe.name()) {
            out.diags.push(
                Diagnostic::error(format!("Duplicate executable name found: {}", exe.name()))
                    .at(origin.key("name")),
            );
            continue;
        }
        out.executable_origins
            .insert(exe.name().to_string(), origin);
        out.executables.insert(exe.name().to_string(), exe);
    }
}

fn read_builder_list(
    db: &dyn Db,
    top: &Map,
    doc: &CfgDocument,
    key: &str,
    vct: Vct,
    out: &mut Builders,
) {
    let Some(v) = top.get(key) else { return };
    let Some(items) = v.as_seq() else {
        out.diags.push(
            Diagnostic::error(format!("'{key}' must be a list of named entries"))
                .at(origin_of(doc, DocPath::root().key(key))),
        );
        return;
    };
    let label = list_label(vct);
    let mut defaults: Vec<String> = Vec::new();
    // An entry that did not structure may have been the default: say
    // nothing about defaults then.
    let mut failed = false;
    for (i, item) in items.iter().enumerate() {
        let origin = origin_of(doc, DocPath::root().key(key).index(i));
        let Some(m) = item.as_map() else {
            out.diags.push(
                Diagnostic::error(format!("{key}[{i}] must be a mapping with name and type"))
                    .at(origin),
            );
            continue;
        };
        let name = m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let Some(type_name) = m.get("type").and_then(Value::as_str) else {
            failed = true;
            out.diags.push(
                Diagnostic::error(format!("{label} '{name}' must have a type specified"))
                    .at(origin)
                    .refusing(Subject::builder(vct, &name))
                    .help(format!(
                        "name the model with type:, one of {:?}",
                        db.registry().model_names(vct)
                    )),
            );
            continue;
        };
        if type_name.contains("{{") {
            failed = true;
            continue; // refused with the merged document's names
        }
        let Some(spec) = db.registry().model(vct, type_name) else {
            failed = true;
            out.diags.push(
                Diagnostic::error({
                    let known = db.registry().model_names(vct);
                    let hint = csis_model::suggest::hint(type_name, known.iter().copied());
                    format!(
                        "{label} '{name}': type '{type_name}' is no registered model (known: [{}]){hint}",
                        known.join(", ")
                    )
                })
                .at(origin.key("type"))
                .refusing(Subject::builder(vct, &name))
                .help("a misspelt type, or the type of a plugin this csis was not built with"),
            );
            continue;
        };
        let f = Fields::new(m, origin.clone(), format!("{label} {name}"), &mut out.diags);
        let decl = spec.declare(f);
        let common = decl.base.common();
        let bname = common.name().to_string();
        let class = out.by_class.entry(vct.sanitize()).or_default();
        if let Some(existing) = class.get(&bname) {
            // The same spelling twice is refused by the cfg/ merge already;
            // here only names that collide once normalized.
            if existing.base.common().named.display_name != common.named.display_name {
                out.diags.push(
                    Diagnostic::error(format!("Duplicate builder name found: {bname}"))
                        .at(origin.key("name")),
                );
            }
            continue;
        }
        if common.is_default {
            defaults.push(bname.clone());
        }
        let aliases = out.aliases.entry(vct.sanitize()).or_default();
        for a in &common.named.aliases {
            if aliases.insert(a.clone(), bname.clone()).is_some() {
                out.diags.push(
                    Diagnostic::error(format!("Duplicate alias '{a}' in {key}"))
                        .at(origin.key("aliases")),
                );
            }
        }
        out.origins
            .insert((vct.sanitize(), bname.clone()), origin.clone());
        class.insert(bname, Arc::new(decl));
    }
    match defaults.as_slice() {
        [one] => {
            out.defaults.insert(vct.sanitize(), one.clone());
        }
        [] if !items.is_empty() && !failed => out.diags.push(
            Diagnostic::error(format!("No default builder found in {key} list."))
                .at(origin_of(doc, DocPath::root().key(key)))
                .help("mark exactly one entry is_default: true"),
        ),
        [] => {}
        [a, b, ..] => out.diags.push(
            Diagnostic::error(format!("Multiple default builders found: {a} and {b}"))
                .at(origin_of(doc, DocPath::root().key(key)))
                .help("mark exactly one entry is_default: true"),
        ),
    }
}

/// A builder's `runtime` must name a runtime builder; it is canonicalized
/// to that builder's registered name.
fn check_builder_runtimes(out: &mut Builders) {
    if out.names(Vct::RuntimeBuilderModel).is_empty() {
        return; // refused as "No runtime builders found"
    }
    let mut moves = Vec::new();
    for (vct, by_name) in &out.by_class {
        for (name, decl) in by_name {
            let Some(rt) = decl.base.runtime() else {
                continue;
            };
            match out.resolve(Vct::RuntimeBuilderModel, rt) {
                Some(runtime) => moves.push((*vct, name.clone(), runtime.name().to_string())),
                // What the builder's runtime would have answered (its
                // bake users, its sources) follows from this error.
                None => out.diags.push(
                    Diagnostic::error(csis_model::suggest::undeclared(
                        &format!("{} '{name}' (runtime)", list_label(*vct)),
                        "runtime builder",
                        rt,
                        out.names(Vct::RuntimeBuilderModel),
                    ))
                    .at_opt(
                        out.origins
                            .get(&(*vct, name.clone()))
                            .map(|o| o.key("runtime")),
                    )
                    .refusing(Subject::builder(Vct::RuntimeBuilderModel, rt))
                    .following(Subject::builder(Vct::RuntimeBuilderModel, rt)),
                ),
            }
        }
    }
    for (vct, name, runtime) in moves {
        if let Some(decl) = out.by_class.get_mut(&vct).and_then(|m| m.get_mut(&name)) {
            Arc::make_mut(decl).base.set_runtime(&runtime);
        }
    }
}

/// Every builder's own `finalize()`: where a plugin checks its model
/// against its provider.
fn finalize_builders(db: &dyn Db, out: &mut Builders) {
    let mut diags = Vec::new();
    for decl in out.by_class.values().flat_map(|m| m.values()) {
        let Some(spec) = db.registry().model(decl.classification, decl.model) else {
            continue;
        };
        let hooks = (spec.builder)(decl);
        if let Err(problems) = hooks.finalize() {
            diags.extend(problems);
        }
        if let BaseBuilder::Os(os) = &decl.base {
            diags.extend(template_key_problems(
                os,
                decl.model,
                hooks.composes_from_template(),
            ));
            diags.extend(distribution_key_problems(
                os,
                decl.model,
                hooks.builds_from_distribution(),
            ));
        }
        let runtime = decl
            .base
            .runtime()
            .and_then(|rt| out.resolve(Vct::RuntimeBuilderModel, rt));
        let runtime_spec = runtime.and_then(|rt| db.registry().model(rt.classification, rt.model));
        if let (Some(rt), Some(rt_spec)) = (runtime, runtime_spec)
            && let Some(problem) = hooks.runtime_problem(rt, (rt_spec.builder)(rt).as_ref())
        {
            let origin = out
                .origins
                .get(&(decl.classification.sanitize(), decl.name().to_string()))
                .map(|o| o.key("runtime"));
            diags.push(Diagnostic::error(problem).at_opt(origin));
        }
    }
    out.diags.extend(diags);
}

/// `template:`, `variables:` and `defaults_dir` of an OS builder's
/// runtimes entries: required (`template:`) by a type that composes from
/// image templates, refused by any other, each at its key.
fn template_key_problems(
    os: &csis_model::models::OsBuilderModel,
    model: &str,
    composes: bool,
) -> Vec<Diagnostic> {
    let name = os.name();
    let mut out = Vec::new();
    for (i, entry) in os.runtimes.iter().enumerate() {
        let at = |key: &str| entry.origin.as_ref().map(|o| o.key(key));
        if composes && entry.template.is_none() {
            out.push(
                Diagnostic::error(format!(
                    "OS builder {name} runtimes[{i}]: `template:` is required: type '{model}' composes the base image from an image template (a path relative to the root)"
                ))
                .at_opt(entry.origin.clone()),
            );
        }
        if !composes {
            let given = [
                ("template", entry.template.is_some()),
                ("variables", !entry.variables.is_empty()),
                ("defaults_dir", entry.defaults_dir.is_some()),
            ];
            for (key, _) in given.iter().filter(|(_, set)| *set) {
                out.push(
                    Diagnostic::error(format!(
                        "OS builder {name} runtimes[{i}]: `{key}:` is read only by an OS builder type that composes base images from image templates; type '{model}' does not"
                    ))
                    .at_opt(at(key))
                    .on_key(),
                );
            }
        }
    }
    out
}

/// `distribution:` of an OS builder's runtimes entries: refused by a
/// type that builds no root from a distribution, and beside `image_id`
/// (the base starts from one or the other).
fn distribution_key_problems(
    os: &csis_model::models::OsBuilderModel,
    model: &str,
    builds: bool,
) -> Vec<Diagnostic> {
    let name = os.name();
    let mut out = Vec::new();
    for (i, entry) in os.runtimes.iter().enumerate() {
        if entry.distribution.is_none() {
            continue;
        }
        let at = entry.origin.as_ref().map(|o| o.key("distribution"));
        let problem = if !builds {
            format!(
                "OS builder {name} runtimes[{i}]: `distribution:` is read only by an OS builder type that builds base roots from a distribution's archive (type local); type '{model}' does not: name its vendor image with `image_id:` or `query:`"
            )
        } else if entry.image_id.is_some() {
            format!(
                "OS builder {name} runtimes[{i}]: `distribution:` and `image_id:` both name the base's starting root: keep one (`image_id:` a directory of the tree, `distribution:` a root mmdebstrap builds)"
            )
        } else {
            continue;
        };
        out.push(Diagnostic::error(problem).at_opt(at).on_key());
    }
    out
}

fn read_ia_config(top: &Map, doc: &CfgDocument, out: &mut Builders) {
    let origin = doc
        .origin(&DocPath::root().key("id"))
        .map(|o| Origin::new(o.file, DocPath::root()))
        .unwrap_or_else(|| Origin::new("cfg/_config.yml", DocPath::root()));
    // Keys come from every cfg/ file: each is reported at the file it
    // came from, under the name of all of them.
    let mut diags = Vec::new();
    let mut f = Fields::new(top, origin, "cfg/", &mut diags);
    let config = IAConfig::read(&mut f);
    // Read elsewhere (the builder lists above, interpolation by
    // load/interp.rs), and the keys a misspelt one is told it meant.
    for key in ["executables", "interpolation", "tolerate_missing_env"]
        .into_iter()
        .chain(BUILDER_KEYS.iter().map(|(k, _)| *k))
    {
        f.skip(key);
    }
    f.finish();
    let misspelt: Vec<(&String, Vct)> = top
        .keys()
        .filter(|k| !BUILDER_KEYS.iter().any(|(b, _)| b == k))
        .filter_map(|k| {
            let meant = csis_model::suggest::did_you_mean(k, BUILDER_KEYS.iter().map(|(b, _)| *b))?;
            BUILDER_KEYS
                .iter()
                .find(|(b, _)| *b == meant)
                .map(|(_, vct)| (k, *vct))
        })
        .collect();
    for mut d in diags {
        if let Some(o) = &d.origin
            && let Some(real) = doc.origin(&o.path)
        {
            d.origin = Some(real);
        }
        // A misspelt builder list: the list it meant is missing, and what
        // needs one of its builders follows from the misspelling.
        if let Some((_, vct)) = misspelt
            .iter()
            .find(|(key, _)| d.origin.as_ref().map(|o| &o.path) == Some(&DocPath::root().key(key)))
        {
            d = d.refusing(Subject::Builder(vct.sanitize(), None));
        }
        // A cfg/ file that does not parse leaves its keys missing: what
        // is missing then is that refusal's.
        out.diags.push(d.following(Subject::Declarations));
    }
    out.config = Some(Arc::new(config));
}
