//! What the benchmarks share: the tree in a [`MemorySystem`], the registry
//! the cli links, the measured operations (each checking its outcome, so a
//! benchmark never times a refusal), and the warm edits.
//!
//! Both `benches/benches/engine.rs` (divan) and `benches/benches/summary.rs`
//! (the markdown table) run exactly these.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use csis_engine::db::Db as _;
use csis_engine::db::run_input::{RunInput, RunOptions};
use csis_engine::db::system::MemorySystem;
use csis_engine::registry::Registry;
use csis_engine::run::plan_report::{PlanReport, plan_report};
use csis_engine::run::{Level, RunRequest, RunSummary};
use csis_engine::workspace::{LoadOptions, Workspace};

use crate::{TreeSize, generate};

/// Where the tree sits in the memory system.
pub const ROOT: &str = "/bench";

/// Whether the process runs as a benchmark (`cargo bench` passes `--bench`)
/// rather than as a test (`cargo test --benches`, or `cargo bench -- --test`),
/// where each benchmark runs once.
pub fn bench_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
}

/// The tree size: `CSIS_BENCH_SIZE=small|reference`; unset, the reference
/// tree when benchmarking and the small one in test mode, so a test run of
/// the benchmarks takes seconds.
#[allow(clippy::disallowed_methods)] // a benchmark's own knob, not the engine's environment
pub fn size_from_env() -> (&'static str, TreeSize) {
    match std::env::var("CSIS_BENCH_SIZE").as_deref() {
        Ok("small") => ("small", TreeSize::small()),
        Ok("reference") => ("reference", TreeSize::reference()),
        Ok(other) => panic!("CSIS_BENCH_SIZE={other}: expected small or reference"),
        Err(_) if bench_mode() => ("reference", TreeSize::reference()),
        Err(_) => ("small", TreeSize::small()),
    }
}

/// A generated tree and the registry, made once per process.
pub struct Fixture {
    pub name: &'static str,
    pub size: TreeSize,
    pub files: Vec<(String, String)>,
    pub registry: Arc<Registry>,
}

impl Fixture {
    pub fn new(name: &'static str, size: TreeSize) -> Fixture {
        let files = generate(&size);
        Fixture {
            name,
            size,
            files,
            registry: csis_test_support::registry(csis_test_support::LINKED),
        }
    }

    pub fn from_env() -> Fixture {
        let (name, size) = size_from_env();
        Fixture::new(name, size)
    }

    pub fn root() -> &'static Path {
        Path::new(ROOT)
    }

    /// A fresh memory system holding the tree and nothing else (no
    /// generated/ or meta-state/ from an earlier run).
    pub fn system(&self) -> MemorySystem {
        csis_test_support::memory_system(Self::root(), self.files.iter().map(|(p, t)| (p, t)))
    }

    /// `Workspace::load`, as `csis` does at start (no query log, as
    /// without `--stats`).
    pub fn load(&self, sys: &MemorySystem) -> Workspace {
        self.load_with(sys, false)
    }

    /// `Workspace::load` with the query log on or off (`--stats` and
    /// `watch` turn it on).
    pub fn load_with(&self, sys: &MemorySystem, query_log: bool) -> Workspace {
        csis_test_support::load(
            sys,
            self.registry.clone(),
            Self::root(),
            &LoadOptions {
                query_log,
                ..LoadOptions::default()
            },
        )
    }

    /// A workspace loaded and planned once, for warm re-plans; its query
    /// log is on, as in `csis watch`, which reports executed queries.
    pub fn warmed(&self) -> (MemorySystem, Workspace) {
        let sys = self.system();
        let ws = self.load_with(&sys, true);
        plan(&ws, &sys);
        (sys, ws)
    }

    /// A file's generated text.
    pub fn text(&self, path: &str) -> &str {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, t)| t.as_str())
            .unwrap_or_else(|| panic!("the generated tree has no {path}"))
    }

    /// One line about the tree.
    pub fn describe(&self) -> String {
        let s = &self.size;
        format!(
            "{} tree: {} files, {} images (chains of {}, {} modifications each), {} instances, {} storages, {} users, {} groups",
            self.name,
            self.files.len(),
            s.images,
            s.chain_depth,
            s.mods_per_image,
            s.instances,
            s.storages,
            s.users,
            s.groups
        )
    }
}

/// The options of `csis plan` (and of a dry run).
pub fn dry_run_options() -> RunOptions {
    RunOptions {
        dry_run: true,
        ..RunOptions::default()
    }
}

/// The run's validation, as `plan_report` and `run` start: panics on any
/// error. Returns the number of warnings.
pub fn validate(ws: &Workspace, sys: &MemorySystem) -> usize {
    let run = RunInput::new(&ws.db, dry_run_options());
    let (_infos, warnings, errors) = csis_engine::run::validation(ws, sys, run);
    assert!(
        errors.is_empty(),
        "{} validation error(s), first: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    warnings.len()
}

/// `csis plan`: panics unless the plan is ok.
pub fn plan(ws: &Workspace, sys: &MemorySystem) -> PlanReport {
    let report = plan_report(ws, sys, dry_run_options(), Default::default());
    assert!(
        report.ok,
        "plan refused: {:?}; {:?}",
        report.error,
        &report.validation_errors[..report.validation_errors.len().min(5)]
    );
    report
}

/// Every lifecycle the registry knows, in declared order (what `csis run
/// all` requests).
pub fn lifecycles(registry: &Registry) -> Vec<String> {
    registry
        .lifecycles()
        .iter()
        .map(|l| l.name.to_string())
        .collect()
}

/// `csis run all --no-apply` (a dry run: generation of every lifecycle,
/// the run recorded as `csis run` records it), written into `sys`. Panics
/// unless every lifecycle generated.
pub fn dry_run(ws: &Workspace, sys: &MemorySystem, stats: bool) -> RunSummary {
    generate_all(ws, sys, true, stats)
}

/// What `csis watch --generate` runs after each save: a dry run of every
/// lifecycle with generation that leaves no records (no run summary, no
/// journal entry, no read-models), here with `--stats`. Panics unless every
/// lifecycle generated.
pub fn watch_generate(ws: &Workspace, sys: &MemorySystem) -> RunSummary {
    generate_all(ws, sys, false, true)
}

/// A dry run of every lifecycle, recording the run or not; panics unless
/// every lifecycle generated.
fn generate_all(ws: &Workspace, sys: &MemorySystem, record: bool, stats: bool) -> RunSummary {
    let req = RunRequest {
        shard: None,
        lifecycles: lifecycles(ws.db.registry()),
        options: dry_run_options(),
        no_apply: true,
        csis: PathBuf::from("csis"),
        commit: false,
        record,
        stats,
        explain: false,
        no_state_query: true,
        jobs: 0,
        fail_fast: false,
        lock_token: None,
        carried_env: Vec::new(),
    };
    let summary = csis_engine::run::run(ws, sys, &req, &mut |_: Level, _: String| {});
    assert!(
        summary.ok,
        "dry run failed: {:?}; {:?}; {:?}",
        summary.error,
        &summary.validation_errors[..summary.validation_errors.len().min(5)],
        summary
            .lifecycles
            .iter()
            .filter(|(_, o)| o.status != "generated")
            .collect::<Vec<_>>()
    );
    assert_eq!(summary.lifecycles.len(), req.lifecycles.len());
    for (name, outcome) in &summary.lifecycles {
        assert_eq!(outcome.status, "generated", "{name}: {:?}", outcome.error);
    }
    summary
}

/// A warm edit: one file set alternately to two texts, so every
/// application is a real change (neither is the generated text).
pub struct Edit {
    pub path: String,
    texts: [String; 2],
    n: usize,
}

impl Edit {
    pub fn new(path: &str, a: String, b: String) -> Edit {
        assert_ne!(a, b);
        Edit {
            path: path.to_string(),
            texts: [a, b],
            n: 0,
        }
    }

    /// Set the next text.
    pub fn apply(&mut self, ws: &mut Workspace) {
        let text = &self.texts[self.n % 2];
        self.n += 1;
        assert!(
            ws.set_file_text(&self.path, text),
            "{} is not in the tree",
            self.path
        );
    }
}

/// The image every image edit touches: the second image of the second
/// chain (there in the small tree too).
pub const IMAGE_FILE: &str = "images/chain-0001/img-00005.yml";
/// The user roster every user edit touches, and the user in it.
pub const USERS_FILE: &str = "groups/users-001.yml";
const USER_LAST_NAME: &str = "last_name: Last200}";
pub const CFG_FILE: &str = "cfg/_config.yml";

/// The warm edits, by what they change.
pub enum EditKind {
    /// A description added to one image (not an input of its fingerprint
    /// nor of anything generated from a modification).
    ImageDescription,
    /// One image's first modification script: its fingerprint changes, so
    /// it and the images below it in its chain re-bake.
    ImageModification,
    /// One user's last name.
    User,
    /// A comment line at the top of one image file.
    Comment,
    /// A key added under `config:` in cfg/_config.yml, which every item
    /// depends on.
    Cfg,
}

impl EditKind {
    pub fn edit(&self, fx: &Fixture) -> Edit {
        let two = |path: &str, f: &dyn Fn(&str, &str) -> String| {
            let base = fx.text(path);
            let (a, b) = (f(base, "a"), f(base, "b"));
            assert_ne!(a, base, "the edit of {path} changes nothing");
            Edit::new(path, a, b)
        };
        match self {
            EditKind::ImageDescription => two(IMAGE_FILE, &|base, v| {
                format!("{base}    description: bench edit {v}\n")
            }),
            EditKind::ImageModification => two(IMAGE_FILE, &|base, v| {
                base.replacen(" step 0\"", &format!(" step 0 {v}\""), 1)
            }),
            EditKind::User => two(USERS_FILE, &|base, v| {
                base.replacen(USER_LAST_NAME, &format!("last_name: Edited{v}}}"), 1)
            }),
            EditKind::Comment => two(IMAGE_FILE, &|base, v| format!("# bench edit {v}\n{base}")),
            EditKind::Cfg => two(CFG_FILE, &|base, v| {
                format!("{base}  bench_edit: \"{v}\"\n")
            }),
        }
    }
}

/// First saves as people make them (issue 20): one edit of each of
/// several distinct files, none edited before in the session. Image
/// modification scripts at depth 0 and at the chain's last depth in five
/// chains spread over the tree, one user's last name in two rosters, a
/// storage's and an instance's description.
pub fn first_saves(fx: &Fixture) -> Vec<Edit> {
    let s = &fx.size;
    let depth = s.chain_depth.max(1);
    let chains = s.images / depth;
    let mut out = Vec::new();
    let once = |path: String, f: &dyn Fn(&str) -> String| {
        let base = fx.text(&path);
        let edited = f(base);
        assert_ne!(edited, base, "the edit of {path} changes nothing");
        Edit::new(&path, edited, base.to_string())
    };
    for k in 0..5 {
        let chain = k * chains / 5;
        for at in [0, depth - 1] {
            let i = chain * depth + at;
            out.push(once(
                format!("images/chain-{chain:04}/img-{i:05}.yml"),
                &|t| t.replacen(" step 0\"", " step 0 saved\"", 1),
            ));
        }
    }
    let rosters = s.users.div_ceil(200);
    for chunk in [rosters / 3, 2 * rosters / 3] {
        let u = chunk * 200;
        out.push(once(format!("groups/users-{chunk:03}.yml"), &|t| {
            t.replacen(&format!("last_name: Last{u}}}"), "last_name: Saved}", 1)
        }));
    }
    out.push(once("storages/storages-000.yml".into(), &|t| {
        t.replacen(
            "  - name: vol-0000\n",
            "  - name: vol-0000\n    description: saved\n",
            1,
        )
    }));
    out.push(once("instances/hosts-0000.yml".into(), &|t| {
        t.replacen(
            "  - name: host-00000\n",
            "  - name: host-00000\n    description: saved\n",
            1,
        )
    }));
    out
}
