//! `CHANGE-ME`, the mark `csis init` leaves on the values a cloud tree
//! needs from its user (a profile, a network, a state bucket): a warning
//! at each one still in cfg/, so a tree that validates and dry-runs is
//! not taken for one ready to apply.

use csis_model::{Diagnostic, DocPath, Value};

use crate::db::{Db, Tree};
use crate::load::cfg::cfg_document;

/// The mark `csis init` writes where a value is the user's to give.
pub const UNFILLED: &str = "CHANGE-ME";

#[salsa::tracked(returns(ref))]
pub fn unfilled_values(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let doc = cfg_document(db, tree);
    let mut out = Vec::new();
    let mut found = |path: DocPath, text: &str| {
        out.push(
            Diagnostic::warning(format!(
                "{path} is still '{text}': a value `csis init` left for you to fill in"
            ))
            .at_opt(doc.origin(&path))
            .help("write the real value before a run with --no-dry-run (docs/getting-started.md)"),
        );
    };
    for (key, value) in doc.map().into_iter().flatten() {
        walk(value, DocPath::root().key(key), &mut found);
    }
    out
}

fn walk(value: &Value, path: DocPath, found: &mut impl FnMut(DocPath, &str)) {
    match value {
        Value::Scalar { text, .. } if text.contains(UNFILLED) => found(path, text),
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, path.index(i), found);
            }
        }
        Value::Map(map) => {
            for (key, item) in map.iter() {
                walk(item, path.key(key), found);
            }
        }
        _ => {}
    }
}
