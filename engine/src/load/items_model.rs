//! Structuring one item: the raw entry (with overlays), its templates
//! resolved, read into its model, its builder and sub-items checked.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::models::{
    BaseImage, Group, Image, Instance, Item, ItemView, ModItem, ModItemModel, NameTyped,
    PluginItem, Storage, StorageMapping, User,
};
use csis_model::{Diagnostic, Fields, ItemKind, Origin, Subject, Value, Vct};

use csis_plugin_api::BuilderDecl;

use crate::db::{Db, Tree};
use crate::load::builders::{Builders, builders};
use crate::load::items::{ItemId, RawItem, item_index, raw_item};
use crate::load::resolve::{
    SmartContext, TemplateItem, fill_defaults, refusal_diagnostic, resolve_item,
};
use crate::load::user_identity::UserRule;
use csis_string_stage::Renderer;
use csis_string_stage::looked::{Execution, Looked};
use csis_string_stage::passes::DEFAULT_DATEFORMAT;

/// An item as read into its model, with its sub-items and what reading it
/// found. The lists are boxed slices, not vectors: this is the memo of
/// every item, most of those lists are empty, and each was 8 bytes more
/// (issue 40).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StructuredItem {
    pub item: Option<Arc<Item>>,
    pub mods: Box<[ModItem]>,
    pub storages: Box<[StorageMapping]>,
    /// Decrypted values with their markers (for emission).
    pub secrets: Box<[csis_model::models::Secret]>,
    pub origin: Option<Origin>,
    /// Boxed: the memo of every item holds one, most of them empty.
    pub diags: Box<[Diagnostic]>,
    /// What `${env.*}` / `${terraform.*}` substituted, and from where.
    pub interpolated: Box<[csis_string_stage::interp::Used]>,
    /// Its templates named another item (or looked a name up that might
    /// be one) besides an instance's image: its model depends on more
    /// than its own entry, cfg/ and that image, which is what a kept
    /// file's checks are keyed by (`load::kept_users`,
    /// `load::kept_instances`).
    pub reads_items: bool,
}

impl StructuredItem {
    /// Where `key` of the item is declared.
    pub fn origin_of(&self, key: &str) -> Option<Origin> {
        self.origin.as_ref().map(|o| o.key(key))
    }

    /// The item with its sub-items, when it structured.
    pub fn view(&self) -> Option<ItemView> {
        Some(ItemView {
            item: self.item.clone()?,
            mods: self.mods.to_vec(),
            storages: self.storages.to_vec(),
            secrets: self.secrets.to_vec(),
        })
    }
}

/// What messages call an item of a kind ("Image 'web'").
fn label(kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::USERS => "User",
        ItemKind::GROUPS => "Group",
        ItemKind::STORAGES => "Storage",
        ItemKind::IMAGES => "Image",
        ItemKind::INSTANCES => "Instance",
        ItemKind::BASE_IMAGES => "Base image",
        other => other.singular(),
    }
}

#[salsa::tracked(returns(ref))]
pub fn structured_item<'db>(db: &'db dyn Db, id: ItemId<'db>) -> StructuredItem {
    let tree = id.tree(db);
    let mut out = StructuredItem::default();
    let Some(raw) = raw_item(db, tree, id) else {
        return out;
    };
    let kind = raw.kind;
    let origin = raw.origin();
    let b = builders(db, tree);
    let Resolution {
        value,
        secrets,
        interpolated,
        user_rule,
        reads_items,
        mut diags,
    } = resolve(db, tree, &raw, b);
    out.interpolated = interpolated.into();
    out.reads_items = reads_items;
    let Some(map) = value.as_map() else {
        out.diags = diags.into();
        return out;
    };
    let name = map.get("name").and_then(Value::as_str).unwrap_or_default();
    // Concatenated, not formatted: made for every item, where `format!`
    // was a thirtieth of a cold plan.
    let owner = [label(kind), " '", name, "'"].concat();
    let mut f = Fields::new(map, origin.clone(), owner, &mut diags);
    let item = match kind {
        ItemKind::USERS => {
            let mut user = User::read(&mut f);
            if let Some(rule) = &user_rule
                && let Some(refusal) = rule.set_login(&mut user, &origin, &secrets)
            {
                f.error(refusal);
            }
            Item::User(Box::new(user))
        }
        ItemKind::GROUPS => Item::Group(Box::new(Group::read(&mut f))),
        ItemKind::STORAGES => Item::Storage(Box::new(Storage::read(&mut f))),
        ItemKind::IMAGES => Item::Image(Box::new(Image::read(&mut f))),
        ItemKind::INSTANCES => Item::Instance(Box::new(Instance::read(&mut f))),
        ItemKind::BASE_IMAGES => Item::BaseImage(Box::new(BaseImage::read(&mut f))),
        other => {
            let named = NameTyped::read_with_type(&mut f, "default");
            let plugin = db.registry().item_kind_plugin(other);
            let fields = plugin.map(|p| (p.read)(&mut f)).unwrap_or_default();
            if let Some(validate) = plugin.and_then(|p| p.validate) {
                for problem in validate(&fields) {
                    f.error(Diagnostic::error(problem).at(origin.clone()));
                }
            }
            Item::Plugin(Box::new(PluginItem { named, fields }))
        }
    };
    f.finish();
    check_builder(kind, &item, &origin, b, &mut diags);
    match &item {
        Item::Image(img) => {
            let owner = img.root.name();
            out.mods = structure_mods(db, owner, &img.modifications, &origin, b, &mut diags).into();
        }
        Item::Instance(inst) => {
            out.storages = structure_storages(&inst.storages, &origin, &mut diags).into();
        }
        _ => {}
    }
    out.diags = diags.into();
    out.item = Some(Arc::new(item));
    out.secrets = secrets.into();
    out.origin = Some(origin);
    out
}

/// An item's value after the template and interpolation stages, with what
/// those stages found: what [`structured_item`] reads the model from.
struct Resolution<'b> {
    value: Value,
    secrets: Vec<csis_model::models::Secret>,
    interpolated: Vec<csis_string_stage::interp::Used>,
    user_rule: Option<UserRule<'b>>,
    /// See [`StructuredItem::reads_items`].
    reads_items: bool,
    diags: Vec<Diagnostic>,
}

fn resolve<'b>(db: &dyn Db, tree: Tree, raw: &RawItem, b: &'b Builders) -> Resolution<'b> {
    let kind = raw.kind;
    let origin = raw.origin();
    let mut diags = Vec::new();
    let mut value = raw.value.unpack();
    fill_defaults(kind, &mut value, b);
    // A value with no template renders nothing: its context (an
    // instance's image unpacked whole, the builders and items its
    // templates name) is not made, and not depended on.
    let (refused, reads_items) = if value.contains_template() {
        let looked = Looked::new();
        let (ctx, reads_items) = smart_context(db, tree, kind, &value, b, &looked);
        let refused = Renderer::shared(|r| resolve_item(kind, &mut value, &ctx, r));
        crate::db::reads::note_looked(db, &looked);
        (refused, reads_items)
    } else {
        (Vec::new(), false)
    };
    if !refused.is_empty() {
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let kind_label = label(kind).to_lowercase();
        diags.extend(
            refused.iter().map(|(path, refusal)| {
                refusal_diagnostic(&kind_label, &name, &origin, path, refusal)
            }),
        );
    }
    let mut secrets = raw.secrets.clone();
    // After the Jinja stage, before structuring: ${env.*}, ${terraform.*}.
    let interpolated =
        crate::load::interp::interpolate_item(db, tree, kind.key(), &mut value, &origin);
    diags.extend(interpolated.diags);
    secrets.extend(interpolated.secrets);
    // The Jinja passes marked what they substituted as data, which kept
    // it from the later passes and from interpolation; now it is text.
    csis_string_stage::data::unmark_value(&mut value);
    let user_rule = (kind == ItemKind::USERS)
        .then(|| UserRule::of(b, &value))
        .flatten();
    if kind == ItemKind::USERS {
        open_derived_email(db, tree, &mut value, &origin, &mut secrets, &mut diags);
    }
    if let Some(rule) = &user_rule {
        diags.extend(rule.fill_blank_name(&mut value, &origin));
    }
    Resolution {
        value,
        secrets,
        interpolated: interpolated.used,
        user_rule,
        reads_items,
        diags,
    }
}

/// The item's resolved value (the resolved view) and where it is declared.
/// Computed again on each call rather than kept beside every structured
/// item: only `--explain` and tests read it, and keeping it was a fifth of
/// a cold plan's heap (docs/performance.md).
pub fn resolved_value(db: &dyn Db, id: ItemId<'_>) -> Option<(Origin, Value)> {
    let tree = id.tree(db);
    let raw = raw_item(db, tree, id)?;
    let value = resolve(db, tree, &raw, builders(db, tree)).value;
    Some((raw.origin(), value))
}

/// An email derived from an encrypted piece (the user builder's
/// `email_domain` written as a marker) holds that marker after resolution:
/// open it, and remember the piece so the address is emitted with its
/// ciphertext.
fn open_derived_email(
    db: &dyn Db,
    tree: Tree,
    value: &mut Value,
    origin: &Origin,
    secrets: &mut Vec<csis_model::models::Secret>,
    diags: &mut Vec<Diagnostic>,
) {
    let Some(Value::Scalar { text, .. }) = value.as_map_mut().and_then(|m| m.get_mut("email"))
    else {
        return;
    };
    for (_, marker) in csis_secrets::markers_in(text) {
        if text.trim() == marker {
            continue; // a whole marker is the email field's own, already opened
        }
        match csis_secrets::decrypt(&marker, tree.identities(db)) {
            Ok(plain) => {
                *text = text.replace(&marker, &plain);
                secrets.push(csis_model::models::Secret {
                    plaintext: plain,
                    marker,
                });
            }
            Err(e) => diags.push(
                Diagnostic::error(format!(
                    "{}: {}: {e}",
                    origin.file,
                    origin.path.key("email")
                ))
                .at(origin.key("email")),
            ),
        }
    }
}

/// What every item's template context shares: the environment, the run's
/// clock, and each declared builder as a template sees it; converted once
/// per tree rather than once per item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextValues {
    env: Arc<BTreeMap<String, String>>,
    execution: Arc<Execution>,
    builders: BTreeMap<(Vct, String), minijinja::Value>,
}

impl ContextValues {
    fn builder(&self, vct: Vct, decl: &BuilderDecl) -> minijinja::Value {
        self.builders
            .get(&(vct.sanitize(), decl.name().to_string()))
            .cloned()
            .unwrap_or_else(|| minijinja::Value::from_serialize(&decl.base))
    }
}

#[salsa::tracked(returns(ref))]
fn context_values(db: &dyn Db, tree: Tree) -> ContextValues {
    let b = builders(db, tree);
    let dateformat = b
        .config
        .as_ref()
        .map(|c| c.dateformat.clone())
        .unwrap_or_else(|| DEFAULT_DATEFORMAT.to_string());
    ContextValues {
        env: crate::db::reads::env_for_templates(db, tree).clone(),
        execution: Arc::new(csis_string_stage::passes::execution_map(
            crate::db::reads::start_for_templates(db, tree),
            &dateformat,
        )),
        builders: b
            .by_class
            .iter()
            .flat_map(|(vct, m)| {
                m.values().map(|d| {
                    (
                        (*vct, d.name().to_string()),
                        minijinja::Value::from_serialize(&d.base),
                    )
                })
            })
            .collect(),
    }
}

/// The SmartContext of an item: its builder, and the objects its foreign
/// keys name (an instance's image, a builder's runtime); and whether its
/// templates read another item besides (see
/// [`StructuredItem::reads_items`]).
fn smart_context(
    db: &dyn Db,
    tree: Tree,
    kind: ItemKind,
    value: &Value,
    b: &Builders,
    looked: &Arc<Looked>,
) -> (SmartContext, bool) {
    let shared = context_values(db, tree);
    let mut ctx = SmartContext {
        env: csis_string_stage::looked::env_value(shared.env.clone(), looked.clone()),
        execution: csis_string_stage::looked::execution_value(
            shared.execution.clone(),
            looked.clone(),
        ),
        fks: BTreeMap::new(),
        builder: None,
    };
    let type_name = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let vct = kind.builder_vct();
    if let Some(decl) = b.resolve(vct, type_name) {
        ctx.builder = Some(shared.builder(vct, decl));
    }
    if let Some(rt) = value.get("runtime").and_then(Value::as_str)
        && let Some(decl) = b.resolve(Vct::RuntimeBuilderModel, rt)
    {
        ctx.fks.insert(
            "runtime".into(),
            shared.builder(Vct::RuntimeBuilderModel, decl),
        );
    }
    if kind == ItemKind::INSTANCES
        && let Some(img) = value.get("image").and_then(Value::as_str)
    {
        let id = ItemId::new(
            db,
            tree,
            ItemKind::IMAGES,
            csis_model::naming::as_safe_name(img),
        );
        if let Some(raw) = raw_item(db, tree, id) {
            ctx.fks.insert(
                "image".into(),
                TemplateItem::value(Arc::new(raw.value.unpack())),
            );
        }
    }
    let reads_items = add_named_objects(db, tree, kind, value, b, &mut ctx);
    (ctx, reads_items)
}

/// Every other name a template uses that names a declared builder or item
/// (`{{ dummy_cloud.region }}`), hyphen and underscore spellings tried
/// interchangeably. Only the names actually used are looked up, so an item
/// depends on exactly the objects its templates reach. Whether any name
/// was looked up among the items.
fn add_named_objects(
    db: &dyn Db,
    tree: Tree,
    kind: ItemKind,
    value: &Value,
    b: &Builders,
    ctx: &mut SmartContext,
) -> bool {
    let own = crate::load::resolve::own_name(kind);
    // The names the context binds already are not looked up (and not
    // copied: a user's templates name only `user`, twenty thousand times
    // in a large tree).
    let bound = |name: &str| {
        ctx.fks.contains_key(name) || SmartContext::FIXED.contains(&name) || name == own
    };
    let mut names = std::collections::BTreeSet::new();
    Renderer::shared(|r| collect_template_names(value, r, &bound, &mut names));
    let index = item_index(db, tree);
    let mut looked_up = false;
    for name in names {
        let safe = csis_model::naming::safe_name(&name);
        let spellings = [safe.clone(), safe.replace('_', "-"), safe.replace('-', "_")];
        let builder = b
            .by_class
            .iter()
            .find_map(|(vct, m)| spellings.iter().find_map(|s| m.get(s)).map(|d| (*vct, d)));
        if let Some((vct, decl)) = builder {
            ctx.fks
                .insert(name, context_values(db, tree).builder(vct, decl));
            continue;
        }
        looked_up = true;
        let item = db.registry().item_kinds().into_iter().find_map(|k| {
            spellings
                .iter()
                .find(|s| index.contains(k, s))
                .map(|s| ItemId::new(db, tree, k, s.as_str()))
        });
        if let Some(id) = item
            && let Some(raw) = raw_item(db, tree, id)
        {
            ctx.fks
                .insert(name, TemplateItem::value(Arc::new(raw.value.unpack())));
        }
    }
    looked_up
}

fn collect_template_names(
    v: &Value,
    r: &Renderer,
    bound: &dyn Fn(&str) -> bool,
    out: &mut std::collections::BTreeSet<String>,
) {
    match v {
        Value::Scalar { text, .. } if csis_model::value::has_template(text) => {
            let names = r.referenced_names(text);
            out.extend(names.iter().filter(|n| !bound(n)).cloned());
        }
        Value::Seq(items) => items
            .iter()
            .for_each(|i| collect_template_names(i, r, bound, out)),
        Value::Map(m) => m
            .values()
            .for_each(|i| collect_template_names(i, r, bound, out)),
        _ => {}
    }
}

/// An item's `type` must name a configured builder of its kind.
fn check_builder(
    kind: ItemKind,
    item: &Item,
    origin: &Origin,
    b: &Builders,
    diags: &mut Vec<Diagnostic>,
) {
    let (name, type_name) = (item.name(), item.type_name());
    let vct = kind.builder_vct();
    // An empty type is refused by the model already.
    if type_name.is_empty() || b.resolve(vct, type_name).is_some() {
        return;
    }
    let msg = if type_name == "default" {
        format!(
            "{} item '{name}' has no builder type and no default is registered for {vct}",
            kind.singular()
        )
    } else {
        format!(
            "{} builder '{type_name}' specified for '{name}' not configured",
            kind.singular()
        )
    };
    let what = crate::load::builder_labels::label_in_sentence(vct);
    let help = if type_name == "default" && b.names(vct).is_empty() {
        format!(
            "no {what} is declared: declare one in cfg/ under {}: with is_default: true",
            csis_model::vct::builder_list_key(vct).unwrap_or("its builder list")
        )
    } else if type_name == "default" {
        format!(
            "{} '{name}' names no type and no {what} is marked is_default: true (declared: {}) -- write type: <one of them>, or mark one is_default: true",
            kind.singular(),
            b.declared(vct)
        )
    } else {
        csis_model::suggest::undeclared(
            &format!("{} '{name}'", kind.singular()),
            &what,
            type_name,
            b.names(vct),
        )
    };
    diags.push(
        Diagnostic::error(msg)
            .at(origin.key("type"))
            .help(help)
            .following(Subject::builder(vct, type_name)),
    );
}

fn structure_mods(
    db: &dyn Db,
    image: &str,
    raw: &[Value],
    origin: &Origin,
    b: &Builders,
    diags: &mut Vec<Diagnostic>,
) -> Vec<ModItem> {
    let mut out = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let here = origin.key("modifications").index(i);
        let Some(m) = entry.as_map() else {
            diags.push(Diagnostic::error("every modifications entry must be a mapping").at(here));
            continue;
        };
        let type_name = m.get("type").and_then(Value::as_str).unwrap_or("default");
        let Some(decl) = b.resolve(Vct::ModBuilderModel, type_name) else {
            diags.push(
                Diagnostic::error(format!(
                    "mod builder '{type_name}' specified for modifications[{i}] not configured"
                ))
                .at(here.key("type"))
                .help(csis_model::suggest::undeclared(
                    &format!("modifications[{i}] of image '{image}'"),
                    "mod builder",
                    type_name,
                    b.names(Vct::ModBuilderModel),
                ))
                .following(Subject::builder(Vct::ModBuilderModel, type_name)),
            );
            continue;
        };
        let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
        let mut f = Fields::new(
            m,
            here.clone(),
            ["Modification '", name, "' of image '", image, "'"].concat(),
            diags,
        );
        let model = ModItemModel::read(&mut f);
        let extra = db
            .registry()
            .item_model(Vct::ModBuilderItemModel, decl.model)
            .map(|spec| (spec.read_extra)(&mut f))
            .unwrap_or_default();
        f.finish();
        out.push(ModItem {
            model,
            builder: decl.name().to_string(),
            extra,
        });
    }
    out
}

/// A storage attached twice keeps the later mapping.
fn structure_storages(
    raw: &[Value],
    origin: &Origin,
    diags: &mut Vec<Diagnostic>,
) -> Vec<StorageMapping> {
    let mut out: Vec<StorageMapping> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let here = origin.key("storages").index(i);
        let Some(m) = entry.as_map() else {
            diags.push(Diagnostic::error("every storages entry must be a mapping").at(here));
            continue;
        };
        let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
        let mut f = Fields::new(m, here, ["StorageMapping '", name, "'"].concat(), diags);
        let mapping = StorageMapping::read(&mut f);
        f.finish();
        out.retain(|s| s.name != mapping.name);
        out.push(mapping);
    }
    out
}
