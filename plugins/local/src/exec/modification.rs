//! One bash modification of a bake, run with the build's root in
//! `$CSIS_IMAGE_ROOT` and the configuration root as its working
//! directory: its `ensure` commands first, then its script and script
//! files. The bake decides what happens to the build when one fails.

use std::path::Path;
use std::process::Command;

use serde_json::{Value as J, json};

use super::Env;
use super::store::confined;

/// One bash modification: skipped when every `ensure` command already
/// succeeds, else its script and script files run in order.
pub(super) fn apply_mod(env: &Env, series: &str, root: &Path, m: &J) -> Result<J, String> {
    let name = m.get("name").and_then(J::as_str).unwrap_or("?");
    let sh = |script: &str| -> Result<Option<i32>, String> {
        let status = csis_child::die_with_parent(&mut Command::new("bash"))
            .arg("-c")
            .arg(script)
            .env("CSIS_IMAGE_ROOT", root)
            .current_dir(&env.root)
            .status()
            .map_err(|e| format!("modification '{name}' of image '{series}': bash: {e}"))?;
        Ok(status.code())
    };
    let ensure: Vec<&str> = m
        .get("ensure")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(J::as_str)
        .collect();
    if !ensure.is_empty()
        && ensure
            .iter()
            .try_fold(true, |ok, c| Ok::<_, String>(ok && sh(c)? == Some(0)))?
    {
        return Ok(json!({"name": name, "operation": "already applied"}));
    }
    let mut scripts: Vec<String> = m
        .get("script")
        .and_then(J::as_str)
        .map(str::to_string)
        .into_iter()
        .collect();
    for (i, file) in m
        .get("scripts")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(J::as_str)
        .enumerate()
    {
        // Validate refused such an entry already; a spec edited by hand
        // still runs nothing from outside the root.
        let path = confined(&env.root, &format!("scripts[{i}]"), file)
            .map_err(|e| format!("modification '{name}' of image '{series}': {e}"))?;
        scripts.push(format!("bash {}", shell_quote(&path.to_string_lossy())));
    }
    for s in scripts {
        match sh(&s)? {
            Some(0) => {}
            code => {
                return Err(format!(
                    "modification '{name}' of image '{series}' failed (exit {}); nothing was recorded for this build",
                    code.map_or("by a signal".into(), |c| c.to_string())
                ));
            }
        }
    }
    Ok(json!({"name": name, "operation": "applied"}))
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
