//! The spec's default user model on the local runtime: users named by
//! their emails (email_as_username), each given the login derived from the
//! email's local part on the instances it reaches.

use std::process::Command;

use crate::support::{csis_at, edit, ok, validate_refuses};
use csis_test_support::tree;

const NOW: i64 = 1796226804;

/// fixtures/local-run names its users by email: it validates, plans and
/// runs for real, and the instance's user-data carries the derived logins
/// (the admin's with its sudo grant) and passes `cloud-init schema`.
#[test]
fn email_named_users_run_for_real_with_derived_logins() {
    let t = tree("local-run");
    let r = t.path();
    ok(csis_at(r, NOW, &["validate"]));
    let plan = ok(csis_at(r, NOW, &["plan"]));
    assert!(plan.contains("Plan: 4 to bake"), "{plan}");
    ok(csis_at(r, NOW, &["run", "all", "--no-dry-run"]));

    let (doc, body) = box_cloud_config(r);
    assert_eq!(accounts(&body), ADMIN_AND_MEMBER);
    assert_eq!(
        body["groups"],
        serde_json::json!([{ "ops": ["avery_alpha", "blake_bravo"] }])
    );
    if csis_test_support::tool_available("cloud-init", "CSIS_REQUIRE_CLOUD_INIT", "cloud-init") {
        let schema = Command::new("cloud-init")
            .args(["schema", "--config-file"])
            .arg(&doc)
            .output()
            .unwrap();
        assert!(
            schema.status.success(),
            "{}{}",
            String::from_utf8_lossy(&schema.stdout),
            String::from_utf8_lossy(&schema.stderr)
        );
    }

    let identity = std::fs::read_to_string(r.join("meta-state/identity.yaml")).unwrap();
    assert!(
        identity.contains(
            "  \"blake.bravo@example.com\":\n    builder: people\n    login: blake_bravo\n"
        ),
        "{identity}"
    );
    let render = ok(csis_at(r, NOW, &["config", "render"]));
    assert!(
        render.contains("  - name: \"avery.alpha@example.com\"\n    login: avery_alpha\n"),
        "{render}"
    );
}

fn add_user(r: &std::path::Path, entry: &str) {
    edit(
        r,
        "groups/people.yml",
        "groups:\n",
        &format!("  - {entry}\ngroups:\n"),
    );
}

#[test]
fn two_users_with_one_login_are_refused_naming_both() {
    let t = tree("local-run");
    let r = t.path();
    add_user(
        r,
        "{name: Avery.Alpha@example.org, first_name: Avery, last_name: Other}",
    );
    assert_eq!(
        validate_refuses(r),
        "groups/people.yml:8:12: users 'avery.alpha@example.com' and 'Avery.Alpha@example.org' both log in as 'avery_alpha'; an instance can give only one of them that account
  help: a login is the email's local part, lower-cased, other characters as '_'; give one of them an email with another local part ('avery.alpha@example.com' is declared at groups/people.yml: users[0].name)
validate: 1 error(s)
"
    );
}

#[test]
fn a_login_that_is_no_account_name_is_validate_refuses() {
    let t = tree("local-run");
    let r = t.path();
    add_user(
        r,
        "{name: \"-ops@example.com\", first_name: Ops, last_name: Team}",
    );
    assert_eq!(
        validate_refuses(r),
        "groups/people.yml:8:12: user '-ops@example.com' would log in as '-ops', which starts with '-'; no instance can create that account
  help: give user '-ops@example.com' an email whose local part begins with a letter, a digit or '_'
validate: 1 error(s)
"
    );
    edit(
        r,
        "groups/people.yml",
        "\"-ops@example.com\"",
        "\"@example.com\"",
    );
    assert!(
        validate_refuses(r).contains("user '@example.com' would log in as '', which is empty;"),
        "an empty local part is no login"
    );
}

#[test]
fn a_name_that_is_not_the_email_is_refused_where_it_is_written() {
    let t = tree("local-run");
    let r = t.path();
    add_user(
        r,
        "{name: casey@example.com, email: c.casey@example.com, first_name: Casey, last_name: C}",
    );
    assert_eq!(
        validate_refuses(r),
        "groups/people.yml:8:12: User 'casey@example.com': its name must equal its email 'c.casey@example.com' (case-insensitively), because user builder 'people' sets email_as_username: true
  help: write `name: c.casey@example.com`, or set `email_as_username: false` on user builder 'people' to keep names that are logins
validate: 1 error(s)
"
    );
    // Case does not matter.
    edit(
        r,
        "groups/people.yml",
        "name: casey@example.com",
        "name: C.Casey@Example.com",
    );
    ok(csis_at(r, NOW, &["validate"]));
}

/// fixtures/local-run with its user builder's `email_as_username: false`.
fn names_are_logins() -> tempfile::TempDir {
    let t = tree("local-run");
    edit(
        t.path(),
        "cfg/builders.yml",
        "{name: people, type: basic, is_default: true}",
        "{name: people, type: basic, is_default: true, email_as_username: false}",
    );
    t
}

/// Names that are logins stay as they were under `email_as_username:
/// false`, where a blank name is not taken from the email.
#[test]
fn without_email_as_username_names_are_logins() {
    let t = names_are_logins();
    let r = t.path();
    // Blake's blank name is refused, and its account's characters follow
    // from that; Avery's email-shaped name is a login of its own.
    assert_eq!(
        validate_refuses(r),
        "groups/people.yml:7:5: User at users[1] has a blank name; user builder 'people' sets email_as_username: false, so the name is not taken from the email
  help: write the user's login as `name:`
  note: 1 more error follows from this; fix it first
instances/box.yml:3:12: warning: instance 'box': user-data account 'avery.alpha@example.com' is granted sudo, but its name holds a dot, so instance-setup skips the grant at boot -- a user who needs sudo needs a name without a dot
instances/box.yml:3:12: instance 'box': user-data account 'avery.alpha@example.com' (group 'ops') has characters outside [A-Za-z0-9._-]; instance-setup would skip the account at boot (cloud-config names are at most 32 characters of [A-Za-z0-9._-], not beginning with '.' or '-') -- rename the user
validate: 2 error(s)
"
    );
}

/// A users file the persisted cache kept answers for its users' accounts
/// in user-data: a validate that takes it reports what the validate that
/// wrote it did, down to the account instance-setup would skip and the
/// sudo grant it would not give.
#[test]
fn a_kept_users_file_gives_user_data_the_accounts_a_cold_validate_does() {
    let t = names_are_logins();
    let r = t.path();
    // The users alone in their file (one that declares a group is never
    // kept), each named.
    std::fs::write(
        r.join("groups/people.yml"),
        "users:\n  - {name: avery.alpha@example.com, first_name: Avery, last_name: Alpha}\n  - {name: blake.bravo, email: blake.bravo@example.com, first_name: Blake, last_name: Bravo}\n",
    )
    .unwrap();
    std::fs::write(
        r.join("groups/ops.yml"),
        "groups:\n  - {name: ops, is_root: true, members: [avery.alpha@example.com, blake.bravo], admins: [avery.alpha@example.com]}\n",
    )
    .unwrap();
    let first = validate_refuses(r);
    assert!(
        first.contains("instance 'box': user-data account 'avery.alpha@example.com' (group 'ops') has characters outside [A-Za-z0-9._-]"),
        "{first}"
    );
    assert!(
        first.contains(
            "user-data account 'avery.alpha@example.com' is granted sudo, but its name holds a dot"
        ),
        "{first}"
    );
    // The cache keeps the users file's unit.
    let unit = b"groups/people.yml\0checks";
    let kept = std::fs::read_dir(r.join(".csis/cache"))
        .unwrap()
        .flatten()
        .any(|e| {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            bytes.windows(unit.len()).any(|w| w == unit)
        });
    assert!(kept, "the users file's unit is in the cache");
    assert_eq!(validate_refuses(r), first);
}

/// A group's members are users by their safe names, in the user-data
/// accounts as in the group's checks: a member written in capitals is
/// the declared user, with its login and its grant, and one account.
#[test]
fn a_member_written_in_capitals_is_the_declared_users_account() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "groups/people.yml",
        "members: [avery.alpha@example.com, blake.bravo@example.com], admins: [avery.alpha@example.com]",
        "members: [Avery.Alpha@Example.com, blake.bravo@example.com], admins: [avery.alpha@example.com]",
    );
    ok(csis_at(r, NOW, &["validate"]));
    ok(csis_at(r, NOW, &["run", "all", "--no-apply"]));
    let (_, body) = box_cloud_config(r);
    assert_eq!(accounts(&body), ADMIN_AND_MEMBER);
}

/// The accounts fixtures/local-run's box boots with: Avery's, an admin's
/// with its grant, and Blake's.
const ADMIN_AND_MEMBER: [(&str, Option<&str>); 2] = [
    ("avery_alpha", Some("ALL=(ALL) NOPASSWD:ALL")),
    ("blake_bravo", None),
];

/// The cloud-config the local runtime generated for fixtures/local-run's
/// instance `box`: its path and its body.
fn box_cloud_config(r: &std::path::Path) -> (std::path::PathBuf, serde_json::Value) {
    let doc = r.join(
        "generated/instance-image/vm/instance-generation/vm-instance-generation-box.cloud-config",
    );
    let text = std::fs::read_to_string(&doc).unwrap();
    let body = serde_json::from_str(text.strip_prefix("#cloud-config\n").unwrap()).unwrap();
    (doc, body)
}

/// A cloud-config body's accounts: each name, and its sudo grant.
fn accounts(body: &serde_json::Value) -> Vec<(&str, Option<&str>)> {
    body["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["name"].as_str().unwrap(), u["sudo"].as_str()))
        .collect()
}
