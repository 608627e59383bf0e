//! ICT's own published templates (fixtures/ict-upstream, verbatim) are
//! real-world input: every one parses, its extends chain loads, each layer
//! validates as a user template, and where the corpus holds its OS
//! defaults, the full view (resolve_full) validates as a merged template.

use std::path::{Path, PathBuf};

use csis_template::{
    OsFs, Problem, TemplateFs, Variables, defaults_path, load_chain, parse, resolve_full,
    validate_merged, validate_user, validate_user_located,
};

/// Templates refused for a reason that is right by the reference, with
/// the exact refusal (`path under image-templates`, message). None now.
const RIGHTLY_REFUSED: &[(&str, &str)] = &[];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ict-upstream")
}

/// The corpus's template files, sorted (a test walking its own fixtures,
/// not the engine's view of a tree).
#[allow(clippy::disallowed_methods, clippy::unwrap_used)]
fn templates(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            templates(&p, out);
        } else if p.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            out.push(p);
        }
    }
}

fn errors(problems: Vec<Problem>) -> Vec<String> {
    problems
        .into_iter()
        .filter(Problem::is_error)
        .map(|p| p.to_string())
        .collect()
}

#[derive(Default)]
struct Counts {
    tried: usize,
    ok: usize,
    full: usize,
    overlay: usize,
    no_defaults: usize,
}

/// Every check the CLI's `validate` makes; the errors, or `Ok` with
/// whether the full view (OS defaults underneath) was validated.
fn check(file: &Path, osv: &Path, counts: &mut Counts) -> Result<(), Vec<String>> {
    let vars = Variables::new();
    let text = OsFs.read(file).map_err(|e| vec![e.to_string()])?;
    parse(file, &text, &vars).map_err(errors)?;
    let chain = load_chain(&OsFs, file, &vars).map_err(errors)?;
    let mut found = errors(chain.warnings.clone());
    for (f, layer) in chain.files.iter().zip(&chain.layers) {
        let text = OsFs.read(f).map_err(|e| vec![e.to_string()])?;
        found.extend(errors(validate_user_located(f, &text, layer)));
    }
    let folded = chain.fold();
    if chain.layers.len() > 1 {
        found.extend(errors(validate_user(file, &folded)));
    }
    if !found.is_empty() {
        return Err(found);
    }
    if folded.is_overlay() {
        // The OS defaults do not apply: the folded chain is the full view.
        let e = errors(validate_merged(file, &resolve_full(&chain, None)));
        if !e.is_empty() {
            return Err(e);
        }
        counts.overlay += 1;
        return Ok(());
    }
    let dp = defaults_path(osv, &folded.target);
    let Ok(dtext) = OsFs.read(&dp) else {
        counts.no_defaults += 1;
        return Ok(());
    };
    let defaults = parse(&dp, &dtext, &vars).map_err(errors)?;
    let full = resolve_full(&chain, Some(&defaults));
    let e = errors(validate_merged(file, &full));
    if e.is_empty() {
        counts.full += 1;
        Ok(())
    } else {
        Err(e)
    }
}

#[test]
fn ict_published_templates_are_read() {
    let root = corpus();
    let osv = root.join("config/osv");
    let mut files = Vec::new();
    templates(&root.join("image-templates"), &mut files);
    assert_eq!(files.len(), 109, "the corpus holds 109 image templates");
    let mut counts = Counts::default();
    let mut unexpected = Vec::new();
    for file in &files {
        counts.tried += 1;
        let rel = file
            .strip_prefix(root.join("image-templates"))
            .unwrap()
            .to_string_lossy()
            .to_string();
        let expected = RIGHTLY_REFUSED.iter().find(|(p, _)| *p == rel);
        match (check(file, &osv, &mut counts), expected) {
            (Ok(()), None) => counts.ok += 1,
            (Err(e), Some((_, why))) if e.iter().any(|m| m.ends_with(why)) => {}
            (r, _) => unexpected.push(format!("{rel}: {r:?} (expected {expected:?})")),
        }
    }
    println!(
        "ict-upstream: tried {}, ok {}, with OS defaults resolved in full {}, overlay (defaults do not apply) {}, OS defaults not in the corpus {}, rightly refused {}",
        counts.tried,
        counts.ok,
        counts.full,
        counts.overlay,
        counts.no_defaults,
        RIGHTLY_REFUSED.len()
    );
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
    assert_eq!(counts.ok + RIGHTLY_REFUSED.len(), counts.tried);
}
