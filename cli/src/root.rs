//! Where the configuration root is when no flag names it, and the
//! directory csis was started in (what a terraform step's paths are
//! relative to).

use std::path::PathBuf;

use csis_engine::db::system::{OsSystem, System};

/// Without --root-dir or CSIS_ROOT_DIR, the root is found as git and
/// cargo find theirs: the nearest directory from the working directory up
/// whose cfg/ holds YAML; `.` when there is none (the load then says so).
pub fn find_root() -> PathBuf {
    let here = PathBuf::from(".");
    let Ok(start) = std::env::current_dir() else {
        return here;
    };
    let holds_cfg = |dir: &std::path::Path| {
        let cfg = dir.join("cfg");
        OsSystem.list_files(&cfg).is_ok_and(|files| {
            files.iter().any(|p| {
                p.parent() == Some(cfg.as_path())
                    && matches!(p.extension().and_then(|x| x.to_str()), Some("yml" | "yaml"))
            })
        })
    };
    match start.ancestors().find(|d| holds_cfg(d)) {
        Some(d) if d == start => here,
        Some(d) => d.to_path_buf(),
        None => here,
    }
}

/// The directory csis was started in: a terraform step's planfile and
/// root are relative to it, never to the configuration root.
pub fn invocation_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}
