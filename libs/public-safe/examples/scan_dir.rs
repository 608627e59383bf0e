//! Scan every file under a directory with the default allowances and
//! print the findings: `cargo run -p csis-public-safe --example scan_dir
//! -- DIR`. A tool for reading what the rules refuse in a real tree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::path::Path;

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let root = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    let root = Path::new(&root);
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let allow = csis_public_safe::Allow::default();
    let mut n = 0;
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(f).unwrap();
        for finding in csis_public_safe::scan_bytes(&rel, &bytes, &allow) {
            println!("{finding}");
            n += 1;
        }
    }
    eprintln!("{} file(s), {n} finding(s)", files.len());
}
