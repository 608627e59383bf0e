//! Fixture trees for csis's tests and benchmarks, loaded one way
//! everywhere: the engine tests, the end-to-end tests and the benchmarks
//! take their trees from here instead of each keeping a copy of the setup.
//!
//! A tree is a directory under `fixtures/` or an inline map of path to
//! text ([`Files`], or the `--- <path>` text [`parse`] reads). It goes into
//! a [`MemorySystem`] and a [`Workspace`] for the engine, or onto disk
//! (a temporary copy) for the `csis` binary.
//!
//! Test code only, never shipped: `publish = false`, and
//! `tests/e2e/layering.rs` lets no shipped crate depend on it.

// A fixture that cannot be read or loaded is a broken test: panicking at
// once says so best, and the setup writes its disks directly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use csis_engine::db::system::{
    HeldLock, MemorySystem, OsSystem, Process, ProcessOutput, SourceRead, Stream, System,
};
use csis_engine::registry::Registry;
use csis_engine::run::{Level, RunRequest, RunSummary, run};
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_plugin_api::Plugin;
use tempfile::TempDir;

/// A tree: each file's text by its path relative to the root.
pub type Files = BTreeMap<String, String>;

/// Where [`workspace`] puts an inline tree in its memory system.
pub const ROOT: &str = "/t";

/// The plugins the `csis` binary links.
pub const LINKED: &[&dyn Plugin] = &[
    &csis_plugin_dummy::DummyPlugin,
    &csis_plugin_local::LocalPlugin,
    &csis_plugin_aws::AwsPlugin,
    &csis_plugin_gce::GcePlugin,
    &csis_plugin_packer::PackerPlugin,
    &csis_plugin_tofu::TofuPlugin,
    &csis_plugin_ict::IctPlugin,
];

/// A small tree's declarations on the local runtime (every builder kind,
/// one OS builder `alma`) and its people (two users, the root group
/// `ops`): the base the engine tests write their images and instances
/// over, as `format!("{LOCAL_BASE}{tree}")`.
pub const LOCAL_BASE: &str = r#"
--- cfg/builders.yml
runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small}
image_builders:
  - {name: ib, type: local, is_default: true}
instance_builders:
  - {name: vm, type: local, is_default: true}
storage_builders:
  - {name: dirs, type: local, is_default: true}
mod_builders:
  - {name: sh, type: bash, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
user_builders:
  - {name: people, type: basic, is_default: true, email_as_username: false}
os_builders:
  - name: alma
    type: local
    is_default: true
    family: alma-linux
    family_version: 10
    identity_types: [unix]
    storage_types: [local]
    runtimes:
      - image_builder: ib
--- groups/people.yml
users:
  - {name: avery.alpha, first_name: Avery, last_name: Alpha}
  - {name: blake.bravo, first_name: Blake, last_name: Bravo}
groups:
  - {name: ops, is_root: true, members: [avery.alpha], description: "{{ group.name }} group"}
"#;

/// An inline tree: each `--- <path>` line starts a file, and the lines up
/// to the next one are its text. A path given twice keeps its last text,
/// so a later tree parsed over an earlier one replaces files by path.
pub fn parse(tree: &str) -> Files {
    let mut files = Files::new();
    let mut current: Option<&mut String> = None;
    for line in tree.lines() {
        if let Some(p) = line.strip_prefix("--- ") {
            let text = files.entry(p.trim().to_string()).or_default();
            text.clear();
            current = Some(text);
        } else if let Some(text) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    files
}

/// The inline text of `files`, which [`parse`] reads back.
pub fn inline(files: &Files) -> String {
    files.iter().map(|(p, t)| format!("--- {p}\n{t}")).collect()
}

/// `fixtures/<name>` of the workspace.
pub fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

/// Every file below `dir`, by its path relative to `dir`; never csis's
/// persisted cache (`.csis/`), which a command run on a fixture in place
/// leaves there and which is no file of the tree.
pub fn files_below(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == ".csis") {
                    continue;
                }
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                out.insert(rel, p);
            }
        }
    }
    out
}

/// A tree on disk (a fixture directory) as an inline map.
pub fn read_tree(dir: &Path) -> Files {
    files_below(dir)
        .into_iter()
        .map(|(rel, p)| (rel, std::fs::read_to_string(p).unwrap()))
        .collect()
}

/// Copy the directory `from`, empty directories included, into `to`;
/// symlinks stay symlinks (an image's absolute links name its own files).
/// Not a persisted cache (`.csis/`) a run in place left: a copy starts
/// without one.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        let ty = e.file_type().unwrap();
        if ty.is_dir() && e.file_name() == ".csis" {
            continue;
        }
        if ty.is_dir() {
            copy_tree(&e.path(), &dest);
        } else if ty.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), dest).unwrap();
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A writable copy of `fixtures/<name>` in a fresh temporary directory,
/// each of its vendor images (`vendor/*/`) given a userland by
/// `fixtures/userland.sh`, as the README tells a user to: the local
/// runtime runs every script inside the image.
pub fn tree(name: &str) -> TempDir {
    let dir = plain_tree(name);
    let vendor = dir.path().join("vendor");
    if vendor.is_dir() {
        let mut images: Vec<PathBuf> = std::fs::read_dir(&vendor)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        images.sort();
        lay_userland(&images);
    }
    dir
}

/// A writable copy of `fixtures/<name>` exactly as committed: no
/// userland in its vendor images. For tests that never bake on `local`
/// and scan every file (a userland's busybox is two megabytes of binary).
pub fn plain_tree(name: &str) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture_dir(name), dir.path());
    dir
}

/// `fixtures/userland.sh DIR...`: a static busybox userland in each.
pub fn lay_userland(dirs: &[PathBuf]) {
    if dirs.is_empty() {
        return;
    }
    let script = fixture_dir("userland.sh");
    let out = std::process::Command::new(&script)
        .args(dirs)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{}: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Write one file of a tree on disk, making its directories.
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
}

/// Write each file of an inline map below `root`.
pub fn write_tree<P: AsRef<str>, T: AsRef<str>>(
    root: &Path,
    files: impl IntoIterator<Item = (P, T)>,
) {
    for (rel, text) in files {
        write_file(root, rel.as_ref(), text.as_ref());
    }
}

/// An inline map written into a fresh temporary directory.
pub fn temp_tree<P: AsRef<str>, T: AsRef<str>>(files: impl IntoIterator<Item = (P, T)>) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), files);
    dir
}

/// A memory system holding an inline map below `root`, and nothing else.
pub fn memory_system<P: AsRef<str>, T: AsRef<str>>(
    root: &Path,
    files: impl IntoIterator<Item = (P, T)>,
) -> MemorySystem {
    let sys = MemorySystem::new();
    for (rel, text) in files {
        sys.write(&root.join(rel.as_ref()), text.as_ref());
    }
    sys
}

/// The registry of `plugins`, which must register.
pub fn registry(plugins: &[&'static dyn Plugin]) -> Arc<Registry> {
    Arc::new(Registry::build(plugins).expect("the plugins register"))
}

/// `Workspace::load` as `csis` starts, on any system.
pub fn load(
    sys: &dyn System,
    registry: Arc<Registry>,
    root: &Path,
    options: &LoadOptions,
) -> Workspace {
    Workspace::load(sys, registry, root, options).expect("the tree reads")
}

/// A tree on disk loaded with the plugins `csis` links, with the
/// persisted cache in `cache` when one is given (as `plan` loads it).
pub fn load_cached(sys: &dyn System, root: &Path, cache: Option<&Path>) -> Workspace {
    let options = LoadOptions {
        cache_dir: cache.map(Path::to_path_buf),
        ..LoadOptions::default()
    };
    load(sys, registry(LINKED), root, &options)
}

/// Every diagnostic of a load, as `csis validate` describes it.
pub fn described_diagnostics(ws: &Workspace) -> Vec<String> {
    ws.load_diagnostics()
        .iter()
        .map(|d| ws.describe(d))
        .collect()
}

/// An inline tree (see [`parse`]) loaded from a memory system at [`ROOT`]
/// whose environment is `env`, with `plugins`.
pub fn workspace_with(
    tree: &str,
    plugins: &[&'static dyn Plugin],
    env: &[(&str, &str)],
    options: &LoadOptions,
) -> Workspace {
    let root = Path::new(ROOT);
    let mut sys = memory_system(root, &parse(tree));
    for (k, v) in env {
        sys = sys.with_env(k, v);
    }
    load(&sys, registry(plugins), root, options)
}

/// An inline tree loaded with the plugins `csis` links, its query log on
/// (tests of incrementality read it).
pub fn workspace(tree: &str, env: &[(&str, &str)]) -> Workspace {
    let options = LoadOptions {
        query_log: true,
        ..LoadOptions::default()
    };
    workspace_with(tree, LINKED, env, &options)
}

/// What [`run_in_memory`] did: the run's summary, its log (each line as
/// `{level:?}: {line}`) and the memory system it wrote to.
pub struct MemoryRun {
    pub summary: RunSummary,
    pub log: Vec<String>,
    pub sys: MemorySystem,
}

/// `req` run over `files`, loaded with `plugins` from a memory system at
/// [`ROOT`] that holds them and nothing else.
pub fn run_in_memory(
    files: &Files,
    plugins: &[&'static dyn Plugin],
    req: &RunRequest,
) -> MemoryRun {
    let ws = workspace_with(&inline(files), plugins, &[], &LoadOptions::default());
    let sys = memory_system(Path::new(ROOT), files);
    let mut log = Vec::new();
    let summary = run(&ws, &sys, req, &mut |level: Level, line: String| {
        log.push(format!("{level:?}: {line}"));
    });
    MemoryRun { summary, log, sys }
}

/// Whether an external tool an interoperability test runs is installed.
/// When it is not, the test is skipped with a notice on stderr; with
/// `require_var` set (CI sets it after installing the tool) a missing
/// tool fails the test instead.
pub fn tool_available(program: &str, require_var: &str, package: &str) -> bool {
    if std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok()
    {
        return true;
    }
    skipped_without(
        require_var,
        &format!("{program} is not installed (apt-get install {package})"),
        "this check is skipped here and left to CI",
    );
    false
}

/// What a test does when a tool it needs is `missing`: fail when
/// `require_var` is set (CI sets it after installing the tool), otherwise
/// say on stderr what is `skipped`.
pub fn skipped_without(require_var: &str, missing: &str, skipped: &str) {
    assert!(
        std::env::var_os(require_var).is_none(),
        "{missing} and {require_var} is set"
    );
    // Written past the test harness's capture, so the skip shows in
    // `cargo test`'s output and is not mistaken for a pass.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "notice: {missing}: {skipped}");
}

/// Checks the HCL under `dirs` with the independent parser
/// (tests/hcl/check_hcl.py over python-hcl2): every file parses, every
/// `var.x` is declared, every local module source exists and every
/// resource, source and backend argument is one its provider documents.
/// `Ok(false)` when python-hcl2 is missing and CSIS_REQUIRE_HCL2 is unset
/// (skipped, with a notice); `Err` carries the checker's problems.
pub fn check_hcl(dirs: &[&std::path::Path]) -> Result<bool, String> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../hcl/check_hcl.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args(dirs)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(2) => {
            skipped_without(
                "CSIS_REQUIRE_HCL2",
                "python-hcl2 is not installed (pip install python-hcl2)",
                "the HCL check is skipped here and left to CI",
            );
            Ok(false)
        }
        _ => Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// The disk, with an environment of the test's own: what a kept unit
/// keyed by the variables its templates read is tested against.
pub struct DiskWithEnv(pub BTreeMap<String, String>);

impl System for DiskWithEnv {
    fn read_to_string(&self, path: &Path) -> io::Result<Option<String>> {
        OsSystem.read_to_string(path)
    }
    fn read_source(&self, path: &Path, max_bytes: u64) -> SourceRead {
        OsSystem.read_source(path, max_bytes)
    }
    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        OsSystem.resolve(path)
    }
    fn list_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        OsSystem.list_files(dir)
    }
    fn is_dir(&self, path: &Path) -> bool {
        OsSystem.is_dir(path)
    }
    fn env(&self) -> BTreeMap<String, String> {
        self.0.clone()
    }
    fn now_unix(&self) -> i64 {
        OsSystem.now_unix()
    }
    fn read_bytes(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        OsSystem.read_bytes(path)
    }
    fn write_atomic(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        OsSystem.write_atomic(path, bytes, executable)
    }
    fn write_replace(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        OsSystem.write_replace(path, bytes, executable)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        OsSystem.remove_file(path)
    }
    fn remove_empty_dirs(&self, dir: &Path) -> io::Result<()> {
        OsSystem.remove_empty_dirs(dir)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        OsSystem.canonicalize(path)
    }
    fn run_streaming(
        &self,
        process: &Process,
        on_line: &mut dyn FnMut(Stream, &str),
    ) -> io::Result<ProcessOutput> {
        OsSystem.run_streaming(process, on_line)
    }
    fn modified(&self, path: &Path) -> io::Result<Option<std::time::SystemTime>> {
        OsSystem.modified(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn HeldLock>>> {
        OsSystem.try_lock(path)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_tool_is_skipped_when_not_required() {
        assert!(!super::tool_available(
            "csis-test-no-such-tool",
            "CSIS_TEST_NEVER_SET",
            "none"
        ));
    }

    use super::*;

    #[test]
    fn an_inline_tree_reads_back_and_a_later_file_replaces_by_path() {
        let files = parse("ignored\n--- a.yml\nx: 1\n--- b/c.yml\n--- a.yml\ny: 2\n");
        assert_eq!(files["a.yml"], "y: 2\n");
        assert_eq!(files["b/c.yml"], "");
        assert_eq!(parse(&inline(&files)), files);
    }

    /// The example tree loads from memory as it does from disk.
    #[test]
    fn a_fixture_directory_loads_into_a_memory_workspace() {
        let files = read_tree(&fixture_dir("config"));
        assert!(files.contains_key("cfg/_config.yml"), "{:?}", files.keys());
        let root = Path::new(ROOT);
        let sys = memory_system(root, &files).with_env("USER", "avery");
        let ws = load(&sys, registry(LINKED), root, &LoadOptions::default());
        let diags = ws.load_diagnostics();
        assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    }
}
