//! A group whose builder provides no identity type: an image of that group
//! cannot be given identities, and validation says so once per group.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use csis_model::models::BaseModelKind;
use csis_model::{Fields, Map, Vct};
use csis_plugin_api::{Builder, BuilderDecl, ModelSpec, Plugin};

/// A group builder that keeps groups somewhere no machine reads from.
struct Roster;
struct RosterBuilder;
impl Builder for RosterBuilder {}

fn no_extra(_: &mut Fields<'_>) -> Map {
    Map::default()
}

fn builder(_: &std::sync::Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(RosterBuilder)
}

impl Plugin for Roster {
    fn name(&self) -> &'static str {
        "roster"
    }
    fn models(&self) -> Vec<ModelSpec> {
        vec![ModelSpec {
            name: "roster",
            aliases: &[],
            classification: Vct::GroupBuilderModel,
            base: BaseModelKind::Group,
            read_extra: no_extra,
            builder,
        }]
    }
}

const TREE: &str = r#"
--- cfg/_config.yml
id: roster
runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small}
image_builders:
  - {name: ib, type: local, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
  - {name: sheet, type: roster}
user_builders:
  - {name: people, type: basic, is_default: true, email_as_username: false, email_domain: example.com, default_user_email_template: "{{ user.name }}@{{ builder.email_domain }}"}
os_builders:
  - {name: alma, type: local, is_default: true, family: alma-linux, family_version: 10, identity_types: [unix], runtimes: [{image_builder: ib}]}
--- groups/g.yml
users:
  - {name: avery.alpha, first_name: Avery, last_name: Alpha}
groups:
  - {name: ops, is_root: true, members: [avery.alpha]}
  - {name: lab, type: sheet, members: [avery.alpha]}
--- images/i.yml
images:
  - {name: one, source_image: alma, group: lab, runtimes: [{image_builder: ib}]}
  - {name: two, source_image: alma, group: lab, runtimes: [{image_builder: ib}]}
  - {name: three, source_image: alma, group: ops, runtimes: [{image_builder: ib}]}
"#;

#[test]
fn a_group_whose_builder_gives_no_identity_type_is_refused_once() {
    let ws = csis_test_support::workspace_with(
        TREE,
        &[&csis_plugin_local::LocalPlugin, &Roster],
        &[],
        &Default::default(),
    );
    let errors: Vec<String> = ws
        .load_diagnostics()
        .iter()
        .filter(|d| d.is_error())
        .map(|d| ws.describe(d))
        .collect();
    assert_eq!(
        errors,
        ["groups/g.yml:5:5: group 'lab' has no identity builder"]
    );
}
