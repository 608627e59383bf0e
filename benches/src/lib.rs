//! Synthetic configuration trees, deterministic from a seed, for benchmarks
//! and for timing `csis validate` on trees the size users keep.

use std::fmt::Write as _;

pub mod harness;

/// The `csis` binary the benches run from disk: `CSIS_BENCH_BIN`, or the
/// one built beside the bench running (`cargo build --release -p csis`:
/// target/release/deps/<bench>-HASH beside target/release/csis).
pub fn csis_binary() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("CSIS_BENCH_BIN") {
        return Some(p.into());
    }
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("csis");
    bin.is_file().then_some(bin)
}

/// [`csis_binary`], or a panic saying how to build it.
pub fn required_csis_binary() -> std::path::PathBuf {
    csis_binary().unwrap_or_else(|| {
        panic!("no csis binary: `cargo build --release -p csis` or CSIS_BENCH_BIN")
    })
}

/// The sizes of a synthetic tree.
#[derive(Clone, Debug)]
pub struct TreeSize {
    pub images: usize,
    /// Images form chains of this depth, each rooted at an OS builder.
    pub chain_depth: usize,
    pub instances: usize,
    pub storages: usize,
    pub users: usize,
    pub groups: usize,
    pub mods_per_image: usize,
    /// Each modification's script in a file of its own under scripts/
    /// (`scripts:`), not inline (`script:`): what a fingerprint then reads
    /// is a file per modification, found by its path.
    pub script_files: bool,
    pub seed: u64,
}

impl TreeSize {
    /// The reference tree of docs/performance.md.
    pub fn reference() -> TreeSize {
        TreeSize {
            images: 2_000,
            chain_depth: 4,
            instances: 5_000,
            storages: 1_000,
            users: 20_000,
            groups: 500,
            mods_per_image: 2,
            script_files: false,
            seed: 1,
        }
    }

    /// This tree with `k` times as many of everything (the chains as deep,
    /// as many modifications per image): the 4x and 10x trees of issue 40.
    pub fn times(&self, k: usize) -> TreeSize {
        TreeSize {
            images: self.images * k,
            instances: self.instances * k,
            storages: self.storages * k,
            users: self.users * k,
            groups: self.groups * k,
            ..self.clone()
        }
    }

    /// A small tree for quick runs.
    pub fn small() -> TreeSize {
        TreeSize {
            images: 40,
            chain_depth: 4,
            instances: 100,
            storages: 20,
            users: 400,
            groups: 10,
            mods_per_image: 2,
            script_files: false,
            seed: 1,
        }
    }
}

/// splitmix64: small, fast, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const CFG: &str = r#"id: synthetic
config:
  systemuser: "{{ ENV.USER }}"
  use_state_backends: false
"#;

const BUILDERS: &str = r#"runtime_builders:
  - {name: here, type: local, is_default: true, default_machine_type: small}
  - name: cloud
    type: dummy
    default_machine_type: m1
    region: r1
    networking:
      network: vpc-1
      subnets:
        - {subnet_id: s-1, is_default: true}
image_builders:
  - {name: ib, type: local, is_default: true}
  - {name: ib-cloud, type: dummy, runtime: cloud}
instance_builders:
  - {name: vm, type: local, is_default: true}
storage_builders:
  - {name: disk, type: local, is_default: true}
mod_builders:
  - {name: sh, type: bash, is_default: true}
group_builders:
  - {name: unix, type: basic, is_default: true}
user_builders:
  - name: people
    type: basic
    is_default: true
    email_as_username: false
    email_domain: example.com
    default_user_email_template: "{{ user.name }}@{{ builder.email_domain }}"
state_backends:
  - {name: files, type: local, is_default: true}
os_builders:
  - name: alma
    type: local
    is_default: true
    family: alma-linux
    family_version: 10
    identity_types: [unix]
    storage_types: [local]
    tags: {OS: "{{ this.parent.family }}"}
    runtimes:
      - {image_builder: ib, image_id: vendor/alma}
      - {image_builder: ib-cloud, ssh_username: ec2-user}
"#;

/// Every file of the tree as (path relative to the root, content), sorted.
pub fn generate(size: &TreeSize) -> Vec<(String, String)> {
    let mut rng = Rng(size.seed);
    let mut files = vec![
        ("cfg/_config.yml".to_string(), CFG.to_string()),
        ("cfg/builders.yml".to_string(), BUILDERS.to_string()),
    ];
    let group = |g: usize| format!("grp-{g:04}");
    let user = |u: usize| format!("user.{u:05}");

    for chunk in 0..size.users.div_ceil(200) {
        let mut t = String::from("users:\n");
        for u in chunk * 200..((chunk + 1) * 200).min(size.users) {
            let _ = writeln!(
                t,
                "  - {{name: {}, first_name: First{u}, last_name: Last{u}}}",
                user(u)
            );
        }
        files.push((format!("groups/users-{chunk:03}.yml"), t));
    }
    let mut t = String::from("groups:\n");
    for g in 0..size.groups.max(1) {
        let _ = writeln!(t, "  - name: {}", group(g));
        let _ = writeln!(t, "    description: \"{{{{ group.name }}}} group\"");
        if g == 0 {
            let _ = writeln!(t, "    is_root: true");
        }
        let members: Vec<String> = (0..8).map(|_| user(rng.below(size.users.max(1)))).collect();
        let _ = writeln!(t, "    members: [{}]", members.join(", "));
    }
    files.push(("groups/groups.yml".to_string(), t));

    // Storage s is gated to group s mod groups, so an instance can attach
    // one its image's group may use (N2).
    let groups = size.groups.max(1);
    for chunk in 0..size.storages.div_ceil(50) {
        let mut t = String::from("storages:\n");
        for s in chunk * 50..((chunk + 1) * 50).min(size.storages) {
            let _ = writeln!(t, "  - name: vol-{s:04}");
            let _ = writeln!(t, "    groups: [{}]", group(s % groups));
        }
        files.push((format!("storages/storages-{chunk:03}.yml"), t));
    }

    let depth = size.chain_depth.max(1);
    let image = |i: usize| format!("img-{i:05}");
    let mut image_groups = Vec::with_capacity(size.images);
    for i in 0..size.images {
        let parent = if i % depth == 0 {
            "alma".to_string()
        } else {
            image(i - 1)
        };
        let mut t = String::from("images:\n");
        let _ = writeln!(t, "  - name: {}", image(i));
        let _ = writeln!(t, "    source_image: {parent}");
        let g = rng.below(groups);
        image_groups.push(g);
        let _ = writeln!(t, "    group: {}", group(g));
        let _ = writeln!(t, "    runtimes:\n      - image_builder: ib");
        if size.mods_per_image > 0 {
            let _ = writeln!(t, "    modifications:");
            for m in 0..size.mods_per_image {
                let _ = writeln!(t, "      - name: step-{m}");
                if size.script_files {
                    let path = format!("scripts/{}-{m}.sh", image(i));
                    let _ = writeln!(t, "        scripts: [{path}]");
                    files.push((path, format!("#!/bin/sh\necho {} step {m}\n", image(i))));
                } else {
                    let _ = writeln!(t, "        script: \"echo {} step {m}\"", image(i));
                }
            }
        }
        files.push((format!("images/chain-{:04}/{}.yml", i / depth, image(i)), t));
    }

    for chunk in 0..size.instances.div_ceil(10) {
        let mut t = String::from("instances:\n");
        for n in chunk * 10..((chunk + 1) * 10).min(size.instances) {
            let _ = writeln!(t, "  - name: host-{n:05}");
            let i = rng.below(size.images.max(1));
            let _ = writeln!(t, "    image: {}", image(i));
            // A storage of the image's group: g, g + groups, g + 2 groups...
            let g = image_groups.get(i).copied().unwrap_or(0);
            let choices = size.storages.saturating_sub(g).div_ceil(groups);
            if choices > 0 && n % 2 == 0 {
                let _ = writeln!(t, "    storages:");
                let _ = writeln!(
                    t,
                    "      - {{name: vol-{:04}, mount_point: /data}}",
                    g + groups * rng.below(choices)
                );
            }
        }
        files.push((format!("instances/hosts-{chunk:04}.yml"), t));
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_tree() {
        let a = generate(&TreeSize::small());
        let b = generate(&TreeSize::small());
        assert_eq!(a, b);
        let mut other = TreeSize::small();
        other.seed = 2;
        assert_ne!(a, generate(&other));
        assert!(
            a.iter()
                .any(|(p, _)| p == "images/chain-0000/img-00000.yml")
        );
    }

    /// The benchmarks time only successes: the generated tree must pass
    /// validation with no warning, plan, generate every lifecycle in a dry
    /// run, and take every warm edit.
    #[test]
    fn the_small_tree_validates_plans_generates_and_takes_every_edit() {
        use harness::{EditKind, Fixture};
        let fx = Fixture::new("small", TreeSize::small());
        let sys = fx.system();
        let mut ws = fx.load(&sys);
        assert_eq!(harness::validate(&ws, &sys), 0, "no warnings");
        let plan = harness::plan(&ws, &sys);
        // Every image, and the base of each OS builder runtime entry.
        assert_eq!(plan.plan.len(), TreeSize::small().images + 2);
        let summary = harness::dry_run(&ws, &sys, false);
        assert_eq!(
            summary.requested,
            harness::lifecycles(&fx.registry),
            "every lifecycle"
        );
        assert!(
            sys.read(&Fixture::root().join("generated/run-summary.json"))
                .contains("\"ok\": true")
        );
        for kind in [
            EditKind::ImageDescription,
            EditKind::ImageModification,
            EditKind::User,
            EditKind::Comment,
            EditKind::Cfg,
        ] {
            let mut edit = kind.edit(&fx);
            for _ in 0..2 {
                edit.apply(&mut ws);
                harness::plan(&ws, &sys);
            }
        }
        harness::dry_run(&ws, &sys, false);
    }
}
