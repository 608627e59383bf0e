//! Rendered values are data, and interpolation refuses what it cannot
//! read (issue 32, defects 2 and 11; docs/interpolation.md,
//! docs/reliability.md "Rendered values are data").

use std::path::Path;
use std::process::{Command, Output};

use csis_test_support::{tree, write_file};

use crate::support::edit;

/// `csis --root-dir ROOT ARGS` with `vars` set in its environment.
fn csis_env(root: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_csis"));
    cmd.current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("CSIS_NOW", "1796226804")
        .env_remove("CSIS_RUN_ID");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

const SECRET: &str = "s3cret-of-B";

/// An image, a builder, a builder's per-item template and a state
/// output, each printing a value that holds `{{ ENV.B }}`.
fn leaky_tree() -> tempfile::TempDir {
    let t = tree("local-run");
    let r = t.path();
    crate::support::append(
        r,
        "cfg/_config.yml",
        "interpolation:\n  terraform:\n    - name: net\n      path: state/net.tfstate\n",
    );
    write_file(
        r,
        "state/net.tfstate",
        r#"{"version": 4, "outputs": {"note": {"value": "{{ ENV.B }}", "type": "string"}}}"#,
    );
    edit(
        r,
        "images/chain.yml",
        "  - name: base\n    source_image: tiny\n",
        "  - name: base\n    source_image: tiny\n    description: \"{{ ENV.A }}\"\n    tags:\n      copy: \"{{ image.description }}\"\n      state: \"${terraform.note}\"\n      own: \"{{ image.name }}-{{ ENV.C }}\"\n",
    );
    edit(
        r,
        "cfg/builders.yml",
        "  - name: tiny\n",
        "  - name: tiny\n    tags:\n      e: \"{{ ENV.A }}\"\n",
    );
    edit(
        r,
        "cfg/builders.yml",
        "  - {name: people, type: basic, is_default: true}",
        "  - {name: people, type: basic, is_default: true, default_user_description_template: \"{{ user.name }} {{ ENV.A }}\"}",
    );
    t
}

#[test]
fn an_environment_value_is_printed_never_rendered_again() {
    let t = leaky_tree();
    let vars = [("A", "{{ ENV.B }}"), ("B", SECRET), ("C", "ok")];
    let o = csis_env(t.path(), &vars, &["config", "render"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!out.contains(SECRET), "{out}");
    // The image's own field, a field copying it, the state output, the
    // os builder's tag and the users' descriptions all print the text.
    assert!(out.contains("    description: \"{{ ENV.B }}\"\n"), "{out}");
    assert!(out.contains("      copy: \"{{ ENV.B }}\"\n"), "{out}");
    assert!(out.contains("      state: \"{{ ENV.B }}\"\n"), "{out}");
    assert!(out.contains("      e: \"{{ ENV.B }}\"\n"), "{out}");
    assert!(
        out.contains("    description: \"avery.alpha@example.com {{ ENV.B }}\"\n"),
        "{out}"
    );
    // A template of the user's that names another still resolves.
    assert!(out.contains("      own: base-ok\n"), "{out}");
}

/// local-run with a state source and an image reading it and an
/// env_file; `tags` are the image's tags, `env` the env_file's bytes,
/// `state` the state file's.
fn interp_tree(tags: &str, env: &[u8], state: &[u8]) -> tempfile::TempDir {
    let t = tree("local-run");
    let r = t.path();
    crate::support::append(
        r,
        "cfg/_config.yml",
        "interpolation:\n  terraform:\n    - name: net\n      path: state/net.tfstate\n",
    );
    std::fs::create_dir_all(r.join("state")).unwrap();
    std::fs::write(r.join("state/net.tfstate"), state).unwrap();
    std::fs::write(r.join("images/base.env"), env).unwrap();
    edit(
        r,
        "images/chain.yml",
        "  - name: base\n    source_image: tiny\n",
        &format!(
            "  - name: base\n    source_image: tiny\n    env_file: images/base.env\n    tags:\n{tags}"
        ),
    );
    t
}

const STATE: &[u8] = br#"{"version": 4, "outputs": {"n": {"value": "from-state"}}}"#;

/// The error lines (not the help lines) of `--brief validate`, which
/// must exit 1.
fn errors(o: &Output) -> Vec<String> {
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    stderr(o)
        .lines()
        .filter(|l| !l.starts_with("  help:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_placeholder_that_names_nothing_is_an_error_at_its_field() {
    let t = interp_tree(
        "      a: \"${env.}\"\n      b: \"x ${terraform.} y\"\n",
        b"",
        STATE,
    );
    let o = csis_env(t.path(), &[], &["--brief", "validate"]);
    assert_eq!(
        errors(&o),
        [
            "images/chain.yml:6:10: interpolation: images entry 'base', field 'tags.a': '${env.}' names nothing -- write ${env.NAME}, or $${ for a literal ${",
            "images/chain.yml:7:10: interpolation: images entry 'base', field 'tags.b': '${terraform.}' names nothing -- write ${terraform.KEY}, or $${ for a literal ${",
            "validate: 2 error(s)",
        ]
    );
}

#[test]
fn a_refused_state_file_is_one_error_not_one_per_field() {
    let tags = "      c: \"${terraform.n}\"\n      d: \"${terraform.n} x\"\n";
    let not_utf8 = interp_tree(
        tags,
        b"",
        b"{\"version\": 4, \"outputs\": {\"n\": {\"value\": \"\xff\"}}}",
    );
    let o = csis_env(not_utf8.path(), &[], &["--brief", "validate"]);
    assert_eq!(
        errors(&o),
        [
            "state/net.tfstate: not UTF-8 text (the first invalid byte is at line 1, column 44); csis reads configuration files as UTF-8",
            "validate: 1 error(s)",
        ]
    );
    let mut big = STATE.to_vec();
    big.extend(std::iter::repeat_n(b' ', 2000));
    let too_large = interp_tree(tags, b"", &big);
    let o = csis_env(
        too_large.path(),
        &[],
        &["--max-file-size", "1500", "--brief", "validate"],
    );
    assert_eq!(
        errors(&o),
        [
            "state/net.tfstate: 2.0 KiB is over the limit of 1.5 KiB csis reads from one file; raise it with --max-file-size BYTES (or CSIS_MAX_FILE_SIZE)",
            "validate: 1 error(s)",
        ]
    );
}

#[test]
fn an_env_file_with_an_open_quote_is_refused_at_its_line_and_column() {
    let t = interp_tree(
        "      f: \"${env.FIRST}\"\n      q: \"${env.Q}\"\n",
        b"FIRST=one\n  Q = \"unterminated\n",
        STATE,
    );
    let o = csis_env(t.path(), &[], &["--brief", "validate"]);
    assert_eq!(
        errors(&o),
        [
            "images/chain.yml:4:15: interpolation: images entry 'base', field 'env_file': images/base.env:2:7: the double quote opened on this line is not closed -- close it (a value spans one line; write \\n for a line break)",
            "validate: 1 error(s)",
        ]
    );
    let t = interp_tree("      u: \"${env.U}\"\n", b"U=\"\\q\"\n", STATE);
    let o = csis_env(t.path(), &[], &["--brief", "validate"]);
    assert_eq!(
        errors(&o),
        [
            "images/chain.yml:4:15: interpolation: images entry 'base', field 'env_file': images/base.env:1:4: '\\q' is not an escape csis knows (\\n \\t \\r \\\" \\\\ \\' \\$ \\uXXXX) -- write \\\\ for a backslash",
            "validate: 1 error(s)",
        ]
    );
}

#[test]
fn an_env_file_bom_and_unicode_escapes_are_read_as_dotenv_reads_them() {
    let t = interp_tree(
        "      f: \"${env.FIRST}\"\n      u: \"${env.U}\"\n      s: \"${terraform.n}\"\n",
        b"\xef\xbb\xbfFIRST=one\nU=\"\\u0041\\u00e9\"\n",
        STATE,
    );
    let o = csis_env(t.path(), &[], &["config", "render"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        out.contains("      f: one\n      s: from-state\n      u: Aé\n"),
        "{out}"
    );
}
