//! A small YAML emitter (config render, meta-state files): block style,
//! keys in document order, strings quoted whenever a plain scalar would
//! read as something else.

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
        out.push_str(&key(k));
        out.push(':');
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
                    out.push_str(&key(k));
                    out.push(':');
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

fn key(k: &str) -> String {
    if needs_quotes(k) {
        quote(k)
    } else {
        k.to_string()
    }
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

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

fn needs_quotes(s: &str) -> bool {
    if s.is_empty() || s != s.trim() {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "null" | "~" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n"
    ) {
        return true;
    }
    if s.parse::<f64>().is_ok()
        || s.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '+' || c == '-')
    {
        return true;
    }
    s.contains([
        ':', '#', '\n', '"', '\'', '{', '}', '[', ']', ',', '&', '*', '!', '|', '>', '%', '@', '`',
        '\\',
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
}
