//! How a command's result becomes lines and an exit code: an operation
//! on meta-state (`Result<String, String>`) and a terraform step's
//! `Outcome`.

use std::process::ExitCode;

/// A terraform step's lines (stdout, then stderr) and its exit code.
pub fn print_outcome(o: csis_engine::terraform::Outcome) -> ExitCode {
    for line in &o.out {
        csis_plugin_api::outln!("{line}");
    }
    for line in &o.err {
        eprintln!("error: {line}");
    }
    ExitCode::from(o.code)
}

/// Print an operation's lines (warnings among them to stderr), or its
/// refusal; exit 0 or 1.
pub fn outcome(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(done) => {
            for line in done.lines() {
                if line.starts_with("warning: ") {
                    eprintln!("{line}");
                } else {
                    csis_plugin_api::outln!("{line}");
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
