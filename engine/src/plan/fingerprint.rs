//! The input fingerprint of an image (or a base image) on a runtime: a
//! blake3 hash over exactly what determines the build's content, and
//! nothing that does not (machine types, usernames, run ids, timestamps).
//! docs/fingerprint.md lists every field.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::models::{BaseBuilder, Item, OsBuilderModel};
use csis_model::{ItemKind, Value, Vct};
use serde_json::{Value as J, json};

use crate::db::{Db, Tree};
use crate::load::builders::{Builders, builders};
use crate::load::items::{ItemId, indexed_of_kind};
use crate::load::items_model::structured_item;
use crate::state::lineage::pins;

#[salsa::interned(debug)]
pub struct SeriesKey<'db> {
    #[returns(ref)]
    pub series: String,
    #[returns(ref)]
    pub runtime: String,
}

/// What a plan keeps of a fingerprint (defined beside the persisted
/// cache's unit of them, which this file asks and which may not ask it).
pub use crate::plan::kept_fingerprints::InputFingerprint;

/// A fingerprint, the fields it hashes, and each modification's content
/// (what [`Fingerprint::inputs`] lists in place of its hash).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub hex: String,
    pub fields: J,
    mods: Vec<(String, J)>,
}

impl Fingerprint {
    /// A digest of every leaf input: what `--explain` compares with the
    /// one a build recorded. Computed when asked: a plan never reads it,
    /// and it cost a fifth of the fingerprints' time.
    pub fn inputs(&self) -> BTreeMap<String, String> {
        leaf_inputs(&self.fields, &self.mods)
    }

    /// The parent's fingerprint as this series reads it (an image's; an OS
    /// builder has none).
    pub fn parent(&self) -> Option<&str> {
        self.fields.get("parent_fingerprint")?.as_str()
    }

    /// This fingerprint over a parent fingerprint of `parent` instead: what
    /// it becomes once the parent's record is restamped.
    pub fn with_parent(&self, parent: &str) -> Fingerprint {
        let mut fields = self.fields.clone();
        if let Some(f) = fields.get_mut("parent_fingerprint") {
            *f = J::String(parent.to_string());
        }
        Fingerprint {
            hex: hash(&fields),
            fields,
            mods: self.mods.clone(),
        }
    }
}

/// The first 16 hex digits of a value's canonical blake3: enough to tell a
/// change, short enough to record per input in lineage.yaml.
fn digest(v: &J) -> String {
    let mut hex = hash(v);
    hex.truncate(16);
    hex
}

/// Every leaf of `v` under `prefix` (objects flattened with `.`; arrays and
/// scalars are leaves), each with its digest.
fn flatten_into(prefix: &str, v: &J, out: &mut BTreeMap<String, String>) {
    match v {
        J::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_into(&key, x, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), digest(v));
        }
    }
}

/// The recorded inputs of a fingerprint: its fields flattened, with each
/// modification's content under `modifications[<name>]` instead of its hash.
fn leaf_inputs(fields: &J, mods: &[(String, J)]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let J::Object(m) = fields {
        for (k, v) in m.iter().filter(|(k, _)| k.as_str() != "modifications") {
            flatten_into(k, v, &mut out);
        }
    }
    for (name, content) in mods {
        flatten_into(&format!("modifications[{name}]"), content, &mut out);
    }
    out
}

/// JSON with every object's keys sorted: the same value always hashes the
/// same, whatever order the YAML was written in.
pub fn canonical(v: &J) -> String {
    let mut out = Vec::new();
    write_canonical(v, &mut out);
    // Only serde_json's own output and ASCII punctuation were written.
    String::from_utf8_lossy(&out).into_owned()
}

/// [`canonical`] into `out`, one buffer for the whole value: a string per
/// node made hashing most of a plan's fingerprint time.
fn write_canonical(v: &J, out: &mut Vec<u8>) {
    match v {
        J::Object(m) => {
            let mut entries: Vec<(&String, &J)> = m.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(k, out);
                out.push(b':');
                write_canonical(x, out);
            }
            out.push(b'}');
        }
        J::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(x, out);
            }
            out.push(b']');
        }
        other => write_json(other, out),
    }
}

fn write_json<T: serde::Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    // Strings and JSON scalars into a Vec: serde_json cannot fail on them.
    let _ = serde_json::to_writer(&mut *out, v);
}

pub fn hash(v: &J) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical(v, &mut out);
    blake3::hash(&out).to_hex().to_string()
}

/// The text of a file the configuration refers to, when the tree has it.
pub fn aux_text(db: &dyn Db, tree: Tree, path: &str) -> Option<Arc<str>> {
    crate::db::files::aux_file(db, tree, path).map(|f| f.text(db).clone())
}

/// Every file modifications name (`scripts:`), sorted and unique: the loader
/// reads them so their content enters fingerprints.
#[salsa::tracked(returns(ref))]
pub fn referenced_files(db: &dyn Db, tree: Tree) -> Vec<String> {
    let mut out = Vec::new();
    for id in indexed_of_kind(db, tree, ItemKind::IMAGES) {
        for m in &structured_item(db, id).mods {
            if let Some(Value::Seq(files)) = m.extra.get("scripts") {
                out.extend(files.iter().filter_map(Value::as_str).map(str::to_string));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every OS builder entry's `image_id` that names a root tarball
/// (`*.tar`): the load takes each one's digest, the base's fingerprint
/// holds it.
pub fn vendor_archives(db: &dyn Db, tree: Tree) -> Vec<String> {
    let b = builders(db, tree);
    let mut out: Vec<String> = b
        .by_class
        .get(&Vct::OsBuilderModel)
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(|d| match &d.base {
            BaseBuilder::Os(os) => Some(os),
            _ => None,
        })
        .flat_map(|os| os.runtimes.iter())
        .filter_map(|e| e.image_id.clone())
        .filter(|id| id.ends_with(".tar"))
        .filter(|id| csis_model::confine::relative_path_problem("image_id", id).is_none())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn runtime_of_image_builder(b: &Builders, image_builder: &str) -> Option<String> {
    b.resolve(Vct::ImageBuilderModel, image_builder)
        .and_then(|d| d.base.runtime().map(str::to_string))
}

/// The runtime's own bake disk size, when its plugin declares one.
fn runtime_disk(b: &Builders, runtime: &str) -> Option<String> {
    let rt = b.resolve(Vct::RuntimeBuilderModel, runtime)?;
    rt.extra
        .get("default_disk_size")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn map_json(m: &csis_model::Map) -> J {
    J::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
}

/// The capability stamp of a chain's root base: its declared identity and
/// storage types.
pub fn capability_stamp(os: &OsBuilderModel) -> J {
    let mut ids = os.identity_types.clone();
    ids.sort();
    let mut sts = os.storage_types.clone();
    sts.sort();
    json!({ "identity_types": ids, "storage_types": sts })
}

/// The OS builder a series' chain starts from.
pub fn chain_root(db: &dyn Db, tree: Tree, series: &str) -> Option<(String, Vec<String>)> {
    let b = builders(db, tree);
    let mut chain = vec![series.to_string()];
    let mut at = series.to_string();
    for _ in 0..64 {
        if b.resolve(Vct::OsBuilderModel, &at).is_some() {
            chain.reverse();
            return Some((at, chain));
        }
        let id = ItemId::new(db, tree, ItemKind::IMAGES, at.as_str());
        let parent = match structured_item(db, id).item.as_deref() {
            Some(Item::Image(img)) => img
                .source_image
                .as_deref()
                .map(csis_model::naming::safe_name)?,
            _ => return None,
        };
        chain.push(parent.clone());
        at = parent;
    }
    None
}

#[salsa::tracked(returns(ref))]
pub fn input_fingerprint<'db>(
    db: &'db dyn Db,
    tree: Tree,
    key: SeriesKey<'db>,
) -> Option<InputFingerprint> {
    // The tree's fingerprints the persisted cache kept
    // (plan/kept_fingerprints.rs).
    if let Some(kept) =
        crate::plan::kept_fingerprints::kept_fingerprint(db, tree, key.series(db), key.runtime(db))
    {
        return kept.cloned();
    }
    let fp = fingerprint_detail(db, tree, key)?;
    Some(InputFingerprint {
        bake_disk_size: fp
            .fields
            .get("bake_disk_size")
            .and_then(J::as_str)
            .map(str::to_string),
        hex: fp.hex,
    })
}

/// The fingerprint with the fields it hashes, computed on each call (a
/// parent's hash comes from [`input_fingerprint`]).
pub fn fingerprint_detail(db: &dyn Db, tree: Tree, key: SeriesKey<'_>) -> Option<Fingerprint> {
    let series = key.series(db);
    let runtime = key.runtime(db);
    let b = builders(db, tree);
    if let Some(decl) = b.resolve(Vct::OsBuilderModel, series) {
        let BaseBuilder::Os(os) = &decl.base else {
            return None;
        };
        return base_fingerprint(db, tree, decl.name(), os, runtime);
    }
    let id = ItemId::new(db, tree, ItemKind::IMAGES, series.as_str());
    let si = structured_item(db, id);
    let Some(Item::Image(img)) = si.item.as_deref() else {
        return None;
    };
    let parent = csis_model::naming::safe_name(img.source_image.as_deref()?);
    let parent_fp = parent_fingerprint(db, tree, series, &parent, runtime, &img.parent_policy)?;
    let (root, _) = chain_root(db, tree, series)?;
    let caps = match b.resolve(Vct::OsBuilderModel, &root).map(|d| &d.base) {
        Some(BaseBuilder::Os(os)) => capability_stamp(os),
        _ => J::Null,
    };
    let contents: Vec<(String, J)> = si
        .mods
        .iter()
        .map(|m| {
            let model = b.resolve(Vct::ModBuilderModel, &m.builder).map(|d| d.model).unwrap_or_default();
            let files: BTreeMap<String, J> = match m.extra.get("scripts") {
                Some(Value::Seq(fs)) => fs
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|p| {
                        let h = aux_text(db, tree, p)
                            .map(|t| J::String(blake3::hash(t.as_bytes()).to_hex().to_string()))
                            .unwrap_or(J::Null);
                        (p.to_string(), h)
                    })
                    .collect(),
                _ => BTreeMap::new(),
            };
            let content = json!({
                "type": model,
                "fields": J::Object(m.extra.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
                "files": files,
                "config": map_json(&m.model.config),
            });
            (m.model.named.name.to_string(), content)
        })
        .collect();
    let mods: Vec<J> = contents
        .iter()
        .map(|(name, content)| json!({ "name": name, "content_hash": hash(content) }))
        .collect();
    let disk = runtime_disk(b, runtime).unwrap_or_else(|| match img.primary_disk_size.as_str() {
        "default" => "200".to_string(),
        other => other.to_string(),
    });
    let fields = json!({
        "series": series,
        "parent_fingerprint": parent_fp,
        "capabilities": caps,
        "modifications": mods,
        "verification": map_json(&img.tests),
        "bake_disk_size": disk,
    });
    Some(Fingerprint {
        hex: hash(&fields),
        fields,
        mods: contents,
    })
}

/// Under `pinned`, the fingerprint recorded for the pinned parent build;
/// otherwise (follow, or nothing pinned yet) the parent's current one.
fn parent_fingerprint(
    db: &dyn Db,
    tree: Tree,
    series: &str,
    parent: &str,
    runtime: &str,
    policy: &str,
) -> Option<String> {
    if policy != "follow"
        && let Some(pinned) = pins(db, tree)
            .value
            .images
            .get(&format!("{series}@{runtime}"))
        && let Some(build) = crate::state::lineage::build_of(db, tree, pinned)
    {
        return Some(build.input_fingerprint.clone());
    }
    let key = SeriesKey::new(db, parent.to_string(), runtime.to_string());
    input_fingerprint(db, tree, key)
        .as_ref()
        .map(|f| f.hex.clone())
}

fn base_fingerprint(
    db: &dyn Db,
    tree: Tree,
    name: &str,
    os: &OsBuilderModel,
    runtime: &str,
) -> Option<Fingerprint> {
    let b = builders(db, tree);
    let (index, entry) =
        os.runtimes.iter().enumerate().find(|(_, e)| {
            runtime_of_image_builder(b, &e.image_builder).as_deref() == Some(runtime)
        })?;
    let mut owners = os.owners.clone();
    if let Some(r) = b
        .resolve(Vct::RuntimeBuilderModel, runtime)
        .and_then(|d| d.base.runtime_model())
    {
        owners.extend(r.default_owners.clone().unwrap_or_default());
    }
    owners.extend(entry.owners.clone());
    let mut query = map_json(&os.query);
    if let (J::Object(q), J::Object(e)) = (&mut query, map_json(&entry.query)) {
        q.extend(e);
    }
    let keys = match &os.admin_public_keys {
        Some(k) => json!(k),
        None => b
            .config_map()
            .get("admin_public_keys")
            .map(|v| match v {
                Value::Scalar { .. } => J::Array(vec![v.to_json()]),
                other => other.to_json(),
            })
            .unwrap_or(json!([])),
    };
    let disk = runtime_disk(b, runtime)
        .or_else(|| entry.default_primary_disk_size.map(|d| d.to_string()))
        .unwrap_or_else(|| os.default_primary_disk_size.clone());
    let tests = entry.tests.as_ref().unwrap_or(&os.tests);
    let fields = json!({
        "series": name,
        "vendor": {
            "family": os.family,
            "family_version": os.family_version,
            "architecture": os.architecture,
            "image_id": entry.image_id,
            "image_name": J::Null,
            "owners": owners,
            "query": query,
        },
        "admin": { "user": os.admin_user, "keys": keys },
        "update": serde_json::to_value(os.effective_update()).unwrap_or(J::Null),
        "capabilities": capability_stamp(os),
        "verification": map_json(tests),
        "bake_disk_size": disk,
    });
    // A base composed from an image template hashes the fully merged,
    // variable-substituted template, never the files' texts: a comment or
    // a key order moves nothing, a package added anywhere in the chain
    // (or the OS defaults) moves exactly the bases whose chain holds it.
    let mut fields = fields;
    // A root tarball is hashed by content, a directory by its path only.
    if let Some(digest) = entry
        .image_id
        .as_ref()
        .and_then(|id| tree.path_facts(db).get(id))
        .and_then(|f| f.digest.clone())
        && let Some(J::Object(v)) = fields.get_mut("vendor")
    {
        v.insert("image_digest".to_string(), J::String(digest));
    }
    // A root built from a distribution hashes its spec; a tree whose
    // bases start from directories keeps the fingerprints it had.
    if let (Some(d), J::Object(m)) = (&entry.distribution, &mut fields) {
        m.insert(
            "distribution".to_string(),
            serde_json::to_value(d).unwrap_or(J::Null),
        );
    }
    if entry.template.is_some()
        && let J::Object(m) = &mut fields
    {
        let template = crate::load::templates::template_of(db, tree, os.name(), index)
            .and_then(|r| r.json.clone())
            .unwrap_or(J::Null);
        m.insert("template".to_string(), template);
    }
    Some(Fingerprint {
        hex: hash(&fields),
        fields,
        mods: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a = json!({"b": 1, "a": {"y": [1, {"q": 1, "p": 2}], "x": null}});
        let b = json!({"a": {"x": null, "y": [1, {"p": 2, "q": 1}]}, "b": 1});
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(
            canonical(&a),
            r#"{"a":{"x":null,"y":[1,{"p":2,"q":1}]},"b":1}"#
        );
        assert_eq!(hash(&a), hash(&b));
    }

    #[test]
    fn canonical_json_escapes_as_serde_json_and_sorts_by_bytes() {
        let v = json!({"é": "a\"b\n", "Z": 1.5, "a": -3, "e": [true, null, "\u{1}"], "o": {}});
        assert_eq!(
            canonical(&v),
            r#"{"Z":1.5,"a":-3,"e":[true,null,"\u0001"],"o":{},"é":"a\"b\n"}"#
        );
        assert_eq!(
            hash(&v),
            blake3::hash(canonical(&v).as_bytes()).to_hex().to_string()
        );
        assert_eq!(digest(&v), hash(&v)[..16]);
    }
}
