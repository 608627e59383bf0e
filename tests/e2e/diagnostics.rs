//! One cause, one error; diagnostics for machines: `validate --format
//! json` and `--format github`.

use std::process::Command;

/// fixtures/local-run with its runtime builder's type misspelt (`lcoal`).
fn misspelt() -> tempfile::TempDir {
    let t = csis_test_support::tree("local-run");
    let builders = t.path().join("cfg/builders.yml");
    let text = std::fs::read_to_string(&builders).unwrap();
    std::fs::write(&builders, text.replacen("type: local", "type: lcoal", 1)).unwrap();
    t
}

fn validate(root: &std::path::Path, format: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .args(["--root-dir", ".", "validate", "--format", format])
        .output()
        .unwrap()
}

/// One JSON object per diagnostic on stdout, each with the same keys;
/// the summary stays on stderr.
#[test]
fn validate_json_is_one_object_per_diagnostic() {
    let t = misspelt();
    let out = validate(t.path(), "json");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        serde_json::json!({
            "severity": "error",
            "code": null,
            "message": "Runtime builder 'here': type 'lcoal' is no registered model (known: [aws, dummy, gce, local]); did you mean 'local'?",
            "file": "cfg/builders.yml",
            "line": 2,
            "column": 24,
            "help": "a misspelt type, or the type of a plugin this csis was not built with",
            "consequences": 7
        })
    );
    for l in &lines {
        let keys: Vec<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "severity",
                "code",
                "message",
                "file",
                "line",
                "column",
                "help",
                "consequences"
            ]
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.ends_with(&format!("validate: {} error(s)\n", lines.len())),
        "{stderr}"
    );
}

/// GitHub Actions workflow commands, one per diagnostic, with the file,
/// line and column, the help on a second line of the message.
#[test]
fn validate_github_prints_workflow_commands() {
    let t = misspelt();
    let out = validate(t.path(), "github");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.lines().next().unwrap(),
        "::error file=cfg/builders.yml,line=2,col=24,title=csis error::Runtime builder 'here': type 'lcoal' is no registered model (known: [aws, dummy, gce, local]); did you mean 'local'?%0Ahelp: a misspelt type, or the type of a plugin this csis was not built with%0Anote: 7 more errors follow from this; fix it first"
    );
    assert!(
        stdout
            .lines()
            .all(|l| l.starts_with("::error ") || l.starts_with("::warning "))
    );
}

/// A misspelt runtime type refuses the one runtime builder; the errors
/// that follow (no runtime builders, fields naming the default runtime,
/// no bake user on it) are folded under it.
#[test]
fn a_refused_builder_is_the_one_error() {
    let t = misspelt();
    assert_eq!(
        crate::support::brief_validate(t.path()),
        (
            Some(1),
            "cfg/builders.yml:2:24: Runtime builder 'here': type 'lcoal' is no registered model (known: [aws, dummy, gce, local]); did you mean 'local'?
  help: a misspelt type, or the type of a plugin this csis was not built with
  note: 7 more errors follow from this; fix it first
validate: 1 error(s)
"
            .to_string()
        )
    );
    let run = Command::new(env!("CARGO_BIN_EXE_csis"))
        .arg("--root-dir")
        .arg(t.path())
        .args(["run", "all"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.matches("validation: ").count(), 1, "{stderr}");
    assert!(
        stderr.contains("validation: cfg/builders.yml:2:24: Runtime builder 'here': type 'lcoal' is no registered model (known: [aws, dummy, gce, local]); did you mean 'local'? (7 more errors follow from this; fix it first)"),
        "{stderr}"
    );
}

/// A file that does not parse declares nothing: what names its images
/// or its groups follows from it.
#[test]
fn a_broken_file_is_the_one_error() {
    let t = csis_test_support::tree("local-run");
    let chain = t.path().join("images/chain.yml");
    let text = std::fs::read_to_string(&chain).unwrap();
    std::fs::write(
        &chain,
        text.replacen("  - name: mid\n", "  - name: mid\n   bad: [\n", 1),
    )
    .unwrap();
    assert_eq!(
        crate::support::brief_validate(t.path()),
        (
            Some(1),
            "images/chain.yml:10:4: invalid YAML: while parsing a block collection, did not find expected '-' indicator: usually a list entry indented unlike the entries before it -- line up its '- ' with theirs
  note: 1 more error follows from this; fix it first
validate: 1 error(s)
"
            .to_string()
        )
    );

    let t = csis_test_support::tree("local-run");
    std::fs::write(t.path().join("groups/people.yml"), "users:\n  - {name: [\n").unwrap();
    let (code, out) = crate::support::brief_validate(t.path());
    assert_eq!(code, Some(1));
    assert!(
        out.ends_with(
            "  note: 4 more errors follow from this; fix it first\nvalidate: 1 error(s)\n"
        ),
        "{out}"
    );
}

/// Messages are in csis's own words: none of the original's library
/// phrases (pydantic's, Python's exceptions and reprs, the spec's
/// internal model names) is left in the code that writes them.
#[test]
fn no_message_speaks_the_originals_library_language() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let phrases = ["Extra inputs are not permitted", "(got None)", "KeyError:"];
    // `which is no image_model`, and the format that wrote it.
    let model_name = |text: &str| {
        text.match_indices("which is no ").any(|(i, m)| {
            let word: String = text[i + m.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_{}".contains(*c))
                .collect();
            word.ends_with("_model") || word == "{}"
        })
    };
    let mut found = Vec::new();
    let mut stack: Vec<std::path::PathBuf> = ["cli", "engine", "model", "plugins", "libs"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for phrase in phrases {
                    if text.contains(phrase) {
                        found.push(format!("{}: {phrase}", p.display()));
                    }
                }
                if model_name(&text) {
                    found.push(format!("{}: which is no <model>", p.display()));
                }
            }
        }
    }
    // This file names them to look for them; it is not under those dirs.
    assert!(found.is_empty(), "{found:#?}");
}

/// fixtures/local-run with one text replaced: its `--brief` validate.
fn validate_with(file: &str, from: &str, to: &str) -> (Option<i32>, String) {
    let t = csis_test_support::plain_tree("local-run");
    crate::support::edit(t.path(), file, from, to);
    crate::support::brief_validate(t.path())
}

/// One cause, one error: a misspelt key, or a builder list a first tree
/// left out, is reported once, with what follows from it counted under it.
#[test]
fn one_cause_is_one_error() {
    let (code, out) = validate_with(
        "images/chain.yml",
        "    source_image: tiny",
        "    sorce_image: tiny",
    );
    assert_eq!(code, Some(1));
    assert!(
        out.starts_with("images/chain.yml:3:5: Image 'base': unknown key 'sorce_image'\n"),
        "{out}"
    );
    assert!(out.contains("did you mean 'source_image'?\n"), "{out}");
    assert!(out.ends_with("validate: 1 error(s)\n"), "{out}");

    let (_, out) = validate_with(
        "cfg/builders.yml",
        "mod_builders:\n  - {name: sh, type: bash, is_default: true}\n",
        "",
    );
    assert!(
        out.starts_with("images/chain.yml:7:7: the modifications of image 'base' (and of every image after it) need a mod builder, and cfg/ declares none -- declare one under mod_builders: with is_default: true\n  note: 3 more errors follow from this; fix it first\n"),
        "{out}"
    );
    assert!(out.ends_with("validate: 1 error(s)\n"), "{out}");

    let (_, out) = validate_with(
        "cfg/builders.yml",
        "group_builders:\n  - {name: unix, type: basic, is_default: true}\n",
        "",
    );
    assert!(
        out.starts_with("groups/people.yml:9:5: group 'ops' (and every group after it) needs a group builder, and cfg/ declares none -- declare one under group_builders: with is_default: true\n"),
        "{out}"
    );
    assert!(out.ends_with("validate: 1 error(s)\n"), "{out}");

    // Each of these is its one error, with what to write, and what
    // follows from it counted.
    for (file, from, to, want) in [
        (
            "cfg/builders.yml",
            "mod_builders:",
            "mod_builder:",
            "cfg/builders.yml:9:1: cfg/: unknown key 'mod_builder'\n",
        ),
        (
            "images/chain.yml",
            "runtimes: [{image_builder: bake}]",
            "runtimes: bake",
            "images/chain.yml:5:15: Image 'base': field 'runtimes' must be a list of mappings, got 'bake'\n  help: write a list of mappings: each entry a `- key: value` line below `runtimes:`, or `runtimes: [{key: value}]`\n",
        ),
        (
            "groups/people.yml",
            "is_root: true",
            "is_root: maybe",
            "groups/people.yml:9:26: Group 'ops': field 'is_root' must be a boolean (true/false, yes/no, on/off), got 'maybe'\n",
        ),
        (
            "images/chain.yml",
            "  - name: base",
            "  - description: base",
            "images/chain.yml:2:5: images[0]: every entry needs a name\n  note: 1 more error follows from this; fix it first\n",
        ),
    ] {
        let (code, out) = validate_with(file, from, to);
        assert_eq!(code, Some(1), "{to}: {out}");
        assert!(out.starts_with(want), "{to}:\n{out}");
        assert!(out.ends_with("validate: 1 error(s)\n"), "{to}:\n{out}");
    }
    let (_, out) = validate_with("cfg/builders.yml", "mod_builders:", "mod_builder:");
    assert!(
        out.contains(
            "did you mean 'mod_builders'?\n  note: 4 more errors follow from this; fix it first\n"
        ),
        "{out}"
    );
}

/// Every reference to a name nothing declares says what is declared and,
/// for a slip of the keyboard, the name meant.
#[test]
fn every_reference_kind_suggests_the_name_meant() {
    for (file, from, to, want) in [
        (
            "images/chain.yml",
            "source_image: tiny",
            "source_image: tinny",
            "  help: image 'base' (source_image) names image or OS builder 'tinny', which is not declared (declared: [base, mid, tiny, top]); did you mean 'tiny'?\n",
        ),
        (
            "groups/people.yml",
            "members: [avery.alpha@example.com",
            "members: [avery.alpah@example.com",
            "  help: group 'ops' (members) names user 'avery.alpah@example.com', which is not declared (declared: [avery.alpha@example.com, blake.bravo@example.com]); did you mean 'avery.alpha@example.com'?\n",
        ),
        (
            "groups/people.yml",
            "admins: [avery.alpha@example.com",
            "admins: [avery.alpah@example.com",
            "groups/people.yml:9:102: Group ops has admin avery.alpah@example.com which is not in the list of defined users.\n  help: group 'ops' (admins) names user 'avery.alpah@example.com', which is not declared",
        ),
        (
            "instances/box.yml",
            "{name: data,",
            "{name: dta,",
            "instances/box.yml:6:16: instance 'box' (storages[0]) names storage 'dta', which is not declared (declared: [data]); did you mean 'data'?\n",
        ),
        (
            "images/chain.yml",
            "runtimes: [{image_builder: bake}]",
            "runtimes: [{image_builder: bkae}]",
            "images/chain.yml:5:32: image 'base' (image_builder) names image builder 'bkae', which is not declared (declared: [bake]); did you mean 'bake'?\n",
        ),
        (
            "cfg/builders.yml",
            "{name: bake, type: local, is_default: true}",
            "{name: bake, type: local, is_default: true, runtime: hree}",
            "cfg/builders.yml:4:58: Image builder 'bake' (runtime) names runtime builder 'hree', which is not declared (declared: [here]); did you mean 'here'?\n  note: 4 more errors follow from this; fix it first\n",
        ),
    ] {
        let (code, out) = validate_with(file, from, to);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains(want), "{to}:\n{out}");
    }
}

/// A tab is refused where it is, the line shown with the tab as `→`, and
/// a cfg/ file it breaks adds no error about the keys it hid.
#[test]
fn a_tab_is_refused_at_the_tab() {
    let (code, out) = validate_with(
        "images/chain.yml",
        "\n    group: ops\n    runtimes",
        "\n\tgroup: ops\n    runtimes",
    );
    assert_eq!(code, Some(1));
    assert!(
        out.starts_with("images/chain.yml:4:1: invalid YAML: a tab at line 4, column 1 (`→group: ops`, the tab shown as →): YAML indents and separates with spaces only -- replace the tab with spaces\n"),
        "{out}"
    );
    let (_, out) = validate_with(
        "cfg/_config.yml",
        "\n  admin_public_keys:",
        "\n\tadmin_public_keys:",
    );
    assert_eq!(
        out,
        "cfg/_config.yml:5:1: invalid YAML: a tab at line 5, column 1 (`→admin_public_keys:`, the tab shown as →): YAML indents and separates with spaces only -- replace the tab with spaces\n  note: 1 more error follows from this; fix it first\nvalidate: 1 error(s)\n"
    );
}
