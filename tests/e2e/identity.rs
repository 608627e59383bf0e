//! The identity read-model and the rule it carries: a managed group never
//! leaves the YAML.

use crate::support::{csis_at, edit, ok};
use csis_test_support::tree;

const NOW: i64 = 1796226804;

fn read(root: &std::path::Path) -> String {
    std::fs::read_to_string(root.join("meta-state/identity.yaml")).unwrap()
}

#[test]
fn the_identity_lifecycle_records_its_read_model() {
    let t = tree("local-run");
    let r = t.path();
    ok(csis_at(r, NOW, &["run", "identity"]));
    assert_eq!(
        read(r),
        "# csis meta-state: identity.yaml. Written by csis; change it through csis commands.
run: \"2026_12_02T15_53_24\"
groups:
  ops:
    builder: unix
    identity_type: unix
    gid_policy: config-time
    managed: true
    is_root: true
    members:
      - \"avery.alpha@example.com\"
      - \"blake.bravo@example.com\"
    admins:
      - \"avery.alpha@example.com\"
users:
  \"avery.alpha@example.com\":
    builder: people
    login: avery_alpha
    is_service_account: false
    is_enabled: true
  \"blake.bravo@example.com\":
    builder: people
    login: blake_bravo
    is_service_account: false
    is_enabled: true
user_builders:
  - people
"
    );
    // Other lifecycles leave it alone.
    ok(csis_at(r, NOW + 60, &["run", "storage"]));
    assert!(read(r).contains("2026_12_02T15_53_24"));
}

#[test]
fn a_managed_group_never_leaves_the_yaml() {
    let t = tree("local-run");
    let r = t.path();
    let groups = "groups/people.yml";
    edit(
        r,
        groups,
        "  - {name: ops,",
        "  - {name: lab, members: [avery.alpha@example.com]}\n  - {name: ops,",
    );
    ok(csis_at(r, NOW, &["run", "identity"]));
    let recorded = read(r);
    edit(
        r,
        groups,
        "  - {name: lab, members: [avery.alpha@example.com]}\n",
        "",
    );

    let message = "identity: group 'lab' was managed by the system but is missing from the YAML; groups never leave the configuration (keep the entry with 'unmanaged: true' to stop managing it without destroying it)";
    let v = csis_at(r, NOW + 60, &["--brief", "validate"]);
    assert_eq!(v.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&v.stderr),
        format!("{message}\nvalidate: 1 error(s)\n")
    );
    let run = csis_at(r, NOW + 60, &["run", "identity"]);
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains(&format!("validation: {message}")));
    assert_eq!(
        read(r),
        recorded,
        "a refused run leaves the record as it was"
    );

    // Leaving management is the way out: kept unmanaged, then removed.
    edit(
        r,
        groups,
        "  - {name: ops,",
        "  - {name: lab, members: [avery.alpha@example.com], unmanaged: true}\n  - {name: ops,",
    );
    ok(csis_at(r, NOW + 120, &["run", "identity"]));
    assert!(read(r).contains("  lab:\n    builder: unix\n    identity_type: unix\n    gid_policy: config-time\n    managed: false\n"));
    edit(
        r,
        groups,
        "  - {name: lab, members: [avery.alpha@example.com], unmanaged: true}\n",
        "",
    );
    ok(csis_at(r, NOW + 180, &["validate"]));
}
