//! Generation by emission: after a one-image edit, generation re-executes
//! the emissions of that image's chain (its bake and its children's, whose
//! fingerprints read it, and the launches of the instances made from it)
//! and the queries that merge and list them, and nothing of any other
//! image, instance or lifecycle. Read from salsa's log of executed
//! queries.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::db::run_input::RunOptions;
use csis_engine::run::generate::{Hook, PhaseKey, UnitKey, emissions};
use csis_engine::workspace::Workspace;
use csis_model::Vct;
use csis_plugin_api::ExecutionLifecyclePhase as P;
use salsa::plumbing::AsId;

/// The tree over csis_test_support::LOCAL_BASE: two chains (base → web →
/// web2, and other), an instance on each of web, base and other.
const TREE: &str = r#"
--- cfg/_config.yml
id: emission
--- images/base.yml
images:
  - name: base
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
    modifications:
      - {name: tools, script: "echo base"}
--- images/web.yml
images:
  - name: web
    source_image: base
    group: ops
    runtimes:
      - image_builder: ib
    modifications:
      - {name: site, script: "echo web"}
--- images/web2.yml
images:
  - name: web2
    source_image: web
    group: ops
    runtimes:
      - image_builder: ib
--- images/other.yml
images:
  - name: other
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
--- instances/box.yml
instances:
  - name: box
    image: web
  - name: cache
    image: base
  - name: solo
    image: other
"#;

const LIFECYCLES: [&str; 6] = [
    "identity",
    "storage",
    "base-image",
    "instance-image",
    "release",
    "retention",
];

fn tree() -> String {
    format!("{}{TREE}", csis_test_support::LOCAL_BASE)
}

fn dry_run() -> RunOptions {
    RunOptions {
        dry_run: true,
        ..RunOptions::default()
    }
}

/// Every lifecycle's files, as comparable text.
fn generated(ws: &Workspace) -> Vec<String> {
    let run = ws.run_input(&dry_run());
    let mut out = Vec::new();
    for (lc, em) in LIFECYCLES
        .iter()
        .zip(emissions(&ws.db, ws.tree, run, &LIFECYCLES))
    {
        // base-image refuses here (LOCAL_BASE names no vendor tree): said
        // the same warm and cold.
        out.push(format!("{lc}: error {:?}", em.error));
        for (path, bytes) in &em.files {
            out.push(format!("{lc}/{path}: {}", String::from_utf8_lossy(bytes)));
        }
    }
    out
}

/// How the query log names a query of `key`.
fn logged(query: &str, key: impl AsId) -> String {
    format!("{query}({:?})", key.as_id())
}

#[test]
fn a_one_image_edit_regenerates_only_that_images_chain_and_what_lists_it() {
    let mut ws = csis_test_support::workspace(&tree(), &[]);
    let cold = generated(&ws);
    assert!(
        cold.iter()
            .any(|f| f
                .starts_with("instance-image/ib/image-generation/ib-image-generation-web2.json")),
        "{cold:#?}"
    );
    // The file is being worked on (its first save lowers its durability,
    // see `durability_for`), then saved with a changed script.
    let text = ws.file("images/web.yml").unwrap().text(&ws.db).to_string();
    assert!(ws.set_file_text("images/web.yml", &format!("{text}# opened\n")));
    generated(&ws);
    ws.db.query_log().start();
    assert!(ws.set_file_text("images/web.yml", &text.replace("echo web", "echo web v2")));
    let warm = generated(&ws);
    let log = ws.db.query_log().take();

    // The same bytes as a cold generation of the edited tree, and not the
    // bytes before the edit.
    let edited = csis_test_support::workspace(&tree().replace("echo web\"", "echo web v2\""), &[]);
    assert_eq!(warm, generated(&edited));
    assert_ne!(warm, cold);

    let db = &ws.db;
    let run = ws.run_input(&dry_run());
    let phase = |lc: &str, vct: Vct, builder: &str, p: P| {
        PhaseKey::new(
            db,
            ws.tree,
            run,
            lc.to_string(),
            vct,
            builder.to_string(),
            p,
            Hook::During,
        )
    };
    let bakes = phase(
        "instance-image",
        Vct::ImageBuilderModel,
        "ib",
        P::ImageGeneration,
    );
    let launches = phase(
        "instance-image",
        Vct::InstanceBuilderModel,
        "vm",
        P::InstanceGeneration,
    );
    let unit = |pk, name: &str| logged("unit_part", UnitKey::new(db, pk, name.to_string()));

    let executed = |query: &str| -> Vec<&String> {
        log.iter()
            .filter(|q| q.starts_with(&format!("{query}(")))
            .collect()
    };
    // The emissions re-executed: the edited image's bake, its child's
    // (its fingerprint reads the parent's), the launch of the instance
    // made from it. Not base's, other's, nor the other instances'.
    let mut units: Vec<&String> = executed("unit_part");
    units.sort();
    let mut expected = [
        unit(bakes, "web"),
        unit(bakes, "web2"),
        unit(launches, "box"),
    ];
    expected.sort();
    assert_eq!(
        units,
        expected.iter().collect::<Vec<_>>(),
        "executed: {log:#?}"
    );
    // The phase that concatenates the bakes; the launch of box came out
    // the same (the image's group did not change), so the launches' phase
    // is not recomputed, nor any other.
    assert_eq!(
        executed("phase_part"),
        vec![&logged("phase_part", bakes)],
        "{log:#?}"
    );
    // The unit lists read names only: not recomputed.
    assert_eq!(executed("emission_units"), Vec::<&String>::new());
    // The instance-image directory is merged again, and its command list
    // recomputed; the commands did not change (a dry run with no build
    // recorded bakes every image either way), so the runner script that
    // lists them is not rendered again.
    // (Queries of several keys are logged by an id of their own: counted.)
    assert_eq!(executed("lifecycle_parts").len(), 1, "{log:#?}");
    assert_eq!(executed("lifecycle_emission").len(), 1, "{log:#?}");
    assert_eq!(executed("lifecycle_deferred").len(), 1, "{log:#?}");
    assert_eq!(executed("runner_script_file").len(), 0, "{log:#?}");
    // The release and retention lifecycles' after-generate steps read
    // every image's `release:` and `retention:`: recomputed (and the same).
    assert_eq!(executed("after_generate").len(), 2, "{log:#?}");
}
