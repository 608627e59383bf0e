//! The checks at validate and at the head of every run that need no
//! provider's live answer: foreign keys, policies, test specs, update
//! policies, image groups, canonical hostnames, base images and
//! capabilities, storages, the alias pool, managed groups, user-data names, the immutability of launched
//! instances, label keys, availability zones, identity items, bake users. Each refusal is a diagnostic with the spec's
//! wording, placed where the offending value is.

use std::collections::{BTreeMap, BTreeSet};

use csis_model::models::{BaseBuilder, Item};
use csis_model::{Diagnostic, ItemKind, Map, Origin, Value, Vct};

use crate::check::item_checks::{ItemCheck, each_item};
use crate::db::{Db, Tree};
use crate::load::builders::{Builders, builders};
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::{StructuredItem, structured_item};

/// Every validate-time refusal, in a stable order.
///
/// The per-item checks are queries of their own so that an edit to one
/// item re-runs that item's checks only; this query concatenates.
#[salsa::tracked(returns(ref))]
pub fn validation_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let index = item_index(db, tree);
    let mut out = each_item(
        db,
        tree,
        &[ItemKind::IMAGES, ItemKind::INSTANCES, ItemKind::STORAGES],
        ItemCheck::Own,
    );
    out.extend(builder_diagnostics(db, tree).iter().cloned());
    out.extend(each_item(
        db,
        tree,
        &[ItemKind::INSTANCES],
        ItemCheck::Attach,
    ));
    out.extend(storage_diagnostics(db, tree).iter().cloned());
    // A group without an identity builder is reported once, at the first
    // image that meets it.
    let mut no_identity: BTreeSet<&str> = BTreeSet::new();
    for name in index.names(ItemKind::IMAGES) {
        let id = ItemId::new(db, ItemKind::IMAGES, name.clone());
        let found = capability_diagnostics(db, tree, id);
        if let Some(g) = found.group_without_identity.as_deref()
            && no_identity.insert(g)
        {
            let origin = structured_item(
                db,
                tree,
                ItemId::new(db, ItemKind::GROUPS, csis_model::naming::safe_name(g)),
            )
            .origin
            .clone();
            out.push(
                Diagnostic::error(format!("group '{g}' has no identity builder")).at_opt(origin),
            );
        }
        out.extend(found.diagnostics.iter().cloned());
    }
    out.extend(
        crate::state::alias_pool::alias_pool_diagnostics(db, tree)
            .iter()
            .cloned(),
    );
    out.extend(crate::state::read_models::managed_groups_missing(db, tree));
    out.extend(crate::check::user_data::user_data_diagnostics(db, tree));
    out.extend(crate::state::launch_params::immutability_diagnostics(
        db, tree,
    ));
    out.extend(crate::check::labels::label_key_diagnostics(db, tree));
    out.extend(crate::check::zones::zone_diagnostics(db, tree));
    out.extend(crate::check::identity_items::identity_item_diagnostics(
        db, tree,
    ));
    out.extend(crate::check::bake_users::bake_user_diagnostics(db, tree));
    out
}

/// The checks of one item that are queries of their own: what a parallel
/// cold load computes ahead (see `prewarm`).
pub fn item_checks<'db>(db: &'db dyn Db, tree: Tree, id: ItemId<'db>) {
    match id.kind(db) {
        ItemKind::IMAGES => {
            item_diagnostics(db, tree, id);
            capability_diagnostics(db, tree, id);
        }
        ItemKind::INSTANCES => {
            item_diagnostics(db, tree, id);
            attach_diagnostics(db, tree, id);
        }
        ItemKind::STORAGES => {
            item_diagnostics(db, tree, id);
        }
        _ => {}
    }
}

/// One image's, instance's or storage's own checks: foreign keys,
/// policies, test specs, the canonical hostname.
#[salsa::tracked(returns(ref))]
pub(crate) fn item_diagnostics<'db>(
    db: &'db dyn Db,
    tree: Tree,
    id: ItemId<'db>,
) -> Vec<Diagnostic> {
    let mut v = Checks::new(db, tree);
    let si = structured_item(db, tree, id);
    if let Some(item) = si.item.as_deref() {
        v.item(item, si);
    }
    v.out
}

/// Runtime policies, OS builders' update policies and base images.
#[salsa::tracked(returns(ref))]
fn builder_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut v = Checks::new(db, tree);
    v.builders();
    v.out
}

/// One instance's storage mappings under the strict attach rule.
#[salsa::tracked(returns(ref))]
pub(crate) fn attach_diagnostics<'db>(
    db: &'db dyn Db,
    tree: Tree,
    id: ItemId<'db>,
) -> Vec<Diagnostic> {
    let mut v = Checks::new(db, tree);
    v.strict_attach(id);
    v.out
}

/// The storage state machine's transitions and single-attach cardinality.
#[salsa::tracked(returns(ref))]
fn storage_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut v = Checks::new(db, tree);
    v.cardinality();
    v.out
        .extend(crate::check::global_ids::global_id_diagnostics(db, tree));
    v.out
}

/// What one image's capability check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct CapabilityFindings {
    /// The image's group, when no identity builder serves it.
    group_without_identity: Option<String>,
    diagnostics: Vec<Diagnostic>,
}

#[salsa::tracked(returns(ref))]
fn capability_diagnostics<'db>(db: &'db dyn Db, tree: Tree, id: ItemId<'db>) -> CapabilityFindings {
    let mut v = Checks::new(db, tree);
    let group_without_identity = v.capabilities(id.name(db));
    CapabilityFindings {
        group_without_identity,
        diagnostics: v.out,
    }
}

/// Instance names by the (safe) name of the image they launch, each list
/// in name order.
#[salsa::tracked(returns(ref))]
fn instances_by_image(db: &dyn Db, tree: Tree) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in item_index(db, tree).names(ItemKind::INSTANCES) {
        let si = structured_item(db, tree, ItemId::new(db, ItemKind::INSTANCES, name.clone()));
        if let Some(Item::Instance(inst)) = si.item.as_deref()
            && let Some(image) = inst.image.as_deref()
        {
            out.entry(csis_model::naming::safe_name(image))
                .or_default()
                .push(name.clone());
        }
    }
    out
}

/// The instances of one image: its own query, so an instance edit that
/// moves no instance between images re-runs no image's checks.
#[salsa::tracked(returns(ref))]
fn image_instances<'db>(db: &'db dyn Db, tree: Tree, image: ItemId<'db>) -> Vec<String> {
    instances_by_image(db, tree)
        .get(image.name(db))
        .cloned()
        .unwrap_or_default()
}

struct Checks<'a> {
    db: &'a dyn Db,
    tree: Tree,
    b: &'a Builders,
    out: Vec<Diagnostic>,
}

/// The classification names messages use for a foreign key's target.
fn target_name(vct: Vct) -> &'static str {
    vct.sanitize().as_str()
}

impl<'a> Checks<'a> {
    fn new(db: &'a dyn Db, tree: Tree) -> Checks<'a> {
        Checks {
            db,
            tree,
            b: builders(db, tree),
            out: Vec::new(),
        }
    }

    fn err(&mut self, msg: String, at: Option<Origin>) {
        self.out.push(Diagnostic::error(msg).at_opt(at));
    }

    /// A foreign key to a builder: `default` resolves to the registered
    /// default, `none` names nothing.
    fn fk_builder(
        &mut self,
        class: &str,
        obj: &str,
        field: &str,
        value: &str,
        vct: Vct,
        at: Option<Origin>,
    ) {
        if csis_model::naming::reserved_word(value) == Some("none") {
            self.err(
                format!(
                    "{class} '{obj}': field '{field}' names '{value}', which is no {} -- `none` names nothing and is not this field's default; leave the field out, or write default, for the default",
                    target_name(vct)
                ),
                at,
            );
        } else if self.b.resolve(vct, value).is_none() {
            self.err(
                format!(
                    "{class} '{obj}': field '{field}' names '{value}', which is no {} (declared: {})",
                    target_name(vct),
                    self.b.declared(vct)
                ),
                at,
            );
        }
    }

    /// A foreign key to an item.
    fn fk_item(
        &mut self,
        class: &str,
        obj: &str,
        field: &str,
        value: &str,
        kind: ItemKind,
        at: Option<Origin>,
    ) {
        let index = item_index(self.db, self.tree);
        let safe = csis_model::naming::safe_name(value);
        if csis_model::naming::reserved_word(value) == Some("none") {
            self.err(
                format!(
                    "{class} '{obj}': field '{field}' names '{value}', which is no {} -- `none` names nothing; name a declared {}",
                    kind.model_vct(),
                    kind.singular()
                ),
                at,
            );
        } else if !index.contains(kind, &safe) {
            let declared: Vec<&str> = index.names(kind).map(String::as_str).collect();
            self.err(
                format!(
                    "{class} '{obj}': field '{field}' names '{value}', which is no {} (declared: [{}])",
                    kind.model_vct(),
                    declared.join(", ")
                ),
                at,
            );
        }
    }

    fn item(&mut self, item: &Item, si: &StructuredItem) {
        let origin = si.origin.clone();
        let at = |k: &str| origin.as_ref().map(|o| o.key(k));
        match item {
            Item::Image(img) => {
                let name = img.root.name();
                for (i, e) in img.runtimes.iter().enumerate() {
                    let place = origin
                        .as_ref()
                        .map(|o| o.key("runtimes").index(i).key("image_builder"));
                    self.fk_builder(
                        "Image",
                        name,
                        "image_builder",
                        &e.image_builder,
                        Vct::ImageBuilderModel,
                        place,
                    );
                }
                if let Some(parent) = img.source_image.as_deref() {
                    let safe = csis_model::naming::safe_name(parent);
                    let is_base = self.b.resolve(Vct::OsBuilderModel, &safe).is_some();
                    if !is_base && !item_index(self.db, self.tree).contains(ItemKind::IMAGES, &safe)
                    {
                        self.err(
                            format!(
                                "image '{name}' does not chain to a base image (source_image={parent})"
                            ),
                            at("source_image"),
                        );
                    }
                }
                if let Some(g) = img.group.as_deref()
                    && !item_index(self.db, self.tree)
                        .contains(ItemKind::GROUPS, &csis_model::naming::safe_name(g))
                {
                    self.err(
                        format!("image '{name}' names unknown owning group '{g}'"),
                        at("group"),
                    );
                }
                self.policies_image(
                    name,
                    img.parent_policy.as_str(),
                    img.retention.as_ref(),
                    img.release.as_ref(),
                    &at,
                );
                self.test_spec(&format!("image '{name}'"), &img.tests, at("tests"));
            }
            Item::Instance(inst) => {
                let name = inst.root.name();
                if let Some(image) = inst.image.as_deref() {
                    self.fk_item(
                        "Instance",
                        name,
                        "image",
                        image,
                        ItemKind::IMAGES,
                        at("image"),
                    );
                    let id = ItemId::new(
                        self.db,
                        ItemKind::IMAGES,
                        csis_model::naming::safe_name(image),
                    );
                    if let Some(Item::Image(img)) =
                        structured_item(self.db, self.tree, id).item.as_deref()
                        && img.group.is_none()
                    {
                        self.err(
                            format!(
                                "instance '{name}' uses image '{}' which has no owning group; every instance image belongs to exactly one group (Q4)",
                                img.root.name()
                            ),
                            at("image"),
                        );
                    }
                }
                self.fk_builder(
                    "Instance",
                    name,
                    "runtime",
                    &inst.runtime,
                    Vct::RuntimeBuilderModel,
                    at("runtime"),
                );
                for (i, m) in si.storages.iter().enumerate() {
                    let place = origin
                        .as_ref()
                        .map(|o| o.key("storages").index(i).key("name"));
                    self.fk_item(
                        "StorageMapping",
                        &m.name,
                        "name",
                        &m.name,
                        ItemKind::STORAGES,
                        place,
                    );
                }
                if !matches!(inst.image_policy.as_str(), "pinned" | "follow") {
                    self.err(
                        format!("instance '{name}': image_policy '{}' is not one of ('pinned', 'follow')", inst.image_policy),
                        at("image_policy"),
                    );
                }
                if let Some(p) = inst.on_failure.as_deref()
                    && !matches!(p, "keep" | "teardown")
                {
                    self.err(
                        format!(
                            "instance '{name}': on_failure '{p}' is not one of ('keep', 'teardown')"
                        ),
                        at("on_failure"),
                    );
                }
                if let Some(d) = inst.teardown_after.as_deref()
                    && !duration_ok(d)
                {
                    self.err(format!("instance '{name}': teardown_after: duration '{d}' must be <number><m|h|d>"), at("teardown_after"));
                }
                let hostname = crate::state::launch_params::canonical_hostname(
                    self.db,
                    self.tree,
                    &csis_model::naming::safe_name(name),
                    inst.ephemeral,
                );
                if let Some(problem) = hostname_problem(&hostname) {
                    self.err(
                        format!(
                            "instance '{name}': canonical hostname '{hostname}' {problem} (RFC 1123 label, at most 63 characters of letters, digits and hyphens, neither starting nor ending with a hyphen) -- shorten or respell the declared name (the suffix -NNN counts)"
                        ),
                        origin.as_ref().map(|o| o.key("name")),
                    );
                }
            }
            Item::Storage(s) => {
                let name = s.named.name.clone();
                if !s.runtime.is_empty() {
                    self.fk_builder(
                        "Storage",
                        &name,
                        "runtime",
                        &s.runtime,
                        Vct::RuntimeBuilderModel,
                        at("runtime"),
                    );
                }
                let index = item_index(self.db, self.tree);
                for g in &s.groups {
                    // ALL is refused at load already.
                    if g != "ALL"
                        && !index.contains(ItemKind::GROUPS, &csis_model::naming::safe_name(g))
                    {
                        self.err(
                            format!("storage '{name}' allows unknown group '{g}'"),
                            at("groups"),
                        );
                    }
                }
            }
            _ => {}
        }
    }

    #[allow(clippy::type_complexity)]
    fn policies_image(
        &mut self,
        name: &str,
        parent_policy: &str,
        retention: Option<&Map>,
        release: Option<&Map>,
        at: &dyn Fn(&str) -> Option<Origin>,
    ) {
        if !matches!(parent_policy, "pinned" | "follow") {
            self.err(
                format!("image '{name}': parent_policy '{parent_policy}' is not one of ('pinned', 'follow')"),
                at("parent_policy"),
            );
        }
        if let Some(r) = retention {
            let keep_ok = r.len() == 1
                && r.get("keep")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.parse::<u64>().is_ok());
            if !keep_ok {
                self.err(
                    format!("image '{name}': retention must be {{keep: <non-negative int>}}"),
                    at("retention"),
                );
            }
        }
        if let Some(r) = release {
            let ok = r.len() == 1
                && r.get("model")
                    .and_then(Value::as_str)
                    .is_some_and(|m| !m.trim().is_empty());
            if !ok {
                self.err(
                    format!("image '{name}': release must be {{model: <name>}}"),
                    at("release"),
                );
            }
        }
    }

    /// The tests vocabulary: files, packages, commands, services_enabled,
    /// users, and post_bake (the same plus mounts).
    fn test_spec(&mut self, where_: &str, tests: &Map, at: Option<Origin>) {
        const KNOWN: [&str; 6] = [
            "files",
            "packages",
            "commands",
            "services_enabled",
            "users",
            "post_bake",
        ];
        self.test_keys(where_, tests, &KNOWN, at.clone());
        if let Some(pb) = tests.get("post_bake") {
            match pb.as_map() {
                None => self.err(
                    format!("{where_}: tests.post_bake must be a map"),
                    at.clone(),
                ),
                Some(m) => {
                    const POST: [&str; 6] = [
                        "files",
                        "packages",
                        "commands",
                        "services_enabled",
                        "users",
                        "mounts",
                    ];
                    self.test_keys(&format!("{where_} post_bake"), m, &POST, at.clone());
                    for mp in m
                        .get("mounts")
                        .and_then(Value::as_seq)
                        .into_iter()
                        .flatten()
                    {
                        let p = mp
                            .as_str()
                            .or_else(|| mp.get("path").and_then(Value::as_str))
                            .unwrap_or_default();
                        if !p.starts_with('/') {
                            self.err(
                                format!("{where_}: every mounts entry is an absolute mount point"),
                                at.clone(),
                            );
                        }
                    }
                }
            }
        }
    }

    fn test_keys(&mut self, where_: &str, tests: &Map, known: &[&str], at: Option<Origin>) {
        let unknown: Vec<&str> = tests
            .keys()
            .map(String::as_str)
            .filter(|k| !known.contains(k))
            .collect();
        if !unknown.is_empty() {
            self.err(
                format!("{where_}: unknown tests keys {unknown:?} (known: {known:?})"),
                at.clone(),
            );
        }
        for f in tests
            .get("files")
            .and_then(Value::as_seq)
            .into_iter()
            .flatten()
        {
            if let Value::Map(m) = f
                && !m.contains_key("path")
            {
                self.err(
                    format!("{where_}: every tests.files entry needs a path"),
                    at.clone(),
                );
            }
        }
        for c in tests
            .get("commands")
            .and_then(Value::as_seq)
            .into_iter()
            .flatten()
        {
            if let Value::Map(m) = c
                && !m.contains_key("run")
            {
                self.err(
                    format!("{where_}: every tests.commands entry needs run"),
                    at.clone(),
                );
            }
        }
    }

    /// Builder-level checks: runtime policies, OS builders' update
    /// policies, base images (capability types, admin keys, debug path).
    fn builders(&mut self) {
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
        for d in b
            .by_class
            .get(&Vct::RuntimeBuilderModel)
            .into_iter()
            .flat_map(|m| m.values())
        {
            let Some(rt) = d.base.runtime_model() else {
                continue;
            };
            let at = |k: &str| {
                self.b
                    .origins
                    .get(&(Vct::RuntimeBuilderModel, d.name().to_string()))
                    .map(|o| o.key(k))
            };
            if let Some(k) = rt.retention_keep
                && k < 0
            {
                self.err(
                    format!(
                        "runtime '{}': retention_keep must be a non-negative int",
                        d.name()
                    ),
                    at("retention_keep"),
                );
            }
            if let Some(p) = rt.on_failure.as_deref()
                && !matches!(p, "keep" | "teardown")
            {
                self.err(
                    format!(
                        "runtime '{}': on_failure '{p}' is not one of ('keep', 'teardown')",
                        d.name()
                    ),
                    at("on_failure"),
                );
            }
            if let Some(t) = rt.teardown_after.as_deref()
                && !duration_ok(t)
            {
                self.err(
                    format!(
                        "runtime '{}': teardown_after: duration '{t}' must be <number><m|h|d>",
                        d.name()
                    ),
                    at("teardown_after"),
                );
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
                    self.err(
                        format!(
                            "base image '{n}' declares identity type '{t}' but no identity plugin of that type is configured (known: {:?})",
                            identity_types.iter().collect::<Vec<_>>()
                        ),
                        at("identity_types"),
                    );
                }
            }
            for t in &os.storage_types {
                if !storage_types.contains(t) {
                    self.err(
                        format!(
                            "base image '{n}' declares storage type '{t}' but no storage plugin of that type is configured (known: {:?})",
                            storage_types.iter().collect::<Vec<_>>()
                        ),
                        at("storage_types"),
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
                self.err(
                    format!(
                        "base image '{n}' has NO debug path: no admin public key (config.admin_public_keys / admin_public_keys) and no session mechanism on the runtime (N9 dead end)"
                    ),
                    here.clone(),
                );
            }
        }
    }
}

impl Checks<'_> {
    fn builder_of(&self, vct: Vct, reference: &str) -> Option<Box<dyn csis_plugin_api::Builder>> {
        let d = self.b.resolve(vct, reference)?;
        let spec = self.db.registry().model(d.classification, d.model)?;
        Some((spec.builder)(d))
    }

    fn origin_of(&self, kind: ItemKind, name: &str) -> Option<Origin> {
        let id = ItemId::new(self.db, kind, csis_model::naming::safe_name(name));
        structured_item(self.db, self.tree, id).origin.clone()
    }

    fn structured(&self, kind: ItemKind, name: &str) -> Option<std::sync::Arc<Item>> {
        let id = ItemId::new(self.db, kind, csis_model::naming::safe_name(name));
        structured_item(self.db, self.tree, id).item.clone()
    }

    /// The strict attach rule: an instance attaches a group-gated storage
    /// only when its image's group is allowed.
    fn strict_attach(&mut self, id: ItemId<'_>) {
        let name = id.name(self.db);
        let si = structured_item(self.db, self.tree, id);
        let Some(Item::Instance(inst)) = si.item.as_deref() else {
            return;
        };
        let image = inst.image.as_deref().unwrap_or_default();
        // An image that names nothing is the foreign-key check's refusal.
        let Some(Item::Image(img)) = self.structured(ItemKind::IMAGES, image).as_deref().cloned()
        else {
            return;
        };
        let group = img.group;
        for m in &si.storages {
            let Some(Item::Storage(st)) = self
                .structured(ItemKind::STORAGES, &m.name)
                .as_deref()
                .cloned()
            else {
                continue;
            };
            if st.public_read || st.groups.is_empty() {
                continue;
            }
            let at = si.origin.as_ref().map(|o| o.key("storages"));
            match &group {
                None => self.err(
                    format!("instance '{name}' attaches group-gated storage '{}' but its image '{image}' has no owning group", m.name),
                    at,
                ),
                Some(g) if !st.allows_group(g) => self.err(
                    format!(
                        "instance '{name}' (image '{image}', group '{g}') may not attach storage '{}': allowed groups are [{}] (N2)",
                        m.name,
                        st.groups.join(", ")
                    ),
                    at,
                ),
                _ => {}
            }
        }
    }

    /// The storage transitions, then single-attach cardinality: a
    /// single-attach storage is attached by one instance at most.
    fn cardinality(&mut self) {
        let attached = crate::state::storage_state::attachments(self.db, self.tree);
        self.storage_transitions(&attached);
        for (storage, instances) in attached {
            let Some(Item::Storage(st)) = self
                .structured(ItemKind::STORAGES, &storage)
                .as_deref()
                .cloned()
            else {
                continue;
            };
            let single = self
                .builder_of(Vct::StorageBuilderModel, &st.named.type_)
                .is_some_and(|b| !b.multi_attach());
            if single && instances.len() > 1 {
                let runtime = self
                    .b
                    .resolve(Vct::RuntimeBuilderModel, &st.runtime)
                    .map_or(st.runtime.clone(), |d| d.name().to_string());
                let multi: Vec<&str> = self
                    .b
                    .by_class
                    .get(&Vct::StorageBuilderModel)
                    .into_iter()
                    .flat_map(|m| m.values())
                    .filter(|d| d.base.runtime() == Some(runtime.as_str()))
                    .filter(|d| {
                        self.builder_of(Vct::StorageBuilderModel, d.name())
                            .is_some_and(|b| b.multi_attach())
                    })
                    .map(|d| d.name())
                    .collect();
                self.err(
                    format!(
                        "storage '{storage}' ({}) is single-attach but instances [{}] all attach it (N16); multi-host storage builders on {}: [{}]",
                        st.named.type_,
                        instances.join(", "),
                        runtime,
                        multi.join(", ")
                    ),
                    self.origin_of(ItemKind::STORAGES, &storage),
                );
            }
        }
    }

    /// The transitions the declared storages request of the recorded
    /// state machine.
    fn storage_transitions(&mut self, attached: &std::collections::BTreeMap<String, Vec<String>>) {
        use crate::state::storage_state::{FILE, StorageState, check, declared};
        let record = crate::state::lineage::read_record::<StorageState>(self.db, self.tree, FILE);
        self.out.extend(record.diags);
        let declared = declared(self.db, self.tree);
        self.out.extend(check(&declared, &record.value, attached));
    }

    /// An image whose group's identity type, or an attached storage's
    /// type, its chain's root base does not carry: through the pins to the
    /// stamped build, else the declaration.
    /// Returns the image's group when no identity builder serves it.
    fn capabilities(&mut self, name: &str) -> Option<String> {
        let lineage = &crate::state::lineage::lineage(self.db, self.tree).value;
        let pins = &crate::state::lineage::pins(self.db, self.tree).value;
        let Some(Item::Image(img)) = self.structured(ItemKind::IMAGES, name).as_deref().cloned()
        else {
            return None;
        };
        let (root, chain) = crate::plan::fingerprint::chain_root(self.db, self.tree, name)?;
        let Some(BaseBuilder::Os(os)) = self
            .b
            .resolve(Vct::OsBuilderModel, &root)
            .map(|d| d.base.clone())
        else {
            return None;
        };
        // A pinned build's stamp governs: walk the pins toward the root.
        let stamped = chain.iter().skip(1).find_map(|s| {
            let pin = pins
                .images
                .iter()
                .find(|(k, _)| k.starts_with(&format!("{s}@")))?
                .1;
            let rec = lineage.build(pin)?;
            Some((rec.capabilities.clone(), format!("pin:{pin}")))
        });
        let (ids, sts, source) = match stamped {
            Some((c, src)) => (c.identity_types, c.storage_types, src),
            None => (
                os.identity_types.clone(),
                os.storage_types.clone(),
                "declaration".to_string(),
            ),
        };
        let mut group_without_identity = None;
        if let Some(g) = img.group.as_deref() {
            let Some(Item::Group(group)) = self.structured(ItemKind::GROUPS, g).as_deref().cloned()
            else {
                return None;
            };
            let identity = self
                .builder_of(Vct::GroupBuilderModel, &group.root.named.type_)
                .and_then(|b| b.identity_type().map(str::to_string));
            match identity {
                None => group_without_identity = Some(g.to_string()),
                Some(t) if !ids.contains(&t) => {
                    self.err(
                        format!(
                            "image '{name}' uses an identity type its base '{root}' does not declare: '{t}' (declared: [{}], via {source}); the cycle is broken -- declare the type on the OS builder and re-bake the chain",
                            ids.join(", ")
                        ),
                        self.origin_of(ItemKind::IMAGES, name).map(|o| o.key("group")),
                    );
                }
                Some(_) => {}
            }
        }
        let mut reported: BTreeSet<String> = BTreeSet::new();
        let image = ItemId::new(self.db, ItemKind::IMAGES, name.to_string());
        for inst_name in image_instances(self.db, self.tree, image) {
            let id = ItemId::new(self.db, ItemKind::INSTANCES, inst_name.clone());
            let si = structured_item(self.db, self.tree, id);
            for m in &si.storages {
                let Some(Item::Storage(st)) = self
                    .structured(ItemKind::STORAGES, &m.name)
                    .as_deref()
                    .cloned()
                else {
                    continue;
                };
                let Some(t) = self
                    .builder_of(Vct::StorageBuilderModel, &st.named.type_)
                    .and_then(|b| b.capability_type().map(str::to_string))
                else {
                    continue;
                };
                if !sts.contains(&t) && reported.insert(m.name.clone()) {
                    self.err(
                        format!(
                            "image '{name}' attaches storage '{}' of type '{t}' which base '{root}' does not declare (declared: [{}], via {source}) -- declare the type on the OS builder and re-bake the chain",
                            m.name,
                            sts.join(", ")
                        ),
                        si.origin.as_ref().map(|o| o.key("storages")),
                    );
                }
            }
        }
        group_without_identity
    }
}

fn duration_ok(d: &str) -> bool {
    let d = d.trim();
    d.len() > 1
        && d[..d.len() - 1].parse::<f64>().is_ok_and(|n| n >= 0.0)
        && matches!(d.chars().last(), Some('m' | 'h' | 'd'))
}

/// Why a hostname is no RFC 1123 label, if it is not.
pub fn hostname_problem(h: &str) -> Option<&'static str> {
    if h.len() > 63 {
        return Some("is over 63 characters");
    }
    if !h.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Some("has characters other than letters, digits and hyphens");
    }
    if h.starts_with('-') || h.ends_with('-') {
        return Some("starts or ends with a hyphen");
    }
    None
}

/// Why an admin key is not one OpenSSH public-key line.
pub fn public_key_problem(key: &str) -> Option<&'static str> {
    let k = key.trim();
    if k.is_empty() {
        return Some("empty key");
    }
    if k.contains("PRIVATE KEY") || k.contains("-----BEGIN") {
        return Some("PRIVATE key material (never allowed; the config repo is public)");
    }
    if k.lines().count() > 1 {
        return Some("multi-line value");
    }
    let kind = k.split_whitespace().next().unwrap_or_default();
    let known = ["ssh-ed25519", "ssh-rsa", "ssh-dss"].contains(&kind)
        || kind.starts_with("ecdsa-sha2-nistp")
        || kind.starts_with("sk-");
    if !known || k.split_whitespace().nth(1).is_none() {
        return Some("not an OpenSSH public key line");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_and_keys() {
        assert_eq!(hostname_problem("web-001"), None);
        assert_eq!(
            hostname_problem("web_1-001"),
            Some("has characters other than letters, digits and hyphens")
        );
        assert_eq!(
            hostname_problem(&"a".repeat(64)),
            Some("is over 63 characters")
        );
        assert_eq!(public_key_problem("ssh-ed25519 AAAAC3 me@x"), None);
        assert_eq!(
            public_key_problem("-----BEGIN OPENSSH PRIVATE KEY-----"),
            Some("PRIVATE key material (never allowed; the config repo is public)")
        );
        assert_eq!(
            public_key_problem("hello"),
            Some("not an OpenSSH public key line")
        );
        assert_eq!(
            public_key_problem("ssh-rsa A\nssh-rsa B"),
            Some("multi-line value")
        );
        assert!(
            duration_ok("30m") && duration_ok("2h") && duration_ok("1.5d") && !duration_ok("soon")
        );
    }
}
