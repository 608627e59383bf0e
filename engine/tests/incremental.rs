//! Incrementality: which queries re-execute after an edit.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::workspace::Workspace;

/// The tree over csis_test_support::LOCAL_BASE.
const TREE: &str = r#"
--- cfg/_config.yml
id: incr
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
    runtimes:
      - image_builder: ib
--- instances/box.yml
instances:
  - name: box
    image: web
"#;

fn workspace() -> Workspace {
    csis_test_support::workspace(&format!("{}{TREE}", csis_test_support::LOCAL_BASE), &[])
}

/// The executed queries by name, with the file or item each one was about.
fn executed(ws: &Workspace) -> Vec<String> {
    let mut v: Vec<String> = ws
        .db
        .query_log()
        .take()
        .into_iter()
        .map(|q| q.split('(').next().unwrap_or("").to_string())
        .collect();
    v.sort();
    v
}

fn count(log: &[String], name: &str) -> usize {
    log.iter().filter(|q| *q == name).count()
}

#[test]
fn an_image_edit_reexecutes_only_that_file_and_what_it_reaches() {
    let mut ws = workspace();
    let before = ws.load_diagnostics();
    assert!(before.is_empty(), "{before:?}");
    let index_before = ws.tree.index(&ws.db).clone();

    ws.db.query_log().start();
    let text = "images:\n  - name: web\n    source_image: base\n    group: ops\n    description: edited\n    runtimes:\n      - image_builder: ib\n";
    assert!(ws.set_file_text("images/web.yml", text));
    assert!(ws.load_diagnostics().is_empty());
    let log = executed(&ws);

    // The edited file is read again into entries (parsed to its value
    // alone: no diagnostic asks for its positions); no other file is.
    assert_eq!(count(&log, "parse_file"), 0, "{log:?}");
    assert_eq!(count(&log, "item_file_entries"), 1, "{log:?}");
    // The file names the same items: the name index stays as it was.
    assert_eq!(ws.tree.index(&ws.db), &index_before);
    // The edited image, and the instance that reads it through `image:`,
    // and the findings of their two files.
    assert_eq!(count(&log, "structured_item"), 2, "{log:?}");
    assert_eq!(count(&log, "file_findings"), 2, "{log:?}");
    // Nothing of cfg/ and no other item is touched.
    for untouched in [
        "cfg_document",
        "rendered_cfg",
        "builders",
        "check_groups",
        "load_diagnostics",
        "validation_diagnostics",
    ] {
        assert_eq!(
            count(&log, untouched),
            0,
            "{untouched} re-executed: {log:?}"
        );
    }
}

#[test]
fn a_comment_only_edit_reexecutes_nothing_past_the_files_entries() {
    let mut ws = workspace();
    assert!(ws.load_diagnostics().is_empty());
    ws.db.query_log().start();
    let text = "# the web image\nimages:\n  - name: web   # trailing comment\n    source_image: base\n    group: ops\n\n    runtimes:\n      - image_builder: ib\n";
    assert!(ws.set_file_text("images/web.yml", text));
    assert!(ws.load_diagnostics().is_empty());
    let log = executed(&ws);
    assert_eq!(log, ["item_file_entries"], "{log:?}");
}

#[test]
fn a_user_edit_leaves_images_alone() {
    let mut ws = workspace();
    assert!(ws.load_diagnostics().is_empty());
    ws.db.query_log().start();
    let text = "users:\n  - {name: avery.alpha, first_name: Avery, last_name: Alphonse}\n  - {name: blake.bravo, first_name: Blake, last_name: Bravo}\ngroups:\n  - {name: ops, is_root: true, members: [avery.alpha], description: \"{{ group.name }} group\"}\n";
    assert!(ws.set_file_text("groups/people.yml", text));
    assert!(ws.load_diagnostics().is_empty());
    let log = executed(&ws);
    // The file's items are structured again (an item's entry is not a
    // query of its own); only avery's changed, so only the checks that
    // read users run again: the file's own, and the instance's, whose
    // user-data lists the users; nothing of the images.
    assert_eq!(count(&log, "structured_item"), 3, "{log:?}");
    assert_eq!(count(&log, "file_findings"), 2, "{log:?}");
    for untouched in ["builders", "capability_diagnostics", "input_fingerprint"] {
        assert_eq!(count(&log, untouched), 0, "{untouched}: {log:?}");
    }
}

#[test]
fn the_first_save_of_a_file_costs_what_the_second_does() {
    // A file keeps the durability it was loaded with (see
    // `durability_for`): were its first save to lower it, salsa would not
    // backdate anything downstream, and every query reading the file,
    // tree-wide reports included, would run again although no value
    // changed.
    let mut ws = workspace();
    assert!(ws.load_diagnostics().is_empty());
    let commented = "# the web image\nimages:\n  - name: web\n    source_image: base\n    group: ops\n    runtimes:\n      - image_builder: ib\n";
    for text in [commented.to_string(), format!("# again\n{commented}")] {
        ws.db.query_log().start();
        assert!(ws.set_file_text("images/web.yml", &text));
        assert!(ws.load_diagnostics().is_empty());
        assert_eq!(executed(&ws), ["item_file_entries"]);
    }
}
