//! `csis dummy apply --spec FILE`: the dummy builders' deferred step. It
//! reads the spec its builder generated and says what it would have
//! applied; it writes nothing.
#![allow(clippy::disallowed_methods)]

use serde_json::Value as J;

/// Run the step; the process exit code.
pub fn main(args: &[String]) -> u8 {
    let path = match args {
        [verb, flag, path] if verb == "apply" && flag == "--spec" => path,
        _ => {
            eprintln!("usage: csis dummy apply --spec FILE");
            return 2;
        }
    };
    let spec: J = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("csis dummy: {path}: {e}");
            return 1;
        }
    };
    let items = spec["items"].as_array().map_or(0, Vec::len);
    csis_plugin_api::outln!(
        "dummy {} {}: {} item(s) in {}",
        spec["builder"].as_str().unwrap_or("?"),
        spec["phase"].as_str().unwrap_or("?"),
        items,
        spec["lifecycle"].as_str().unwrap_or("?")
    );
    0
}
