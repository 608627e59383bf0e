//! `csis public-safe`: the scan for material that must not be public (the
//! tree, a directory or a file, or git's index), its findings as text,
//! JSON or SARIF, `--explain RULE`, and the pre-commit hook's install.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use csis_engine::db::system::{OsSystem, System};
use csis_engine::workspace::Workspace;

use crate::outcome::outcome;

#[derive(Args)]
pub struct PublicSafeArgs {
    path: Option<PathBuf>,
    #[arg(long)]
    staged: bool,
    /// Install a git pre-commit hook that runs `public-safe --staged`.
    #[arg(long)]
    install_hook: bool,
    /// The findings as text (stderr), JSON or SARIF 2.1.0 (stdout; what
    /// code-scanning UIs read).
    #[arg(long, value_enum, default_value = "text")]
    format: PublicSafeFormat,
    /// Print what RULE refuses and what it lets through; with PATH, also
    /// why each of its findings there matched (never the value).
    #[arg(long, value_name = "RULE")]
    explain: Option<String>,
}

/// `--explain RULE` without PATH, answered without loading the tree;
/// `None` otherwise.
pub fn without_tree(args: &PublicSafeArgs) -> Option<ExitCode> {
    match args {
        PublicSafeArgs {
            explain: Some(rule),
            path: None,
            ..
        } => Some(public_safe_explain(rule)),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PublicSafeFormat {
    Text,
    Json,
    Sarif,
}

/// `csis public-safe --explain RULE`: the rule's description, layer,
/// pattern and what it lets through. Exit 2 for an unknown rule.
fn public_safe_explain(rule: &str) -> ExitCode {
    match csis_public_safe::explain(rule) {
        Some(text) => {
            csis_plugin_api::out!("{text}");
            ExitCode::SUCCESS
        }
        None => {
            let ids: Vec<&str> = csis_public_safe::all_rules().iter().map(|r| r.id).collect();
            eprintln!(
                "error: no public-safe rule {rule:?} (rules: {})",
                ids.join(", ")
            );
            ExitCode::from(2)
        }
    }
}

/// The findings as JSON: `{"scanned": n, "findings": [{path, rule,
/// excerpt}]}`.
fn public_safe_json(scanned: usize, findings: &[csis_public_safe::Finding]) -> serde_json::Value {
    serde_json::json!({
        "scanned": scanned,
        "findings": findings
            .iter()
            .map(|f| serde_json::json!({"path": f.path, "rule": f.rule, "excerpt": f.excerpt}))
            .collect::<Vec<_>>(),
    })
}

/// The findings as SARIF 2.1.0: one run of the tool `csis public-safe`,
/// every rule with its description, one error-level result per finding at
/// its file (an archive member at the archive).
fn public_safe_sarif(findings: &[csis_public_safe::Finding]) -> serde_json::Value {
    let rules: Vec<serde_json::Value> = csis_public_safe::all_rules()
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id,
                "shortDescription": {"text": r.id},
                "fullDescription": {"text": r.description},
                "defaultConfiguration": {"level": "error"},
                "properties": {"layer": match r.layer {
                    csis_public_safe::Layer::Hard => "hard",
                    csis_public_safe::Layer::Soft => "soft",
                }},
            })
        })
        .collect();
    let results: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            let file = f.path.split('!').next().unwrap_or(&f.path);
            serde_json::json!({
                "ruleId": f.rule,
                "level": "error",
                "message": {"text": format!("{}: {} (public-safe by construction; allow a value by decision in cfg/_config.yml public_safe.allow)", f.rule, f.excerpt)},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": file}}}],
                "partialFingerprints": {"csis/v1": format!("{}:{}:{}", f.path, f.rule, f.excerpt)},
            })
        })
        .collect();
    serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "csis public-safe",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

pub fn exec(ws: &Workspace, args: &PublicSafeArgs) -> ExitCode {
    let PublicSafeArgs {
        path,
        staged,
        install_hook,
        format,
        explain,
    } = args;
    public_safe(
        ws,
        path.as_deref(),
        *staged,
        *install_hook,
        *format,
        explain.as_deref(),
    )
}

fn public_safe(
    ws: &Workspace,
    path: Option<&std::path::Path>,
    staged: bool,
    install: bool,
    format: PublicSafeFormat,
    explain: Option<&str>,
) -> ExitCode {
    use csis_engine::run::commit;
    if install {
        return outcome(commit::install_hook(&OsSystem, &ws.root));
    }
    if let Some(rule) = explain
        && csis_public_safe::describe(rule).is_none()
    {
        return public_safe_explain(rule);
    }
    let scanned = if staged {
        commit::scan_staged(&OsSystem, &ws.root)
    } else {
        let under = path.map_or_else(|| ws.root.clone(), |p| ws.root.join(p));
        commit::scan_tree(&OsSystem, &ws.root, &under)
    };
    let (n, findings) = match scanned {
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
        Ok(s) => s,
    };
    if let Some(rule) = explain {
        // The rule, then why each of its findings matched, file by file.
        csis_plugin_api::out!("{}", csis_public_safe::explain(rule).unwrap_or_default());
        let read = |p: &std::path::Path| {
            OsSystem
                .read_bytes(p)
                .ok()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        };
        let allow =
            csis_public_safe::Allow::from_config_text(&read(&ws.root.join("cfg/_config.yml")));
        // The archive rules are about bytes that were not read: each
        // finding's reason is its whole explanation.
        if [csis_public_safe::UNINSPECTABLE, "archive-bound"].contains(&rule) {
            for f in findings.iter().filter(|f| f.rule == rule) {
                csis_plugin_api::outln!("{}: {}", f.path, f.excerpt);
            }
        }
        let mut files: Vec<&str> = findings
            .iter()
            .filter(|f| f.rule == rule && !f.path.contains('!'))
            .map(|f| f.path.as_str())
            .collect();
        files.dedup();
        for file in files {
            let text = read(&ws.root.join(file));
            for why in csis_public_safe::reasons(file, &text, &allow, rule) {
                csis_plugin_api::outln!("{file}: {why}");
            }
        }
        return if findings.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(3)
        };
    }
    let code = if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    };
    match format {
        PublicSafeFormat::Json => {
            csis_plugin_api::outln!("{:#}", public_safe_json(n, &findings));
            return code;
        }
        PublicSafeFormat::Sarif => {
            csis_plugin_api::outln!("{:#}", public_safe_sarif(&findings));
            return code;
        }
        PublicSafeFormat::Text => {}
    }
    if findings.is_empty() {
        csis_plugin_api::outln!("public-safe: {n} file(s) scanned, no findings");
        return code;
    }
    for f in &findings {
        eprintln!("{f}");
    }
    let what = match path {
        _ if staged => "the staged files".to_string(),
        Some(p) => p.display().to_string(),
        None => "the tree".to_string(),
    };
    eprintln!("error: {}", csis_public_safe::refusal(&what, &findings));
    code
}
