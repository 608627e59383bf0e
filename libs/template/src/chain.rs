//! The `extends` chain: leaf to root, with the reference's guards, then
//! folded root to leaf.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use csis_model::DocPath;
use csis_yaml::Positions;

use crate::merge::merge;
use crate::read::parse_located;
use crate::types::Template;
use crate::{Problem, Severity, TemplateFs, Variables};

/// Chains deeper than this warn.
pub const RECOMMENDED_MAX_DEPTH: usize = 4;
/// A hard stop, so that no chain is walked without end: a chain of more
/// templates than this (leaf included) is refused.
pub const MAX_DEPTH: usize = 64;

/// The extends chain of a leaf, root first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    /// root..leaf, as given/joined (lexically normalized), not canonical.
    pub files: Vec<PathBuf>,
    pub layers: Vec<Template>,
    pub warnings: Vec<Problem>,
}

impl Chain {
    /// fold(MergeConfigurations, Template::default(), [root..leaf]).
    pub fn fold(&self) -> Template {
        let mut acc = Template::default();
        for layer in &self.layers {
            acc = merge(layer, &acc);
        }
        acc.extends = None;
        acc
    }

    /// `Extends chain: root.yml -> child.yml -> leaf.yml` (file names).
    pub fn describe(&self) -> String {
        let names: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                f.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| f.display().to_string())
            })
            .collect();
        format!("Extends chain: {}", names.join(" -> "))
    }

    pub fn leaf(&self) -> Option<&Template> {
        self.layers.last()
    }
}

/// `extends` joined to the child's directory, `..` and `.` resolved
/// lexically; `None` when it leaves that directory (or is absolute).
fn join_contained(dir: &Path, ext: &str) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in Path::new(ext).components() {
        match c {
            Component::Normal(n) => parts.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if parts.is_empty() {
        return None;
    }
    let mut out = dir.to_path_buf();
    for p in parts {
        out.push(p);
    }
    Some(out)
}

fn dir_of(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A template that cannot be read, at 1:1 of that file.
fn unreadable(file: &Path, e: &std::io::Error) -> Problem {
    Problem::error(file, 1, 1, format!("cannot read template: {e}"))
}

fn at(file: &Path, pos: &Positions, path: &DocPath, message: String) -> Problem {
    let (line, col) = pos
        .nearest(path, false)
        .map(|s| (s.line, s.col))
        .unwrap_or((0, 0));
    Problem::error(file, line, col, message)
}

/// The extends chain of `leaf`, root first, every file read through `fs`.
pub fn load_chain(
    fs: &dyn TemplateFs,
    leaf: &Path,
    vars: &Variables,
) -> Result<Chain, Vec<Problem>> {
    if fs.is_symlink(leaf) {
        return Err(vec![Problem::error(
            leaf,
            0,
            0,
            format!(
                "template is a symbolic link: {} (name the file it points to)",
                leaf.display()
            ),
        )]);
    }
    let canon = fs
        .canonicalize(leaf)
        .map_err(|e| vec![unreadable(leaf, &e)])?;
    // Leaf first while walking.
    let mut files = vec![leaf.to_path_buf()];
    let mut seen: HashMap<PathBuf, usize> = HashMap::from([(canon, 0)]);
    let mut layers = Vec::new();
    let mut positions: Vec<Positions> = Vec::new();
    let mut current = leaf.to_path_buf();
    loop {
        let text = fs
            .read(&current)
            .map_err(|e| vec![unreadable(&current, &e)])?;
        let (t, pos) = parse_located(&current, &text, vars)?;
        let level = layers.len();
        if let Some(child) = layers.last() {
            let child: &Template = child;
            if child.target != t.target {
                let child_file = &files[level - 1];
                return Err(vec![at(
                    child_file,
                    &positions[level - 1],
                    &DocPath::root().key("extends"),
                    format!(
                        "extends target mismatch at level {level}: child targets {} but parent targets {}",
                        child.target, t.target
                    ),
                )]);
            }
        }
        let ext = t.extends.clone();
        layers.push(t);
        positions.push(pos);
        let Some(ext) = ext else { break };
        let pos = &positions[level];
        let ext_path = DocPath::root().key("extends");
        let here = |m: String| vec![at(&current, pos, &ext_path, m)];
        if !(ext.ends_with(".yml") || ext.ends_with(".yaml")) {
            return Err(here(format!(
                "extends must name a .yml or .yaml file: {ext}"
            )));
        }
        let dir = dir_of(&current);
        let escape = || format!("extends path escapes child template's directory: {ext}");
        // Joined to the directory as the child was named (`a.yml`'s parent
        // `b.yml` stays `b.yml`, not `./b.yml`).
        let named_dir = current.parent().unwrap_or(Path::new(""));
        let Some(parent) = join_contained(named_dir, &ext) else {
            return Err(here(escape()));
        };
        if fs.is_symlink(&parent) {
            return Err(here(format!(
                "extends parent is a symbolic link: {}",
                parent.display()
            )));
        }
        let parent_canon = fs.canonicalize(&parent).map_err(|e| {
            here(format!(
                "cannot read extends parent {}: {e}",
                parent.display()
            ))
        })?;
        let dir_canon = fs.canonicalize(&dir).map_err(|e| {
            here(format!(
                "cannot resolve the template's directory {}: {e}",
                dir.display()
            ))
        })?;
        if !parent_canon.starts_with(&dir_canon) {
            return Err(here(escape()));
        }
        // Found on canonical paths (a directory symlink cannot alias two
        // names of one file), shown as the chain names them: `A -> B -> A`,
        // the repeated template by the name it first had.
        if let Some(&first) = seen.get(&parent_canon) {
            let cycle: Vec<String> = files[first..]
                .iter()
                .chain([&files[first]])
                .map(|p| p.display().to_string())
                .collect();
            return Err(here(format!(
                "circular extends detected: {}",
                cycle.join(" -> ")
            )));
        }
        if files.len() >= MAX_DEPTH {
            return Err(here(format!(
                "extends chain deeper than {MAX_DEPTH} levels"
            )));
        }
        seen.insert(parent_canon, files.len());
        files.push(parent.clone());
        current = parent;
    }
    let mut warnings = Vec::new();
    if layers.len() > RECOMMENDED_MAX_DEPTH {
        // On the `extends` that brought in the first template past the
        // recommendation (files are still leaf first here).
        let level = RECOMMENDED_MAX_DEPTH - 1;
        let mut w = at(
            &files[level],
            &positions[level],
            &DocPath::root().key("extends"),
            format!(
                "extends chain depth {} exceeds recommended maximum of {RECOMMENDED_MAX_DEPTH}",
                layers.len()
            ),
        );
        w.severity = Severity::Warning;
        warnings.push(w);
    }
    files.reverse();
    layers.reverse();
    Ok(Chain {
        files,
        layers,
        warnings,
    })
}
