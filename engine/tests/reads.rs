//! What a result was computed from: the inputs db::reads notes, which the
//! persisted cache keys each result by.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::check::item_checks::file_findings_inputs;
use csis_engine::workspace::Workspace;

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
--- images/web.yml
images:
  - name: web
    source_image: base
    group: ops
    description: "built at {{ execution.date }}"
    runtimes:
      - image_builder: ib
--- instances/box.yml
instances:
  - name: box
    image: base
--- instances/other.yml
instances:
  - name: other
    image: base
"#;

fn workspace() -> Workspace {
    csis_test_support::workspace(
        &format!("{}{TREE}", csis_test_support::LOCAL_BASE),
        &[("CSIS_TEST_OWNER", "ada"), ("CSIS_TEST_UNREAD", "x")],
    )
}

fn inputs(ws: &Workspace, path: &str) -> Vec<String> {
    let file = ws.file(path).expect("the file is in the tree");
    assert!(
        ws.load_diagnostics().is_empty(),
        "{:?}",
        ws.load_diagnostics()
    );
    file_findings_inputs(&ws.db, file)
}

#[test]
fn an_instance_files_findings_read_its_image_and_not_the_other_instances() {
    let ws = workspace();
    let read = inputs(&ws, "instances/box.yml");
    for wanted in [
        "text instances/box.yml",
        "text images/base.yml",
        "text cfg/_config.yml",
        "text cfg/builders.yml",
        "field Index",
    ] {
        assert!(
            read.contains(&wanted.to_string()),
            "{wanted} not in {read:?}"
        );
    }
    for unwanted in ["text instances/other.yml", "text images/web.yml", "clock"] {
        assert!(
            !read.contains(&unwanted.to_string()),
            "{unwanted} in {read:?}"
        );
    }
}

#[test]
fn a_template_depends_on_the_variables_it_names_and_on_the_clock_only_when_it_reads_it() {
    let ws = workspace();
    let base = inputs(&ws, "images/base.yml");
    assert!(
        base.contains(&"env CSIS_TEST_OWNER".to_string()),
        "{base:?}"
    );
    assert!(
        !base
            .iter()
            .any(|i| i == "env CSIS_TEST_UNREAD" || i == "env *"),
        "{base:?}"
    );
    assert!(!base.contains(&"clock".to_string()), "{base:?}");
    let web = inputs(&ws, "images/web.yml");
    assert!(web.contains(&"clock".to_string()), "{web:?}");
}
