//! Helpers every end-to-end module shares: the binary run over a tree,
//! edits. The trees themselves come from csis-test-support.

use std::path::Path;
use std::process::{Command, Output};

/// `csis --root-dir ROOT ARGS` at a fixed clock.
pub fn csis_at(root: &Path, now: i64, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("CSIS_NOW", now.to_string())
        .env_remove("CSIS_RUN_ID")
        .output()
        .unwrap()
}

/// Stdout and stderr of a command that must have exited 0.
pub fn ok(o: Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(0), "{err}");
    format!("{}{err}", String::from_utf8_lossy(&o.stdout))
}

/// Replace the first `from` in a file of the tree; the text must be there.
pub fn edit(root: &Path, file: &str, from: &str, to: &str) {
    let p = root.join(file);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{file} has no {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}
