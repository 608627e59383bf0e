//! One entry's placeholders resolved (its env_file, the environment, the
//! state outputs) and substituted into its values, each use and failure
//! recorded in the [`Outcome`].

use std::collections::BTreeMap;

use csis_model::{DocPath, Seg, Value};

use super::placeholders::{Piece, Ref, has_placeholder, pieces};
use super::sources::{Tokens, split_key, substitute_tokens};
use super::{External, Failure, Outcome, REFUSED_READ, Used, missing_env_placeholder};

/// What one entry's placeholders are resolved against, and the names its
/// failures are reported under.
pub(super) struct Entry<'a> {
    pub(super) ext: &'a External,
    pub(super) section: &'a str,
    pub(super) name: String,
    pub(super) tokens: Tokens,
    /// The env_file's path and variables; `Err` when it could not be
    /// read or parsed (that failure is reported once, at `env_file:`).
    pub(super) env_file: Option<(String, EnvFile)>,
}

/// An env_file's variables, or why there are none: its parse error, or
/// `None` when the engine refused to read it.
pub(super) type EnvFile = Result<BTreeMap<String, String>, Option<super::inputs::DotenvError>>;

enum Resolved {
    Text(String, bool),
    Native(Value, bool),
}

impl Entry<'_> {
    fn env(&self, name: &str) -> Option<String> {
        if let Some((_, Ok(vars))) = &self.env_file
            && let Some(v) = lookup_ci(vars, name)
        {
            return Some(v);
        }
        lookup_ci(&self.ext.env, name)
    }

    fn resolve(&self, r: &Ref) -> Result<(Resolved, String), String> {
        match r {
            // The file that would win is unreadable: nothing is looked up
            // behind it, and its one failure is already recorded.
            Ref::Env(_) if matches!(self.env_file, Some((_, Err(_)))) => {
                Err(REFUSED_READ.to_string())
            }
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
                    Some(Err(e)) if e == REFUSED_READ => return Err(e.clone()),
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

pub(super) fn walk(v: &mut Value, path: &mut Vec<Seg>, e: &Entry, out: &mut Outcome) {
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
            path: DocPath(path.into()),
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
            Piece::Bad(message) => {
                fail(out, message.clone());
                failed = true;
                continue;
            }
        };
        match e.resolve(r) {
            Ok((Resolved::Native(v, sensitive), source)) => {
                let text = v.to_json().to_string();
                out.used.push(Used {
                    path: DocPath(path.into()),
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
                    path: DocPath(path.into()),
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
            // Reported once where it was refused; the field keeps its text.
            Err(msg) if msg == REFUSED_READ => failed = true,
            Err(msg) => match r {
                Ref::Env(name) if e.ext.tolerate_missing_env => {
                    out.missing_env.push((DocPath(path.into()), name.clone()));
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
