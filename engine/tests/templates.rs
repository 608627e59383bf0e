//! The string stage and template resolution, on the spec's examples.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_engine::load::render::resolved_tree;
use serde_json::Value as J;

const TREE: &str = r#"
--- cfg/_config.yml
id: templates
config:
  systemuser: "{{ ENV.USER }}"
  flavour: document
  stamp: "{{ execution.timestamp }}"
--- cfg/builders.yml
runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small}
image_builders:
  - {name: ib, type: local, is_default: true}
  - {name: ib2, type: local}
instance_builders:
  - {name: vm, type: local, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
user_builders:
  - name: people
    type: basic
    is_default: true
    email_as_username: false
    email_domain: example.com
    default_user_email_template: "{{ user.name }}@{{ builder.email_domain }}"
os_builders:
  - name: alma
    type: local
    is_default: true
    family: alma-linux
    family_version: 10
    identity_types: [unix]
    description: "{{ config.flavour }}"
    config:
      flavour: builder
    tags:
      OS: "{{ this.parent.family }}"
    runtimes:
      - image_builder: ib
        config:
          flavour: entry
        description: "{{ config.flavour }} on {{ this.image_builder }}"
      - image_builder: ib2
        description: "{{ config.flavour }}"
--- groups/people.yml
users:
  - {name: avery.alpha, first_name: Avery, last_name: Alpha}
  - {name: blake.bravo, first_name: Blake, last_name: Bravo, email: blake@example.invalid}
groups:
  - {name: ops, is_root: true, members: [avery.alpha], description: "{{ group.name }} group"}
--- images/web.yml
images:
  - name: web
    source_image: alma
    group: ops
    runtimes:
      - image_builder: ib
--- instances/box.yml
instances:
  - name: box
    image: web
  - name: box-two
    image: web
    userdata: "echo {{ ops.name }} on {{ here.default_machine_type }} beside {{ box.name }}"
  - name: box-three
    image: web
    ephemeral: true
    machine_type: "007"
    userdata: "{{ instance.name }} {{ this.image }} {{ identified_model.machine_type }} {{ instance.ephemeral }} {{ this.description }} {{ box_three.name }}"
"#;

fn resolved() -> J {
    let ws = csis_test_support::workspace(TREE, &[("USER", "avery")]);
    let diags = ws.load_diagnostics();
    assert!(diags.is_empty(), "{diags:?}");
    resolved_tree(&ws.db, ws.tree)
}

fn find<'a>(tree: &'a J, list: &str, name: &str) -> &'a J {
    tree[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .unwrap_or_else(|| panic!("{list} has no {name}"))
}

#[test]
fn group_description_names_the_group() {
    let t = resolved();
    assert_eq!(find(&t, "groups", "ops")["description"], "ops group");
}

#[test]
fn email_comes_from_the_builder_template_with_email_domain_folded_in() {
    let t = resolved();
    let avery = find(&t, "users", "avery.alpha");
    assert_eq!(avery["email"], "avery.alpha@example.com");
    assert_eq!(
        avery["description"],
        "User avery.alpha / avery.alpha@example.com"
    );
    // A declared email is kept as written.
    assert_eq!(
        find(&t, "users", "blake.bravo")["email"],
        "blake@example.invalid"
    );
}

#[test]
fn this_parent_family_and_env_user() {
    let t = resolved();
    let alma = find(&t, "os_builders", "alma");
    assert_eq!(alma["tags"]["OS"], "alma-linux");
    assert_eq!(t["config"]["systemuser"], "avery");
    // The run's start in the tree's dateformat (MemorySystem starts at
    // 2026-01-01T00:00:00Z).
    assert_eq!(t["config"]["stamp"], "20260101_000000");
}

#[test]
fn a_nested_runtimes_entry_config_shadows_the_enclosing_config() {
    let t = resolved();
    let alma = find(&t, "os_builders", "alma");
    assert_eq!(alma["description"], "builder");
    let runtimes = alma["runtimes"].as_array().unwrap();
    assert_eq!(runtimes[0]["description"], "entry on ib");
    assert_eq!(runtimes[1]["description"], "builder");
}

#[test]
fn templated_defaults_of_images_and_instances() {
    let t = resolved();
    assert_eq!(
        find(&t, "images", "web")["description"],
        "Image web from source image alma"
    );
    assert_eq!(
        find(&t, "instances", "box")["description"],
        "Instance from web"
    );
}

#[test]
fn any_declared_object_by_name_with_either_spelling() {
    let t = resolved();
    assert_eq!(
        find(&t, "instances", "box-two")["userdata"],
        "echo ops on small beside box"
    );
}

#[test]
fn an_item_names_its_own_fields_by_any_of_its_names_typed_as_written() {
    let t = resolved();
    // A quoted number stays a string, a plain `true` is a boolean
    // (rendered as the Python original's Jinja renders one), and a field
    // that is itself a template is rendered in the next pass, as the item
    // found it then.
    assert_eq!(
        find(&t, "instances", "box-three")["userdata"],
        "box-three web 007 True Instance from web box-three"
    );
}

#[test]
fn builder_runtimes_are_canonicalized_and_builders_have_global_ids() {
    let ws = csis_test_support::workspace(TREE, &[]);
    let b = csis_engine::load::builders::builders(&ws.db, ws.tree);
    let ib = b
        .resolve(csis_model::Vct::ImageBuilderModel, "default")
        .unwrap();
    assert_eq!(ib.base.runtime(), Some("here"));
    assert_eq!(ib.global_id(), "image_builder_model::local::ib");
    let found = b
        .by_global_id("runtime_builder_model::local::here")
        .unwrap();
    assert_eq!(found.name(), "here");
    assert!(
        b.by_global_id("runtime_builder_model::dummy::here")
            .is_none()
    );
}
