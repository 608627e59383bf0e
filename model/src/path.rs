//! Where a value sits inside one document: `images[0].runtimes[1].name`.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A path from a document's root to one node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocPath(pub Vec<Seg>);

impl DocPath {
    pub fn root() -> DocPath {
        DocPath(Vec::new())
    }

    pub fn key(&self, k: &str) -> DocPath {
        let mut p = self.clone();
        p.0.push(Seg::Key(k.to_string()));
        p
    }

    pub fn index(&self, i: usize) -> DocPath {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
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
}
