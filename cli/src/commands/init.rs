//! `csis init [DIR] [--runtime local|aws|gce]`: a first tree that
//! validates: cfg/ with one builder of each kind and an OS builder, one
//! group with one user, one image, one instance. On `local` it also runs
//! (its base root is Debian, built by mmdebstrap); on a cloud the values
//! to fill in are marked `CHANGE-ME`. docs/getting-started.md walks on
//! from here.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use csis_engine::db::system::{OsSystem, System};

#[derive(Args)]
pub struct InitArgs {
    /// The directory to write the tree in (created when missing; it may
    /// not hold any of the files init writes).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Where the tree's images bake and its machines run.
    #[arg(long, value_enum, default_value_t = InitRuntime::Local)]
    runtime: InitRuntime,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum InitRuntime {
    Local,
    Aws,
    Gce,
}

const PEOPLE: &str = "\
# Who may log in to the machines: users, and groups of them. An image names
# its group; every member gets an account on its machines, admins a sudo
# grant. Add a public key under a user's public_keys to log in with it.
users:
  - name: ada
    first_name: Ada
    last_name: Admin
groups:
  - name: ops
    is_root: true
    members: [ada]
    admins: [ada]
";

const INSTANCES: &str = "\
# Machines launched from an image. A machine keeps what it was launched
# with; `csis upgrade instance box` moves it to its image's newest build.
instances:
  - name: box
    image: base
";

const GITIGNORE: &str = "\
# What csis writes beside the tree and never commits.
_private/
.csis-local/
";

/// The image of the tree, baked on `image_builder`.
fn images(image_builder: &str) -> String {
    format!(
        "\
# Images, each baked from its parent (an OS builder, or another image) by
# running its modifications inside it. A change to a modification re-bakes
# the image and the images below it.
images:
  - name: base
    source_image: debian12
    group: ops
    runtimes: [{{image_builder: {image_builder}}}]
    modifications:
      - name: motd
        script: echo \"baked by csis\" > /etc/motd
        ensure: [grep -q csis /etc/motd]
"
    )
}

/// cfg/_config.yml: the tree's id and its settings.
fn config(id: &str, clouds: bool) -> String {
    let state = if clouds {
        "\
  # Each OpenTofu root keeps its state on the state backend of
  # cfg/builders.yml; the roots stop after their plan and its gate until
  # these are true.
  use_state_backends: true
  apply_storage: false
  apply_instances: false
"
    } else {
        ""
    };
    format!(
        "\
# The tree's id scopes what csis finds on a runtime as this tree's (image
# tags, image families): keep it when the directory moves.
id: {id}
config:
  # The keys that may log in as the OS builders' admin user, e.g.
  # - \"ssh-ed25519 AAAA... you@example.com\"
  admin_public_keys: []
{state}"
    )
}

/// cfg/builders.yml for `runtime`.
fn builders(runtime: InitRuntime) -> String {
    let common = "\
mod_builders:
  - {name: sh, type: bash, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
user_builders:
  - {name: people, type: basic, is_default: true, email_as_username: false}
";
    let (runtimes, engines, os_entry) = match runtime {
        InitRuntime::Local => (
            "\
# This machine: images are baked into the store (.csis-local/ below the
# tree), every script inside the image's root under a sandbox.
runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small}
",
            "\
image_builders:
  - {name: bake, type: local, is_default: true}
instance_builders:
  - {name: vm, type: local, is_default: true}
storage_builders:
  - {name: dirs, type: local, is_default: true}
",
            "    storage_types: [local]
    runtimes:
      # A Debian 12 root built by mmdebstrap (apt-get install mmdebstrap).
      - image_builder: bake
        distribution: {suite: bookworm, variant: apt}
",
        ),
        InitRuntime::Aws => (
            "\
# An AWS account: its region, the profile of your AWS config that reaches
# it, the VPC and subnet the bakes and machines run in.
runtime_builders:
  - name: aws
    type: aws
    is_default: true
    region: us-east-1
    profile: CHANGE-ME
    default_machine_type: t3.small
    networking:
      network: vpc-CHANGE-ME
      subnets:
        - {subnet_id: subnet-CHANGE-ME, is_default: true}
",
            "\
image_builders:
  - {name: bake, type: packer, runtime: aws, is_default: true}
instance_builders:
  - {name: vms, type: tofu-aws, runtime: aws, is_default: true}
storage_builders:
  - {name: disks, type: tofu-aws, runtime: aws, is_default: true}
state_backends:
  - name: state
    type: s3
    is_default: true
    config: {bucket: CHANGE-ME-tofu-state, prefix: csis/, region: us-east-1, use_lockfile: true}
",
            "    storage_types: [ebs]
    runtimes:
      # Debian's own AMIs, found by name under Debian's account.
      - image_builder: bake
        query: {name: \"debian-12-amd64-*\"}
        owners: [\"136693071363\"]
",
        ),
        InitRuntime::Gce => (
            "\
# A Google Cloud project: its region and zone, the network and subnetwork
# the bakes and machines run in.
runtime_builders:
  - name: gce
    type: gce
    is_default: true
    project: CHANGE-ME
    region: europe-west1
    zone: europe-west1-b
    default_machine_type: e2-small
    networking:
      network: default
      subnets:
        - {subnet_id: default, is_default: true}
",
            "\
image_builders:
  - {name: bake, type: packer, runtime: gce, is_default: true}
instance_builders:
  - {name: vms, type: tofu-gce, runtime: gce, is_default: true}
storage_builders:
  - {name: disks, type: tofu-gce, runtime: gce, is_default: true}
state_backends:
  - name: state
    type: gcs
    is_default: true
    config: {bucket: CHANGE-ME-tofu-state, prefix: csis/}
",
            "    storage_types: [pd]
    runtimes:
      # Debian's own images, by family.
      - image_builder: bake
        query: {family: debian-12}
        owners: [debian-cloud]
",
        ),
    };
    format!(
        "\
# The builders: what bakes images, launches machines, makes storages,
# applies modifications and creates accounts, and where.
{runtimes}{engines}{common}# The OS every image chain starts from.
os_builders:
  - name: debian12
    type: {os_type}
    is_default: true
    family: debian
    family_version: 12
    identity_types: [unix]
{os_entry}",
        os_type = if runtime == InitRuntime::Local {
            "local"
        } else {
            "packer"
        },
    )
}

/// A tree id from the directory's name: lower case letters, digits and
/// `-`, at most 20 characters (a GCE image family takes it whole).
fn tree_id(dir: &Path) -> String {
    let name = std::path::absolute(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().to_lowercase()))
        .unwrap_or_default();
    let id: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let id: String = id.trim_matches('-').chars().take(20).collect();
    let id = id.trim_end_matches('-');
    if id.is_empty() || !id.starts_with(|c: char| c.is_ascii_lowercase()) {
        format!("csis-{id}")
            .trim_end_matches('-')
            .chars()
            .take(20)
            .collect()
    } else {
        id.to_string()
    }
}

/// The files of the tree, by path below DIR.
fn files(dir: &Path, runtime: InitRuntime) -> Vec<(&'static str, String)> {
    let clouds = runtime != InitRuntime::Local;
    vec![
        (".gitignore", GITIGNORE.to_string()),
        ("cfg/_config.yml", config(&tree_id(dir), clouds)),
        ("cfg/builders.yml", builders(runtime)),
        ("groups/people.yml", PEOPLE.to_string()),
        ("images/images.yml", images("bake")),
        ("instances/instances.yml", INSTANCES.to_string()),
    ]
}

pub fn init(args: &InitArgs) -> ExitCode {
    let files = files(&args.dir, args.runtime);
    let taken: Vec<&str> = files
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| args.dir.join(p).exists())
        .collect();
    if !taken.is_empty() {
        eprintln!(
            "error: init: {} already holds {}; init writes a new tree only, nothing was written",
            args.dir.display(),
            taken.join(", ")
        );
        return ExitCode::from(1);
    }
    for (path, text) in &files {
        if let Err(e) = OsSystem.write_atomic(&args.dir.join(path), text.as_bytes(), false) {
            eprintln!(
                "error: init: writing {}: {e}",
                args.dir.join(path).display()
            );
            return ExitCode::from(1);
        }
        csis_plugin_api::outln!("init: wrote {path}");
    }
    let root = args.dir.display();
    let next = match args.runtime {
        InitRuntime::Local => format!(
            "next: csis --root-dir {root} validate, then csis --root-dir {root} run all --no-dry-run (docs/getting-started.md)"
        ),
        _ => format!(
            "next: fill in every CHANGE-ME in {root}/cfg/builders.yml, then csis --root-dir {root} validate and csis --root-dir {root} run all (a dry run; docs/clouds.md)"
        ),
    };
    csis_plugin_api::outln!("{next}");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_id_is_the_directory_name_made_a_name() {
        assert_eq!(tree_id(Path::new("/tmp/My Infra")), "my-infra");
        assert_eq!(
            tree_id(Path::new("/x/a-very-long-directory-name-indeed")),
            "a-very-long-director"
        );
        assert_eq!(tree_id(Path::new("/x/2024_trees")), "csis-2024-trees");
        assert_eq!(tree_id(Path::new("/x/---")), "csis");
    }
}
