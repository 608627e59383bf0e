//! Data-driven load refusals: every file under fixtures/load/ is one case.
//!
//! A case file holds a multi-file tree (`--- <path>` starts a file) and its
//! expectation:
//!
//! ```text
//! # args: --undeclare image:web          (optional, before `validate`)
//! # no-base                              (optional: do not add the base tree)
//! --- cfg/_config.yml
//! ...
//! === exit 1
//! cfg/_config.yml:3:1: <message>
//! validate: 1 error(s)
//! ```
//!
//! Directive lines may stand anywhere before `=== exit`. Unless `# no-base`, the tree starts from fixtures/load/_base.tree, and
//! the case's files replace the base's by path. The binary runs with
//! `--brief` in the tree's root; stderr must equal the expectation exactly.
//! `CSIS_UPDATE_EXPECT=1` rewrites expectations (review the diff).

use std::path::PathBuf;
use std::process::Command;

use csis_test_support::{Files, fixture_dir, parse, temp_tree};

fn fixtures() -> PathBuf {
    fixture_dir("load")
}

struct Case {
    args: Vec<String>,
    base: bool,
    files: Files,
    exit: i32,
    expected: String,
    head: String,
}

fn parse_case(text: &str) -> Case {
    let (tree, expect) = text
        .split_once("=== exit ")
        .expect("a case needs `=== exit N`");
    let (code, expected) = expect.split_once('\n').unwrap_or((expect, ""));
    let mut case = Case {
        args: Vec::new(),
        base: true,
        files: Files::new(),
        exit: code.trim().parse().expect("exit code"),
        expected: expected.to_string(),
        head: tree.to_string(),
    };
    for line in tree.lines() {
        if let Some(a) = line.strip_prefix("# args:") {
            case.args = a.split_whitespace().map(String::from).collect();
        } else if line.trim() == "# no-base" {
            case.base = false;
        }
    }
    if case.base {
        let base = std::fs::read_to_string(fixtures().join("_base.tree")).unwrap();
        case.files = parse(&base);
    }
    case.files.extend(parse(tree));
    case
}

fn run(case: &Case) -> (i32, String) {
    let dir = temp_tree(&case.files);
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(dir.path())
        .env_remove("CSIS_ROOT_DIR")
        .arg("--brief")
        .args(&case.args)
        .arg("validate")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn load_refusals() {
    let mut failures = Vec::new();
    let mut count = 0;
    let mut paths: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "case"))
        .collect();
    paths.sort();
    for path in paths {
        count += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let case = parse_case(&text);
        let (code, stderr) = run(&case);
        if std::env::var("CSIS_UPDATE_EXPECT").is_ok() {
            let new = format!("{}=== exit {code}\n{stderr}", case.head);
            std::fs::write(&path, new).unwrap();
            continue;
        }
        if code != case.exit || stderr != case.expected {
            failures.push(format!(
                "{}: expected exit {} and\n{}\ngot exit {code} and\n{stderr}",
                path.display(),
                case.exit,
                case.expected
            ));
        }
    }
    assert!(count > 0, "no cases found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
