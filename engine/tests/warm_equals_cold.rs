//! The property behind incrementality: after any sequence of edits, the
//! warm engine (one database, edits applied as input changes) answers
//! exactly as a cold engine loaded from the same files: the same
//! diagnostics, the same bake plan, the same generated files byte for byte.
//! Edit sequences come from a seeded generator, so a failure names its
//! seed and replays.
//!
//! And the persisted cache's property: a fresh process that loads the
//! cache the previous one wrote answers exactly as a cold one, whatever
//! became of the cache file in between.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::db::Db;
use csis_engine::db::run_input::{RunInput, RunOptions};
use csis_engine::db::system::OsSystem;
use csis_engine::load::kept_instances::kept_instances;
use csis_engine::plan::bakes::bake_plan;
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_test_support::{
    LINKED, LOCAL_BASE, inline, load, parse, registry, temp_tree, workspace, write_file,
};

/// The tree over csis_test_support::LOCAL_BASE.
const TREE: &str = r#"
--- cfg/_config.yml
id: prop
config:
  owner: platform
--- images/base.yml
images:
  - name: base
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
    modifications:
      - {name: tools, script: "echo base"}
      - {name: kit, scripts: [scripts/kit.sh]}
--- scripts/kit.sh
echo kit
--- images/web.yml
images:
  - name: web
    source_image: base
    group: ops
    description: "{{ image.name }} image"
    runtimes:
      - image_builder: ib
    modifications:
      - {name: site, script: "echo web"}
--- groups/staff.yml
users:
  - {name: casey.charlie, first_name: Casey, last_name: Charlie}
  - {name: dana.delta, first_name: Dana, last_name: Delta, description: "{{ user.first_name }} of staff"}
--- storages/data.yml
storages:
  - name: data
    groups: [ops]
--- instances/box.yml
instances:
  - name: box
    image: web
    description: "box of {{ config.owner }}"
    userdata: echo box
    storages:
      - {name: data, mount_point: /srv/data}
  - name: cache
    image: base
--- instances/more.yml
instances:
  - name: spare
    image: base
    userdata: echo spare
"#;

fn tree() -> String {
    format!("{LOCAL_BASE}{TREE}")
}

const LIFECYCLES: [&str; 6] = [
    "identity",
    "storage",
    "base-image",
    "instance-image",
    "release",
    "retention",
];

/// A small deterministic generator (xorshift64*), so no dependency and a
/// seed replays a failure exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One random edit of one file's text: what a person does while editing.
fn edit(rng: &mut Rng, text: &str, original: &str, step: usize) -> String {
    match rng.below(8) {
        // A comment: changes no value.
        0 => format!("# edited at step {step}\n{text}"),
        // Break the YAML mid-edit.
        1 => format!("{text}  - [unclosed\n"),
        // Fix it: back to what it was.
        2 => original.to_string(),
        // Change a script, a description or userdata.
        3 => text
            .replacen("echo base", &format!("echo base {step}"), 1)
            .replacen("echo web", &format!("echo web {step}"), 1)
            .replacen("echo box", &format!("echo box {step}"), 1),
        // Rename an item.
        4 => text
            .replacen("name: cache", &format!("name: cache{step}"), 1)
            .replacen("name: blake.bravo", &format!("name: blake.bravo{step}"), 1)
            // A name another instances file declares first.
            .replacen("name: spare", "name: box", 1),
        // A foreign key that names nothing, and back.
        5 => text
            .replacen("image: base", "image: nowhere", 1)
            .replacen("image: nowhere", "image: base", 1)
            .replacen("group: ops", "group: ghosts", 1),
        // Change a group's roster or a storage's groups.
        6 => text
            .replacen(
                "members: [avery.alpha]",
                "members: [avery.alpha, blake.bravo]",
                1,
            )
            .replacen("groups: [ops]", "groups: [ops]\n    public_read: true", 1),
        // Whitespace only.
        _ => text.replace(": ", ":  ").replace(":  ", ": "),
    }
}

/// Everything a re-plan answers, as comparable text.
fn answers(ws: &Workspace) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut diags: Vec<String> = ws
        .load_diagnostics()
        .iter()
        .map(|d| ws.describe(d))
        .collect();
    diags.sort();
    let run = RunInput::new(&ws.db, RunOptions::default());
    // As `csis plan` does: every fingerprint first, on every core (and
    // then the cache keeps them, plan/kept_fingerprints.rs).
    let keys = csis_engine::plan::bakes::bake_keys(&ws.db, ws.tree);
    csis_engine::workspace::prewarm::fingerprints(&ws.db, ws.tree, &keys);
    let plan = bake_plan(&ws.db, ws.tree, run)
        .decisions
        .iter()
        .map(|(s, rt, d)| format!("{s}@{rt}: {} {}", d.bake, d.reason))
        .collect();
    let mut files = Vec::new();
    for (lc, em) in LIFECYCLES.iter().zip(csis_engine::run::generate::emissions(
        &ws.db,
        ws.tree,
        run,
        &LIFECYCLES,
    )) {
        files.push(format!("{lc}: error {:?}", em.error));
        for (path, bytes) in &em.files {
            files.push(format!("{lc}/{path}: {}", String::from_utf8_lossy(bytes)));
        }
        for d in &em.deferred {
            files.push(format!("{lc} deferred: {d:?}"));
        }
    }
    (diags, plan, files)
}

#[test]
fn after_any_edit_sequence_warm_answers_as_cold() {
    let original = parse(&tree());
    let editable: Vec<&String> = original.keys().filter(|p| !p.starts_with("cfg/")).collect();
    let initial = answers(&workspace(&tree(), &[]));
    let (mut broken, mut replanned, mut regenerated) = (0, 0, 0);
    // Bounded for CI: 12 sequences of 8 edits, each checked against a
    // cold load.
    for seed in 1..=12u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut files = original.clone();
        let mut warm = workspace(&inline(&files), &[]);
        for step in 0..8 {
            let path = editable[rng.below(editable.len())].clone();
            let new = edit(&mut rng, &files[&path], &original[&path], step);
            files.insert(path.clone(), new.clone());
            assert!(
                warm.set_file_text(&path, &new),
                "{path} is a file of the tree"
            );
            let cold = workspace(&inline(&files), &[]);
            let (w, c) = (answers(&warm), answers(&cold));
            assert_eq!(
                w.0, c.0,
                "seed {seed} step {step} ({path}): diagnostics differ"
            );
            assert_eq!(w.1, c.1, "seed {seed} step {step} ({path}): plans differ");
            assert_eq!(
                w.2, c.2,
                "seed {seed} step {step} ({path}): generated files differ"
            );
            broken += usize::from(w.0.iter().any(|d| d.contains("invalid YAML")));
            replanned += usize::from(w.1 != initial.1);
            regenerated += usize::from(w.2 != initial.2);
        }
    }
    // The sequences did reach the cases that matter.
    assert!(
        broken > 0 && replanned > 0 && regenerated > 0,
        "{broken} {replanned} {regenerated}"
    );
}

/// What happens to one file of the cache between two processes.
fn damage(rng: &mut Rng, dir: &std::path::Path) -> Option<&'static str> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cache"))
        .collect();
    files.sort();
    let file = files.get(rng.below(files.len().max(1)))?;
    let mut bytes = std::fs::read(file).unwrap();
    match rng.below(6) {
        0 => {
            bytes.truncate(rng.below(bytes.len()));
            std::fs::write(file, bytes).unwrap();
            Some("truncated")
        }
        1 => {
            let bit = rng.below(bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
            std::fs::write(file, bytes).unwrap();
            Some("a bit flipped")
        }
        2 => {
            std::fs::remove_file(file).unwrap();
            None
        }
        _ => None,
    }
}

#[test]
fn after_any_edit_a_fresh_process_with_the_cache_answers_as_cold() {
    let original = parse(&tree());
    let editable: Vec<&String> = original.keys().filter(|p| !p.starts_with("cfg/")).collect();
    let cache_dir = tempfile::tempdir().unwrap();
    let fresh = |root: &std::path::Path, cache: bool| {
        let options = LoadOptions {
            cache_dir: cache.then(|| cache_dir.path().to_path_buf()),
            ..LoadOptions::default()
        };
        load(&OsSystem, registry(LINKED), root, &options)
    };
    let (mut taken, mut ignored, mut instances_kept) = (0, 0, 0);
    for seed in 1..=6u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut files = original.clone();
        let root = temp_tree(&files);
        let first = fresh(root.path(), true);
        csis_engine::run::persist_cache::save_cache(&first, &OsSystem).unwrap();
        for step in 0..8 {
            let path = editable[rng.below(editable.len())].clone();
            let new = edit(&mut rng, &files[&path], &original[&path], step);
            write_file(root.path(), &path, &new);
            files.insert(path.clone(), new);
            let damaged = damage(&mut rng, cache_dir.path());
            let cached = fresh(root.path(), true);
            let cache = cached.db.cache().unwrap();
            let at = format!("seed {seed} step {step} ({path}, cache {damaged:?})");
            assert_eq!(cache.notice().is_some(), damaged.is_some(), "{at}");
            ignored += usize::from(damaged.is_some());
            let (c, cold) = (answers(&cached), answers(&fresh(root.path(), false)));
            taken += cache.taken();
            instances_kept += ["instances/box.yml", "instances/more.yml"]
                .into_iter()
                .filter_map(|p| cached.file(p))
                .filter(|f| kept_instances(&cached.db, *f).is_some())
                .count();
            assert_eq!(c.0, cold.0, "{at}: diagnostics differ");
            assert_eq!(c.1, cold.1, "{at}: plans differ");
            assert_eq!(c.2, cold.2, "{at}: generated files differ");
            csis_engine::run::persist_cache::save_cache(&cached, &OsSystem).unwrap();
        }
    }
    // The cache did serve files, instances files' checks among them, and
    // damaged caches were met.
    assert!(
        taken > 0 && ignored > 0 && instances_kept > 0,
        "{taken} {ignored} {instances_kept}"
    );
}
