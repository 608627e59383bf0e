//! A tree read through a [`System`] into salsa inputs: cfg/, the item
//! directories, meta-state/ and the overlays, then, in rounds, the files
//! the configuration itself names (interpolation's files and remote state
//! objects, modification scripts, image template chains).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use csis_model::Diagnostic;
use salsa::{Durability, Setter};

use crate::db::cache::{Cache, key as cache_key};
use crate::db::system::System;
use crate::db::{Database, ItemFile, PathFact, SourceFile, Tree};
use crate::registry::Registry;
use crate::workspace::environment::{identities, load_env};
use crate::workspace::read::{Place, ReadText, read_limited};
use crate::workspace::remote::read_remote;
use crate::workspace::{LoadOptions, Workspace, durability_for};

/// The most rounds of reading an image template chain's files at load:
/// each round reads one more level of every chain, and the resolver asks
/// for no file past the one that makes a chain deeper than its MAX_DEPTH
/// (the test of this bound is engine/tests/image_templates.rs).
const TEMPLATE_ROUNDS: usize = csis_template::MAX_DEPTH + 2;

/// The files interpolation reads, each read once: (path, text).
fn read_aux(
    system: &dyn System,
    root: &Path,
    real_root: &Path,
    max: u64,
    paths: &[String],
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Arc<str>, Arc<str>)> {
    paths
        .iter()
        .filter_map(|p| {
            // Named by the configuration: a directory symlink on the way
            // out of the root is refused like a symlinked file.
            let place = Place::Named {
                root: real_root,
                rel: p,
            };
            let before = diags.len();
            let text = match read_limited(system, &root.join(p), p, place, max, diags) {
                Some(read) => read.text,
                // Refused (an error said so, with the file's position):
                // interpolation then adds no "no such file" of its own.
                None if diags[before..]
                    .iter()
                    .any(|d| d.severity == csis_model::Severity::Error) =>
                {
                    Arc::from(csis_string_stage::interp::REFUSED_READ)
                }
                None => return None,
            };
            Some((Arc::from(p.as_str()), text))
        })
        .collect()
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

/// A file of the tree, as read, with the durability its path gives it.
fn source_file(db: &Database, tree: Tree, path: Arc<str>, read: ReadText) -> SourceFile {
    let durability = durability_for(&path);
    SourceFile::builder(path, read.text, read.digest, tree)
        .durability(durability)
        .new(db)
}

fn is_yaml(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("yml") | Some("yaml")
    )
}

impl Workspace {
    /// The tree's id (cfg/_config.yml `id`).
    pub fn tree_id(&self) -> String {
        crate::load::builders::builders(&self.db, self.tree).tree_id()
    }

    pub fn load(
        system: &dyn System,
        registry: Arc<Registry>,
        root: &Path,
        options: &LoadOptions,
    ) -> std::io::Result<Workspace> {
        let dirs = registry.item_dirs();
        let cache = options
            .cache_dir
            .as_ref()
            .map(|dir| Cache::load(system, dir, cache_key(&registry)));
        let db = if options.query_log {
            Database::with_query_log(registry)
        } else {
            Database::new(registry)
        };
        let db = match cache {
            Some(cache) => db.with_cache(cache),
            None => db,
        };
        let max = options.max_file_size;
        // The tree first, its files' lists set once they are read: each
        // file names its tree (`SourceFile::tree`).
        let tree = Tree::builder(
            Arc::from(
                options
                    .display_root
                    .clone()
                    .unwrap_or_else(|| root.to_string_lossy().to_string())
                    .as_str(),
            ),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            options.undeclare.clone(),
            Arc::new(load_env(system, options)),
            system.now_unix(),
            Vec::new(),
            Vec::new(),
            Arc::new(BTreeMap::new()),
            identities(system, max)?,
            Default::default(),
        )
        // What a workspace never changes is HIGH, and what changes only
        // on a reload or a rename MEDIUM; the files carry their own (see
        // `durability_for`). A query's durability is the lowest of what it
        // read, so one LOW field read by every item would make every item
        // re-verified after any edit, cfg/-only ones included.
        .root_display_durability(Durability::HIGH)
        .undeclare_durability(Durability::HIGH)
        .env_durability(Durability::HIGH)
        .start_unix_durability(Durability::HIGH)
        .identities_durability(Durability::HIGH)
        .path_facts_durability(Durability::MEDIUM)
        .new(&db);
        let mut files = BTreeMap::new();
        let mut read_diags = Vec::new();
        let make = |path: String, read: ReadText, files: &mut BTreeMap<String, SourceFile>| {
            let f = source_file(&db, tree, Arc::from(path.as_str()), read);
            files.insert(path, f);
            f
        };
        // Symlinks inside the tree may point anywhere inside it.
        let real_root = system.resolve(root).unwrap_or_else(|_| root.to_path_buf());
        // A directory of the tree that is itself a symlink out of it is
        // refused whole, with where it points.
        let listed =
            |dir: &str, read_diags: &mut Vec<Diagnostic>| -> std::io::Result<Vec<PathBuf>> {
                let path = root.join(dir);
                if let Ok(real) = system.resolve(&path)
                    && !real.starts_with(&real_root)
                {
                    read_diags.push(Diagnostic::error(format!(
                        "{dir}/: a symlink to {}, outside the configuration root; csis reads only \
files inside the tree",
                        real.display()
                    )));
                    return Ok(Vec::new());
                }
                system.list_files(&path)
            };
        let read = |p: &Path, read_diags: &mut Vec<Diagnostic>| {
            let shown = rel(root, p);
            let place = Place::Tree { root: &real_root };
            read_limited(system, p, &shown, place, max, read_diags).map(|text| (shown, text))
        };
        let cfg_dir = root.join("cfg");
        let mut cfg_files = Vec::new();
        for p in listed("cfg", &mut read_diags)? {
            // cfg/ is not recursive.
            if p.parent() != Some(cfg_dir.as_path()) || !is_yaml(&p) {
                continue;
            }
            if let Some((shown, text)) = read(&p, &mut read_diags) {
                cfg_files.push(make(shown, text, &mut files));
            }
        }
        let mut item_paths = Vec::new();
        for dir in dirs {
            for p in listed(dir, &mut read_diags)? {
                if is_yaml(&p) {
                    item_paths.push((dir, p));
                }
            }
        }
        // Read on every core: a large tree is thousands of files, and
        // opening them one after the other kept the other cores idle for
        // a tenth of a cold plan. Texts and refusals keep the listing's
        // order.
        use rayon::prelude::*;
        let texts: Vec<_> = item_paths
            .par_iter()
            .map(|(_, p)| {
                let mut diags = Vec::new();
                (read(p, &mut diags), diags)
            })
            .collect();
        let mut item_files = Vec::new();
        for ((dir, _), (text, diags)) in item_paths.into_iter().zip(texts) {
            read_diags.extend(diags);
            if let Some((shown, text)) = text {
                let file = make(shown, text, &mut files);
                item_files.push(ItemFile { dir, file });
            }
        }
        let mut meta_files = Vec::new();
        let meta_dir = root.join(crate::state::meta_state::DIR);
        for p in listed(crate::state::meta_state::DIR, &mut read_diags)? {
            // The alias pool is the one meta-state file that is not YAML.
            let pool = p
                .file_name()
                .is_some_and(|n| n == crate::state::alias_pool::FILE);
            if p.parent() == Some(meta_dir.as_path())
                && (is_yaml(&p) || pool)
                && let Some((shown, text)) = read(&p, &mut read_diags)
            {
                meta_files.push(make(shown, text, &mut files));
            }
        }
        let mut overlays = Vec::new();
        for p in &options.overlays {
            let shown = p.to_string_lossy().to_string();
            let before = read_diags.len();
            match read_limited(system, p, &shown, Place::Given, max, &mut read_diags) {
                Some(text) => overlays.push(make(shown, text, &mut files)),
                None if read_diags.len() == before => {
                    read_diags.push(Diagnostic::error(format!("Overlay {shown} does not exist")))
                }
                None => {}
            }
        }
        let mut db = db;
        tree.set_cfg_files(&mut db)
            .with_durability(Durability::HIGH)
            .to(cfg_files);
        tree.set_item_files(&mut db)
            .with_durability(Durability::MEDIUM)
            .to(item_files);
        tree.set_overlays(&mut db)
            .with_durability(Durability::HIGH)
            .to(overlays);
        tree.set_meta_files(&mut db)
            .with_durability(Durability::MEDIUM)
            .to(meta_files);
        crate::workspace::prewarm::parse_files(&db, tree);
        // Every file is read: what the cache held for them is not needed
        // again, and a large tree's would be held through the plan.
        if let Some(cache) = crate::db::Db::cache(&db) {
            cache.release(&|path| {
                crate::load::kept_users::is_unit_path(path) || crate::db::cache::is_tree_unit(path)
            });
        }
        let index = crate::load::index::compute_index(&db, tree);
        tree.set_index(&mut db)
            .with_durability(Durability::MEDIUM)
            .to(index);
        let loaded = |db, files, read_diags, remote_tried| Workspace {
            db,
            tree,
            root: root.to_path_buf(),
            files,
            read_diags,
            run_inputs: Default::default(),
            prewarmed: Default::default(),
            remote_tried,
        };
        if options.declarations_only {
            return Ok(loaded(db, files, read_diags, Vec::new()));
        }
        // The files the configuration names (modification scripts) are
        // known only once it is read: read them now, absent ones stay out.
        let mut aux = Vec::new();
        // Interpolation's state files and env_files first: the scripts are
        // found by structuring, which reads them.
        let reads = crate::load::interp::interpolation_files(&db, tree);
        let remote_tried: Vec<String> = reads.remote.iter().map(|r| r.location.clone()).collect();
        let mut referenced = reads.files.clone();
        // A path that would leave the root is never read; the pass says
        // why at the entry (csis_model::confine).
        referenced.retain(|p| csis_model::confine::relative_path_problem("path", p).is_none());
        if !referenced.is_empty() || !reads.remote.is_empty() {
            let mut interp = read_aux(system, root, &real_root, max, &referenced, &mut read_diags);
            interp.extend(read_remote(
                system,
                root,
                max,
                &reads.remote,
                &mut read_diags,
            ));
            for f in &interp {
                let read = ReadText {
                    text: f.1.clone(),
                    digest: None,
                };
                let f = source_file(&db, tree, f.0.clone(), read);
                files.insert(f.path(&db).to_string(), f);
                aux.push(f);
            }
            tree.set_aux_files(&mut db)
                .with_durability(Durability::MEDIUM)
                .to(aux.clone());
        }
        // The scripts the images' modifications name: kept by the cache
        // while the world is as it was, else from every image structured.
        let scripts =
            crate::load::kept_scripts::kept_scripts(&db, tree, &reads).unwrap_or_else(|| {
                crate::workspace::prewarm::structure_images(&db, tree);
                crate::plan::fingerprint::referenced_files(&db, tree).clone()
            });
        for path in scripts {
            if files.contains_key(&path) {
                continue;
            }
            let place = Place::Named {
                root: &real_root,
                rel: &path,
            };
            if let Some(read) = read_limited(
                system,
                &root.join(&path),
                &path,
                place,
                max,
                &mut read_diags,
            ) {
                let f = source_file(&db, tree, Arc::from(path.as_str()), read);
                files.insert(path, f);
                aux.push(f);
            }
        }
        tree.set_aux_files(&mut db)
            .with_durability(Durability::MEDIUM)
            .to(aux.clone());
        // Image templates: a chain is known only as its files are read
        // (each names its parent), so read what the chains want, then ask
        // again, until they want nothing new.
        let mut facts: BTreeMap<String, PathFact> = BTreeMap::new();
        facts.insert(
            String::new(),
            PathFact {
                canonical: Some(real_root.clone()),
                symlink: false,
                digest: None,
            },
        );
        // A vendor image given as a root tarball enters its base's
        // fingerprint by content: its digest, taken once here.
        for rel in crate::plan::fingerprint::vendor_archives(&db, tree) {
            let abs = root.join(&rel);
            let canonical = system.canonicalize(&abs).ok();
            let symlink = system.is_symlink(&abs);
            let inside = canonical
                .as_ref()
                .is_some_and(|c| c.starts_with(&real_root));
            let digest = (inside && !symlink && !system.is_dir(&abs))
                .then(|| system.digest(&abs).ok().flatten())
                .flatten();
            facts.insert(
                rel,
                PathFact {
                    canonical,
                    symlink,
                    digest,
                },
            );
        }
        tree.set_path_facts(&mut db)
            .with_durability(Durability::MEDIUM)
            .to(Arc::new(facts.clone()));
        for _ in 0..TEMPLATE_ROUNDS {
            // Every chain wants at least its leaf, then each level's parent.
            let wanted: Vec<String> = crate::load::templates::wanted_paths(&db, tree)
                .into_iter()
                .filter(|p| !facts.contains_key(p))
                .collect();
            if wanted.is_empty() {
                break;
            }
            for path in wanted {
                let abs = root.join(&path);
                let fact = PathFact {
                    canonical: system.canonicalize(&abs).ok(),
                    symlink: system.is_symlink(&abs),
                    digest: None,
                };
                // Only a file inside the tree is read (a chain leaving it
                // is refused by the resolver with its own message).
                let inside = fact
                    .canonical
                    .as_ref()
                    .is_some_and(|c| c.starts_with(&real_root));
                if inside && !fact.symlink && !system.is_dir(&abs) && !files.contains_key(&path) {
                    let place = Place::Tree { root: &real_root };
                    if let Some(read) =
                        read_limited(system, &abs, &path, place, max, &mut read_diags)
                    {
                        let f = source_file(&db, tree, Arc::from(path.as_str()), read);
                        files.insert(path.clone(), f);
                        aux.push(f);
                    }
                }
                facts.insert(path, fact);
            }
            tree.set_aux_files(&mut db)
                .with_durability(Durability::MEDIUM)
                .to(aux.clone());
            tree.set_path_facts(&mut db)
                .with_durability(Durability::MEDIUM)
                .to(Arc::new(facts.clone()));
        }
        Ok(loaded(db, files, read_diags, remote_tried))
    }
}
