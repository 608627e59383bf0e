//! Files a reader can hold: no product file (shipped source, outside its
//! inline test module) is over 600 lines. A file over the limit is split by
//! what its code reads or decides (docs/architecture.md, "Where a change
//! goes"), not by moving lines about until the count fits.

use std::path::{Path, PathBuf};

use crate::layering::rust_sources;

/// The most lines a product file may have before its inline tests.
const LIMIT: usize = 600;

/// The crates whose sources ship in the binary; tests/support and benches
/// never ship.
const SHIPPED: &[&str] = &["cli", "engine", "model", "libs", "plugins"];

/// Lines before the file's inline test module (`#[cfg(test)]`, other
/// attributes perhaps, then `mod NAME {`), or all of them when it has
/// none. A `#[cfg(test)] mod NAME;` line names a test file elsewhere and
/// does not end the product code around it.
fn product_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines[i + 1..]
                    .iter()
                    .find(|l| !l.trim_start().starts_with("#["))
                    .is_some_and(|l| l.starts_with("mod ") && l.trim_end().ends_with('{'))
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

/// Every product file over the limit, as `path: lines`.
fn oversized(root: &Path) -> Vec<String> {
    let texts: Vec<(PathBuf, String)> = SHIPPED
        .iter()
        .flat_map(|top| {
            rust_sources(&root.join(top))
                .into_iter()
                .map(move |(rel, text)| (Path::new(top).join(rel), text))
        })
        .filter(|(f, _)| !f.components().any(|c| c.as_os_str() == "tests"))
        .collect();
    assert!(texts.len() > 200, "the shipped sources were not found");
    let test_files: Vec<PathBuf> = texts
        .iter()
        .flat_map(|(f, t)| test_module_files(f, t))
        .collect();
    texts
        .iter()
        .filter(|(f, _)| !test_files.contains(f))
        .filter_map(|(f, t)| {
            let n = product_lines(t);
            (n > LIMIT).then(|| format!("{}: {n} lines", f.display()))
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
    let with_attribute = "fn a() {}\n#[cfg(test)]\n#[allow(clippy::unwrap_used)]\nmod tests {\n}\n";
    assert_eq!(product_lines(with_attribute), 1);
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
