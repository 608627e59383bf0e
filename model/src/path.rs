//! Where a value sits inside one document: `images[0].runtimes[1].name`.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg {
    Key(std::sync::Arc<str>),
    Index(usize),
}

/// A path from a document's root to one node. Shared: every item's
/// origin is kept in its entry and again in its structured item, and a
/// clone of a path is a count, not a copy (issue 40).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocPath(pub std::sync::Arc<[Seg]>);

impl DocPath {
    pub fn root() -> DocPath {
        DocPath(std::sync::Arc::new([]))
    }

    pub fn key(&self, k: &str) -> DocPath {
        self.joined([Seg::Key(k.into())])
    }

    pub fn index(&self, i: usize) -> DocPath {
        self.joined([Seg::Index(i)])
    }

    /// This path followed by `more`'s segments.
    pub fn joined(&self, more: impl IntoIterator<Item = Seg>) -> DocPath {
        DocPath(self.0.iter().cloned().chain(more).collect())
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

/// One step of a path being walked, borrowed from the value walked: a
/// walk over every node of a tree keeps a stack of these and makes the
/// owned [`DocPath`] only for what it reports (a key copied per node was
/// a twentieth of a cold plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

impl Step<'_> {
    /// Whether this step is `seg`.
    pub fn is(self, seg: &Seg) -> bool {
        match (self, seg) {
            (Step::Key(a), Seg::Key(b)) => *a == **b,
            (Step::Index(a), Seg::Index(b)) => a == *b,
            _ => false,
        }
    }
}

impl DocPath {
    /// This path extended by walked `steps`.
    pub fn with_steps(&self, steps: &[Step<'_>]) -> DocPath {
        self.joined(steps.iter().map(|s| match s {
            Step::Key(k) => Seg::Key((*k).into()),
            Step::Index(i) => Seg::Index(*i),
        }))
    }

    /// Whether walked `steps` lead to this path.
    pub fn is_at(&self, steps: &[Step<'_>]) -> bool {
        self.0.len() == steps.len() && steps.iter().zip(self.0.iter()).all(|(s, seg)| s.is(seg))
    }
}

impl fmt::Display for DocPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("<document>");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => write!(f, "{k}")?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_like_the_spec_writes_places() {
        let p = DocPath::root().key("users").index(2).key("name");
        assert_eq!(p.to_string(), "users[2].name");
    }

    #[test]
    fn walked_steps_make_the_same_path() {
        let steps = [Step::Key("users"), Step::Index(2), Step::Key("name")];
        let p = DocPath::root().with_steps(&steps);
        assert_eq!(p, DocPath::root().key("users").index(2).key("name"));
        assert!(p.is_at(&steps));
        assert!(!p.is_at(&steps[..2]));
        assert!(!DocPath::root().key("users").is_at(&[Step::Index(0)]));
    }
}
