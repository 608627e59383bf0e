//! `${env.NAME}` and `${terraform.KEY}` in the load (spec 003): each
//! state file read once per invocation, per-entry tokens, builder lists,
//! the sections left alone, a plugin's section, and an edit of a state
//! file re-executing only the entries that read it.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use csis_engine::db::system::{
    HeldLock, MemorySystem, Process, ProcessOutput, SourceRead, Stream, System,
};
use csis_engine::load::builders::builders;
use csis_engine::load::items::ItemId;
use csis_engine::load::items_model::{resolved_value, structured_item};
use csis_engine::load::strings::rendered_cfg;
use csis_engine::workspace::{LoadOptions, Workspace};
use csis_model::{ItemKind, Value, Vct};
use csis_test_support::{LOCAL_BASE, ROOT, memory_system, parse, registry};

mod common;
use common::{NETWORKS, Networks};

/// A memory system that counts the reads of each file.
struct Counting {
    inner: MemorySystem,
    reads: Mutex<BTreeMap<PathBuf, usize>>,
}

impl Counting {
    fn reads_of(&self, rel: &str) -> usize {
        let reads = self.reads.lock().unwrap();
        reads.get(&Path::new(ROOT).join(rel)).copied().unwrap_or(0)
    }
}

impl System for Counting {
    fn read_to_string(&self, path: &Path) -> io::Result<Option<String>> {
        *self
            .reads
            .lock()
            .unwrap()
            .entry(path.to_path_buf())
            .or_default() += 1;
        self.inner.read_to_string(path)
    }
    fn read_source(&self, path: &Path, max_bytes: u64) -> SourceRead {
        *self
            .reads
            .lock()
            .unwrap()
            .entry(path.to_path_buf())
            .or_default() += 1;
        self.inner.read_source(path, max_bytes)
    }
    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        self.inner.resolve(path)
    }
    fn list_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list_files(dir)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }
    fn env(&self) -> BTreeMap<String, String> {
        self.inner.env()
    }
    fn now_unix(&self) -> i64 {
        self.inner.now_unix()
    }
    fn read_bytes(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        *self
            .reads
            .lock()
            .unwrap()
            .entry(path.to_path_buf())
            .or_default() += 1;
        self.inner.read_bytes(path)
    }
    fn write_atomic(&self, path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
        self.inner.write_atomic(path, bytes, executable)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_empty_dirs(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_empty_dirs(dir)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.inner.canonicalize(path)
    }
    fn run_streaming(
        &self,
        process: &Process,
        on_line: &mut dyn FnMut(Stream, &str),
    ) -> io::Result<ProcessOutput> {
        self.inner.run_streaming(process, on_line)
    }
    fn modified(&self, path: &Path) -> io::Result<Option<std::time::SystemTime>> {
        self.inner.modified(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn HeldLock>>> {
        self.inner.try_lock(path)
    }
}

const STATE: &str = r#"{"version": 4, "outputs": {
  "subnet_id": {"value": "subnet-prod"},
  "web_zone": {"value": "zone-web"},
  "db_zone": {"value": "zone-db"},
  "cidr": {"value": "10.9.0.0/16"},
  "machine": {"value": "medium"}
}}"#;

const TREE: &str = r#"
--- cfg/_config.yml
id: interp
config:
  environment: prod
interpolation:
  terraform:
    - name: net
      path: state/{environment}.tfstate
    - name: own
      path: state/{name}.tfstate
executables:
  - {name: bash, binary: bash, description: "${env.NOT_INTERPOLATED}", version: ">=4"}
--- state/prod.tfstate
STATE
--- state/web.tfstate
{"version": 4, "outputs": {"role": {"value": "web-from-own"}}}
--- state/db.tfstate
{"version": 4, "outputs": {"role": {"value": "db-from-own"}}}
--- images/base.yml
images:
  - name: base
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
--- instances/web.yml
instances:
  - name: web
    image: base
    availability_zone: "${terraform.net.{name}_zone}"
    tags:
      subnet: "${terraform.net.subnet_id}"
      role: "${terraform.own.role}"
--- instances/db.yml
instances:
  - name: db
    image: base
    availability_zone: "${terraform.net.{name}_zone}"
    tags:
      subnet: "${terraform.net.subnet_id}"
      role: "${terraform.own.role}"
--- instances/cache.yml
instances:
  - name: cache
    image: base
    env_file: cache.env
    tags:
      user: "${env.Cache_User}"
      subnet: "${terraform.net.subnet_id}"
--- cache.env
CACHE_USER=from-file
"#;

fn tree_text() -> String {
    format!("{LOCAL_BASE}{}", TREE.replace("STATE", STATE))
}

fn load_counting(text: &str, env: &[(&str, &str)]) -> (Workspace, Arc<Counting>) {
    let root = Path::new(ROOT);
    let mut sys = memory_system(root, &parse(text));
    for (k, v) in env {
        sys = sys.with_env(k, v);
    }
    let sys = Arc::new(Counting {
        inner: sys,
        reads: Mutex::new(BTreeMap::new()),
    });
    let ws = Workspace::load(
        sys.as_ref(),
        registry(csis_test_support::LINKED),
        root,
        &LoadOptions {
            query_log: true,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    (ws, sys)
}

fn resolved(ws: &Workspace, kind: ItemKind, name: &str) -> Value {
    let id = ItemId::new(&ws.db, ws.tree, kind, name);
    let si = structured_item(&ws.db, id);
    assert!(
        si.diags.iter().all(|d| !d.is_error()),
        "{:?}",
        si.diags.iter().map(|d| ws.describe(d)).collect::<Vec<_>>()
    );
    resolved_value(&ws.db, id).unwrap().1
}

fn at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(v, |v, k| v.get(k).unwrap())
        .as_str()
        .unwrap()
}

#[test]
fn each_state_file_is_read_once_for_every_entry_that_reads_it() {
    let (ws, sys) = load_counting(&tree_text(), &[("CACHE_USER", "from-env")]);
    ws.load_diagnostics();
    let web = resolved(&ws, ItemKind::INSTANCES, "web");
    let db = resolved(&ws, ItemKind::INSTANCES, "db");
    let cache = resolved(&ws, ItemKind::INSTANCES, "cache");
    // Three entries read state/prod.tfstate: one read.
    assert_eq!(sys.reads_of("state/prod.tfstate"), 1);
    // {name} in the location makes two locations: each read once.
    assert_eq!(sys.reads_of("state/web.tfstate"), 1);
    assert_eq!(sys.reads_of("state/db.tfstate"), 1);
    assert_eq!(sys.reads_of("cache.env"), 1);
    // Tokens in the key and in the location.
    assert_eq!(at(&web, &["availability_zone"]), "zone-web");
    assert_eq!(at(&db, &["availability_zone"]), "zone-db");
    assert_eq!(at(&web, &["tags", "role"]), "web-from-own");
    assert_eq!(at(&db, &["tags", "role"]), "db-from-own");
    assert_eq!(at(&web, &["tags", "subnet"]), "subnet-prod");
    // env_file wins over the process environment, case-insensitively.
    assert_eq!(at(&cache, &["tags", "user"]), "from-file");
    assert!(cache.get("env_file").is_none());
}

#[test]
fn sections_not_declared_interpolatable_are_left_as_written() {
    let (ws, _) = load_counting(&tree_text(), &[("NOT_INTERPOLATED", "/bin/bash")]);
    let rendered = rendered_cfg(&ws.db, ws.tree);
    let exe = &rendered.value.get("executables").unwrap().as_seq().unwrap()[0];
    assert_eq!(at(exe, &["description"]), "${env.NOT_INTERPOLATED}");
    // Nor are the sources' own declarations.
    let decl = &rendered
        .value
        .get("interpolation")
        .and_then(|i| i.get("terraform"))
        .unwrap()
        .as_seq()
        .unwrap()[0];
    assert_eq!(at(decl, &["path"]), "state/{environment}.tfstate");
}

#[test]
fn a_builder_entry_is_interpolated_and_a_missing_env_names_its_place() {
    let text = tree_text().replace(
        "default_machine_type: small}",
        "default_machine_type: \"${terraform.net.machine}\", description: \"${env.NOPE_NOT_SET}\"}",
    );
    let (ws, _) = load_counting(&text, &[]);
    let lines: Vec<String> = ws
        .load_diagnostics()
        .iter()
        .map(|d| ws.describe(d))
        .collect();
    let line = lines
        .iter()
        .find(|l| l.contains("NOPE_NOT_SET"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(
        line.starts_with("cfg/builders.yml:2:")
            && line.contains("interpolation: runtime_builders entry 'here', field 'description': environment variable 'NOPE_NOT_SET' is not set"),
        "{line}"
    );
    let text = tree_text().replace(
        "default_machine_type: small}",
        "default_machine_type: \"${terraform.net.machine}\"}",
    );
    let (ws, _) = load_counting(&text, &[]);
    let b = builders(&ws.db, ws.tree);
    assert!(b.resolve(Vct::RuntimeBuilderModel, "here").is_some());
    let rendered = rendered_cfg(&ws.db, ws.tree);
    let here = &rendered
        .value
        .get("runtime_builders")
        .unwrap()
        .as_seq()
        .unwrap()[0];
    assert_eq!(at(here, &["default_machine_type"]), "medium");
    assert!(b.diags.iter().all(|d| !d.is_error()), "{:?}", b.diags);
}

#[test]
fn a_state_edit_reexecutes_only_the_entries_that_read_it() {
    let (mut ws, _) = load_counting(&tree_text(), &[("CACHE_USER", "x")]);
    ws.load_diagnostics();
    ws.db.query_log().start();
    assert!(ws.set_file_text(
        "state/web.tfstate",
        r#"{"version": 4, "outputs": {"role": {"value": "web-two"}}}"#
    ));
    ws.load_diagnostics();
    let executed: Vec<String> = ws
        .db
        .query_log()
        .take()
        .into_iter()
        .filter(|q| q.starts_with("structured_item"))
        .collect();
    assert_eq!(executed.len(), 1, "{executed:?}");
    let web = resolved(&ws, ItemKind::INSTANCES, "web");
    assert_eq!(at(&web, &["tags", "role"]), "web-two");
}

static WITH: Networks = Networks {
    validated: false,
    interpolated: true,
};
static WITHOUT: Networks = Networks {
    validated: false,
    interpolated: false,
};

#[test]
fn a_section_a_plugin_registers_is_interpolated_and_others_are_not() {
    let text = r#"
--- cfg/_config.yml
id: kinds
interpolation:
  terraform:
    - {name: net, path: state/prod.tfstate}
runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small}
--- networks/lan.yml
networks:
  - {name: lan, cidr: "${terraform.cidr}"}
--- state/prod.tfstate
STATE
"#
    .replace("STATE", STATE);
    let cidr = |plugin: &'static Networks| {
        let ws = csis_test_support::workspace_with(
            &text,
            &[&csis_plugin_local::LocalPlugin, plugin],
            &[],
            &LoadOptions::default(),
        );
        let kind = ItemKind::new(&NETWORKS);
        let id = ItemId::new(&ws.db, ws.tree, kind, "lan");
        resolved_value(&ws.db, id)
            .as_ref()
            .and_then(|(_, v)| v.get("cidr"))
            .and_then(Value::as_str)
            .unwrap()
            .to_string()
    };
    assert_eq!(cidr(&WITH), "10.9.0.0/16");
    assert_eq!(cidr(&WITHOUT), "${terraform.cidr}");
}

#[test]
fn tolerate_missing_env_in_config_warns_once_per_name() {
    let text = tree_text()
        .replace("id: interp\n", "id: interp\ntolerate_missing_env: true\n")
        .replace("${env.Cache_User}", "${env.UNSET_ONE}")
        .replace(
            "    env_file: cache.env\n",
            "    env_file: cache.env\n    description: \"${env.UNSET_ONE} ${env.UNSET_TWO}\"\n",
        );
    let (ws, _) = load_counting(&text, &[]);
    let diags = ws.load_diagnostics();
    let missing: Vec<String> = diags
        .iter()
        .filter(|d| d.message.contains("UNSET_"))
        .map(|d| ws.describe(d))
        .collect();
    assert_eq!(missing.len(), 2, "{missing:#?}");
    assert!(
        missing.iter().all(|l| l.contains("warning: ")),
        "{missing:#?}"
    );
    assert!(
        diags
            .iter()
            .all(|d| !d.message.contains("tolerate_missing_env")),
        "the key is not refused"
    );
    let cache = resolved(&ws, ItemKind::INSTANCES, "cache");
    assert_eq!(at(&cache, &["tags", "user"]), "<missing env UNSET_ONE>");
}

#[test]
fn a_local_state_backend_of_the_tree_is_a_source() {
    let text = format!(
        "{LOCAL_BASE}{}",
        r#"
--- cfg/_config.yml
id: interp
interpolation:
  terraform:
    - {name: shared, backend: files, workspace: network}
state_backends:
  - {name: files, type: local, config: {bucket: tfstate, prefix: prod-}}
--- tfstate/prod-network.tfstate
{"version": 4, "outputs": {"subnet_id": {"value": "subnet-from-backend"}}}
--- images/base.yml
images:
  - name: base
    source_image: alma
    group: ops
    tags: {subnet: "${terraform.subnet_id}"}
    runtimes:
      - image_builder: ib
"#
    );
    let (ws, sys) = load_counting(&text, &[]);
    let base = resolved(&ws, ItemKind::IMAGES, "base");
    assert_eq!(at(&base, &["tags", "subnet"]), "subnet-from-backend");
    assert_eq!(sys.reads_of("tfstate/prod-network.tfstate"), 1);
}

const REMOTE_TREE: &str = r#"
--- cfg/_config.yml
id: interp
interpolation:
  terraform:
    - {name: shared, backend: corp, workspace: network}
    - {name: own, backend: gstate, workspace: "{name}-net"}
state_backends:
  - {name: corp, type: fetched, is_default: true, config: {bucket: BUCKET, prefix: csis/}}
  - {name: gstate, type: gcs, config: {bucket: g-state, prefix: env/}}
--- images/base.yml
images:
  - name: base
    source_image: alma
    group: ops
    tags: {subnet: "${terraform.shared.subnet_id}"}
    runtimes:
      - image_builder: ib
--- instances/web.yml
instances:
  - name: web
    image: base
    tags:
      subnet: "${terraform.shared.subnet_id}"
      role: "${terraform.own.role}"
--- instances/db.yml
instances:
  - name: db
    image: base
    tags:
      subnet: "${terraform.shared.subnet_id}"
      role: "${terraform.own.role}"
"#;

/// A state backend type of these tests only (a TEST DOUBLE, not a
/// provider): the plugin itself fetches a `fetched` backend's objects
/// (`StateRead::Fetch`), as the tofu plugin's `s3` does through the AWS
/// SDK. Each test names its own bucket; the answers and the fetches made
/// are kept per bucket.
struct Fetching;

/// Per bucket: the answer a fetch gets (the object, or why not), and the
/// keys fetched, in order.
type Fetches = BTreeMap<String, (Result<String, String>, Vec<String>)>;
static FETCHES: Mutex<Fetches> = Mutex::new(BTreeMap::new());

fn fetch(fields: &[(String, String)]) -> Result<Vec<u8>, String> {
    let field = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    let (bucket, key) = (field("bucket").unwrap(), field("key").unwrap());
    let mut all = FETCHES.lock().unwrap();
    let (answer, keys) = all.get_mut(&bucket).expect("the test answers its bucket");
    keys.push(key);
    answer.clone().map(String::into_bytes)
}

impl csis_plugin_api::Plugin for Fetching {
    fn name(&self) -> &'static str {
        "fetching-test-double"
    }
    fn models(&self) -> Vec<csis_plugin_api::ModelSpec> {
        struct Nothing;
        impl csis_plugin_api::Builder for Nothing {}
        vec![csis_plugin_api::ModelSpec::plain(
            "fetched",
            Vct::StateBackendModel,
            csis_model::models::BaseModelKind::State,
            |_| Box::new(Nothing),
        )]
    }
    fn state_reader(
        &self,
        _backend: &csis_plugin_api::BuilderDecl,
        object: &csis_plugin_api::state_object::StateObject,
    ) -> Option<csis_plugin_api::state_object::StateRead> {
        use csis_plugin_api::state_object::{StateFetch, StateObject, StateRead};
        let StateObject::Other { bucket, key, .. } = object else {
            return None;
        };
        Some(StateRead::Fetch(StateFetch {
            request: format!("TestGet {bucket}/{key}"),
            fields: vec![
                ("bucket".into(), bucket.clone()),
                ("key".into(), key.clone()),
            ],
            help: "check the test's answer".into(),
            fetch,
        }))
    }
}

static FETCHING: Fetching = Fetching;

fn gcs_line(name: &str) -> String {
    format!("gcloud storage cat gs://g-state/env/{name}-net/default.tfstate")
}

/// A workspace over the remote tree whose `fetched` objects live in
/// `bucket` and answer `shared`, and whose state commands answer as
/// `answers` say (a command line with no answer fails to start).
fn load_remote(
    bucket: &str,
    shared: Result<&str, &str>,
    answers: &[(&str, i32, &str, &str)],
) -> (Workspace, Arc<Counting>) {
    FETCHES.lock().unwrap().insert(
        bucket.to_string(),
        (
            shared.map(str::to_string).map_err(str::to_string),
            Vec::new(),
        ),
    );
    let root = Path::new(ROOT);
    let tree = format!("{LOCAL_BASE}{}", REMOTE_TREE.replace("BUCKET", bucket));
    let sys = memory_system(root, &parse(&tree));
    for (line, code, stdout, stderr) in answers {
        sys.answer(line, *code, stdout, stderr);
    }
    let sys = Arc::new(Counting {
        inner: sys,
        reads: Mutex::new(BTreeMap::new()),
    });
    let mut plugins: Vec<&'static dyn csis_plugin_api::Plugin> = csis_test_support::LINKED.to_vec();
    plugins.push(&FETCHING);
    let ws = Workspace::load(
        sys.as_ref(),
        registry(&plugins),
        root,
        &LoadOptions::default(),
    )
    .unwrap();
    (ws, sys)
}

/// The keys fetched from `bucket`.
fn fetched(bucket: &str) -> Vec<String> {
    FETCHES.lock().unwrap()[bucket].1.clone()
}

fn own_state(role: &str) -> String {
    format!(r#"{{"version": 4, "outputs": {{"role": {{"value": "{role}"}}}}}}"#)
}

#[test]
fn a_remote_state_is_read_by_its_plugin_once_per_distinct_object() {
    let shared = r#"{"version": 4, "outputs": {"subnet_id": {"value": "subnet-fetched"}}}"#;
    let (web, db) = (own_state("web-from-gcs"), own_state("db-from-gcs"));
    let (ws, sys) = load_remote(
        "once",
        Ok(shared),
        &[
            (&gcs_line("web"), 0, &web, ""),
            (&gcs_line("db"), 0, &db, ""),
        ],
    );
    let errors: Vec<String> = ws
        .load_diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| ws.describe(d))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let base = resolved(&ws, ItemKind::IMAGES, "base");
    let web = resolved(&ws, ItemKind::INSTANCES, "web");
    let db = resolved(&ws, ItemKind::INSTANCES, "db");
    assert_eq!(at(&base, &["tags", "subnet"]), "subnet-fetched");
    assert_eq!(at(&web, &["tags", "subnet"]), "subnet-fetched");
    assert_eq!(at(&web, &["tags", "role"]), "web-from-gcs");
    assert_eq!(at(&db, &["tags", "role"]), "db-from-gcs");
    // Three entries read the fetched object: one fetch. {name} in the
    // workspace makes two gcs objects: one command each, run from the
    // root.
    assert_eq!(fetched("once"), ["csis/network.tfstate"]);
    let mut ran: Vec<(String, PathBuf)> = sys.inner.ran();
    ran.sort();
    assert_eq!(
        ran,
        [
            (gcs_line("db"), PathBuf::from(ROOT)),
            (gcs_line("web"), PathBuf::from(ROOT)),
        ]
    );
}

#[test]
fn a_failing_state_read_is_a_load_error_naming_source_backend_and_request() {
    let db = own_state("db");
    let (ws, _) = load_remote(
        "fail",
        Err("AccessDenied: not yours"),
        &[
            (
                &gcs_line("web"),
                1,
                "",
                "\nERROR: (gcloud.storage.cat) HTTPError 403: denied\nsecond line\nthird line\nfourth line\n",
            ),
            (&gcs_line("db"), 0, &db, ""),
        ],
    );
    let errors: Vec<String> = ws
        .load_diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| ws.describe(d))
        .collect();
    for want in [
        "interpolation source 'shared' (state backend 'corp', fetched): fetched://fail/csis/network.tfstate: \
TestGet fail/csis/network.tfstate failed: AccessDenied: not yours -- check the test's answer",
        "interpolation source 'own' (state backend 'gstate', gcs): gcs://g-state/env/web-net/default.tfstate: \
`gcloud storage cat gs://g-state/env/web-net/default.tfstate` exited 1: \
ERROR: (gcloud.storage.cat) HTTPError 403: denied | second line | third line -- \
check that gcloud is logged in with an account that can read gs://g-state/env/web-net/default.tfstate \
(gcloud auth login, or gcloud auth application-default login) and that the object exists",
    ] {
        assert!(errors.iter().any(|e| e == want), "{want}\n{errors:#?}");
    }
    // The entries that read it say where to look.
    assert!(
        errors.iter().any(|e| e.contains(
            "field 'tags.subnet': terraform source 'shared': fetched://fail/csis/network.tfstate: the state object could not be read (the error reading it is reported above)"
        )),
        "{errors:#?}"
    );
}

#[test]
fn a_missing_state_cli_says_which_and_why() {
    // No answer for the gcloud lines: the program is not there.
    let shared = r#"{"version": 4, "outputs": {"subnet_id": {"value": "subnet-s3"}}}"#;
    let (ws, _) = load_remote("missing-cli", Ok(shared), &[]);
    let errors: Vec<String> = ws
        .load_diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| ws.describe(d))
        .collect();
    // Said once, for the first object (db before web), not per object.
    let missing: Vec<&String> = errors
        .iter()
        .filter(|e| e.contains("not on PATH"))
        .collect();
    assert_eq!(
        missing,
        [
            "interpolation source 'own' (state backend 'gstate', gcs): gcs://g-state/env/db-net/default.tfstate: \
cannot run `gcloud storage cat gs://g-state/env/db-net/default.tfstate`: 'gcloud' is not on PATH; \
csis runs the Google Cloud CLI (gcloud) to read the state object from Cloud Storage for this source -- install it, or put it on PATH"
        ],
        "{errors:#?}"
    );
}

#[test]
fn an_edit_that_reads_another_remote_object_wants_a_reload() {
    let shared = r#"{"version": 4, "outputs": {"subnet_id": {"value": "subnet-s3"}}}"#;
    let (web, db) = (own_state("web"), own_state("db"));
    let (mut ws, _) = load_remote(
        "reload",
        Ok(shared),
        &[
            (&gcs_line("web"), 0, &web, ""),
            (&gcs_line("db"), 0, &db, ""),
        ],
    );
    ws.load_diagnostics();
    // An edit reading the objects already read: no reload.
    assert!(ws.set_file_text(
        "instances/web.yml",
        "instances:\n  - name: web\n    image: base\n    tags:\n      role: \"${terraform.own.role}\"\n"
    ));
    assert!(!ws.wants_reload());
    // Renamed, the entry reads gs://g-state/env/web2-net/...: the load
    // never ran that command, so the watch must load again.
    assert!(ws.set_file_text(
        "instances/web.yml",
        "instances:\n  - name: web2\n    image: base\n    tags:\n      role: \"${terraform.own.role}\"\n"
    ));
    assert!(ws.wants_reload());
}
