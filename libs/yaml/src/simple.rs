//! A fast reader for the YAML most files are written in: block mappings
//! and sequences indented with spaces, and one-line values (plain, quoted,
//! or a flow `[...]`/`{...}` closed on its line), with comments.
//!
//! It answers only when it is sure: anything else (a block scalar, a
//! value continued on the next line, an anchor, a tag, a document
//! marker, a tab, an error of any kind) is `None`, and the full parser
//! reads the text, reporting what is wrong with its position. Where it
//! answers, the value is the one the full parser builds (the tests
//! compare both on every shape they can generate). saphyr spends about
//! 2,000 instructions on each event; parsing was a fifth of a cold plan.

use csis_model::{Map, Value};

use crate::{MAX_DEPTH, is_null};

/// The value of `text` when it is written in the subset this reader
/// knows; `None` for anything else.
pub(crate) fn parse(text: &str) -> Option<Value> {
    if !plain_text(text) {
        return None;
    }
    let mut lines = Vec::new();
    for raw in text.split('\n') {
        let content = raw.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = raw.len() - content.len();
        if indent == 0
            && (content.starts_with("---")
                || content.starts_with("...")
                || content.starts_with('%'))
        {
            return None;
        }
        lines.push(Line { indent, content });
    }
    let Some(first) = lines.first() else {
        // Nothing but comments and blank lines: no document.
        return Some(Value::Null);
    };
    let indent = first.indent;
    let mut reader = Reader { lines, at: 0 };
    let value = if is_seq_entry(reader.lines[0].content) {
        reader.seq(indent, 0)?
    } else {
        reader.map(indent, 0)?
    };
    (reader.at == reader.lines.len()).then_some(value)
}

/// Whether every character is one the subset reads as itself: no tab,
/// no carriage return, no control character, no line break YAML 1.1
/// knows beyond `\n`, no byte-order mark.
fn plain_text(text: &str) -> bool {
    let bytes_ok = text
        .bytes()
        .all(|b| (b >= 0x20 && b != 0x7f) || b == b'\n' || b >= 0x80);
    bytes_ok
        && (text.is_ascii()
            || !text.chars().any(|c| {
                matches!(
                    c,
                    '\u{80}'
                        ..='\u{9f}'
                            | '\u{2028}'
                            | '\u{2029}'
                            | '\u{feff}'
                            | '\u{fffe}'
                            | '\u{ffff}'
                )
            }))
}

#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    /// The line without its indentation; never empty, never a comment.
    content: &'a str,
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    /// The next line to read.
    at: usize,
}

fn is_seq_entry(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

impl<'a> Reader<'a> {
    /// A block sequence whose `-` are at `indent`, nested in `depth`
    /// collections.
    fn seq(&mut self, indent: usize, depth: usize) -> Option<Value> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let mut items = Vec::new();
        while let Some(line) = self.lines.get(self.at).copied() {
            if line.indent < indent || (line.indent == indent && !is_seq_entry(line.content)) {
                // The end of the sequence (a mapping holding it at the
                // same indentation goes on).
                break;
            }
            if line.indent > indent {
                return None;
            }
            let rest = line.content[1..].trim_start_matches(' ');
            if rest.is_empty() || rest.starts_with('#') {
                self.at += 1;
                items.push(self.nested(indent, depth + 1, false)?);
            } else if rest.starts_with('-') && is_seq_entry(rest) {
                return None;
            } else if map_entry(rest).is_some() {
                // `- key: value`: a mapping whose keys are at the column
                // of this first one.
                let column = indent + (line.content.len() - rest.len());
                self.lines[self.at] = Line {
                    indent: column,
                    content: rest,
                };
                items.push(self.map(column, depth + 1)?);
            } else {
                self.at += 1;
                items.push(self.inline(rest, indent, depth + 1)?);
            }
        }
        Some(Value::Seq(items))
    }

    /// A block mapping whose keys are at `indent`.
    fn map(&mut self, indent: usize, depth: usize) -> Option<Value> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let mut entries = Map::default();
        while let Some(line) = self.lines.get(self.at).copied() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent || is_seq_entry(line.content) {
                return None;
            }
            let (key, rest) = map_entry(line.content)?;
            if entries.contains_key(key) {
                return None;
            }
            self.at += 1;
            let value = if rest.is_empty() {
                self.nested(indent, depth + 1, true)?
            } else {
                self.inline(rest, indent, depth + 1)?
            };
            entries.insert(key.to_string(), value);
        }
        Some(Value::map(entries))
    }

    /// The value of an entry written on the lines below it: a block more
    /// indented than `parent`, a key's sequence at the key's own
    /// indentation, or else nothing (null).
    fn nested(&mut self, parent: usize, depth: usize, key: bool) -> Option<Value> {
        match self.lines.get(self.at).copied() {
            Some(l) if l.indent > parent => {
                if is_seq_entry(l.content) {
                    self.seq(l.indent, depth)
                } else {
                    self.map(l.indent, depth)
                }
            }
            Some(l) if key && l.indent == parent && is_seq_entry(l.content) => {
                self.seq(parent, depth)
            }
            _ => Some(Value::Null),
        }
    }

    /// A value written after its key or dash, on one line.
    fn inline(&mut self, rest: &str, parent: usize, depth: usize) -> Option<Value> {
        // A more indented line below continues the value (or is an error).
        if self.lines.get(self.at).is_some_and(|l| l.indent > parent) {
            return None;
        }
        match rest.as_bytes().first()? {
            b'[' | b'{' => {
                let mut flow = Flow { s: rest, at: 0 };
                let value = flow.node(depth)?;
                flow.end().then_some(value)
            }
            b'"' | b'\'' => {
                let (text, after) = quoted(rest)?;
                comment_only(after).then_some(Value::Scalar { text, plain: false })
            }
            _ => {
                let end = rest.find(" #").unwrap_or(rest.len());
                let text = rest[..end].trim_end_matches(' ');
                if !plain_start(text) || text.contains(": ") || text.ends_with(':') {
                    return None;
                }
                Some(plain(text))
            }
        }
    }
}

/// `key: rest` with a plain key; `rest` empty when nothing but a comment
/// follows.
fn map_entry(content: &str) -> Option<(&str, &str)> {
    let bytes = content.as_bytes();
    let mut from = 0;
    let colon = loop {
        // A plain scan: a key is a few bytes, shorter than what a
        // substring search costs to set up (every entry of a tree).
        let at = from + bytes[from..].iter().position(|&b| b == b':')?;
        if at + 1 == bytes.len() || bytes[at + 1] == b' ' {
            break at;
        }
        from = at + 1;
    };
    let key = &content[..colon];
    if !plain_start(key)
        || key.ends_with(' ')
        || key.contains(['#', '\'', '"', ',', '[', ']', '{', '}'])
        || is_null(key)
    {
        return None;
    }
    let rest = content[colon + 1..].trim_start_matches(' ');
    Some((key, if rest.starts_with('#') { "" } else { rest }))
}

/// Whether a plain scalar may start as `text` does: not empty, not with
/// an indicator, not with a document marker. (YAML lets `?` and `:`
/// start one before a non-space; this reader leaves those to the full
/// parser.)
fn plain_start(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    if b",[]{}#&*!|>'\"%@`?:".contains(&first) || text.starts_with("---") || text.starts_with("...")
    {
        return false;
    }
    // `-` starts a plain scalar only before a non-space (`-1`).
    first != b'-' || bytes.get(1).is_some_and(|&b| b != b' ')
}

fn plain(text: &str) -> Value {
    if is_null(text) {
        Value::Null
    } else {
        Value::Scalar {
            text: text.to_string(),
            plain: true,
        }
    }
}

/// Whether what follows a value on its line is nothing, or a comment set
/// off by a space.
fn comment_only(after: &str) -> bool {
    let trimmed = after.trim_start_matches(' ');
    trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < after.len())
}

/// A single- or double-quoted scalar closed on its line: its text and
/// what follows the closing quote.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut chars = s.char_indices();
    let (_, quote) = chars.next()?;
    let mut text = String::new();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            ('\'', '\'') => {
                if s[i + 1..].starts_with('\'') {
                    chars.next();
                    text.push('\'');
                } else {
                    return Some((text, &s[i + 1..]));
                }
            }
            ('"', '"') => return Some((text, &s[i + 1..])),
            ('"', '\\') => {
                let (_, e) = chars.next()?;
                let hex = |n: usize, chars: &mut std::str::CharIndices<'_>| {
                    let digits: String = chars.by_ref().take(n).map(|(_, c)| c).collect();
                    if digits.len() != n {
                        return None;
                    }
                    char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
                };
                text.push(match e {
                    '0' => '\0',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    't' => '\t',
                    'n' => '\n',
                    'v' => '\u{b}',
                    'f' => '\u{c}',
                    'r' => '\r',
                    'e' => '\u{1b}',
                    ' ' | '"' | '/' | '\\' => e,
                    'N' => '\u{85}',
                    '_' => '\u{a0}',
                    'L' => '\u{2028}',
                    'P' => '\u{2029}',
                    'x' => hex(2, &mut chars)?,
                    'u' => hex(4, &mut chars)?,
                    'U' => hex(8, &mut chars)?,
                    _ => return None,
                });
            }
            _ => text.push(c),
        }
    }
    None
}

/// A flow collection on one line.
struct Flow<'a> {
    s: &'a str,
    at: usize,
}

impl Flow<'_> {
    fn skip_spaces(&mut self) {
        while self.s.as_bytes().get(self.at) == Some(&b' ') {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.at).copied()
    }

    /// Whether the rest of the line is nothing or a comment.
    fn end(&self) -> bool {
        comment_only(&self.s[self.at..])
    }

    /// Past the opening bracket of a collection nested in `depth` others:
    /// whether it closes at once; `None` past the nesting limit.
    fn open(&mut self, depth: usize, close: u8) -> Option<bool> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.skip_spaces();
        let empty = self.peek() == Some(close);
        if empty {
            self.at += 1;
        }
        Some(empty)
    }

    /// After an entry of a flow collection: `Some(true)` past its closing
    /// bracket, `Some(false)` past a comma another entry follows (a
    /// trailing comma is left to the full parser).
    fn next_entry(&mut self, close: u8) -> Option<bool> {
        self.skip_spaces();
        match self.peek()? {
            b',' => {
                self.at += 1;
                self.skip_spaces();
                (self.peek() != Some(close)).then_some(false)
            }
            c if c == close => {
                self.at += 1;
                Some(true)
            }
            _ => None,
        }
    }

    fn node(&mut self, depth: usize) -> Option<Value> {
        self.skip_spaces();
        match self.peek()? {
            b'[' => {
                let mut items = Vec::new();
                if !self.open(depth, b']')? {
                    loop {
                        items.push(self.node(depth + 1)?);
                        if self.next_entry(b']')? {
                            break;
                        }
                    }
                }
                Some(Value::Seq(items))
            }
            b'{' => {
                let mut entries = Map::default();
                if !self.open(depth, b'}')? {
                    loop {
                        let key = match self.node(depth + 1)? {
                            Value::Scalar { text, .. } => text,
                            _ => return None,
                        };
                        self.skip_spaces();
                        if self.peek() != Some(b':')
                            || self.s.as_bytes().get(self.at + 1) != Some(&b' ')
                        {
                            return None;
                        }
                        self.at += 1;
                        self.skip_spaces();
                        let value = match self.peek()? {
                            b',' | b'}' => Value::Null,
                            _ => self.node(depth + 1)?,
                        };
                        if entries.insert(key, value).is_some() {
                            return None;
                        }
                        if self.next_entry(b'}')? {
                            break;
                        }
                    }
                }
                Some(Value::map(entries))
            }
            b'"' | b'\'' => {
                let (text, after) = quoted(&self.s[self.at..])?;
                self.at = self.s.len() - after.len();
                Some(Value::Scalar { text, plain: false })
            }
            _ => {
                let rest = &self.s[self.at..];
                let len = rest
                    .find([',', '[', ']', '{', '}', ':', '#'])
                    .unwrap_or(rest.len());
                let text = rest[..len].trim_end_matches(' ');
                if !plain_start(text) {
                    return None;
                }
                self.at += len;
                Some(plain(text))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The full parser's answer: saphyr's events through the builder.
    fn full(text: &str) -> Option<Value> {
        crate::parse_documents(text, false, false)
            .ok()
            .map(|(v, _, _)| v)
    }

    /// Where the reader answers, it answers as the full parser does.
    fn agrees(text: &str) -> Option<Value> {
        let simple = parse(text);
        if let Some(v) = &simple {
            assert_eq!(Some(v), full(text).as_ref(), "{text:?}");
        }
        simple
    }

    #[test]
    fn reads_the_common_shapes_as_the_full_parser_does() {
        for text in [
            "",
            "# only a comment\n\n",
            "a: 1\nb: two words # a comment\nc:\nd: ~\ne: null\n",
            "instances:\n  - name: host-1\n    image: img-1\n    storages:\n      - {name: vol-1, mount_point: /data}\n  - name: host-2\n",
            "a:\n- x\n- y\nb: [1, 'two', \"th\\\"ree\", [], {}]\n",
            "- a\n- - \n- b: 1\n  c: [x, {y: z}]\n",
            "url: http://example.com/a:b\nk:v: 1\n'q': 1\n",
            "s: 'it''s'\nd: \"tab\\there \\u00e9 \\x41\"\nn: -1\nm: a#b\n",
            "  indented: 1\n  also: 2\n",
            "a:\n  b:\n    c: 1\n  d: 2\ne: 3\n",
            "- \n- # comment\n-\n",
            "é: ü\nkey with spaces: value with spaces   \n",
            "a: {x: , y: 1}\n",
        ] {
            agrees(text);
        }
        // The shapes of a configuration tree are read here, not handed on.
        assert!(parse("images:\n  - name: a\n    source_image: b\n").is_some());
        assert!(parse("a: [1, {b: c}]\n").is_some());
    }

    #[test]
    fn hands_on_what_it_does_not_know() {
        for text in [
            "a: |\n  block\n",
            "a: >\n  folded\n",
            "a: plain\n  continued\n",
            "a: &x 1\nb: *x\n",
            "a: !tag 1\n",
            "---\na: 1\n",
            "a: 1\n---\nb: 2\n",
            "a:\tb\n",
            "a: 1\r\nb: 2\r\n",
            "a: [1,\n  2]\n",
            "a: 1\na: 2\n",
            "a: {x: 1, x: 2}\n",
            "a: [1, 2,]\n",
            "a: {x: 1,}\n",
            "a: b: c\n",
            "? complex\n: key\n",
            "\"quoted key\": 1\n",
            "null: 1\n",
            "just a scalar\n",
            "a: 'unclosed\n",
            "a: [x]y\n",
            "a: {b}\n",
            "a: [b: c]\n",
            "a:\n  - x\n   - y\n",
            "a: \"\\q\"\n",
            "a: x\n b: y\n",
            "%YAML 1.2\n---\na: 1\n",
        ] {
            assert_eq!(agrees(text), None, "{text:?}");
        }
    }

    #[test]
    fn nesting_at_the_limit_is_left_to_the_full_parser() {
        let deep = |n: usize| format!("a: {}{}\n", "[".repeat(n), "]".repeat(n));
        assert!(agrees(&deep(MAX_DEPTH - 1)).is_some());
        assert_eq!(agrees(&deep(MAX_DEPTH)), None);
        let block: String = (0..MAX_DEPTH + 2)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert_eq!(agrees(&block), None);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the repository's own files, read by a test
    fn every_yaml_file_of_the_repository_reads_the_same() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut stack = vec![root.join("fixtures"), root.join("docs")];
        let mut read = 0;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|x| x == "yml" || x == "yaml")
                    && let Ok(text) = std::fs::read_to_string(&path)
                    && agrees(&text).is_some()
                {
                    read += 1;
                }
            }
        }
        assert!(read > 50, "only {read} files read");
    }

    /// Scalars with the characters that change how YAML reads a line.
    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            20 => "[a-z][a-z0-9_-]{0,6}",
            6 => "[a-z0-9][a-z0-9 ./é]{0,6}",
            3 => "[-a-z0-9 :#,'\"@&*!?|>%{}\\[\\]./~é]{1,8}",
            1 => Just("null".to_string()),
            1 => Just("~".to_string()),
            1 => Just("-1".to_string()),
            1 => Just("- x".to_string()),
            1 => Just("a: b".to_string()),
            1 => Just("x #c".to_string()),
            1 => Just("'q''s'".to_string()),
            1 => Just("\"e\\n\\u0041\"".to_string()),
            1 => Just("---".to_string()),
        ]
    }

    /// A document: nested mappings, sequences and flow values, written
    /// with the spacing and comments people write.
    fn node(depth: u32) -> BoxedStrategy<Vec<String>> {
        let leaf = scalar().prop_map(|s| vec![s]).boxed();
        if depth == 0 {
            return leaf;
        }
        let key = prop_oneof![9 => "[a-z][a-z0-9_]{0,6}", 1 => scalar()];
        let entry = (key, node(depth - 1), 0..4usize, any::<bool>());
        prop_oneof![
            leaf,
            prop::collection::vec(entry, 1..4).prop_map(|es| {
                let mut out = Vec::new();
                for (k, v, style, comment) in es {
                    let c = if comment { " # c" } else { "" };
                    if v.len() == 1 && style < 3 {
                        out.push(format!("{k}: {}{c}", v[0]));
                    } else if style == 3 && v.len() == 1 {
                        out.push(format!("{k}: {{x: {}, y: [{}]}}{c}", v[0], v[0]));
                    } else {
                        out.push(format!("{k}:{c}"));
                        out.extend(v.iter().map(|l| format!("  {l}")));
                    }
                }
                out
            }),
            prop::collection::vec((node(depth - 1), any::<bool>()), 1..4).prop_map(|items| {
                let mut out = Vec::new();
                for (v, same_line) in items {
                    if same_line {
                        out.push(format!("- {}", v[0]));
                        out.extend(v[1..].iter().map(|l| format!("  {l}")));
                    } else {
                        out.push("-".to_string());
                        out.extend(v.iter().map(|l| format!("  {l}")));
                    }
                }
                out
            }),
        ]
        .boxed()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn generated_documents_read_the_same(lines in node(3), blank in any::<bool>()) {
            let sep = if blank { "\n\n" } else { "\n" };
            agrees(&(lines.join(sep) + "\n"));
        }
    }
}
