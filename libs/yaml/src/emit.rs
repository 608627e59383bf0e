//! A small YAML emitter (config render, meta-state files): block style,
//! keys in document order, strings quoted whenever a plain scalar would
//! read as something else. Whatever a string holds, it reads back as
//! itself, by csis and by other YAML readers: every character YAML does
//! not print as itself is escaped inside double quotes (docs/yaml.md,
//! "What the emitter guarantees"; tests/emit_roundtrip.rs tries it).

use serde_json::Value as J;

pub fn to_yaml(v: &J) -> String {
    let mut out = String::new();
    match v {
        J::Object(m) if !m.is_empty() => emit_map(m, 0, &mut out),
        J::Array(a) if !a.is_empty() => emit_seq(a, 0, &mut out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn emit_map(m: &serde_json::Map<String, J>, indent: usize, out: &mut String) {
    for (k, v) in m {
        out.push_str(&" ".repeat(indent));
        push_key(k, indent, out);
        emit_child(v, indent, out);
    }
}

fn emit_seq(a: &[J], indent: usize, out: &mut String) {
    for v in a {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        match v {
            J::Object(m) if !m.is_empty() => {
                // The first key shares the dash's line.
                let mut first = true;
                for (k, x) in m {
                    if first {
                        out.push(' ');
                        first = false;
                    } else {
                        out.push_str(&" ".repeat(indent + 2));
                    }
                    push_key(k, indent + 2, out);
                    emit_child(x, indent + 2, out);
                }
            }
            other => emit_child(other, indent, out),
        }
    }
}

fn emit_child(v: &J, indent: usize, out: &mut String) {
    match v {
        J::Object(m) if !m.is_empty() => {
            out.push('\n');
            emit_map(m, indent + 2, out);
        }
        J::Array(a) if !a.is_empty() => {
            out.push('\n');
            emit_seq(a, indent + 2, out);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

/// An implicit key (`key:`) is at most 1024 characters long in YAML;
/// a longer one is written explicitly (`? key` and `:` on the next line).
const MAX_IMPLICIT_KEY: usize = 1024;

/// `k` and its colon, for a key whose line starts at `indent`.
fn push_key(k: &str, indent: usize, out: &mut String) {
    let written = if needs_quotes(k) {
        quote(k)
    } else {
        k.to_string()
    };
    if written.chars().count() > MAX_IMPLICIT_KEY - 2 {
        out.push_str("? ");
        out.push_str(&written);
        out.push('\n');
        out.push_str(&" ".repeat(indent));
    } else {
        out.push_str(&written);
    }
    out.push(':');
}

fn scalar(v: &J) -> String {
    match v {
        J::Null => "null".into(),
        J::Bool(b) => b.to_string(),
        J::Number(n) => n.to_string(),
        J::String(s) => {
            if needs_quotes(s) {
                quote(s)
            } else {
                s.clone()
            }
        }
        J::Array(_) => "[]".into(),
        J::Object(_) => "{}".into(),
    }
}

/// `s` as a double-quoted scalar, on one line. Every character a YAML
/// reader may not take as itself is escaped: the C0 controls (TAB and the
/// line breaks included), DEL, the C1 range, U+2028/U+2029 (line breaks to
/// YAML 1.1), the byte-order mark and U+FFFE/U+FFFF. A raw carriage
/// return, NUL or DEL in meta-state left the file unreadable to csis or to
/// other readers (PyYAML refuses every non-printable character, even
/// quoted); escaped, each reads back as itself everywhere.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            c if (c as u32) <= 0xff && !printable(c) => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c if !printable(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether YAML lets `c` stand for itself inside a scalar on one line:
/// YAML 1.2's printable set without its line breaks and TAB, and without
/// the characters YAML 1.1 readers take as line breaks (U+0085, U+2028,
/// U+2029) or a byte-order mark (U+FEFF). A Rust `char` is never a
/// surrogate.
fn printable(c: char) -> bool {
    matches!(c,
        '\u{20}'..='\u{7e}'
            | '\u{a0}'..='\u{2027}'
            | '\u{202a}'..='\u{d7ff}'
            | '\u{e000}'..='\u{fefe}'
            | '\u{ff00}'..='\u{fffd}'
            | '\u{10000}'..)
}

/// Whether `s` must be quoted: it would read as something else plain
/// (empty, padded, null, a boolean, a number, an indicator, a comment, a
/// merge key), or it holds a character a plain scalar cannot carry.
fn needs_quotes(s: &str) -> bool {
    if s.is_empty() || s != s.trim() {
        return true;
    }
    if s.chars().any(|c| !printable(c)) {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "null" | "~" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "=" | "<<"
    ) {
        return true;
    }
    if s.parse::<f64>().is_ok()
        || s.starts_with(|c: char| {
            c.is_ascii_digit() || matches!(c, '.' | '+' | '-' | '?' | '<' | '=')
        })
    {
        return true;
    }
    s.contains([
        ':', '#', '"', '\'', '{', '}', '[', ']', ',', '&', '*', '!', '|', '>', '%', '@', '`', '\\',
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emits_block_yaml_that_reads_back_the_same() {
        let v = serde_json::json!({"a": {"b": [1, "x: y", {"c": true, "d": "10"}]}, "e": []});
        assert_eq!(
            to_yaml(&v),
            "a:\n  b:\n    - 1\n    - \"x: y\"\n    - c: true\n      d: \"10\"\ne: []\n"
        );
    }

    #[test]
    fn control_characters_are_escaped_in_double_quotes() {
        let cases = [
            ("a\rb", r#""a\rb""#),
            ("\0\u{7}\u{1b}\t", r#""\0\a\e\t""#),
            ("x\u{7f}y\u{1}", r#""x\x7Fy\x01""#),
            ("\u{85}\u{9f}", r#""\x85\x9F""#),
            ("a\u{2028}b\u{2029}", r#""a\u2028b\u2029""#),
            ("\u{feff}bom\u{ffff}", r#""\uFEFFbom\uFFFF""#),
            ("say \"hi\"\\", r#""say \"hi\"\\""#),
            // Printable non-ASCII stays as written.
            ("été 😀", "été 😀"),
            ("?x", r#""?x""#),
            ("<<", r#""<<""#),
        ];
        for (s, want) in cases {
            assert_eq!(to_yaml(&serde_json::json!(s)), format!("{want}\n"), "{s:?}");
        }
        let v = serde_json::json!({"mount\r": "/srv/da\rta"});
        assert_eq!(to_yaml(&v), "\"mount\\r\": \"/srv/da\\rta\"\n");
    }
}
