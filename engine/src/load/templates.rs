//! Image templates (spec 001) of the OS builders that compose base images
//! from them: each runtimes entry's `template:`, its extends chain and the
//! OS defaults, folded and variable-substituted by csis-template over the
//! tree's inputs.
//!
//! Every file a chain reads is an aux file of the tree (a salsa input), so
//! an edit to any level re-resolves only the chains that read it, and a
//! comment or key-order edit is cut off where the merged template compares
//! equal. What the resolver asks besides texts (canonical paths, symlinks)
//! was learnt at load through the `System` (`Tree::path_facts`). A path
//! the tree has no fact for is *wanted*: the workspace reads it and loads
//! again (at load, and under `csis watch` when an `extends` changed).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

use csis_model::models::BaseBuilder;
use csis_model::{Origin, Value, Vct};
use csis_template::{Problem, Severity, TemplateFs, Variables};
use serde_json::Value as J;

use crate::db::{Db, Tree};
use crate::load::builders::builders;

/// One runtimes entry that names a template.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TemplateUse {
    pub os_builder: String,
    /// The entry's index under `runtimes:`.
    pub entry: usize,
    pub image_builder: String,
    /// The leaf template, relative to the root.
    pub leaf: String,
    pub variables: BTreeMap<String, String>,
    /// The entry's `defaults_dir`, else the OS builder's.
    pub defaults_dir: Option<String>,
    /// The entry (its `template` key is where a chain's refusal points).
    pub origin: Option<Origin>,
}

#[salsa::interned(debug)]
pub struct TemplateKey<'db> {
    #[returns(ref)]
    pub os_builder: String,
    #[returns(copy)]
    pub entry: usize,
}

/// A chain's problem, located in the template file it is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TemplateProblem {
    /// `file:line:col` (or `file` when the position is unknown).
    pub at: String,
    pub message: String,
    pub warning: bool,
}

impl TemplateProblem {
    fn of(p: &Problem) -> TemplateProblem {
        let file = p.file.to_string_lossy().replace('\\', "/");
        TemplateProblem {
            at: if p.line == 0 {
                file
            } else {
                format!("{file}:{}:{}", p.line, p.col)
            },
            message: p.message.clone(),
            warning: p.severity == Severity::Warning,
        }
    }

    /// `at: message`.
    pub fn describe(&self) -> String {
        format!("{}: {}", self.at, self.message)
    }
}

/// A runtimes entry's template, resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvedTemplate {
    /// The chain's files, root first, relative to the root.
    pub chain: Vec<String>,
    /// The OS defaults file folded underneath, when there is one.
    pub defaults: Option<String>,
    /// The fully merged template (`resolve_full`) as JSON, secrets in
    /// place; `None` when the chain was refused.
    pub json: Option<J>,
    pub full_yaml: String,
    pub redacted_yaml: String,
    /// Refusals and warnings, each at its template file's position.
    pub problems: Vec<TemplateProblem>,
    /// Paths the tree holds no fact for: the workspace reads them and
    /// loads again.
    pub wanted: Vec<String>,
}

impl ResolvedTemplate {
    pub fn errors(&self) -> impl Iterator<Item = &TemplateProblem> {
        self.problems.iter().filter(|p| !p.warning)
    }
}

/// Every runtimes entry naming `template:`, in OS builder order.
#[salsa::tracked(returns(ref))]
pub fn template_uses(db: &dyn Db, tree: Tree) -> Vec<TemplateUse> {
    let b = builders(db, tree);
    let mut out = Vec::new();
    let Some(os_builders) = b.by_class.get(&Vct::OsBuilderModel) else {
        return out;
    };
    for decl in os_builders.values() {
        let BaseBuilder::Os(os) = &decl.base else {
            continue;
        };
        let os_dir = decl
            .extra
            .get("defaults_dir")
            .and_then(Value::as_str)
            .map(str::to_string);
        for (i, e) in os.runtimes.iter().enumerate() {
            let Some(leaf) = &e.template else { continue };
            out.push(TemplateUse {
                os_builder: decl.name().to_string(),
                entry: i,
                image_builder: e.image_builder.clone(),
                leaf: leaf.clone(),
                variables: e.variables.clone(),
                defaults_dir: e.defaults_dir.clone().or_else(|| os_dir.clone()),
                origin: e.origin.clone(),
            });
        }
    }
    out
}

/// The use of an OS builder's entry for an image builder (by name as the
/// entry wrote it).
pub fn use_for<'a>(
    db: &'a dyn Db,
    tree: Tree,
    os_builder: &str,
    entry: usize,
) -> Option<&'a TemplateUse> {
    template_uses(db, tree)
        .iter()
        .find(|u| u.os_builder == os_builder && u.entry == entry)
}

/// A path as the tree keys it: relative to the root, `.` and `..` folded
/// lexically; an absolute path inside the real root is made relative.
/// `None` for a path that leaves the root.
pub fn tree_key(db: &dyn Db, tree: Tree, path: &Path) -> Option<String> {
    let path = if path.is_absolute() {
        let real_root = tree
            .path_facts(db)
            .get("")
            .and_then(|f| f.canonical.clone())?;
        path.strip_prefix(&real_root).ok()?.to_path_buf()
    } else {
        path.to_path_buf()
    };
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().to_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}

/// [`TemplateFs`] over the tree's inputs: texts are aux files, facts the
/// load's; what the tree lacks is noted as wanted.
struct TreeFs<'a> {
    db: &'a dyn Db,
    tree: Tree,
    wanted: RefCell<Vec<String>>,
}

impl TreeFs<'_> {
    fn key(&self, path: &Path) -> io::Result<String> {
        tree_key(self.db, self.tree, path).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                "outside the configuration root; csis reads only files inside the tree",
            )
        })
    }

    fn fact(&self, key: &str) -> Option<crate::db::PathFact> {
        let fact = self.tree.path_facts(self.db).get(key).cloned();
        if fact.is_none() {
            self.wanted.borrow_mut().push(key.to_string());
        }
        fact
    }
}

fn not_found() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "No such file or directory")
}

impl TemplateFs for TreeFs<'_> {
    fn read(&self, path: &Path) -> io::Result<String> {
        let key = self.key(path)?;
        if let Some(f) = self
            .tree
            .aux_files(self.db)
            .iter()
            .find(|f| f.path(self.db).as_ref() == key)
        {
            return Ok(f.text(self.db).to_string());
        }
        match self.fact(&key) {
            Some(f) if f.canonical.is_some() => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not read (not a regular UTF-8 file inside the tree, or over the size limit)",
            )),
            _ => Err(not_found()),
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let key = self.key(path)?;
        self.fact(&key)
            .and_then(|f| f.canonical)
            .ok_or_else(not_found)
    }

    fn is_symlink(&self, path: &Path) -> bool {
        self.key(path)
            .ok()
            .and_then(|k| self.fact(&k))
            .is_some_and(|f| f.symlink)
    }
}

/// The template of OS builder `os_builder`'s runtimes entry `entry`:
/// the chain loaded, folded over the OS defaults, validated.
#[salsa::tracked(returns(ref))]
pub fn resolved_template<'db>(
    db: &'db dyn Db,
    tree: Tree,
    key: TemplateKey<'db>,
) -> ResolvedTemplate {
    let Some(u) = use_for(db, tree, key.os_builder(db), key.entry(db)).cloned() else {
        return ResolvedTemplate::default();
    };
    let fs = TreeFs {
        db,
        tree,
        wanted: RefCell::new(Vec::new()),
    };
    let mut out = resolve_with(&fs, &u);
    // Files as the tree names them (`./a/../b.yml` is `b.yml`).
    let named = |p: &String| tree_key(db, tree, Path::new(p)).unwrap_or_else(|| p.clone());
    out.chain = out.chain.iter().map(named).collect();
    out.defaults = out.defaults.as_ref().map(named);
    // Canonical paths in messages (a cycle's) are shown from the root.
    if let Some(real_root) = tree
        .path_facts(db)
        .get("")
        .and_then(|f| f.canonical.clone())
    {
        let prefix = format!("{}/", real_root.display());
        for p in &mut out.problems {
            p.message = p.message.replace(&prefix, "");
        }
    }
    let mut wanted = fs.wanted.into_inner();
    wanted.sort();
    wanted.dedup();
    out.wanted = wanted;
    out
}

fn resolve_with(fs: &dyn TemplateFs, u: &TemplateUse) -> ResolvedTemplate {
    let mut out = ResolvedTemplate::default();
    let mut vars = Variables::new();
    for (k, v) in &u.variables {
        vars.set(k, v);
    }
    let leaf = Path::new(&u.leaf);
    let chain = match csis_template::load_chain(fs, leaf, &vars) {
        Ok(c) => c,
        Err(problems) => {
            out.problems = problems.iter().map(TemplateProblem::of).collect();
            return out;
        }
    };
    let show = |p: &Path| p.to_string_lossy().replace('\\', "/");
    out.chain = chain.files.iter().map(|p| show(p)).collect();
    out.problems
        .extend(chain.warnings.iter().map(TemplateProblem::of));
    let folded = chain.fold();
    let defaults = match &u.defaults_dir {
        None => None,
        Some(dir) => {
            let file = csis_template::defaults_path(Path::new(dir), &folded.target);
            out.defaults = Some(show(&file));
            match fs.read(&file) {
                Ok(text) => match csis_template::parse(&file, &text, &vars) {
                    Ok(t) => Some(t),
                    Err(problems) => {
                        out.problems
                            .extend(problems.iter().map(TemplateProblem::of));
                        return out;
                    }
                },
                Err(e) => {
                    out.problems.push(TemplateProblem {
                        at: u.leaf.clone(),
                        message: format!(
                            "no OS defaults for target {}: {}: {e} (defaults_dir {dir} is ICT's config/osv, relative to the root)",
                            folded.target,
                            show(&file)
                        ),
                        warning: false,
                    });
                    return out;
                }
            }
        }
    };
    let merged = csis_template::resolve_full(&chain, defaults.as_ref());
    let checks = if defaults.is_some() {
        csis_template::validate_merged(leaf, &merged)
    } else {
        csis_template::validate_user(leaf, &merged)
    };
    out.problems.extend(checks.iter().map(TemplateProblem::of));
    if out.errors().next().is_some() {
        return out;
    }
    out.json = serde_json::from_str(&csis_template::to_json(&merged, false)).ok();
    out.full_yaml = csis_template::to_yaml(&merged, false);
    out.redacted_yaml = csis_template::to_yaml(&merged, true);
    out
}

/// The resolved template of OS builder `os_builder`'s entry for image
/// builder `image_builder` (as the entry names it), if it names one.
pub fn template_of<'db>(
    db: &'db dyn Db,
    tree: Tree,
    os_builder: &str,
    entry: usize,
) -> Option<&'db ResolvedTemplate> {
    use_for(db, tree, os_builder, entry)?;
    let key = TemplateKey::new(db, os_builder.to_string(), entry);
    Some(resolved_template(db, tree, key))
}

/// Every path some chain wants and the tree has no fact for.
pub fn wanted_paths(db: &dyn Db, tree: Tree) -> Vec<String> {
    let mut out: Vec<String> = template_uses(db, tree)
        .iter()
        .filter_map(|u| template_of(db, tree, &u.os_builder, u.entry))
        .flat_map(|r| r.wanted.iter().cloned())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The files of every chain and OS defaults the tree resolved, with the
/// base images (OS builders) whose template reads each.
pub fn template_files(db: &dyn Db, tree: Tree) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for u in template_uses(db, tree) {
        if let Some(r) = template_of(db, tree, &u.os_builder, u.entry) {
            for f in r.chain.iter().chain(r.defaults.iter()) {
                let users = out.entry(f.clone()).or_default();
                if !users.contains(&u.os_builder) {
                    users.push(u.os_builder.clone());
                }
            }
        }
    }
    out
}

/// The `disk.artifacts[].type` values of a resolved template.
pub fn artifact_types(json: &J) -> Vec<String> {
    json.pointer("/disk/artifacts")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("type").and_then(J::as_str))
        .map(str::to_string)
        .collect()
}

/// The template use of OS builder `os_builder` on runtime `runtime` (the
/// runtimes entry whose image builder runs there), resolved.
pub fn template_on_runtime<'db>(
    db: &'db dyn Db,
    tree: Tree,
    os_builder: &str,
    runtime: &str,
) -> Option<(&'db TemplateUse, &'db ResolvedTemplate)> {
    let b = builders(db, tree);
    let u = template_uses(db, tree).iter().find(|u| {
        u.os_builder == os_builder
            && b.resolve(Vct::ImageBuilderModel, &u.image_builder)
                .and_then(|d| d.base.runtime().map(str::to_string))
                .is_some_and(|rt| {
                    b.resolve(Vct::RuntimeBuilderModel, &rt)
                        .is_some_and(|r| r.name() == runtime)
                        || rt == runtime
                })
    })?;
    Some((u, template_of(db, tree, os_builder, u.entry)?))
}
