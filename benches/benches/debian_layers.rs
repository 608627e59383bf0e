//! Issue 33's measure of the local runtime's layers on a real Debian root:
//! a base from `distribution: {suite: bookworm, variant: apt}` (built by
//! mmdebstrap, or taken from its cache), then a four-level chain, each
//! level one small modification. One real run of the `csis` binary; per
//! level, the bake's time as the run's log gives it and the bytes the
//! level adds to the store (its inodes no earlier level holds), with that
//! as a share of its parent's root.
//!
//! `cargo build --release -p csis && cargo bench -p csis-benches --bench
//! debian_layers` (needs bubblewrap, mmdebstrap and Debian's archive when
//! the cache, `CSIS_LOCAL_CACHE`, has no bookworm root yet).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

const LEVELS: [&str; 4] = ["one", "two", "three", "four"];
const RUN: &str = "2026_12_02T15_53_24";

/// The example tree with a Debian base and a chain of four small levels,
/// no instances or storages.
fn write_tree(root: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/local-run/cfg");
    std::fs::create_dir_all(root.join("cfg")).unwrap();
    std::fs::create_dir_all(root.join("images")).unwrap();
    std::fs::create_dir_all(root.join("groups")).unwrap();
    for f in ["_config.yml", "builders.yml"] {
        let text = std::fs::read_to_string(fixture.join(f)).unwrap();
        let text = text
            .replace(
                "image_id: vendor/tiny-os",
                "distribution: {suite: bookworm, variant: apt}",
            )
            .replace("store: store}", "store: store, network: true}");
        std::fs::write(root.join("cfg").join(f), text).unwrap();
    }
    std::fs::copy(
        fixture.join("../groups/people.yml"),
        root.join("groups/people.yml"),
    )
    .unwrap();
    let mut chain = String::from("images:\n");
    let mut parent = "tiny";
    for (i, level) in LEVELS.iter().enumerate() {
        chain.push_str(&format!(
            "  - name: {level}\n    source_image: {parent}\n    group: ops\n    runtimes: [{{image_builder: bake}}]\n    modifications:\n      - name: small\n        script: 'echo level {} >> /etc/motd && head -c 65536 /dev/urandom > /etc/level-{level}'\n",
            i + 1
        ));
        parent = level;
    }
    std::fs::write(root.join("images/chain.yml"), chain).unwrap();
}

/// Seconds of each bake, by series, from the run's `done in` lines.
fn bake_seconds(log: &str) -> Vec<(String, String)> {
    log.lines()
        .filter(|l| l.contains("done in") && l.contains("local bake"))
        .filter_map(|l| {
            let secs = l.split("done in ").nth(1)?.split(':').next()?.to_string();
            let series = l
                .rsplit("-image-generation-")
                .next()?
                .trim_end_matches(".json")
                .to_string();
            Some((series, secs))
        })
        .collect()
}

/// (apparent bytes of the root's files, bytes on disk of the inodes not
/// in `seen`), adding this root's inodes to `seen`.
fn measure(root: &Path, seen: &mut HashSet<(u64, u64)>) -> (u64, u64) {
    let (mut apparent, mut new) = (0, 0);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            }
            if m.is_file() {
                apparent += m.len();
            }
            if seen.insert((m.dev(), m.ino())) {
                new += m.blocks() * 512;
            }
        }
    }
    (apparent, new)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_tree(root);
    let out = Command::new(csis_benches::required_csis_binary())
        .arg("--root-dir")
        .arg(root)
        .args(["run", "base-image", "instance-image", "--no-dry-run"])
        .env("CSIS_NOW", "1796226804")
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    let origin = log
        .lines()
        .find(|l| l.contains("baked tiny-"))
        .unwrap_or_default()
        .to_string();
    println!("{}", origin.trim());
    let times = bake_seconds(&log);
    println!(
        "{:<6} {:>10} {:>14} {:>14} {:>8}",
        "level", "bake", "root bytes", "store bytes", "share"
    );
    let mut seen = HashSet::new();
    let mut parent_size = None;
    for series in std::iter::once("tiny").chain(LEVELS) {
        let build = root.join(format!("store/images/{series}-here-{RUN}/root"));
        let (apparent, new) = measure(&build, &mut seen);
        let secs = times
            .iter()
            .find(|(s, _)| s == series)
            .map_or("?", |(_, t)| t.as_str());
        let share = parent_size.map_or("-".to_string(), |p: u64| {
            format!("{:.2} %", new as f64 * 100.0 / p as f64)
        });
        println!("{series:<6} {secs:>10} {apparent:>14} {new:>14} {share:>8}");
        parent_size = Some(apparent);
    }
}
