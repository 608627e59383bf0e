//! ICT image templates (the template format of image-composer-tool):
//! reading a template file into typed sections, the `extends` chain, the
//! merge with OS defaults, validation and resolve. ICT does the build.
//!
//! Pure: no salsa, no engine. Files are read through [`TemplateFs`], so
//! the engine can make reading a tracked dependency. docs/templates.md is
//! the user's page.

use std::fmt;
use std::path::{Path, PathBuf};

mod chain;
mod merge;
mod out;
mod read;
pub mod types;
mod validate;
mod vars;

#[cfg(test)]
mod tests;

pub use chain::{Chain, MAX_DEPTH, RECOMMENDED_MAX_DEPTH, load_chain};
pub use merge::merge;
pub use out::{REDACTED, redact, to_json, to_yaml};
pub use types::*;
pub use validate::{
    validate_merged, validate_merged_located, validate_user, validate_user_located,
};
pub use vars::Variables;

/// Where templates are read from. The engine implements it over its salsa
/// inputs (so reading is a tracked dependency); `OsFs` over std::fs.
pub trait TemplateFs {
    fn read(&self, path: &Path) -> std::io::Result<String>;
    /// Symlink-resolved absolute path (std::fs::canonicalize semantics).
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf>;
    /// Is `path` itself a symbolic link (symlink_metadata)?
    fn is_symlink(&self, path: &Path) -> bool;
}

/// [`TemplateFs`] over std::fs.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFs;

impl TemplateFs for OsFs {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        let bytes = std::fs::read(path)?;
        String::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn is_symlink(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    Error,
    Warning,
}

/// A refusal or warning with where it is: `file:line:col: message`
/// (line/col 1-based; 0 when unknown, then printed as `file: message`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub line: usize,
    pub col: usize,
    pub message: String,
    pub severity: Severity,
}

impl Problem {
    pub fn error(file: &Path, line: usize, col: usize, message: impl Into<String>) -> Problem {
        Problem {
            file: file.to_path_buf(),
            line,
            col,
            message: message.into(),
            severity: Severity::Error,
        }
    }

    pub fn warning(file: &Path, line: usize, col: usize, message: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(file, line, col, message)
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let warn = if self.severity == Severity::Warning {
            "warning: "
        } else {
            ""
        };
        if self.line == 0 {
            write!(f, "{}: {warn}{}", self.file.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {warn}{}",
                self.file.display(),
                self.line,
                self.col,
                self.message
            )
        }
    }
}

/// One template file, typed: every section and field of the reference,
/// unknown keys and wrong types refused with their positions.
pub fn parse(file: &Path, text: &str, vars: &Variables) -> Result<Template, Vec<Problem>> {
    read::parse_located(file, text, vars).map(|(t, _)| t)
}

/// `<dir>/<os>/<dist>/imageconfigs/defaultconfigs/default-<imageType>-<arch>.yml`
/// (imageType `img` reads `default-initrd-<arch>.yml`). `dir` is ICT's
/// `config/osv`.
pub fn defaults_path(dir: &Path, target: &Target) -> PathBuf {
    let kind = if target.image_type == "img" {
        "initrd"
    } else {
        target.image_type.as_str()
    };
    dir.join(&target.os)
        .join(&target.dist)
        .join("imageconfigs")
        .join("defaultconfigs")
        .join(format!("default-{kind}-{}.yml", target.arch))
}

/// The full build-time view: the OS defaults (when given) under the
/// folded chain. Overlay mode (`baseline.mode: overlay`): the OS defaults
/// do not apply.
pub fn resolve_full(chain: &Chain, defaults: Option<&Template>) -> Template {
    let folded = chain.fold();
    match defaults {
        Some(d) if !folded.is_overlay() => merge(&folded, d),
        _ => folded,
    }
}
