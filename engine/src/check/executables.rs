//! The executables check at validate: every declared binary is an absolute
//! path or a name on PATH, its version (read with `--version`) meets the
//! declared PEP 440 specifier, and every builder's `executable` names an
//! entry. It runs processes, so it is no query: validate and every run call
//! it afresh.

use std::path::{Path, PathBuf};

use csis_model::Diagnostic;

use crate::db::system::{Process, System};
use crate::db::{Db, Tree};
use crate::load::builders::builders;

/// A version as numbers (`1.14.2` is `[1, 14, 2]`).
fn parse_version(s: &str) -> Option<Vec<u64>> {
    s.trim()
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse().ok())
        .collect()
}

fn cmp(a: &[u64], b: &[u64]) -> std::cmp::Ordering {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            a.get(i)
                .copied()
                .unwrap_or(0)
                .cmp(&b.get(i).copied().unwrap_or(0))
        })
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

/// Whether `version` meets a PEP 440 specifier set (`>=1.14, <1.15`,
/// `==1.14.*`, `~=1.4.2`, `!=1.5`). `None` when the specifier does not
/// parse.
pub fn meets(version: &str, spec: &str) -> Option<bool> {
    let v = parse_version(version)?;
    for clause in spec.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let (op, rest) = ["~=", "===", "==", "!=", ">=", "<=", ">", "<"]
            .iter()
            .find_map(|op| clause.strip_prefix(op).map(|r| (*op, r.trim())))?;
        let ok = if let Some(prefix) = rest.strip_suffix(".*") {
            let p = parse_version(prefix)?;
            let matches = v.len() >= p.len() && v[..p.len()] == p[..];
            match op {
                "==" => matches,
                "!=" => !matches,
                _ => return None,
            }
        } else {
            let r = parse_version(rest)?;
            let o = cmp(&v, &r);
            match op {
                "==" | "===" => o.is_eq(),
                "!=" => o.is_ne(),
                ">=" => o.is_ge(),
                "<=" => o.is_le(),
                ">" => o.is_gt(),
                "<" => o.is_lt(),
                "~=" => {
                    if r.len() < 2 {
                        return None;
                    }
                    o.is_ge() && v.len() >= r.len() - 1 && v[..r.len() - 1] == r[..r.len() - 1]
                }
                _ => return None,
            }
        };
        if !ok {
            return Some(false);
        }
    }
    Some(true)
}

/// The first dotted number in a tool's version line.
fn version_in(line: &str) -> Option<String> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|w| w.trim_matches('.'))
        .find(|w| w.contains('.') && parse_version(w).is_some())
        .map(str::to_string)
}

/// Where a binary is: itself when absolute (and present), else the first
/// PATH entry holding it.
fn locate(system: &dyn System, binary: &str, path_var: Option<&str>) -> Option<PathBuf> {
    let p = Path::new(binary);
    if p.is_absolute() || binary.contains('/') {
        return system.read_bytes(p).ok().flatten().map(|_| p.to_path_buf());
    }
    path_var?
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(binary))
        .find(|c| system.read_bytes(c).ok().flatten().is_some())
}

/// Infos (what passed) and refusals. `root` is where `--version` runs.
pub fn check(
    db: &dyn Db,
    tree: Tree,
    root: &Path,
    system: &dyn System,
) -> (Vec<String>, Vec<Diagnostic>) {
    let b = builders(db, tree);
    let path_var = crate::db::reads::env_var(db, tree, "PATH");
    let mut infos = Vec::new();
    let mut errors = Vec::new();
    for (name, exe) in &b.executables {
        if csis_model::naming::reserved_word(name).is_some() {
            continue; // refused at load already
        }
        let at = b.executable_origins.get(name).cloned();
        let Some(found) = locate(system, &exe.binary, path_var.map(String::as_str)) else {
            errors.push(
                Diagnostic::error(format!(
                    "{name}: binary '{}' not found (declared in cfg/executables.yml; an absolute path, or a name on PATH)",
                    exe.binary
                ))
                .at_opt(at),
            );
            continue;
        };
        let Some(spec) = exe.version.as_deref() else {
            continue;
        };
        let out = system.run(&Process {
            program: found.clone(),
            args: vec!["--version".into()],
            cwd: root.to_path_buf(),
            env: Vec::new(),
        });
        let line = match out {
            Ok(o) => o
                .stdout
                .lines()
                .chain(o.stderr.lines())
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default()
                .to_string(),
            Err(e) => {
                errors.push(
                    Diagnostic::error(format!("{name}: could not read its version ({e})"))
                        .at_opt(at),
                );
                continue;
            }
        };
        let Some(version) = version_in(&line) else {
            errors.push(
                Diagnostic::error(format!(
                    "{name}: GenericVersionChecker could not parse a version from '{line}'"
                ))
                .at_opt(at),
            );
            continue;
        };
        match meets(&version, spec) {
            Some(true) => infos.push(format!("Executables: {name} {version} ok ({spec})")),
            Some(false) => errors.push(
                Diagnostic::error(format!(
                    "{name} {version} does not meet its requirement {spec} (cfg/executables.yml)"
                ))
                .at_opt(at),
            ),
            None => errors.push(
                Diagnostic::error(format!(
                    "{name}: the version requirement '{spec}' is not a PEP 440 specifier"
                ))
                .at_opt(at),
            ),
        }
    }
    for (vct, by_name) in &b.by_class {
        for (bname, d) in by_name {
            if let Some(e) = &d.base.common().executable
                && !b.executables.contains_key(e)
            {
                errors.push(
                    Diagnostic::error(format!(
                        "Executable {e} specified for provider {bname} not found in executables list."
                    ))
                    .at_opt(b.origins.get(&(*vct, bname.clone())).map(|o| o.key("executable"))),
                );
            }
        }
    }
    (infos, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pep440_specifiers() {
        assert_eq!(meets("1.14.2", ">=1.14, <1.15"), Some(true));
        assert_eq!(meets("1.15.0", ">=1.14, <1.15"), Some(false));
        assert_eq!(meets("1.14.9", "==1.14.*"), Some(true));
        assert_eq!(meets("1.4.5", "~=1.4.2"), Some(true));
        assert_eq!(meets("1.5.0", "~=1.4.2"), Some(false));
        assert_eq!(meets("2.0", "!=2.0"), Some(false));
        assert_eq!(meets("2.0", "about 2"), None);
        assert_eq!(
            version_in("Terraform v1.9.8 on linux_amd64").as_deref(),
            Some("1.9.8")
        );
        assert_eq!(
            version_in("GNU bash, version 5.2.15(1)-release").as_deref(),
            Some("5.2.15")
        );
        assert_eq!(version_in("no numbers here"), None);
    }
}
