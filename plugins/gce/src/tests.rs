#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::path::DocPath;
use csis_model::{Diagnostic, Fields, Origin};
use csis_plugin_api::{Builder, BuilderDecl, PackerBake, PackerParent, PackerValue};

use super::*;

const RUNTIME: &str = r#"
name: gce1
type: gce
region: europe-west1
default_machine_type: e2-small
networking:
  network: csis-net
  subnets:
    - {subnet_id: csis-subnet, is_default: true}
"#;

fn decl(yaml: &str) -> (BuilderDecl, Vec<String>) {
    let (v, _) = csis_yaml::parse(yaml).unwrap();
    let m = v.as_map().unwrap();
    let mut diags: Vec<Diagnostic> = Vec::new();
    let f = Fields::new(
        m,
        Origin::new("cfg/x.yml", DocPath::default()),
        "runtime 'gce1'",
        &mut diags,
    );
    let d = GcePlugin.models()[0].declare(f);
    (d, diags.into_iter().map(|d| d.message.clone()).collect())
}

fn runtime(extra: &str) -> Box<dyn Builder> {
    let (d, diags) = decl(&format!("{RUNTIME}project: my-proj\n{extra}"));
    assert!(diags.is_empty(), "{diags:?}");
    builder(&Arc::new(d))
}

fn bake(parent: PackerParent) -> PackerBake {
    PackerBake {
        series: "Web_App".into(),
        tree: "Demo".into(),
        source_name: "Web_App".into(),
        parent,
        family: "debian".into(),
        machine_type: "e2-medium".into(),
        disk_size: Some(20),
        ssh_username: "packer".into(),
        tags: vec![
            ("Team".into(), PackerValue::Literal("Platform Ops".into())),
            (
                "csis_identity_types".into(),
                PackerValue::Literal("unix,ldap".into()),
            ),
            (
                "csis_parent".into(),
                PackerValue::Literal("series:base".into()),
            ),
            ("csis_run".into(), PackerValue::Run),
        ],
    }
}

fn source(rt: &dyn Builder, parent: PackerParent) -> String {
    let block = rt.packer_source(&bake(parent)).unwrap().unwrap();
    csis_hcl::Body::new().block(block).render()
}

#[test]
fn a_vendor_image_by_family_with_labels_under_the_gce_rules() {
    let rt = runtime("");
    let text = source(
        rt.as_ref(),
        PackerParent::Vendor {
            image_id: None,
            query: BTreeMap::from([("family".to_string(), "debian-12".to_string())]),
            owners: vec!["debian-cloud".into()],
        },
    );
    assert_eq!(
        text,
        r#"source "googlecompute" "Web_App" {
  project_id              = "my-proj"
  zone                    = "europe-west1-a"
  machine_type            = "e2-medium"
  source_image_family     = "debian-12"
  source_image_project_id = ["debian-cloud"]
  image_name              = "web-app-${local.csis_run_label}"
  image_family            = "demo-web-app"
  disk_size               = 20
  network                 = "csis-net"
  subnetwork              = "csis-subnet"
  tags                    = ["csis-bake"]
  ssh_username            = "packer"
  image_labels            = {
    csis_identity_types = "unix_ldap"
    csis_parent         = "series_base"
    csis_run            = local.csis_run_label
    team                = "platform_ops"
  }
}
"#
    );
}

#[test]
fn parents_by_name_and_by_family_in_the_runtimes_project() {
    let rt = runtime("zone: europe-west1-c\n");
    let text = source(
        rt.as_ref(),
        PackerParent::Build("base-2026-12-02t15-53-24".into()),
    );
    assert!(
        text.contains("  zone                    = \"europe-west1-c\"\n"),
        "{text}"
    );
    assert!(text.contains("  source_image            = \"base-2026-12-02t15-53-24\"\n  source_image_project_id = [\"my-proj\"]\n"), "{text}");
    let text = source(rt.as_ref(), PackerParent::Series("Base_OS".into()));
    assert!(
        text.contains("  source_image_family     = \"demo-base-os\"\n"),
        "{text}"
    );
    let err = rt
        .packer_source(&bake(PackerParent::Vendor {
            image_id: None,
            query: BTreeMap::from([("owner".to_string(), "x".to_string())]),
            owners: Vec::new(),
        }))
        .unwrap_err();
    assert_eq!(
        err[0].message,
        "image 'Web_App' on runtime 'gce1': a GCE vendor image query takes family, name and project (not owner)"
    );
}

#[test]
fn the_default_zone_is_the_default_availability_zone() {
    let (d, _) = decl(&format!("{RUNTIME}project: p\n").replace(
        "networking:\n",
        "networking:\n  availability_zones:\n    - {name: europe-west1-b, is_default: true}\n",
    ));
    let text = csis_hcl::Body::new()
        .block(
            builder(&Arc::new(d))
                .packer_source(&bake(PackerParent::Build("x".into())))
                .unwrap()
                .unwrap(),
        )
        .render();
    assert!(
        text.contains("zone                    = \"europe-west1-b\""),
        "{text}"
    );
}

#[test]
fn label_keys_follow_the_gce_rules() {
    assert_eq!(label_key_problem("team"), None);
    assert_eq!(label_key_problem("cost_center-2"), None);
    assert_eq!(label_key_problem("équipe"), None);
    assert_eq!(
        label_key_problem("Team"),
        Some("a label key must start with a lowercase letter".into())
    );
    assert_eq!(
        label_key_problem("2team"),
        Some("a label key must start with a lowercase letter".into())
    );
    assert_eq!(
        label_key_problem("team.name"),
        Some("a GCE label key has lowercase letters, digits, underscores and dashes only ('.' is not one)".into())
    );
    assert_eq!(
        label_key_problem(&"k".repeat(64)),
        Some(format!(
            "a GCE label key has 1 to 63 characters ('{}' has 64)",
            "k".repeat(64)
        ))
    );
    assert_eq!(label_value("Platform Ops,X"), "platform_ops_x");
    assert_eq!(label_value(&"v".repeat(70)).len(), 63);
}

#[test]
fn one_naming_rule_for_images_instances_and_disks() {
    assert_eq!(resource_name("9lives", 63), "csis-9lives");
    assert_eq!(image_family("demo", "9lives"), "demo-csis-9lives");
    // The tree's part is cut at 20 characters, the series' at 42: a
    // family stays within Compute Engine's 63.
    let long = image_family(&"t".repeat(30), &"s".repeat(60));
    assert_eq!(long, format!("{}-{}", "t".repeat(20), "s".repeat(42)));
    assert_eq!(long.len(), 63);
    assert_eq!(name("gce_data"), "gce-data");
    assert_eq!(name("Data.Disk"), "data-disk");
    assert_eq!(name("x_"), "x");
    assert_eq!(name(&"a".repeat(80)).len(), 63);
    assert_eq!(resource_name("web_app-", 5), "web-a");
    assert_eq!(resource_name("ab-cd", 3), "ab");
}

#[test]
fn the_names_validation_compares_are_the_ones_the_bakes_and_roots_use() {
    use csis_model::ItemKind;
    let d = derived_names;
    assert_eq!(
        d(ItemKind::IMAGES, "Web_App"),
        [
            ("GCE image family", "<tree>-web-app".to_string()),
            ("GCE image name", "web-app-<run>".to_string()),
        ]
    );
    assert_eq!(
        d(ItemKind::INSTANCES, "web-gce"),
        [("GCE instance name", "web-gce".to_string())]
    );
    assert_eq!(
        d(ItemKind::STORAGES, "gce_data"),
        [("GCE disk name", "gce-data".to_string())]
    );
    assert_eq!(d(ItemKind::USERS, "a.b"), []);
    // The collisions the rule exists for: one character respelled, a
    // trailing dot, a difference past the limit (63 for a disk, 40 for
    // the series part of an image name).
    assert_eq!(
        d(ItemKind::STORAGES, "gce_data"),
        d(ItemKind::STORAGES, "gce-data")
    );
    assert_eq!(d(ItemKind::IMAGES, "web"), d(ItemKind::IMAGES, "web."));
    let long = "d".repeat(63);
    assert_eq!(
        d(ItemKind::STORAGES, &format!("{long}1")),
        d(ItemKind::STORAGES, &format!("{long}2"))
    );
    let (one, two) = (
        d(ItemKind::IMAGES, &format!("{}-one", "i".repeat(40))),
        d(ItemKind::IMAGES, &format!("{}-two", "i".repeat(40))),
    );
    assert_ne!(one[0], two[0]);
    assert_eq!(one[1], two[1]);
    // The hook answers the same.
    assert_eq!(
        runtime("").derived_names(ItemKind::STORAGES, "gce_data"),
        d(ItemKind::STORAGES, "gce_data")
    );
}

#[test]
fn the_zone_is_the_declared_one_else_the_default_else_region_a() {
    let zone_of = |extra: &str| zone(&decl(&format!("{RUNTIME}{extra}")).0);
    assert_eq!(zone_of("project: p\n").as_deref(), Some("europe-west1-a"));
    assert_eq!(
        zone_of("project: p\nzone: europe-west1-c\n").as_deref(),
        Some("europe-west1-c")
    );
    let with_subnet_zone = RUNTIME.replace(
        "is_default: true}",
        "is_default: true, availability_zone: europe-west1-d}",
    );
    let d = decl(&format!("{with_subnet_zone}project: p\n")).0;
    assert_eq!(zone(&d).as_deref(), Some("europe-west1-d"));
    assert_eq!(project(&d), Some("p"));
}

#[test]
fn capability_answers_and_build_ids() {
    let rt = runtime("");
    assert_eq!(rt.default_bake_user("debian"), Some("packer".into()));
    assert_eq!(
        runtime("ssh_username: ops\n").default_bake_user("x"),
        Some("ops".into())
    );
    assert!(rt.one_bake_user_per_chain());
    assert!(!rt.keeps_state());
    assert_eq!(rt.session_mechanism(), Some("iap"));
    assert_eq!(
        runtime("session: os-login\n").session_mechanism(),
        Some("os-login")
    );
    assert_eq!(
        rt.build_id_from_artifact("web-2026-12-02t15-53-24"),
        Some("web-2026-12-02t15-53-24".into())
    );
    assert_eq!(rt.build_id_from_artifact("us-east-1:ami-1"), None);
    assert_eq!(rt.packer_parent_expression(), None);
}

#[test]
fn project_is_required_and_sizes_and_sessions_are_checked() {
    let (_, diags) = decl(RUNTIME);
    assert_eq!(
        diags,
        vec!["runtime 'gce1': field 'project' is required".to_string()]
    );
    let (_, diags) = decl(&format!(
        "{RUNTIME}project: p\ndefault_disk_size: 5\nsession: ssm\n"
    ));
    assert_eq!(
        diags,
        vec![
            "default_disk_size is a size in GiB, at least 10 on GCE (not 5)".to_string(),
            "runtime gce knows the session mechanisms iap and os-login (not 'ssm') -- write one of them".to_string(),
        ]
    );
}

#[test]
fn bakes_carry_network_tags_a_firewall_rule_targets_and_may_go_through_iap() {
    let rt = runtime("bake_network_tags: [packer-ssh, csis-bake]\nuse_iap: true\n");
    let text = source(rt.as_ref(), PackerParent::Build("base-1".into()));
    assert!(
        text.contains("  tags                    = [\"packer-ssh\", \"csis-bake\"]\n"),
        "{text}"
    );
    assert!(
        text.contains("  use_iap                 = true\n"),
        "{text}"
    );
    let (_, diags) = decl(&format!(
        "{RUNTIME}project: my-proj\nbake_network_tags: [Packer_SSH]\n"
    ));
    assert_eq!(
        diags,
        vec!["network tag 'Packer_SSH' is not one Compute Engine accepts -- 1 to 63 lowercase letters, digits and dashes, starting with a letter and not ending with a dash".to_string()]
    );
}

#[test]
fn every_base_bake_installs_cloud_init_for_the_gce_datasource_unless_the_image_has_it() {
    let lines = runtime("").base_bake_commands().join("\n");
    assert!(
        lines.contains("if ! command -v cloud-init >/dev/null 2>&1; then"),
        "{lines}"
    );
    assert!(
        lines.contains("    DEBIAN_FRONTEND=noninteractive apt-get install -y cloud-init"),
        "{lines}"
    );
    assert!(
        lines.contains("printf '%s\\n' 'datasource_list: [ GCE, None ]' > /etc/cloud/cloud.cfg.d/90-csis-datasource.cfg"),
        "{lines}"
    );
}
