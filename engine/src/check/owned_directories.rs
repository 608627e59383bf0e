//! The directories builders write (the local runtime's `store`) stay
//! inside the configuration root: a path that resolves, after `..` and
//! symlinks, anywhere else is refused at validate and at every run's head
//! with the place it resolved to, unless the declaration opts out. A store
//! outside the root would take builds, storages and instances out of the
//! tree that records them.

use std::path::{Path, PathBuf};

use csis_model::Diagnostic;

use crate::db::system::System;
use crate::db::{Db, Tree};
use crate::load::builder_labels::label_in_sentence;
use crate::load::builders::builders;

pub fn check(db: &dyn Db, tree: Tree, root: &Path, system: &dyn System) -> Vec<Diagnostic> {
    let b = builders(db, tree);
    let registry = db.registry();
    let root = resolved(system, root);
    let mut out = Vec::new();
    for (vct, decls) in &b.by_class {
        for decl in decls.values() {
            let Some(owned) = registry
                .model(decl.classification, decl.model)
                .and_then(|spec| (spec.builder)(decl).owned_directory())
            else {
                continue;
            };
            let at = resolved(system, &root.join(&owned.path));
            if owned.outside_allowed || at.starts_with(&root) {
                continue;
            }
            let who = format!("{} '{}'", label_in_sentence(*vct), decl.name());
            out.push(
                Diagnostic::error(format!(
                    "{who}: {} '{}' resolves to {}, outside the configuration root {}",
                    owned.key,
                    owned.path,
                    at.display(),
                    root.display()
                ))
                .at_opt(
                    b.origins
                        .get(&(*vct, decl.name().to_string()))
                        .map(|o| o.key(owned.key)),
                )
                .help(format!(
                    "keep the {} under the root (a relative path that stays inside it), or set {}: true on {who} to keep it elsewhere",
                    owned.key, owned.allow_key
                )),
            );
        }
    }
    out
}

/// Where `path` leads, by the one confinement rule's resolution
/// ([`csis_model::confine::resolved`]).
fn resolved(system: &dyn System, path: &Path) -> PathBuf {
    csis_model::confine::resolved(path, &|p: &Path| system.canonicalize(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::MemorySystem;

    #[test]
    fn paths_that_do_not_exist_yet_fold_their_dots() {
        let sys = MemorySystem::default();
        assert_eq!(
            resolved(&sys, Path::new("/t/./store/../../../tmp/x")),
            PathBuf::from("/tmp/x")
        );
        assert_eq!(
            resolved(&sys, Path::new("/t/store")),
            PathBuf::from("/t/store")
        );
    }
}
