//! Throughput of the public-safe scanner (issue 18): a generated tree of
//! about 20 MB (YAML, JSON, HCL, shell, .env and Markdown in the shapes a
//! configuration repository holds, one planted secret per 50 files) scanned
//! file by file on one thread with `scan_bytes`, the call the tree scan and
//! the commit gate make per file; and fixtures/config, the tree the
//! 50 ms bound is for.
//!
//! `cargo bench -p csis-benches --bench public_safe` prints the MB/s figure
//! (best of five) and fails below 50 MB/s; divan then times the same scans.
//! Under `cargo test` (no `--bench`) the tree is 1 MB and the scan runs
//! once, unchecked.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use csis_benches::harness::bench_mode;
use csis_public_safe::{Allow, scan_bytes};
use divan::Bencher;

/// A small deterministic generator (no rand in the tree).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() as usize) % xs.len()]
    }

    fn token(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[(self.next() as usize) % alphabet.len()] as char)
            .collect()
    }
}

/// How one line of a file is written: the generator, a key, a number.
type Line = fn(&mut Lcg, &str, usize) -> String;

const AN: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8] = b"0123456789abcdef";

fn file(g: &mut Lcg, i: usize) -> (String, Vec<u8>) {
    let words = [
        "image",
        "instance",
        "storage",
        "region",
        "zone",
        "machine_type",
        "series",
        "parent",
        "modification",
        "description",
        "owner",
        "retention",
        "enabled",
        "replicas",
        "network",
    ];
    let mut body = String::new();
    let (path, line): (String, Line) = match i % 6 {
        0 => (format!("images/img-{i}.yml"), |g, k, n| {
            format!(
                "  {k}_{n}: {}-{}\n",
                g.pick(&["debian", "ubuntu", "rocky"]),
                g.next() % 1000
            )
        }),
        1 => (format!("generated/lc/{i}.json"), |g, k, n| {
            format!("  \"{k}{n}\": \"{}\",\n", g.token(HEX, 12))
        }),
        2 => (format!("infra/main-{i}.tf"), |g, k, n| {
            format!(
                "  {k}_{n} = \"{}\" # sha {}\n",
                g.pick(&["t3.micro", "e2-small"]),
                g.token(HEX, 40)
            )
        }),
        3 => (format!("scripts/run-{i}.sh"), |g, k, n| {
            format!(
                "export {}_{n}=\"${{{}}}\"  # see https://docs.example.com/{k}/{}\n",
                k.to_uppercase(),
                k.to_uppercase(),
                g.token(AN, 22)
            )
        }),
        4 => (format!("deploy/app-{i}.env"), |g, k, n| {
            format!("{}_{n}={}\n", k.to_uppercase(), g.next())
        }),
        _ => (format!("docs/page-{i}.md"), |g, k, n| {
            format!(
                "The {k} number {n} is set in `cfg/{}.yml`; see the runbook for {}.\n",
                g.token(AN, 8),
                g.pick(&["details", "examples", "history"])
            )
        }),
    };
    let lines = 40 + (g.next() as usize % 80);
    for n in 0..lines {
        let k = g.pick(&words);
        body.push_str(&line(g, k, n));
    }
    if i.is_multiple_of(50) {
        body.push_str(&format!("api_key: \"{}\"\n", g.token(AN, 32)));
    }
    (path, body.into_bytes())
}

/// Files until `bytes` is reached.
fn tree(bytes: usize) -> Vec<(String, Vec<u8>)> {
    let mut g = Lcg(18);
    let mut out = Vec::new();
    let mut total = 0;
    while total < bytes {
        let f = file(&mut g, out.len());
        total += f.1.len();
        out.push(f);
    }
    out
}

static TREE: LazyLock<Vec<(String, Vec<u8>)>> =
    LazyLock::new(|| tree(if bench_mode() { 20 << 20 } else { 1 << 20 }));

static CONFIG: LazyLock<Vec<(String, Vec<u8>)>> = LazyLock::new(|| {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/config");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out
});

fn scan(files: &[(String, Vec<u8>)]) -> usize {
    let allow = Allow::default();
    files
        .iter()
        .map(|(p, b)| scan_bytes(p, b, &allow).len())
        .sum()
}

fn best_of(n: usize, files: &[(String, Vec<u8>)]) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut found = 0;
    for _ in 0..n {
        let start = Instant::now();
        found = scan(files);
        best = best.min(start.elapsed());
    }
    (best, found)
}

fn main() {
    let bytes: usize = TREE.iter().map(|f| f.1.len()).sum();
    let runs = if bench_mode() { 5 } else { 1 };
    let (took, found) = best_of(runs, &TREE);
    let mb = bytes as f64 / 1e6;
    let rate = mb / took.as_secs_f64();
    eprintln!(
        "public-safe: {} files, {mb:.1} MB in {took:?} (best of {runs}, one thread): {rate:.0} MB/s, {found} finding(s)",
        TREE.len()
    );
    let (took_config, _) = best_of(runs, &CONFIG);
    eprintln!(
        "public-safe: fixtures/config ({} files) in {took_config:?}",
        CONFIG.len()
    );
    if bench_mode() {
        assert!(rate >= 50.0, "the scanner runs at {rate:.0} MB/s, under 50");
        assert!(
            took_config < Duration::from_millis(50),
            "fixtures/config: {took_config:?}"
        );
    }
    divan::main();
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn tree_20mb(b: Bencher) {
    b.bench(|| scan(&TREE));
}

#[divan::bench(sample_count = 20)]
fn fixtures_config(b: Bencher) {
    b.bench(|| scan(&CONFIG));
}
