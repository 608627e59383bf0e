//! The bake user: who a bake logs in as on the vendor image. The order,
//! first answer wins: the image entry's `ssh_username` (images only), the
//! OS builder entry's `ssh_username`, the OS builder's `config_username`,
//! the runtime's `default_config_username`, the runtime plugin's default
//! for the OS family. Validate refuses an entry nothing answers for, and on
//! a runtime with one bake user per chain, an image whose user is not its
//! chain root's.

use csis_model::models::{BaseBuilder, Item};
use csis_model::{Diagnostic, Subject, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::ItemId;
use crate::load::items_model::structured_item;

/// A declared username; `default` and empty mean "not set".
fn set(name: &str) -> Option<String> {
    let n = name.trim();
    (!n.is_empty() && n != "default").then(|| n.to_string())
}

/// The order's answers from the declarations.
struct Answers<'a> {
    b: &'a crate::load::builders::Builders,
    registry: &'a crate::registry::Registry,
}

impl Answers<'_> {
    fn runtime_of_ib(&self, ib: &str) -> Option<String> {
        self.b
            .resolve(Vct::ImageBuilderModel, ib)
            .and_then(|d| d.base.runtime().map(str::to_string))
    }

    /// The runtime's steps of the order, and whether it keeps one user per
    /// chain.
    fn runtime(&self, rt: &str, family: &str) -> (Option<String>, bool) {
        let Some(d) = self.b.resolve(Vct::RuntimeBuilderModel, rt) else {
            return (None, false);
        };
        let from_config = d
            .base
            .runtime_model()
            .and_then(|m| m.default_config_username.as_deref())
            .and_then(set);
        let builder = self
            .registry
            .model(d.classification, d.model)
            .map(|spec| (spec.builder)(d));
        let default = builder.as_ref().and_then(|bl| bl.default_bake_user(family));
        let one = builder
            .as_ref()
            .is_some_and(|bl| bl.one_bake_user_per_chain());
        (from_config.or(default), one)
    }

    /// The OS builder's answer on one image builder (steps 2 to 5).
    fn os(&self, os: &str, ib: &str) -> Option<String> {
        let b = self.b;
        let d = b.resolve(Vct::OsBuilderModel, os)?;
        let BaseBuilder::Os(m) = &d.base else {
            return None;
        };
        let entry = m.runtimes.iter().find(|e| {
            b.resolve(Vct::ImageBuilderModel, &e.image_builder)
                .map(|x| x.name())
                == b.resolve(Vct::ImageBuilderModel, ib).map(|x| x.name())
        });
        let rt = self.runtime_of_ib(ib)?;
        entry
            .and_then(|e| set(&e.ssh_username))
            .or_else(|| m.config_username.as_deref().and_then(set))
            .or_else(|| self.runtime(&rt, &m.family).0)
    }
}

const HELP: &str = "set ssh_username on the entry, config_username on the OS builder, or default_config_username on the runtime";

/// The OS builders' entries nothing answers for (each image's own bake
/// user is `image_bake_users`, a per-item check).
pub(crate) fn os_builder_bake_users(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let b = builders(db, tree);
    let answers = Answers {
        b,
        registry: db.registry(),
    };
    let mut out = Vec::new();
    for d in b
        .by_class
        .get(&Vct::OsBuilderModel)
        .into_iter()
        .flat_map(|m| m.values())
    {
        let BaseBuilder::Os(m) = &d.base else {
            continue;
        };
        for (i, e) in m.runtimes.iter().enumerate() {
            // An image builder that resolves to nothing is a foreign-key error.
            let Some(rt) = answers.runtime_of_ib(&e.image_builder) else {
                continue;
            };
            if answers.os(d.name(), &e.image_builder).is_none() {
                out.push(
                    Diagnostic::error(format!(
                        "OS builder '{}' runtimes[{i}] (image builder '{}', runtime '{rt}'): no bake user -- {HELP}",
                        d.name(),
                        e.image_builder
                    ))
                    .at_opt(b.origins.get(&(Vct::OsBuilderModel, d.name().to_string())).map(|o| o.key("runtimes").index(i)))
                    .following(Subject::builder(Vct::RuntimeBuilderModel, &rt)),
                );
            }
        }
    }
    out
}

pub(crate) fn image_bake_users<'db>(
    db: &'db dyn Db,
    tree: Tree,
    id: ItemId<'db>,
) -> Vec<Diagnostic> {
    let name = id.name(db);
    let b = builders(db, tree);
    let answers = Answers {
        b,
        registry: db.registry(),
    };
    let mut out = Vec::new();
    let si = structured_item(db, id);
    let Some(Item::Image(img)) = si.item.as_deref() else {
        return out;
    };
    let Some((root, _)) = crate::plan::fingerprint::chain_root(db, tree, name) else {
        return out;
    };
    let family = match b.resolve(Vct::OsBuilderModel, &root).map(|d| &d.base) {
        Some(BaseBuilder::Os(m)) => m.family.clone(),
        _ => String::new(),
    };
    for (i, e) in img.runtimes.iter().enumerate() {
        let at = si.origin.as_ref().map(|o| o.key("runtimes").index(i));
        let Some(rt) = answers.runtime_of_ib(&e.image_builder) else {
            continue;
        };
        let root_user = answers.os(&root, &e.image_builder);
        let own = set(&e.ssh_username);
        match own.clone().or_else(|| root_user.clone()) {
            None => out.push(
                Diagnostic::error(format!(
                    "image '{name}' runtimes[{i}] (image builder '{}', runtime '{rt}'): no bake user -- {HELP}",
                    e.image_builder
                ))
                .at_opt(at)
                .following(Subject::builder(Vct::RuntimeBuilderModel, &rt)),
            ),
            Some(user) => {
                let one = answers.runtime(&rt, &family).1;
                if let (true, Some(own), Some(root_user)) = (one, own, root_user)
                    && own != root_user
                {
                    out.push(
                        Diagnostic::error(format!(
                            "image '{name}' bakes as '{user}' on runtime '{rt}', which takes one bake user per chain, but its chain root '{root}' bakes as '{root_user}' -- drop the image's ssh_username or make it '{root_user}'"
                        ))
                        .at_opt(at.map(|o| o.key("ssh_username"))),
                    );
                }
            }
        }
    }
    out
}
