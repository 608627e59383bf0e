//! Encrypted values (`ENC[age:...]`): `csis encrypt` (named keys of files,
//! in place), `csis reencrypt` (every marker to the current recipients)
//! and `csis decrypt-check` (whether every marker opens).

use std::path::PathBuf;

use clap::Args;
use csis_engine::db::system::OsSystem;
use csis_engine::workspace::Workspace;

#[derive(Args)]
pub struct EncryptArgs {
    /// Comma-separated keys, e.g. name,first_name,last_name,email.
    #[arg(long, value_delimiter = ',', required = true)]
    fields: Vec<String>,
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn recipients(ws: &Workspace) -> Result<Vec<String>, String> {
    let path = ws.root.join("cfg/_config.yml");
    let text = csis_engine::db::system::System::read_to_string(&OsSystem, &path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .ok_or_else(|| format!("{} does not exist", path.display()))?;
    csis_secrets::recipients_from_config(&text)
}

pub fn encrypt(ws: &Workspace, args: &EncryptArgs) -> Result<String, String> {
    let EncryptArgs { fields, files } = args;
    use csis_engine::db::system::System;
    let recipients = recipients(ws)?;
    let mut out = Vec::new();
    for file in files {
        let text = OsSystem
            .read_to_string(file)
            .map_err(|e| format!("{}: {e}", file.display()))?
            .ok_or_else(|| format!("{} does not exist", file.display()))?;
        let (new, n) = csis_secrets::encrypt_fields_in_text(&text, fields, &mut |p| {
            csis_secrets::encrypt(p, &recipients)
        })?;
        if n > 0 {
            OsSystem
                .write_atomic(file, new.as_bytes(), false)
                .map_err(|e| e.to_string())?;
        }
        out.push(format!(
            "encrypt: {}: {n} value(s) encrypted",
            file.display()
        ));
    }
    Ok(out.join("\n"))
}

pub fn reencrypt(ws: &Workspace) -> Result<String, String> {
    use csis_engine::db::system::System;
    let recipients = recipients(ws)?;
    let identities = ws.tree.identities(&ws.db);
    // Every file first; nothing is written unless every marker opened.
    let mut changed = Vec::new();
    let mut total = 0;
    for (path, text) in ws.config_files() {
        let (new, n) = csis_secrets::rotate_text(&text, identities, &recipients)
            .map_err(|e| format!("reencrypt: {path}: {e}; nothing was changed"))?;
        if n > 0 {
            total += n;
            changed.push((path, new));
        }
    }
    for (path, new) in &changed {
        OsSystem
            .write_atomic(&ws.root.join(path), new.as_bytes(), false)
            .map_err(|e| e.to_string())?;
    }
    Ok(format!(
        "reencrypt: {total} marker(s) in {} file(s) now encrypted to {} recipient(s)",
        changed.len(),
        recipients.len()
    ))
}

pub fn decrypt_check(ws: &Workspace) -> Result<String, String> {
    let identities = ws.tree.identities(&ws.db);
    let mut lines = Vec::new();
    let mut closed = 0;
    for (path, text) in ws.config_files() {
        for (line, marker) in csis_secrets::markers_in(&text) {
            match csis_secrets::decrypt(&marker, identities) {
                Ok(_) => lines.push(format!("{path}:{line}: opens")),
                Err(e) => {
                    closed += 1;
                    lines.push(format!("{path}:{line}: cannot open: {e}"));
                }
            }
        }
    }
    if closed > 0 {
        return Err(format!(
            "{}\ndecrypt-check: {closed} marker(s) do not open",
            lines.join("\n")
        ));
    }
    lines.push(format!(
        "decrypt-check: every marker opens ({})",
        lines.len()
    ));
    Ok(lines.join("\n"))
}
