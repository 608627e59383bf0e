//! What a plan read of the environment and the clock, as db::reads notes
//! it: a plan record is kept only with the variables its templates looked
//! up, and never when it read the clock (run/plan_record.rs).
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use csis_engine::db::Db;
use csis_engine::workspace::LoadOptions;
use csis_test_support::{LINKED, LOCAL_BASE, ROOT, workspace_with};

const TREE: &str = r#"
--- cfg/_config.yml
id: reads
config:
  owner: "{{ ENV.CSIS_TEST_OWNER }}"
--- images/base.yml
images:
  - name: base
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
--- instances/box.yml
instances:
  - name: box
    image: base
"#;

/// An image whose description reads the time of the run.
const DATED: &str = r#"
--- images/web.yml
images:
  - name: web
    source_image: base
    group: ops
    description: "built at {{ execution.date }}"
    runtimes:
      - image_builder: ib
"#;

/// The variables the load and its checks read (None: the whole
/// environment), and whether they read the clock.
fn reads(tree: &str) -> (Option<Vec<String>>, bool) {
    let options = LoadOptions {
        cache_dir: Some(PathBuf::from(format!("{ROOT}/.csis/cache"))),
        ..LoadOptions::default()
    };
    let ws = workspace_with(
        &format!("{LOCAL_BASE}{tree}"),
        LINKED,
        &[("CSIS_TEST_OWNER", "ada"), ("CSIS_TEST_UNREAD", "x")],
        &options,
    );
    assert!(
        ws.load_diagnostics().is_empty(),
        "{:?}",
        ws.load_diagnostics()
    );
    let noted = ws.db.cache().expect("loaded with a cache").env_reads();
    (noted.vars(), noted.read_clock())
}

#[test]
fn a_template_reads_the_variables_it_names_and_not_the_clock() {
    let (vars, clock) = reads(TREE);
    let vars = vars.expect("no template iterates the whole environment");
    assert!(vars.contains(&"CSIS_TEST_OWNER".to_string()), "{vars:?}");
    assert!(!vars.contains(&"CSIS_TEST_UNREAD".to_string()), "{vars:?}");
    assert!(!clock);
}

#[test]
fn a_template_that_names_the_run_reads_the_clock() {
    let (_, clock) = reads(&format!("{TREE}{DATED}"));
    assert!(clock);
}
