//! Image templates: a chain's refusal (a cycle, an escape, a target
//! mismatch, a bad field, missing OS defaults) refuses the OS builder's
//! runtimes entry; the chain-depth warning warns. Each names the template
//! file's `file:line:col` and points at the entry's `template:` key.

use csis_model::{Diagnostic, Subject, Vct};

use crate::db::{Db, Tree};
use crate::load::templates::{template_of, template_uses};

pub fn template_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for u in template_uses(db, tree) {
        let Some(r) = template_of(db, tree, &u.os_builder, u.entry) else {
            continue;
        };
        let at = u.origin.as_ref().map(|o| o.key("template"));
        for p in &r.problems {
            let message = format!(
                "OS builder {} runtimes[{}] template {}: {}",
                u.os_builder,
                u.entry,
                u.leaf,
                p.describe()
            );
            let d = if p.warning {
                Diagnostic::warning(message)
            } else {
                Diagnostic::error(message)
                    .refusing(Subject::builder(Vct::OsBuilderModel, &u.os_builder))
            };
            out.push(d.at_opt(at.clone()));
        }
    }
    out
}
