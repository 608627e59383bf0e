//! The placeholders of a string: `${env.NAME}`, `${terraform.KEY}` and
//! the `$${` escape, found without resolving anything.

use csis_model::Value;

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
