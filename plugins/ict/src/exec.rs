//! `csis ict materialize --spec FILE`, as a runner script calls it from the
//! lifecycle directory with `CSIS_ROOT` set: resolve the base image's
//! template again (the same chain, OS defaults and variables the plan
//! resolved), check it is the one generation wrote (redacted, beside the
//! spec), write it unredacted to the spec's `out` under `_private/`, and
//! empty the build's work directory so the runtime takes only this
//! build's artifact. Every file it reads (the spec, the template chain,
//! the OS defaults, the generated template) is read through the
//! [`TemplateFs`] the binary hands it: the tree's bounded reader, so a
//! FIFO or an oversized file is refused rather than hanging the run.
#![allow(clippy::disallowed_methods)] // a step of the run: it writes _private/

use std::fs;
use std::path::{Path, PathBuf};

use csis_template::{TemplateFs, Variables};
use serde_json::Value as J;

/// Run one step, reading through `files`; the process exit code.
pub fn main(args: &[String], files: &dyn TemplateFs) -> u8 {
    match run(args, files) {
        Ok(msg) => {
            csis_plugin_api::outln!("{msg}");
            0
        }
        Err(e) => {
            eprintln!("csis ict: {e}");
            1
        }
    }
}

fn run(args: &[String], files: &dyn TemplateFs) -> Result<String, String> {
    let usage = "usage: csis ict materialize --spec FILE";
    let spec_path = match args {
        [verb, flag, path] if verb == "materialize" && flag == "--spec" => Path::new(path),
        _ => return Err(usage.to_string()),
    };
    let root = PathBuf::from(
        std::env::var("CSIS_ROOT")
            .map_err(|_| "CSIS_ROOT is not set (the runner script sets it)")?,
    );
    let text = files
        .read(spec_path)
        .map_err(|e| format!("reading {}: {e}", spec_path.display()))?;
    let spec: J = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not JSON: {e}", spec_path.display()))?;
    materialize(files, &root, spec_path, &spec)
}

fn field<'a>(spec: &'a J, key: &str) -> Result<&'a str, String> {
    spec.get(key)
        .and_then(J::as_str)
        .ok_or_else(|| format!("spec has no string field '{key}'"))
}

/// The merged template (unredacted, redacted) of the spec's leaf, as the
/// plan resolved it.
pub fn resolve(files: &dyn TemplateFs, root: &Path, spec: &J) -> Result<(String, String), String> {
    let mut vars = Variables::new();
    if let Some(J::Object(m)) = spec.get("variables") {
        for (k, v) in m {
            vars.set(k, v.as_str().unwrap_or_default());
        }
    }
    let leaf = root.join(field(spec, "template")?);
    let describe = |problems: Vec<csis_template::Problem>| {
        problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let chain = csis_template::load_chain(files, &leaf, &vars).map_err(describe)?;
    let defaults = match spec.get("defaults").and_then(J::as_str) {
        None => None,
        Some(d) => {
            let file = root.join(d);
            let text = files
                .read(&file)
                .map_err(|e| format!("reading {}: {e}", file.display()))?;
            Some(csis_template::parse(&file, &text, &vars).map_err(describe)?)
        }
    };
    let merged = csis_template::resolve_full(&chain, defaults.as_ref());
    Ok((
        csis_template::to_yaml(&merged, false),
        csis_template::to_yaml(&merged, true),
    ))
}

fn materialize(
    files: &dyn TemplateFs,
    root: &Path,
    spec_path: &Path,
    spec: &J,
) -> Result<String, String> {
    let series = field(spec, "series")?;
    let (full, redacted) = resolve(files, root, spec)?;
    // The generated (redacted) template sits in the lifecycle directory,
    // the working directory of the step.
    let generated = field(spec, "redacted")?;
    let dir = spec_path
        .ancestors()
        .nth(3)
        .filter(|d| d.join(generated).is_file())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    match files.read(&dir.join(generated)) {
        Ok(planned) if planned != redacted => {
            return Err(format!(
                "the image template of {series} changed since generation ({generated} no longer matches its chain); run again"
            ));
        }
        Ok(_) => {}
        Err(e) => return Err(format!("reading {generated}: {e}")),
    }
    let out = root.join(field(spec, "out")?);
    if let Some(parent) = out.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let tmp = out.with_extension("yml.partial");
    fs::write(&tmp, full).map_err(|e| format!("{}: {e}", tmp.display()))?;
    fs::rename(&tmp, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    let work = root.join(field(spec, "work_dir")?);
    if work.exists() {
        fs::remove_dir_all(&work).map_err(|e| format!("emptying {}: {e}", work.display()))?;
    }
    fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    Ok(format!(
        "ict {series}: template written to {} (work directory {} emptied)",
        field(spec, "out")?,
        field(spec, "work_dir")?
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use csis_template::OsFs;
    use serde_json::json;

    const ROOT: &str = "image:\n  name: r\n  version: \"1\"\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n  arch: x86_64\n  imageType: raw\nsystemConfig:\n  name: r\n  packages: [a]\n";

    fn setup() -> (tempfile::TempDir, J) {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("t")).unwrap();
        fs::create_dir_all(r.join("gen/os/image-generation")).unwrap();
        fs::write(r.join("t/root.yml"), ROOT).unwrap();
        fs::write(
            r.join("t/leaf.yml"),
            ROOT.replacen("image:", "extends: root.yml\nimage:", 1)
                .replace("packages: [a]", "packages: [b]\n  users:\n    - {name: op, password: \"${pw}\", hash_algo: sha512}"),
        )
        .unwrap();
        let spec = json!({
            "series": "os",
            "runtime": "here",
            "template": "t/leaf.yml",
            "variables": {"pw": "s3cret"},
            "redacted": "os/image-generation/os.yml",
            "out": "_private/ict/os-here/template.yml",
            "work_dir": "_private/ict/os-here/work",
        });
        let (_, redacted) = resolve(&OsFs, r, &spec).unwrap();
        fs::write(r.join("gen/os/image-generation/os.yml"), redacted).unwrap();
        (d, spec)
    }

    #[test]
    fn materialize_writes_the_unredacted_template_under_private_and_empties_the_work_dir() {
        let (d, spec) = setup();
        let r = d.path();
        fs::create_dir_all(r.join("_private/ict/os-here/work/old")).unwrap();
        fs::write(r.join("_private/ict/os-here/work/old/stale.raw"), "x").unwrap();
        let spec_path = r.join("gen/os/image-generation/os.json");
        materialize(&OsFs, r, &spec_path, &spec).unwrap();
        let full = fs::read_to_string(r.join("_private/ict/os-here/template.yml")).unwrap();
        assert!(full.contains("s3cret"), "{full}");
        assert!(full.contains("- a") && full.contains("- b"), "{full}");
        let generated = fs::read_to_string(r.join("gen/os/image-generation/os.yml")).unwrap();
        assert!(!generated.contains("s3cret"), "{generated}");
        assert!(!r.join("_private/ict/os-here/work/old").exists());
        assert!(r.join("_private/ict/os-here/work").is_dir());
    }

    #[test]
    fn materialize_refuses_a_template_changed_since_generation() {
        let (d, spec) = setup();
        let r = d.path();
        fs::write(
            r.join("t/root.yml"),
            ROOT.replace("packages: [a]", "packages: [a, c]"),
        )
        .unwrap();
        let spec_path = r.join("gen/os/image-generation/os.json");
        let e = materialize(&OsFs, r, &spec_path, &spec).unwrap_err();
        assert_eq!(
            e,
            "the image template of os changed since generation (os/image-generation/os.yml no longer matches its chain); run again"
        );
        assert!(!r.join("_private/ict/os-here/template.yml").exists());
    }
}
