//! Diagnostics as plain data.
//!
//! A diagnostic names the file and the path of the node it is about; the
//! line, column and snippet are attached late, at the edge, from the file's
//! position map. That keeps positions out of every value a query compares.

use std::fmt;
use std::sync::Arc;

use crate::cause::Subject;
use crate::path::DocPath;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

/// Which part of a node a diagnostic points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Anchor {
    /// The node's value.
    Value,
    /// The mapping key that holds the node (an unknown key, say).
    Key,
}

/// Text with every control character escaped as Rust writes it (`\n`,
/// `\t`, `\u{1b}`): a file name holding a newline or a terminal escape
/// must not start a line of its own or drive the terminal when a
/// diagnostic naming it is printed.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A place in the configuration tree: a file (relative to the root) and a
/// node inside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    pub file: Arc<str>,
    pub path: DocPath,
}

impl Origin {
    pub fn new(file: impl Into<Arc<str>>, path: DocPath) -> Origin {
        Origin {
            file: file.into(),
            path,
        }
    }

    pub fn key(&self, k: &str) -> Origin {
        Origin {
            file: self.file.clone(),
            path: self.path.key(k),
        }
    }

    pub fn index(&self, i: usize) -> Origin {
        Origin {
            file: self.file.clone(),
            path: self.path.index(i),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.path)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The message, in the spec's wording.
    pub message: String,
    pub origin: Option<Origin>,
    pub anchor: Anchor,
    /// What to write instead, when there is something to say.
    pub help: Option<String>,
    /// What it refuses and what it follows from ([`crate::cause`]);
    /// boxed, as most diagnostics have neither.
    pub links: Option<Box<Links>>,
    /// How many errors that follow from this one were folded under it.
    pub consequences: usize,
}

/// The declarations a diagnostic refuses (what fails with them is a
/// consequence, folded under it) and those whose refusal would explain it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Links {
    pub refuses: Vec<Subject>,
    pub follows: Vec<Subject>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            origin: None,
            anchor: Anchor::Value,
            help: None,
            links: None,
            consequences: 0,
        }
    }

    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    pub fn at(mut self, origin: Origin) -> Diagnostic {
        self.origin = Some(origin);
        self
    }

    pub fn at_opt(mut self, origin: Option<Origin>) -> Diagnostic {
        self.origin = origin;
        self
    }

    pub fn on_key(mut self) -> Diagnostic {
        self.anchor = Anchor::Key;
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// This diagnostic refuses `subject`: errors that only follow from it
    /// are folded under it.
    pub fn refusing(mut self, subject: Subject) -> Diagnostic {
        self.links.get_or_insert_default().refuses.push(subject);
        self
    }

    /// This diagnostic is a consequence when `subject` was refused.
    pub fn following(mut self, subject: Subject) -> Diagnostic {
        self.links.get_or_insert_default().follows.push(subject);
        self
    }

    pub fn refuses(&self) -> &[Subject] {
        self.links.as_ref().map_or(&[], |l| &l.refuses)
    }

    pub fn follows(&self) -> &[Subject] {
        self.links.as_ref().map_or(&[], |l| &l.follows)
    }

    /// The line a person reads under a diagnostic with folded consequences.
    pub fn consequences_note(&self) -> Option<String> {
        match self.consequences {
            0 => None,
            1 => Some("1 more error follows from this; fix it first".to_string()),
            n => Some(format!("{n} more errors follow from this; fix it first")),
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A list of diagnostics gathered by one stage.
pub type Diagnostics = Vec<Diagnostic>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_nothing_else() {
        assert_eq!(escape_controls("images/a\nb.yml"), "images/a\\nb.yml");
        assert_eq!(escape_controls("x\u{1b}[31m\ty"), "x\\u{1b}[31m\\ty");
        assert_eq!(escape_controls("été/\"q\\"), "été/\"q\\");
    }
}
