//! What a `${terraform.KEY}` reads: the entry's tokens, the declared
//! sources, and the state files (and `env_file:`) an entry reads.

use csis_model::Value;

use super::ENV_FILE_KEY;
use super::placeholders::{Ref, refs_in};

/// `{name}`, `{environment}` and `{runtime}` in `s` replaced by the
/// entry's; a token the entry has no value for is an error naming it.
pub fn substitute_tokens(s: &str, tokens: &Tokens) -> Result<String, String> {
    let mut out = s.to_string();
    for (token, value) in [
        ("{name}", &tokens.name),
        ("{environment}", &tokens.environment),
        ("{runtime}", &tokens.runtime),
    ] {
        if out.contains(token) {
            match value {
                Some(v) => out = out.replace(token, v),
                None => return Err(format!("token {token} has no value for this entry")),
            }
        }
    }
    Ok(out)
}

/// The per-entry tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    pub name: Option<String>,
    pub environment: Option<String>,
    pub runtime: Option<String>,
}

impl Tokens {
    /// An entry's tokens: its `name`, its own `config.environment` (else
    /// the document's, `environment`), its `runtime`.
    pub fn of(entry: &Value, environment: Option<&str>) -> Tokens {
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        Tokens {
            name: s(entry.get("name")),
            environment: s(entry.get("config").and_then(|c| c.get("environment")))
                .or_else(|| environment.map(str::to_string)),
            runtime: s(entry.get("runtime")),
        }
    }
}

/// A declared state source: `interpolation: terraform: [{name, path}]`
/// (or `backend:` + `workspace:`, which the engine turns into a path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    /// The state file, relative to the root, tokens unsubstituted.
    pub location: String,
}

/// Which source a key reads and the output name: `<source>.<output>`
/// when the first segment names a source, else the one source declared.
pub fn split_key<'a>(sources: &'a [Source], key: &'a str) -> Result<(&'a Source, &'a str), String> {
    if let Some((first, rest)) = key.split_once('.')
        && let Some(s) = sources.iter().find(|s| s.name == first)
    {
        return Ok((s, rest));
    }
    match sources {
        [one] => Ok((one, key)),
        [] => Err(
            "no terraform source is declared (interpolation: terraform: in cfg/_config.yml)".into(),
        ),
        _ => Err(format!(
            "several terraform sources are declared; name one: ${{terraform.<source>.{key}}} ({})",
            sources
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The state files an entry reads (resolved locations), and its
/// `env_file:` when it declares one.
pub fn entry_reads(
    entry: &Value,
    sources: &[Source],
    environment: Option<&str>,
) -> (Vec<String>, Option<String>) {
    let tokens = Tokens::of(entry, environment);
    let mut locations = Vec::new();
    for r in refs_in(entry) {
        if let Ref::Terraform(key) = r
            && let Ok(key) = substitute_tokens(&key, &tokens)
            && let Ok((src, _)) = split_key(sources, &key)
            && let Ok(loc) = substitute_tokens(&src.location, &tokens)
            && !locations.contains(&loc)
        {
            locations.push(loc);
        }
    }
    let env_file = entry
        .get(ENV_FILE_KEY)
        .and_then(Value::as_str)
        .map(str::to_string);
    (locations, env_file)
}
