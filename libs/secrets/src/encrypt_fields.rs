//! `csis encrypt`'s edit of a file: the values under the named keys
//! replaced, in place, by their `ENC[age:...]` markers, and not one other
//! byte of the file changed. The file is parsed (block and flow style
//! alike: `- {name: x, password: y}`), and each value is replaced at the
//! span the parser gives it.

use csis_model::{DocPath, Seg, Value};

use crate::is_marker;

fn encryptable(plain: &str) -> bool {
    !plain.is_empty() && !is_marker(plain) && !plain.contains("{{")
}

/// Encrypt every scalar under one of `fields` and every scalar element of
/// a list under one, in document order; values already encrypted,
/// templated, empty, written over several lines (`|`, `>`) or mappings
/// are left alone.
/// Returns the new text and how many values were encrypted; a text that
/// does not parse is refused at its line and column.
pub fn encrypt_fields_in_text(
    text: &str,
    fields: &[String],
    encrypt_one: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<(String, usize), String> {
    let (doc, positions) = csis_yaml::parse(text)
        .map_err(|e| format!("{}:{}: {}", e.span.line, e.span.col, e.message))?;
    let mut found = Vec::new();
    collect(&doc, &mut Vec::new(), fields, &mut found);
    // Where each value is written: the quotes of a quoted scalar are part
    // of it.
    let mut edits = Vec::new();
    for (path, plain) in found {
        let Some(span) = positions.value(&path) else {
            continue;
        };
        let Some((start, end)) = written_extent(text, span.offset, span.offset + span.len) else {
            continue;
        };
        edits.push((start, end, format!("\"{}\"", encrypt_one(&plain)?)));
    }
    let count = edits.len();
    let mut out = text.to_string();
    for (start, end, marker) in edits.into_iter().rev() {
        out.replace_range(start..end, &marker);
    }
    Ok((out, count))
}

/// The values to encrypt, in document order, each with its path.
fn collect(v: &Value, path: &mut Vec<Seg>, fields: &[String], out: &mut Vec<(DocPath, String)>) {
    let scalar_at = |v: &Value, path: &[Seg], out: &mut Vec<(DocPath, String)>| {
        if let Value::Scalar { text, .. } = v
            && encryptable(text)
        {
            out.push((DocPath(path.into()), text.clone()));
        }
    };
    match v {
        Value::Map(m) => {
            for (k, child) in m.iter() {
                path.push(Seg::Key(k.as_str().into()));
                if fields.iter().any(|f| f == k) {
                    match child {
                        Value::Seq(items) => {
                            for (i, item) in items.iter().enumerate() {
                                path.push(Seg::Index(i));
                                scalar_at(item, path, out);
                                path.pop();
                            }
                        }
                        other => scalar_at(other, path, out),
                    }
                }
                collect(child, path, fields, out);
                path.pop();
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                collect(item, path, fields, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The bytes a scalar is written as, from the span the parser reports
/// (which may leave out a quoted scalar's quotes); `None` for a scalar
/// written over several lines (a block scalar's span is its content),
/// which stays as written.
fn written_extent(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let raw = text.get(start..end)?;
    if raw.contains('\n') || raw.starts_with(['|', '>']) {
        return None;
    }
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    match (before, after) {
        (Some(q @ ('"' | '\'')), Some(a)) if a == q && !raw.starts_with(q) => {
            Some((start - 1, end + 1))
        }
        _ => Some((start, end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encrypt(text: &str, fields: &[&str]) -> (String, usize) {
        let fields: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
        let mut n = 0;
        encrypt_fields_in_text(text, &fields, &mut |p| {
            n += 1;
            Ok(format!("ENC[age:{p}{n}]"))
        })
        .unwrap()
    }

    #[test]
    fn block_values_are_replaced_in_place_and_the_rest_kept() {
        let text = "users:\n  - name: avery # the login\n    first_name: 'Avery'\n    email: \"{{ user.name }}@x\"\n    last_name:\n    nick: keep\ngroups:\n  - name: ops\n    members:\n      - avery\n      - \"ENC[age:AAAA]\"\n      - blake\n    admins: [flow, list]\n";
        let (out, count) = encrypt(
            text,
            &["name", "first_name", "email", "last_name", "members"],
        );
        assert_eq!(
            out,
            "users:\n  - name: \"ENC[age:avery1]\" # the login\n    first_name: \"ENC[age:Avery2]\"\n    email: \"{{ user.name }}@x\"\n    last_name:\n    nick: keep\ngroups:\n  - name: \"ENC[age:ops3]\"\n    members:\n      - \"ENC[age:avery4]\"\n      - \"ENC[age:AAAA]\"\n      - \"ENC[age:blake5]\"\n    admins: [flow, list]\n"
        );
        assert_eq!(count, 5);
    }

    #[test]
    fn flow_mappings_and_lists_are_encrypted_too() {
        let text = "users:\n  - {name: inline, password: \"s3cret\", uid: 7}\n  - {name: 'two words'}\ngroups:\n  - {name: ops, members: [avery, \"blake\"]}\n";
        let (out, count) = encrypt(text, &["password", "members"]);
        assert_eq!(
            out,
            "users:\n  - {name: inline, password: \"ENC[age:s3cret1]\", uid: 7}\n  - {name: 'two words'}\ngroups:\n  - {name: ops, members: [\"ENC[age:avery2]\", \"ENC[age:blake3]\"]}\n"
        );
        assert_eq!(count, 3);
        let (out, _) = encrypt(text, &["name"]);
        assert!(
            out.contains("  - {name: \"ENC[age:two words2]\"}\n"),
            "{out}"
        );
    }

    #[test]
    fn a_block_scalar_stays_and_a_broken_file_is_refused_where_it_breaks() {
        let (out, count) = encrypt("note: |\n  keep me\nname: x\n", &["note", "name"]);
        assert_eq!(
            (out.as_str(), count),
            ("note: |\n  keep me\nname: \"ENC[age:x1]\"\n", 1)
        );
        let e =
            encrypt_fields_in_text("a: [1,\n", &["a".into()], &mut |p| Ok(p.into())).unwrap_err();
        assert!(e.starts_with("2:1: ") || e.starts_with("1:"), "{e}");
    }
}
