//! One bash modification of a bake, run inside the build's root (the
//! sandbox, `sandbox.rs`): its `ensure` commands first, then its script
//! and script files, each with the image's `/bin/bash`, `/` as the working
//! directory and `CSIS_IMAGE_ROOT` empty, as packer runs them in the VM.
//! The caller decides what a failure means: a bake records nothing, a
//! mod test records the failure (`mod_test.rs`).

use serde_json::{Value as J, json};

use super::Env;
use super::sandbox::{BASH, Sandbox, exit_text};
use super::store::confined;

/// One bash modification: skipped when every `ensure` command already
/// succeeds, else its script and script files run in order.
pub(super) fn apply_mod(
    env: &Env,
    series: &str,
    build: &Sandbox,
    variables: &serde_json::Map<String, J>,
    m: &J,
) -> Result<J, String> {
    let name = m.get("name").and_then(J::as_str).unwrap_or("?");
    let what = format!("modification '{name}' of image '{series}'");
    let mut sandbox = variables.iter().fold(build.clone(), |s, (k, v)| {
        s.env(k, v.as_str().unwrap_or_default())
    });
    let sh = |sandbox: &Sandbox, script: &str| sandbox.run_bash(&what, script);
    let ensure: Vec<&str> = m
        .get("ensure")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(J::as_str)
        .collect();
    if !ensure.is_empty()
        && ensure.iter().try_fold(true, |ok, c| {
            Ok::<_, String>(ok && sh(&sandbox, c)? == Some(0))
        })?
    {
        return Ok(json!({"name": name, "operation": "already applied"}));
    }
    let mut scripts: Vec<Vec<String>> = m
        .get("script")
        .and_then(J::as_str)
        .map(|s| vec![BASH.into(), "-c".into(), s.into()])
        .into_iter()
        .collect();
    // Script files are bound read-only into the sandbox, the one part of
    // the host a modification sees.
    for (i, file) in m
        .get("scripts")
        .and_then(J::as_array)
        .into_iter()
        .flatten()
        .filter_map(J::as_str)
        .enumerate()
    {
        // Validate refused such an entry already; a spec edited by hand
        // still binds nothing from outside the root.
        let path = confined(&env.root, &format!("scripts[{i}]"), file)
            .map_err(|e| format!("{what}: {e}"))?;
        let inside = sandbox.bind_script(&path);
        scripts.push(vec![BASH.into(), inside]);
    }
    for argv in scripts {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        match sandbox.run(&what, &argv)? {
            Some(0) => {}
            code => {
                return Err(format!(
                    "modification '{name}' of image '{series}' failed (exit {})",
                    exit_text(code)
                ));
            }
        }
    }
    Ok(json!({"name": name, "operation": "applied"}))
}
