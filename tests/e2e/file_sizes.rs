//! Files a reader can hold: no product file (shipped source, outside its
//! inline test module) is over 600 lines. A file over the limit is split by
//! what its code reads or decides (docs/architecture.md, "Where a change
//! goes"), not by moving lines about until the count fits.

use std::path::{Path, PathBuf};

/// The most lines a product file may have before its inline tests.
const LIMIT: usize = 600;

/// The crates whose sources ship in the binary; tests/support and benches
/// never ship.
const SHIPPED: &[&str] = &["cli", "engine", "model", "libs", "plugins"];

/// Lines before the file's inline test module (`#[cfg(test)]` followed by
/// `mod NAME {`), or all of them when it has none. A `#[cfg(test)] mod
/// NAME;` line names a test file elsewhere and does not end the product
/// code around it.
fn product_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|w| {
            w[0].trim() == "#[cfg(test)]"
                && w[1].starts_with("mod ")
                && w[1].trim_end().ends_with('{')
        })
        .unwrap_or(lines.len())
}

/// The modules a file declares as test-only files (`#[cfg(test)]` then
/// `mod NAME;`), as the file names they load.
fn test_module_files(file: &Path, text: &str) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new(""));
    let own_dir = match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") | None => dir.to_path_buf(),
        Some(stem) => dir.join(stem),
    };
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].trim() == "#[cfg(test)]")
        .filter_map(|w| {
            let name = w[1].trim().strip_prefix("mod ")?.strip_suffix(';')?;
            Some([
                own_dir.join(format!("{name}.rs")),
                own_dir.join(name).join("mod.rs"),
            ])
        })
        .flatten()
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "tests" && n != "target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every product file over the limit, as `path: lines`.
fn oversized(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for top in SHIPPED {
        rust_files(&root.join(top), &mut files);
    }
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f, text)
        })
        .collect();
    let test_files: Vec<PathBuf> = texts
        .iter()
        .flat_map(|(f, t)| test_module_files(f, t))
        .collect();
    texts
        .iter()
        .filter(|(f, _)| !test_files.contains(f))
        .filter_map(|(f, t)| {
            let n = product_lines(t);
            (n > LIMIT).then(|| {
                let rel = f.strip_prefix(root).unwrap_or(f);
                format!("{}: {n} lines", rel.display())
            })
        })
        .collect()
}

#[test]
fn product_files_fit_a_reader() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let over = oversized(&root);
    assert!(
        over.is_empty(),
        "product files over {LIMIT} lines before their tests (split by what the code reads or decides):\n{}",
        over.join("\n")
    );
}

#[test]
fn product_lines_stop_at_the_inline_test_module() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests;\nfn b() {}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    assert_eq!(product_lines(text), 4);
    assert_eq!(product_lines("fn a() {}\nfn b() {}\n"), 2);
    assert_eq!(
        test_module_files(Path::new("src/lib.rs"), text),
        vec![
            PathBuf::from("src/tests.rs"),
            PathBuf::from("src/tests/mod.rs")
        ]
    );
    assert_eq!(
        test_module_files(
            Path::new("src/check/rules.rs"),
            "#[cfg(test)]\nmod cases;\n"
        ),
        vec![
            PathBuf::from("src/check/rules/cases.rs"),
            PathBuf::from("src/check/rules/cases/mod.rs")
        ]
    );
}
