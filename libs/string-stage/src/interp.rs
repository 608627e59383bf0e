//! Values from outside the tree (spec 003): `${env.NAME}` and
//! `${terraform.KEY}` placeholders, resolved per entry of the
//! interpolatable sections by the `interpolate-external` pass.
//!
//! Pure: the engine reads the environment, the `env_file:` files and the
//! state files and hands them over as text ([`External`]); this module
//! parses them and substitutes.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{DocPath, Map, Seg, Value};

/// The key an entry names its environment file by; consumed by the pass.
pub const ENV_FILE_KEY: &str = "env_file";

/// One output of a state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub value: Value,
    pub sensitive: bool,
}

/// The outputs of a terraform.tfstate (version 4), by name.
pub type Outputs = BTreeMap<String, Output>;

/// A JSON value as a configuration value: scalars plain (numbers and
/// booleans keep their type), arrays and objects native.
pub fn value_of_json(j: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match j {
        J::Null => Value::Null,
        J::Bool(b) => Value::Scalar {
            text: b.to_string(),
            plain: true,
        },
        J::Number(n) => Value::Scalar {
            text: n.to_string(),
            plain: true,
        },
        J::String(s) => Value::str(s.clone()),
        J::Array(a) => Value::Seq(a.iter().map(value_of_json).collect()),
        J::Object(m) => Value::Map(
            m.iter()
                .map(|(k, v)| (k.clone(), value_of_json(v)))
                .collect::<Map>(),
        ),
    }
}

/// The outputs of a state file's text: `outputs.<key>.value` and
/// `.sensitive` of a version 4 state.
pub fn tfstate_outputs(text: &str) -> Result<Outputs, String> {
    let j: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not a terraform state (JSON): {e}"))?;
    match j.get("version").and_then(serde_json::Value::as_i64) {
        Some(4) => {}
        Some(v) => return Err(format!("state version {v}; csis reads version 4")),
        None => return Err("no 'version' key; not a terraform state".into()),
    }
    let mut out = Outputs::new();
    if let Some(outputs) = j.get("outputs").and_then(serde_json::Value::as_object) {
        for (k, o) in outputs {
            let value = o.get("value").map(value_of_json).unwrap_or(Value::Null);
            let sensitive = o
                .get("sensitive")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            out.insert(k.clone(), Output { value, sensitive });
        }
    }
    Ok(out)
}

/// KEY=VALUE lines as dotenv files have them: `#` comments, blank lines,
/// an optional `export `, values in single quotes (kept as written) or
/// double quotes (`\n`, `\"`, `\\` escaped), unquoted values trimmed and
/// cut at ` #`.
pub fn parse_dotenv(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let k = k.trim();
        if k.is_empty() {
            continue;
        }
        let v = v.trim();
        let value = if let Some(rest) = v.strip_prefix('"') {
            let mut s = String::new();
            let mut chars = rest.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => s.push('\n'),
                        Some('t') => s.push('\t'),
                        Some(o) => s.push(o),
                        None => {}
                    },
                    o => s.push(o),
                }
            }
            s
        } else if let Some(rest) = v.strip_prefix('\'') {
            rest.split('\'').next().unwrap_or_default().to_string()
        } else {
            v.split(" #").next().unwrap_or_default().trim().to_string()
        };
        out.insert(k.to_string(), value);
    }
    out
}

/// What a placeholder reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    Env(String),
    Terraform(String),
}

impl Ref {
    pub fn placeholder(&self) -> String {
        match self {
            Ref::Env(n) => format!("${{env.{n}}}"),
            Ref::Terraform(k) => format!("${{terraform.{k}}}"),
        }
    }
}

/// A piece of a string: text as written, or a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Ref(Ref),
}

/// The pieces of `text`: `${env.NAME}` and `${terraform.KEY}` are
/// placeholders; `$${` is a literal `${`; anything else is text.
pub fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        buf.push_str(&rest[..i]);
        let here = &rest[i..];
        if let Some(after) = here.strip_prefix("$${") {
            buf.push_str("${");
            rest = after;
            continue;
        }
        let found = [("${env.", true), ("${terraform.", false)]
            .iter()
            .find_map(|(p, env)| {
                let body = here.strip_prefix(p)?;
                let end = closing_brace(body)?;
                let key = body[..end].trim();
                let ok = !key.is_empty()
                    && key.chars().all(|c| {
                        c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '{' | '}')
                    });
                ok.then(|| {
                    let r = if *env {
                        Ref::Env(key.to_string())
                    } else {
                        Ref::Terraform(key.to_string())
                    };
                    (r, p.len() + end + 1)
                })
            });
        match found {
            Some((r, len)) => {
                if !buf.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut buf)));
                }
                out.push(Piece::Ref(r));
                rest = &here[len..];
            }
            None => {
                buf.push('$');
                rest = &here[1..];
            }
        }
    }
    buf.push_str(rest);
    if !buf.is_empty() {
        out.push(Piece::Text(buf));
    }
    out
}

/// The index of the `}` closing a placeholder whose body is `body`
/// (token braces such as `{name}` nest inside).
fn closing_brace(body: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Whether `text` holds a placeholder (or an escaped `$${`).
pub fn has_placeholder(text: &str) -> bool {
    // Most scalars hold no `$` at all: one byte search rules them out
    // (every scalar of the tree is asked, see docs/performance.md).
    text.contains('$')
        && (text.contains("${env.") || text.contains("${terraform.") || text.contains("$${"))
}

/// Every placeholder below `v`.
pub fn refs_in(v: &Value) -> Vec<Ref> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<Ref>) {
        match v {
            Value::Scalar { text, .. } if has_placeholder(text) => {
                out.extend(pieces(text).into_iter().filter_map(|p| match p {
                    Piece::Ref(r) => Some(r),
                    Piece::Text(_) => None,
                }))
            }
            Value::Seq(s) => s.iter().for_each(|x| walk(x, out)),
            Value::Map(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

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

/// Everything the pass reads, handed over by the engine.
#[derive(Debug, Clone, Default)]
pub struct External {
    /// The top-level keys whose entries are interpolated.
    pub sections: Vec<String>,
    pub tolerate_missing_env: bool,
    /// The process environment csis read at load.
    pub env: BTreeMap<String, String>,
    /// `env_file:` paths to their text (`None`: the file is missing).
    pub env_files: BTreeMap<String, Option<Arc<str>>>,
    pub sources: Vec<Source>,
    /// Resolved state locations to their outputs (or why not).
    pub states: BTreeMap<String, Result<Arc<Outputs>, String>>,
    /// The document's `config.environment` ({environment}'s default).
    pub environment: Option<String>,
}

/// One substitution made. Debug shows a sensitive value as `<sensitive>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Used {
    pub path: DocPath,
    /// `env FOO` or `terraform output subnet_id of <location>`.
    pub source: String,
    pub placeholder: String,
    /// The value as text (a list or map: its JSON).
    pub text: String,
    pub sensitive: bool,
}

impl std::fmt::Debug for Used {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Used")
            .field("path", &self.path)
            .field("source", &self.source)
            .field("placeholder", &self.placeholder)
            .field(
                "text",
                &if self.sensitive {
                    "<sensitive>"
                } else {
                    self.text.as_str()
                },
            )
            .field("sensitive", &self.sensitive)
            .finish()
    }
}

/// What the pass did to a document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub used: Vec<Used>,
    /// (path, section, entry, message).
    pub failures: Vec<Failure>,
    /// Unresolved `${env.*}` names substituted by their placeholder.
    pub missing_env: Vec<(DocPath, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub path: DocPath,
    pub section: String,
    pub entry: String,
    pub message: String,
}

/// The marked placeholder of a missing variable under tolerate-missing.
pub fn missing_env_placeholder(name: &str) -> String {
    format!("<missing env {name}>")
}

struct Entry<'a> {
    ext: &'a External,
    section: &'a str,
    name: String,
    tokens: Tokens,
    env_file: Option<(String, BTreeMap<String, String>)>,
}

enum Resolved {
    Text(String, bool),
    Native(Value, bool),
}

impl Entry<'_> {
    fn env(&self, name: &str) -> Option<String> {
        if let Some((_, vars)) = &self.env_file
            && let Some(v) = lookup_ci(vars, name)
        {
            return Some(v);
        }
        lookup_ci(&self.ext.env, name)
    }

    fn resolve(&self, r: &Ref) -> Result<(Resolved, String), String> {
        match r {
            Ref::Env(name) => match self.env(name) {
                Some(v) => Ok((Resolved::Text(v, false), format!("env {name}"))),
                None => Err(format!(
                    "environment variable '{name}' is not set{}",
                    match &self.env_file {
                        Some((p, _)) => format!(" (nor in env_file {p})"),
                        None => String::new(),
                    }
                )),
            },
            Ref::Terraform(key) => {
                let key = substitute_tokens(key, &self.tokens)?;
                let (src, output) = split_key(&self.ext.sources, &key)?;
                let loc = substitute_tokens(&src.location, &self.tokens)?;
                let outputs = match self.ext.states.get(&loc) {
                    Some(Ok(o)) => o,
                    Some(Err(e)) => {
                        return Err(format!("terraform source '{}': {loc}: {e}", src.name));
                    }
                    None => {
                        return Err(format!(
                            "terraform source '{}': {loc} was not read",
                            src.name
                        ));
                    }
                };
                let Some(o) = outputs.get(output) else {
                    return Err(format!(
                        "terraform key '{output}' is not an output of {loc} (source '{}')",
                        src.name
                    ));
                };
                let from = format!("terraform output {output} of {loc}");
                Ok(match &o.value {
                    Value::Scalar { text, .. } => (Resolved::Text(text.clone(), o.sensitive), from),
                    Value::Null => (Resolved::Text(String::new(), o.sensitive), from),
                    v => (Resolved::Native(v.clone(), o.sensitive), from),
                })
            }
        }
    }
}

fn lookup_ci(vars: &BTreeMap<String, String>, name: &str) -> Option<String> {
    vars.get(name).cloned().or_else(|| {
        vars.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    })
}

/// Interpolates one entry of `section` at `path`, consuming its
/// `env_file:`.
pub fn interpolate_entry(
    entry: &mut Value,
    section: &str,
    path: &[Seg],
    ext: &External,
    out: &mut Outcome,
) {
    let name = entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let env_file = match entry
        .as_map_mut()
        .and_then(|m| m.shift_remove(ENV_FILE_KEY))
    {
        Some(Value::Scalar { text, .. }) => match ext.env_files.get(&text) {
            Some(Some(t)) => Some((text, parse_dotenv(t))),
            _ => {
                let mut p = path.to_vec();
                p.push(Seg::Key(ENV_FILE_KEY.into()));
                out.failures.push(Failure {
                    path: DocPath(p),
                    section: section.into(),
                    entry: name.clone(),
                    message: format!(
                        "env_file '{text}' does not exist (paths are relative to the root)"
                    ),
                });
                None
            }
        },
        _ => None,
    };
    let e = Entry {
        ext,
        section,
        tokens: Tokens::of(entry, ext.environment.as_deref()),
        name,
        env_file,
    };
    let mut p = path.to_vec();
    walk(entry, &mut p, &e, out);
}

fn walk(v: &mut Value, path: &mut Vec<Seg>, e: &Entry, out: &mut Outcome) {
    match v {
        Value::Scalar { text, .. } if has_placeholder(text) => {
            if let Some(new) = substitute(text, path, e, out) {
                *v = new;
            }
        }
        Value::Seq(items) => {
            for (i, x) in items.iter_mut().enumerate() {
                path.push(Seg::Index(i));
                walk(x, path, e, out);
                path.pop();
            }
        }
        Value::Map(m) => {
            for (k, x) in m.iter_mut() {
                path.push(Seg::Key(k.as_str().into()));
                walk(x, path, e, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The value `text` becomes, or None when a placeholder failed (the text
/// is kept).
fn substitute(text: &str, path: &[Seg], e: &Entry, out: &mut Outcome) -> Option<Value> {
    let ps = pieces(text);
    let fail = |out: &mut Outcome, message: String| {
        out.failures.push(Failure {
            path: DocPath(path.to_vec()),
            section: e.section.to_string(),
            entry: e.name.clone(),
            message,
        });
    };
    let whole = ps.len() == 1;
    let mut s = String::new();
    let mut failed = false;
    for piece in &ps {
        let r = match piece {
            Piece::Text(t) => {
                s.push_str(t);
                continue;
            }
            Piece::Ref(r) => r,
        };
        match e.resolve(r) {
            Ok((Resolved::Native(v, sensitive), source)) => {
                let text = v.to_json().to_string();
                out.used.push(Used {
                    path: DocPath(path.to_vec()),
                    source,
                    placeholder: r.placeholder(),
                    text,
                    sensitive,
                });
                if whole {
                    // A sensitive value never enters the model: the field
                    // keeps its placeholder, the value is in `used`.
                    return Some(if sensitive {
                        Value::str(r.placeholder())
                    } else {
                        v
                    });
                }
                fail(
                    out,
                    format!(
                        "{} is a {} and cannot be embedded in a longer string; write it as the whole value",
                        r.placeholder(),
                        v.kind_name()
                    ),
                );
                failed = true;
            }
            Ok((Resolved::Text(t, sensitive), source)) => {
                out.used.push(Used {
                    path: DocPath(path.to_vec()),
                    source,
                    placeholder: r.placeholder(),
                    text: t.clone(),
                    sensitive,
                });
                if sensitive {
                    s.push_str(&r.placeholder());
                } else {
                    s.push_str(&t);
                }
            }
            Err(msg) => match r {
                Ref::Env(name) if e.ext.tolerate_missing_env => {
                    out.missing_env.push((DocPath(path.to_vec()), name.clone()));
                    s.push_str(&missing_env_placeholder(name));
                }
                _ => {
                    fail(out, msg);
                    failed = true;
                }
            },
        }
    }
    (!failed).then(|| Value::str(s))
}

/// The `interpolate-external` pass: every entry of every interpolatable
/// section of `doc` (a list of entries, or one mapping).
pub fn interpolate_document(doc: &mut Value, ext: &External) -> Outcome {
    let mut out = Outcome::default();
    let Value::Map(top) = doc else { return out };
    for (key, v) in top.iter_mut() {
        if !ext.sections.iter().any(|s| s == key) {
            continue;
        }
        match v {
            Value::Seq(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    if item.as_map().is_some() {
                        let path = [Seg::Key(key.as_str().into()), Seg::Index(i)];
                        interpolate_entry(item, key, &path, ext, &mut out);
                    }
                }
            }
            Value::Map(_) => {
                let path = [Seg::Key(key.as_str().into())];
                interpolate_entry(v, key, &path, ext, &mut out);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use csis_yaml::parse;

    fn ext() -> External {
        let state = r#"{"version": 4, "outputs": {
            "subnet_id": {"value": "subnet-123", "type": "string"},
            "port": {"value": 8080, "type": "number"},
            "zones": {"value": ["a", "b"]},
            "tags": {"value": {"team": "ops"}},
            "db_password": {"value": "hunter2-secret", "sensitive": true},
            "web_subnet": {"value": "subnet-web"},
            "db_subnet": {"value": "subnet-db"}
        }}"#;
        let stage_state = r#"{"version": 4, "outputs": {"subnet_id": {"value": "subnet-stage"}}}"#;
        let mut states = BTreeMap::new();
        states.insert(
            "state/prod.tfstate".to_string(),
            Ok(Arc::new(tfstate_outputs(state).unwrap())),
        );
        states.insert(
            "state/stage.tfstate".to_string(),
            Ok(Arc::new(tfstate_outputs(stage_state).unwrap())),
        );
        let mut env_files = BTreeMap::new();
        env_files.insert(
            "web.env".to_string(),
            Some(Arc::from(
                "# comment\nIMAGE_TAG=\"from-file\"\nexport OTHER='x y'\n",
            )),
        );
        External {
            sections: vec!["instances".into()],
            tolerate_missing_env: false,
            env: [
                ("Image_Tag".to_string(), "from-env".to_string()),
                ("HOME".to_string(), "/root".to_string()),
            ]
            .into_iter()
            .collect(),
            env_files,
            sources: vec![Source {
                name: "net".into(),
                location: "state/{environment}.tfstate".into(),
            }],
            states,
            environment: Some("prod".into()),
        }
    }

    fn run(yaml: &str, ext: &External) -> (Value, Outcome) {
        let (mut doc, _) = parse(yaml).unwrap();
        let out = interpolate_document(&mut doc, ext);
        (doc, out)
    }

    fn field<'a>(doc: &'a Value, section: &str, i: usize, key: &str) -> &'a Value {
        &doc.get(section).unwrap().as_seq().unwrap()[i]
            .as_map()
            .unwrap()[key]
    }

    #[test]
    fn env_is_case_insensitive_and_env_file_wins() {
        let (doc, out) = run(
            "instances:\n  - name: a\n    tag: \"${env.IMAGE_TAG}\"\n  - name: b\n    env_file: web.env\n    tag: \"v-${env.image_tag}\"\n",
            &ext(),
        );
        assert!(out.failures.is_empty(), "{:?}", out.failures);
        assert_eq!(
            field(&doc, "instances", 0, "tag").as_str(),
            Some("from-env")
        );
        assert_eq!(
            field(&doc, "instances", 1, "tag").as_str(),
            Some("v-from-file")
        );
        assert!(
            doc.get("instances").unwrap().as_seq().unwrap()[1]
                .get("env_file")
                .is_none()
        );
    }

    #[test]
    fn a_missing_env_fails_naming_section_entry_and_name_or_is_tolerated() {
        let yaml = "instances:\n  - name: web\n    tag: \"${env.NOPE}\"\n";
        let (_, out) = run(yaml, &ext());
        assert_eq!(out.failures.len(), 1);
        let f = &out.failures[0];
        assert_eq!((f.section.as_str(), f.entry.as_str()), ("instances", "web"));
        assert!(f.message.contains("'NOPE'"), "{}", f.message);
        assert_eq!(f.path.to_string(), "instances[0].tag");
        let mut e = ext();
        e.tolerate_missing_env = true;
        let (doc, out) = run(yaml, &e);
        assert!(out.failures.is_empty());
        assert_eq!(out.missing_env.len(), 1);
        assert_eq!(
            field(&doc, "instances", 0, "tag").as_str(),
            Some("<missing env NOPE>")
        );
    }

    #[test]
    fn terraform_values_are_native_when_whole_and_refused_when_embedded() {
        let (doc, out) = run(
            "instances:\n  - name: web\n    subnet: \"${terraform.subnet_id}\"\n    port: \"${terraform.port}\"\n    zones: \"${terraform.zones}\"\n    tags: \"${terraform.net.tags}\"\n",
            &ext(),
        );
        assert!(out.failures.is_empty(), "{:?}", out.failures);
        assert_eq!(
            field(&doc, "instances", 0, "subnet").as_str(),
            Some("subnet-123")
        );
        assert_eq!(field(&doc, "instances", 0, "port").as_str(), Some("8080"));
        let zones = field(&doc, "instances", 0, "zones").as_seq().unwrap();
        assert_eq!(zones.len(), 2);
        assert_eq!(
            field(&doc, "instances", 0, "tags")
                .get("team")
                .unwrap()
                .as_str(),
            Some("ops")
        );
        let (_, out) = run(
            "instances:\n  - name: web\n    z: \"zones: ${terraform.zones}\"\n",
            &ext(),
        );
        assert!(
            out.failures[0].message.contains("cannot be embedded"),
            "{:?}",
            out.failures
        );
    }

    #[test]
    fn a_missing_key_fails_naming_section_entry_and_key() {
        let (_, out) = run(
            "instances:\n  - name: web\n    s: \"${terraform.nope}\"\n",
            &ext(),
        );
        let f = &out.failures[0];
        assert_eq!((f.section.as_str(), f.entry.as_str()), ("instances", "web"));
        assert!(f.message.contains("'nope'"), "{}", f.message);
    }

    #[test]
    fn tokens_substitute_in_location_and_key() {
        let (doc, out) = run(
            "instances:\n  - name: web\n    s: \"${terraform.{name}_subnet}\"\n  - name: db\n    config: {environment: stage}\n    s: \"${terraform.subnet_id}\"\n",
            &ext(),
        );
        assert!(out.failures.is_empty(), "{:?}", out.failures);
        assert_eq!(
            field(&doc, "instances", 0, "s").as_str(),
            Some("subnet-web")
        );
        assert_eq!(
            field(&doc, "instances", 1, "s").as_str(),
            Some("subnet-stage")
        );
        let (entry, _) =
            parse("name: db\nconfig: {environment: stage}\ns: \"${terraform.subnet_id}\"\n")
                .unwrap();
        let (locs, _) = entry_reads(&entry, &ext().sources, Some("prod"));
        assert_eq!(locs, ["state/stage.tfstate"]);
    }

    #[test]
    fn other_sections_are_left_alone_and_escapes_stay_literal() {
        let (doc, out) = run(
            "interpolation:\n  terraform:\n    - name: x\n      path: \"${env.HOME}\"\ninstances:\n  - name: web\n    s: \"$${env.HOME} ${env.HOME}\"\n",
            &ext(),
        );
        assert!(out.failures.is_empty());
        let decl = &doc
            .get("interpolation")
            .unwrap()
            .get("terraform")
            .unwrap()
            .as_seq()
            .unwrap()[0];
        assert_eq!(decl.get("path").unwrap().as_str(), Some("${env.HOME}"));
        assert_eq!(
            field(&doc, "instances", 0, "s").as_str(),
            Some("${env.HOME} /root")
        );
    }

    #[test]
    fn a_sensitive_output_is_marked() {
        let (doc, out) = run(
            "instances:\n  - name: web\n    p: \"pw=${terraform.db_password}\"\n",
            &ext(),
        );
        assert_eq!(
            field(&doc, "instances", 0, "p").as_str(),
            Some("pw=${terraform.db_password}")
        );
        assert!(
            out.used
                .iter()
                .any(|u| u.sensitive && u.text == "hunter2-secret")
        );
    }

    #[test]
    fn dotenv_syntax() {
        let v = parse_dotenv("A=1\n# c\nB = \"x\\\"y\" \nexport C='q # r'\nD=plain # comment\n");
        assert_eq!(v["A"], "1");
        assert_eq!(v["B"], "x\"y");
        assert_eq!(v["C"], "q # r");
        assert_eq!(v["D"], "plain");
    }
}
