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

/// A piece of a string: text as written, a placeholder, or one begun
/// (`${env.`, `${terraform.`) and not finished, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Ref(Ref),
    Bad(String),
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
            .find_map(|(p, env)| Some((here.strip_prefix(p)?, *p, *env)));
        let found = found.map(|(body, p, env)| {
            let what = if env { "NAME" } else { "KEY" };
            let Some(end) = closing_brace(body) else {
                let shown: String = here.chars().take(40).collect();
                return Err(format!(
                    "'{shown}' opens a placeholder that no '}}' closes -- write {p}{what}}}, or $${{ for a literal ${{"
                ));
            };
            let key = body[..end].trim();
            let written = &here[..p.len() + end + 1];
            if key.is_empty() {
                return Err(format!(
                    "'{written}' names nothing -- write {p}{what}}}, or $${{ for a literal ${{"
                ));
            }
            if let Some(c) = key
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '{' | '}')))
            {
                return Err(format!(
                    "'{written}' holds {c:?}; a placeholder's {} is letters, digits, '_', '-' and '.' -- write {p}{what}}}, or $${{ for a literal ${{",
                    what.to_lowercase()
                ));
            }
            let r = if env {
                Ref::Env(key.to_string())
            } else {
                Ref::Terraform(key.to_string())
            };
            Ok((r, p.len() + end + 1))
        });
        match found {
            Some(Ok((r, len))) => {
                if !buf.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut buf)));
                }
                out.push(Piece::Ref(r));
                rest = &here[len..];
            }
            Some(Err(why)) => {
                // The rest of the text is not read as placeholders: where
                // this one ends is unknown.
                out.push(Piece::Bad(why));
                buf.push_str(here);
                rest = "";
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
                    Piece::Text(_) | Piece::Bad(_) => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(text: &str) -> Vec<String> {
        pieces(text)
            .into_iter()
            .filter_map(|p| match p {
                Piece::Bad(why) => Some(why),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_placeholder_begun_and_not_finished_is_refused() {
        assert_eq!(
            bad("x ${env.} y"),
            ["'${env.}' names nothing -- write ${env.NAME}, or $${ for a literal ${"]
        );
        assert_eq!(
            bad("${terraform.}"),
            ["'${terraform.}' names nothing -- write ${terraform.KEY}, or $${ for a literal ${"]
        );
        assert_eq!(
            bad("${env.A B}"),
            [
                "'${env.A B}' holds ' '; a placeholder's name is letters, digits, '_', '-' and '.' -- write ${env.NAME}, or $${ for a literal ${"
            ]
        );
        assert_eq!(
            bad("${env.HOME"),
            [
                "'${env.HOME' opens a placeholder that no '}' closes -- write ${env.NAME}, or $${ for a literal ${"
            ]
        );
        // Not ours: a shell's ${HOME}, an escaped $${env.}.
        assert!(bad("${HOME} $${env.} ${envx}").is_empty());
        assert_eq!(
            pieces("a${env.X}b"),
            [
                Piece::Text("a".into()),
                Piece::Ref(Ref::Env("X".into())),
                Piece::Text("b".into())
            ]
        );
    }
}
