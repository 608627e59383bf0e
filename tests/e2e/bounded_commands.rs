//! The commands that read a file they are named, outside any tree
//! (`csis cloud-config check`, `csis template validate|resolve`), read it
//! under the tree's limits on input (docs/reliability.md, "Commands that
//! read a named file"): a FIFO, a device or a file over `--max-file-size`
//! is refused at once with the tree load's words, exit 1, instead of
//! hanging or reading without end.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `csis ARGS` in `dir` with a deadline: still running after 20 s, it is
/// killed and the test fails (a FIFO read blocks forever). The exit code,
/// stdout and stderr.
fn csis(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = tempfile::tempdir().unwrap();
    let stdout = std::fs::File::create(out.path().join("stdout")).unwrap();
    let stderr = std::fs::File::create(out.path().join("stderr")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(dir)
        .args(args)
        .env_remove("CSIS_MAX_FILE_SIZE")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("csis {args:?} still running after 20 s: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap();
    (status.code(), read("stdout"), read("stderr"))
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

const FIFO: &str = "a FIFO, not a regular file; csis reads only regular files";

#[test]
fn cloud_config_check_refuses_a_fifo_at_once() {
    let t = tempfile::tempdir().unwrap();
    mkfifo(&t.path().join("user-data"));
    let got = csis(t.path(), &["cloud-config", "check", "user-data"], &[]);
    assert_eq!(
        got,
        (
            Some(1),
            String::new(),
            format!("error: reading user-data: {FIFO}\n")
        )
    );
}

/// It read /dev/zero until it held 16 GB.
#[test]
fn cloud_config_check_refuses_a_device_unread() {
    let t = tempfile::tempdir().unwrap();
    let got = csis(t.path(), &["cloud-config", "check", "/dev/zero"], &[]);
    assert_eq!(
        got,
        (
            Some(1),
            String::new(),
            "error: reading /dev/zero: a character device, not a regular file; csis reads only \
             regular files\n"
                .to_string()
        )
    );
}

/// Over `--max-file-size` (or CSIS_MAX_FILE_SIZE) refused with the limit
/// and how to raise it; raised, the same file is checked.
#[test]
fn cloud_config_check_refuses_a_file_over_the_size_limit() {
    let t = tempfile::tempdir().unwrap();
    let text = format!("#cloud-config\n# {}\nhostname: web\n", "x".repeat(2000));
    std::fs::write(t.path().join("user-data"), text).unwrap();
    let over = "error: reading user-data: 2.0 KiB is over the limit of 1 KiB csis reads from one \
                file; raise it with --max-file-size BYTES (or CSIS_MAX_FILE_SIZE)\n";
    let args = [
        "--max-file-size",
        "1024",
        "cloud-config",
        "check",
        "user-data",
    ];
    let got = csis(t.path(), &args, &[]);
    assert_eq!(got, (Some(1), String::new(), over.to_string()));
    let args = ["cloud-config", "check", "user-data"];
    let got = csis(t.path(), &args, &[("CSIS_MAX_FILE_SIZE", "1024")]);
    assert_eq!(got, (Some(1), String::new(), over.to_string()));
    let (code, _, stderr) = csis(t.path(), &args, &[]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn template_validate_and_resolve_refuse_a_fifo() {
    let t = tempfile::tempdir().unwrap();
    mkfifo(&t.path().join("leaf.yml"));
    let refused = format!("leaf.yml:1:1: cannot read template: {FIFO}\n");
    for args in [
        &["template", "validate", "leaf.yml"][..],
        &["template", "resolve", "leaf.yml"],
    ] {
        let got = csis(t.path(), args, &[]);
        assert_eq!(got, (Some(1), String::new(), refused.clone()), "{args:?}");
    }
}

/// The parent named by `extends` is read under the same limits as the
/// template named on the command line.
#[test]
fn template_validate_refuses_an_extends_parent_that_is_a_fifo_or_too_large() {
    let t = tempfile::tempdir().unwrap();
    mkfifo(&t.path().join("base.yml"));
    std::fs::write(
        t.path().join("leaf.yml"),
        "extends: base.yml\nimage: {name: leaf, version: '1'}\n\
         target: {os: ubuntu, dist: ubuntu24, arch: x86_64, imageType: raw}\n",
    )
    .unwrap();
    let got = csis(t.path(), &["template", "validate", "leaf.yml"], &[]);
    let refused = format!("base.yml:1:1: cannot read template: {FIFO}\n");
    assert_eq!(got, (Some(1), String::new(), refused));

    std::fs::remove_file(t.path().join("base.yml")).unwrap();
    let base = format!(
        "# {}\nimage: {{name: base, version: '1'}}\n\
         target: {{os: ubuntu, dist: ubuntu24, arch: x86_64, imageType: raw}}\n",
        "x".repeat(300)
    );
    std::fs::write(t.path().join("base.yml"), base).unwrap();
    let args = ["--max-file-size", "200", "template", "validate", "leaf.yml"];
    let got = csis(t.path(), &args, &[]);
    let refused = "base.yml:1:1: cannot read template: 404 bytes is over the limit of 200 bytes \
                   csis reads from one file; raise it with --max-file-size BYTES (or \
                   CSIS_MAX_FILE_SIZE)\n";
    assert_eq!(got, (Some(1), String::new(), refused.to_string()));
}

/// A run's `csis ict materialize` step reads the template chain again: a
/// parent that became a FIFO after the plan hung the step, and the run.
#[test]
fn the_ict_materialize_step_refuses_a_fifo_in_its_chain_and_as_its_spec() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    std::fs::write(
        r.join("spec.json"),
        r#"{"series": "os", "template": "leaf.yml", "redacted": "os.yml", "out": "_private/t.yml", "work_dir": "_private/work"}"#,
    )
    .unwrap();
    mkfifo(&r.join("leaf.yml"));
    let root = r.to_string_lossy().to_string();
    let env = [("CSIS_ROOT", root.as_str())];
    let got = csis(r, &["ict", "materialize", "--spec", "spec.json"], &env);
    assert_eq!(
        got,
        (
            Some(1),
            String::new(),
            format!("csis ict: {root}/leaf.yml:1:1: cannot read template: {FIFO}\n")
        )
    );
    mkfifo(&r.join("fifo.json"));
    let got = csis(r, &["ict", "materialize", "--spec", "fifo.json"], &env);
    assert_eq!(
        got,
        (
            Some(1),
            String::new(),
            format!("csis ict: reading fifo.json: {FIFO}\n")
        )
    );
    assert!(!r.join("_private").exists());
}
