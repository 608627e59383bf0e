//! Base images (the spec's validate rows "update policies" and "base
//! images"): each OS builder's update policy is coherent; the identity and
//! storage types it declares are provided by a configured group or storage
//! builder; its admin user is set; its admin public keys (its own, else
//! `config.admin_public_keys`) are OpenSSH public-key lines, never private
//! material; and it has a debug path, an admin key or a session mechanism
//! on the runtime, so a machine baked from it can be reached (N9).

use std::collections::BTreeSet;

use csis_model::models::BaseBuilder;
use csis_model::{Diagnostic, Subject, Value, Vct};

use crate::check::context::Checks;
use crate::check::formats::public_key_problem;

impl Checks<'_> {
    /// Every OS builder's update policy, capability types, admin user and
    /// keys, and debug path.
    pub(super) fn base_images(&mut self) {
        let b = self.b;
        let registry = self.db.registry();
        // The identity and storage types the configured builders provide.
        let mut identity_types = BTreeSet::new();
        let mut storage_types = BTreeSet::new();
        for (vct, set) in [
            (Vct::GroupBuilderModel, &mut identity_types),
            (Vct::StorageBuilderModel, &mut storage_types),
        ] {
            for d in b.by_class.get(&vct).into_iter().flat_map(|m| m.values()) {
                if let Some(spec) = registry.model(d.classification, d.model) {
                    let builder = (spec.builder)(d);
                    let t = if vct == Vct::GroupBuilderModel {
                        builder.identity_type()
                    } else {
                        builder.capability_type()
                    };
                    set.extend(t.map(str::to_string));
                }
            }
        }
        let config_keys = b.config_map().get("admin_public_keys").cloned();
        for d in b
            .by_class
            .get(&Vct::OsBuilderModel)
            .into_iter()
            .flat_map(|m| m.values())
        {
            let BaseBuilder::Os(os) = &d.base else {
                continue;
            };
            let n = d.name();
            let here = b
                .origins
                .get(&(Vct::OsBuilderModel, n.to_string()))
                .cloned();
            let at = |k: &str| here.as_ref().map(|o| o.key(k));
            for p in os.effective_update().problems() {
                self.err(format!("base image '{n}': {p}"), at("update"));
            }
            for t in &os.identity_types {
                if !identity_types.contains(t) {
                    // No group builder at all is its own error.
                    self.out.push(
                        Diagnostic::error(format!(
                            "base image '{n}' declares identity type '{t}' but no identity plugin of that type is configured (known: {:?})",
                            identity_types.iter().collect::<Vec<_>>()
                        ))
                        .at_opt(at("identity_types"))
                        .help(unprovided_type_help(t, "group", "identity_types"))
                        .following(Subject::Builder(Vct::GroupBuilderModel.sanitize(), None)),
                    );
                }
            }
            for t in &os.storage_types {
                if !storage_types.contains(t) {
                    self.out.push(
                        Diagnostic::error(format!(
                            "base image '{n}' declares storage type '{t}' but no storage plugin of that type is configured (known: {:?})",
                            storage_types.iter().collect::<Vec<_>>()
                        ))
                        .at_opt(at("storage_types"))
                        .help(unprovided_type_help(t, "storage", "storage_types")),
                    );
                }
            }
            if os.admin_user.trim().is_empty() {
                self.err(
                    format!("base image '{n}': admin_user may not be empty"),
                    at("admin_user"),
                );
            }
            let keys: Vec<String> = match (&os.admin_public_keys, &config_keys) {
                (Some(k), _) => k.clone(),
                (None, Some(Value::Seq(items))) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                (None, Some(Value::Scalar { text, .. })) => vec![text.clone()],
                _ => Vec::new(),
            };
            for k in &keys {
                if csis_secrets::is_marker(k) {
                    continue; // opened where it is used; a marker is never private material
                }
                if let Some(why) = public_key_problem(k) {
                    self.err(
                        format!("base image '{n}': admin public key rejected: {why}"),
                        at("admin_public_keys"),
                    );
                }
            }
            let session = os.runtimes.iter().any(|e| {
                b.resolve(Vct::ImageBuilderModel, &e.image_builder)
                    .and_then(|ib| ib.base.runtime())
                    .and_then(|rt| b.resolve(Vct::RuntimeBuilderModel, rt))
                    .and_then(|rd| {
                        registry
                            .model(rd.classification, rd.model)
                            .map(|s| (s.builder)(rd))
                    })
                    .is_some_and(|builder| builder.session_mechanism().is_some())
            });
            if keys.is_empty() && !session {
                // A runtime (or image builder) that was refused has no
                // session mechanism to ask: that refusal is the cause.
                let mut d = Diagnostic::error(format!(
                    "base image '{n}' has NO debug path: no admin public key (config.admin_public_keys / admin_public_keys) and no session mechanism on the runtime (N9 dead end)"
                ))
                .at_opt(here.clone())
                .help(
                    "give it an admin public key (admin_public_keys: on the OS builder, or config.admin_public_keys in cfg/), or bake it on a runtime with a session mechanism",
                );
                for e in &os.runtimes {
                    d = d.following(Subject::builder(Vct::ImageBuilderModel, &e.image_builder));
                    if let Some(rt) = b
                        .resolve(Vct::ImageBuilderModel, &e.image_builder)
                        .and_then(|ib| ib.base.runtime())
                    {
                        d = d.following(Subject::builder(Vct::RuntimeBuilderModel, rt));
                    }
                }
                self.out.push(d);
            }
        }
    }
}

/// The two ways out of a capability type no builder provides.
fn unprovided_type_help(t: &str, class: &str, key: &str) -> String {
    format!(
        "declare a {class} builder that provides '{t}' under {class}_builders: in cfg/, or leave '{t}' out of {key}"
    )
}
