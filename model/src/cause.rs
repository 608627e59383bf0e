//! One cause, one error. A refused declaration (a builder whose type names
//! no model, a file that does not parse, a user that cannot be read) makes
//! later checks fail on everything that depends on it: "No runtime builders
//! found", a field naming a builder that is gone, an image with no bake
//! user. Such a diagnostic says which declarations it [`follows`]; the
//! refusal says which it [`refuses`]; [`fold_consequences`] drops each
//! consequence and counts it under the refusal that explains it, so a
//! person fixes the cause first.
//!
//! [`follows`]: crate::Diagnostic::following
//! [`refuses`]: crate::Diagnostic::refusing

use crate::{Diagnostic, ItemKind, Vct};

/// A declaration, or all declarations of a class or kind (`None`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subject {
    /// A builder of a classification; `None` (or `default`): any of them.
    Builder(Vct, Option<String>),
    /// An item of a kind; `None`: any of them.
    Item(ItemKind, Option<String>),
    /// Every declaration cfg/ holds (a cfg/ file that does not parse).
    Declarations,
}

impl Subject {
    /// A builder by the name a reference gives; `default` could have been
    /// any builder of the class.
    pub fn builder(vct: Vct, name: &str) -> Subject {
        let name = crate::naming::safe_name(name);
        Subject::Builder(vct.sanitize(), (name != "default").then_some(name))
    }

    pub fn item(kind: ItemKind, name: &str) -> Subject {
        Subject::Item(kind, Some(crate::naming::safe_name(name)))
    }

    /// Whether refusing `self` explains a diagnostic that follows `other`.
    fn explains(&self, other: &Subject) -> bool {
        let same = |a: &Option<String>, b: &Option<String>| a.is_none() || b.is_none() || a == b;
        match (self, other) {
            (Subject::Declarations, Subject::Builder(..) | Subject::Declarations) => true,
            (Subject::Builder(v, a), Subject::Builder(w, b)) => v == w && same(a, b),
            (Subject::Item(k, a), Subject::Item(l, b)) => k == l && same(a, b),
            _ => false,
        }
    }
}

/// The diagnostics with every error that follows from a refusal dropped
/// and counted on the refusal it follows from (through a chain of such
/// refusals, on the first). Order is kept; warnings always stay.
pub fn fold_consequences(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let refusals: Vec<usize> = (0..diags.len())
        .filter(|&j| diags[j].is_error() && !diags[j].refuses().is_empty())
        .collect();
    let cause_of = |i: usize, d: &Diagnostic| -> Option<usize> {
        if !d.is_error() || d.follows().is_empty() {
            return None;
        }
        refusals.iter().copied().find(|&j| {
            j != i
                && diags[j]
                    .refuses()
                    .iter()
                    .any(|r| d.follows().iter().any(|f| r.explains(f)))
        })
    };
    let direct: Vec<Option<usize>> = diags
        .iter()
        .enumerate()
        .map(|(i, d)| cause_of(i, d))
        .collect();
    // The root of each chain; a cycle (two refusals that follow each
    // other) stops at the diagnostic where it closes, which stays.
    let root = |mut i: usize| -> Option<usize> {
        let start = i;
        let mut steps = 0;
        while let Some(c) = direct[i] {
            if c == start || steps > diags.len() {
                return None;
            }
            i = c;
            steps += 1;
        }
        (i != start).then_some(i)
    };
    let roots: Vec<Option<usize>> = (0..diags.len()).map(root).collect();
    let mut counts = vec![0; diags.len()];
    for r in roots.iter().flatten() {
        counts[*r] += 1;
    }
    diags
        .into_iter()
        .zip(roots)
        .zip(counts)
        .filter_map(|((mut d, root), n)| {
            d.consequences += n;
            root.is_none().then_some(d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime(name: &str) -> Subject {
        Subject::builder(Vct::RuntimeBuilderModel, name)
    }

    #[test]
    fn consequences_fold_under_their_cause() {
        let diags = vec![
            Diagnostic::error("runtime builder 'here': type 'lcoal' is no registered model")
                .refusing(runtime("here")),
            Diagnostic::error("No runtime builders found")
                .following(Subject::Builder(Vct::RuntimeBuilderModel, None)),
            Diagnostic::error("names runtime 'default', which is not declared")
                .following(runtime("default")),
            Diagnostic::error("names image builder 'there', which is not declared")
                .following(Subject::builder(Vct::ImageBuilderModel, "there")),
            Diagnostic::warning("a warning that follows").following(runtime("here")),
        ];
        let folded = fold_consequences(diags);
        let shown: Vec<(&str, usize)> = folded
            .iter()
            .map(|d| (d.message.as_str(), d.consequences))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "runtime builder 'here': type 'lcoal' is no registered model",
                    2
                ),
                ("names image builder 'there', which is not declared", 0),
                ("a warning that follows", 0),
            ]
        );
        assert_eq!(
            folded[0].consequences_note().as_deref(),
            Some("2 more errors follow from this; fix it first")
        );
    }

    #[test]
    fn a_chain_counts_on_its_first_refusal_and_names_must_match() {
        let diags = vec![
            Diagnostic::error("file does not parse")
                .refusing(Subject::Item(ItemKind::IMAGES, None)),
            Diagnostic::error("names image 'top', which is not declared")
                .following(Subject::item(ItemKind::IMAGES, "top"))
                .refusing(Subject::item(ItemKind::INSTANCES, "box")),
            Diagnostic::error("instance box is refused")
                .following(Subject::item(ItemKind::INSTANCES, "box")),
            Diagnostic::error("instance other")
                .following(Subject::item(ItemKind::INSTANCES, "other")),
        ];
        let folded = fold_consequences(diags);
        let shown: Vec<(&str, usize)> = folded
            .iter()
            .map(|d| (d.message.as_str(), d.consequences))
            .collect();
        assert_eq!(shown, [("file does not parse", 2), ("instance other", 0)]);
    }

    #[test]
    fn two_refusals_following_each_other_both_stay() {
        let diags = vec![
            Diagnostic::error("a")
                .refusing(runtime("a"))
                .following(runtime("b")),
            Diagnostic::error("b")
                .refusing(runtime("b"))
                .following(runtime("a")),
        ];
        assert_eq!(fold_consequences(diags).len(), 2);
    }
}
