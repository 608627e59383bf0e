//! The image graph: the order images bake in (every parent before its
//! children), the series the plan decides in that order, and a chain whose
//! `source_image` links come round to where they started.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::plan::bakes::{bake_keys, image_graph};
use csis_test_support::{LOCAL_BASE, workspace};

/// `web` and `api` build on `base`, which builds on the OS builder
/// `alma`; `edge` builds on `web`. Declared children first, so the order
/// is the graph's, not the files'.
const CHAINS: &str = r#"
--- images/a.yml
images:
  - {name: edge, source_image: web, group: ops, runtimes: [{image_builder: ib}]}
  - {name: web, source_image: base, group: ops, runtimes: [{image_builder: ib}]}
--- images/b.yml
images:
  - {name: api, source_image: base, group: ops, runtimes: [{image_builder: ib}]}
  - {name: base, source_image: alma, group: ops, runtimes: [{image_builder: ib}]}
"#;

#[test]
fn every_image_bakes_after_its_parent_and_the_plan_walks_that_order() {
    let ws = workspace(&format!("{LOCAL_BASE}{CHAINS}"), &[]);
    let graph = image_graph(&ws.db, ws.tree);
    assert!(graph.diags.is_empty(), "{:?}", graph.diags);
    let order = &graph.order;
    let at = |name: &str| order.iter().position(|n| n == name).unwrap();
    assert_eq!(order.len(), 4, "{order:?}");
    assert!(
        at("base") < at("web") && at("base") < at("api"),
        "{order:?}"
    );
    assert!(at("web") < at("edge"), "{order:?}");
    // The OS builder's series first, then the images in the graph's order,
    // each on the one runtime its image builder runs on.
    let keys = bake_keys(&ws.db, ws.tree);
    let mut wanted = vec![("alma".to_string(), "here".to_string())];
    wanted.extend(order.iter().map(|name| (name.clone(), "here".to_string())));
    assert_eq!(keys, wanted);
}

#[test]
fn a_chain_that_comes_round_is_refused_naming_its_links() {
    let tree = format!(
        "{LOCAL_BASE}{}",
        r#"
--- images/loop.yml
images:
  - {name: one, source_image: two, group: ops, runtimes: [{image_builder: ib}]}
  - {name: two, source_image: one, group: ops, runtimes: [{image_builder: ib}]}
"#
    );
    let ws = workspace(&tree, &[]);
    let graph = image_graph(&ws.db, ws.tree);
    assert!(graph.order.is_empty(), "{:?}", graph.order);
    let messages: Vec<&str> = graph.diags.iter().map(|d| d.message.as_str()).collect();
    assert!(
        messages
            == [
                "image chain cycle: one -> two -> one (source_image links never reach a base image)"
            ]
            || messages
                == [
                    "image chain cycle: two -> one -> two (source_image links never reach a base image)"
                ],
        "{messages:?}"
    );
}
