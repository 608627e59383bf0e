//! csis-hcl: writes HCL2 native syntax, the language of Packer templates
//! (`.pkr.hcl`) and OpenTofu roots (`.tf`).
//!
//! Only writing: csis never reads HCL back. The output follows the layout
//! `tofu fmt` and `packer fmt` produce (two-space indentation, the `=` of
//! consecutive one-line attributes aligned, a blank line between blocks),
//! so a generated file is already formatted and a reviewer's diff shows
//! only what changed. Every string is escaped, `${` and `%{` included, so a
//! value from the configuration can never become an interpolation; an
//! interpolation is written on purpose with [`Expr::Template`].

use std::fmt::Write as _;

/// An expression on the right of an attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A literal string, escaped.
    Str(String),
    /// A quoted template whose `${...}` interpolations are kept: the text is
    /// written as given between the quotes (quotes, backslashes and
    /// newlines still escaped).
    Template(String),
    Int(i64),
    Bool(bool),
    Null,
    /// A reference or other expression written verbatim: `var.region`,
    /// `aws_instance.web.id`.
    Raw(String),
    List(Vec<Expr>),
    /// An object with keys in the given order.
    Object(Vec<(String, Expr)>),
    /// A function call: `file("x")`.
    Call(String, Vec<Expr>),
}

impl Expr {
    pub fn str(s: impl Into<String>) -> Expr {
        Expr::Str(s.into())
    }
    pub fn raw(s: impl Into<String>) -> Expr {
        Expr::Raw(s.into())
    }
    pub fn template(s: impl Into<String>) -> Expr {
        Expr::Template(s.into())
    }
    pub fn strs<I, S>(items: I) -> Expr
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Expr::List(items.into_iter().map(|s| Expr::Str(s.into())).collect())
    }
    /// A map of strings, keys sorted: tags and labels.
    pub fn string_map<'a, I>(pairs: I) -> Expr
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut v: Vec<(String, Expr)> = pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), Expr::str(v)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        Expr::Object(v)
    }

    fn is_multiline(&self) -> bool {
        match self {
            Expr::List(items) => items.iter().any(Expr::is_multiline),
            Expr::Object(items) => !items.is_empty(),
            Expr::Call(_, args) => args.iter().any(Expr::is_multiline),
            _ => false,
        }
    }

    fn write(&self, out: &mut String, indent: usize) {
        match self {
            Expr::Str(s) => quote(out, s, true),
            Expr::Template(s) => quote(out, s, false),
            Expr::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Expr::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Expr::Null => out.push_str("null"),
            Expr::Raw(s) => out.push_str(s),
            Expr::List(items) if self.is_multiline() => {
                out.push_str("[\n");
                for item in items {
                    pad(out, indent + 1);
                    item.write(out, indent + 1);
                    out.push_str(",\n");
                }
                pad(out, indent);
                out.push(']');
            }
            Expr::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out, indent);
                }
                out.push(']');
            }
            Expr::Object(items) if items.is_empty() => out.push_str("{}"),
            Expr::Object(items) => {
                out.push_str("{\n");
                let keys: Vec<String> = items.iter().map(|(k, _)| object_key(k)).collect();
                write_aligned(
                    out,
                    indent + 1,
                    keys.iter()
                        .map(String::as_str)
                        .zip(items.iter().map(|(_, v)| v)),
                );
                pad(out, indent);
                out.push('}');
            }
            Expr::Call(name, args) => {
                out.push_str(name);
                out.push('(');
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    a.write(out, indent);
                }
                out.push(')');
            }
        }
    }
}

impl From<&str> for Expr {
    fn from(s: &str) -> Expr {
        Expr::Str(s.to_string())
    }
}
impl From<String> for Expr {
    fn from(s: String) -> Expr {
        Expr::Str(s)
    }
}
impl From<i64> for Expr {
    fn from(n: i64) -> Expr {
        Expr::Int(n)
    }
}
impl From<bool> for Expr {
    fn from(b: bool) -> Expr {
        Expr::Bool(b)
    }
}

/// A block: `type "label" "label" { body }`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    pub kind: String,
    pub labels: Vec<String>,
    pub body: Body,
}

impl Block {
    pub fn new<I, S>(kind: &str, labels: I) -> Block
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Block {
            kind: kind.to_string(),
            labels: labels.into_iter().map(Into::into).collect(),
            body: Body::default(),
        }
    }
    pub fn attr(mut self, name: &str, value: impl Into<Expr>) -> Block {
        self.body = self.body.attr(name, value);
        self
    }
    /// An attribute only when there is a value.
    pub fn opt_attr(self, name: &str, value: Option<impl Into<Expr>>) -> Block {
        match value {
            Some(v) => self.attr(name, v),
            None => self,
        }
    }
    pub fn block(mut self, block: Block) -> Block {
        self.body = self.body.block(block);
        self
    }
    pub fn blocks(mut self, blocks: impl IntoIterator<Item = Block>) -> Block {
        for b in blocks {
            self.body = self.body.block(b);
        }
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Attr(String, Expr),
    Block(Block),
    Comment(String),
}

/// A body: attributes, blocks and comments in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Body {
    entries: Vec<Entry>,
}

impl Body {
    pub fn new() -> Body {
        Body::default()
    }
    pub fn attr(mut self, name: &str, value: impl Into<Expr>) -> Body {
        self.entries
            .push(Entry::Attr(name.to_string(), value.into()));
        self
    }
    pub fn block(mut self, block: Block) -> Body {
        self.entries.push(Entry::Block(block));
        self
    }
    /// A `#` comment line; each line of `text` becomes one.
    pub fn comment(mut self, text: &str) -> Body {
        self.entries.push(Entry::Comment(text.to_string()));
        self
    }
    pub fn push_block(&mut self, block: Block) {
        self.entries.push(Entry::Block(block));
    }
    pub fn push_attr(&mut self, name: &str, value: impl Into<Expr>) {
        self.entries
            .push(Entry::Attr(name.to_string(), value.into()));
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The body as a file.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, indent: usize) {
        let mut i = 0;
        let mut previous_was_block = false;
        while i < self.entries.len() {
            match &self.entries[i] {
                Entry::Attr(..) => {
                    let start = i;
                    while i < self.entries.len() && matches!(self.entries[i], Entry::Attr(..)) {
                        i += 1;
                    }
                    if previous_was_block {
                        out.push('\n');
                    }
                    let run = self.entries[start..i].iter().filter_map(|e| match e {
                        Entry::Attr(k, v) => Some((k.as_str(), v)),
                        _ => None,
                    });
                    write_aligned(out, indent, run);
                    previous_was_block = true;
                }
                Entry::Comment(text) => {
                    if previous_was_block {
                        out.push('\n');
                    }
                    for line in text.lines() {
                        pad(out, indent);
                        out.push_str("# ");
                        out.push_str(line);
                        out.push('\n');
                    }
                    previous_was_block = false;
                    i += 1;
                }
                Entry::Block(b) => {
                    if previous_was_block {
                        out.push('\n');
                    }
                    pad(out, indent);
                    out.push_str(&b.kind);
                    for l in &b.labels {
                        out.push(' ');
                        quote(out, l, true);
                    }
                    if b.body.is_empty() {
                        out.push_str(" {}\n");
                    } else {
                        out.push_str(" {\n");
                        b.body.write(out, indent + 1);
                        pad(out, indent);
                        out.push_str("}\n");
                    }
                    previous_was_block = true;
                    i += 1;
                }
            }
        }
    }
}

/// Attributes one per line, the `=` of consecutive one-line attributes
/// aligned as `tofu fmt` aligns them; a multi-line value ends the run.
fn write_aligned<'a>(
    out: &mut String,
    indent: usize,
    attrs: impl Iterator<Item = (&'a str, &'a Expr)>,
) {
    let attrs: Vec<(&str, &Expr)> = attrs.collect();
    let mut start = 0;
    while start < attrs.len() {
        let mut end = start;
        while end < attrs.len() && !attrs[end].1.is_multiline() {
            end += 1;
        }
        // A multi-line value is aligned with the run before it.
        let group_end = if end < attrs.len() { end + 1 } else { end };
        let width = attrs[start..group_end]
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        for (k, v) in &attrs[start..group_end] {
            pad(out, indent);
            out.push_str(k);
            for _ in k.chars().count()..width {
                out.push(' ');
            }
            out.push_str(" = ");
            v.write(out, indent);
            out.push('\n');
        }
        start = group_end;
    }
}

fn pad(out: &mut String, indent: usize) {
    for _ in 0..indent {
        out.push_str("  ");
    }
}

/// Whether `s` is an HCL identifier (and so a bare object key).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn object_key(k: &str) -> String {
    if is_identifier(k) {
        k.to_string()
    } else {
        let mut s = String::new();
        quote(&mut s, k, true);
        s
    }
}

/// A quoted string; `literal` also escapes the template sequences.
fn quote(out: &mut String, s: &str, literal: bool) {
    out.push('"');
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '$' | '%' if literal && chars.peek() == Some(&'{') => {
                out.push(c);
                out.push(c);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A string as an HCL literal (quoted and escaped).
pub fn literal(s: &str) -> String {
    let mut out = String::new();
    quote(&mut out, s, true);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_align_like_fmt_and_blocks_are_separated() {
        let body = Body::new().block(
            Block::new("resource", ["aws_instance", "web"])
                .attr("ami", "ami-123")
                .attr("instance_type", "t3.micro")
                .attr("tags", Expr::string_map([("b", "2"), ("a", "1")]))
                .block(
                    Block::new("root_block_device", Vec::<String>::new()).attr("volume_size", 20),
                ),
        );
        assert_eq!(
            body.render(),
            "resource \"aws_instance\" \"web\" {\n  ami           = \"ami-123\"\n  instance_type = \"t3.micro\"\n  tags          = {\n    a = \"1\"\n    b = \"2\"\n  }\n\n  root_block_device {\n    volume_size = 20\n  }\n}\n"
        );
    }

    #[test]
    fn literals_can_never_interpolate() {
        assert_eq!(literal("a${b}%{c}\"\\\n"), r#""a$${b}%%{c}\"\\\n""#);
        assert_eq!(literal("$ and % alone"), r#""$ and % alone""#);
        let mut s = String::new();
        Expr::template("${path.module}/x").write(&mut s, 0);
        assert_eq!(s, r#""${path.module}/x""#);
    }

    #[test]
    fn keys_that_are_not_identifiers_are_quoted() {
        let mut s = String::new();
        Expr::Object(vec![
            ("a.b".into(), Expr::Int(1)),
            ("ok_1".into(), Expr::Bool(true)),
        ])
        .write(&mut s, 0);
        assert_eq!(s, "{\n  \"a.b\" = 1\n  ok_1  = true\n}");
    }

    #[test]
    fn lists_stay_on_one_line_unless_an_item_spans_lines() {
        let mut s = String::new();
        Expr::strs(["a", "b"]).write(&mut s, 0);
        assert_eq!(s, r#"["a", "b"]"#);
        let mut s = String::new();
        Expr::List(vec![Expr::Object(vec![("k".into(), Expr::str("v"))])]).write(&mut s, 0);
        assert_eq!(s, "[\n  {\n    k = \"v\"\n  },\n]");
    }
}
