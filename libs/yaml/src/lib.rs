//! YAML text to a [`Value`] and a separate position map.
//!
//! Built on saphyr-parser's event stream, which reports a span for every
//! node and reports anchors and aliases as such, so they can be refused
//! before anything is expanded. docs/yaml.md says why this parser.

use std::collections::HashMap;

use csis_model::{DocPath, Map, Seg, Value};
use saphyr_parser::{Event, Parser, ScalarStyle, Span as PSpan};

pub mod emit;
mod simple;

/// A byte range with its 1-based line and column, for diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    pub offset: usize,
    pub len: usize,
    pub line: usize,
    pub col: usize,
}

/// Where each node of one document sits: its value and, for mapping
/// entries, its key.
///
/// A tree of nodes, each knowing its parent and the step from it: memory
/// is linear in the document however deep it nests (a map from whole
/// paths would copy every ancestor's path into each node, quadratic in
/// the depth).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Positions {
    /// Node 0 is the document's root.
    nodes: Vec<Node>,
    /// A node's child by (parent, step).
    children: HashMap<(usize, Seg), usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Node {
    value: Option<Span>,
    key: Option<Span>,
}

impl Default for Positions {
    fn default() -> Positions {
        Positions {
            nodes: vec![Node::default()],
            children: HashMap::new(),
        }
    }
}

impl Positions {
    pub fn value(&self, path: &DocPath) -> Option<Span> {
        self.node(&path.0).and_then(|n| n.value)
    }

    pub fn key(&self, path: &DocPath) -> Option<Span> {
        self.node(&path.0).and_then(|n| n.key)
    }

    /// The span of the nearest node at or above `path` that has one.
    pub fn nearest(&self, path: &DocPath, key: bool) -> Option<Span> {
        // The nodes along the path, as far as the document has them.
        let mut along = vec![0];
        for seg in path.0.iter() {
            let Some(&next) = along
                .last()
                .and_then(|&id| self.children.get(&(id, seg.clone())))
            else {
                break;
            };
            along.push(next);
        }
        along.iter().rev().find_map(|&id| {
            let n = &self.nodes[id];
            if key { n.key.or(n.value) } else { n.value }
        })
    }

    fn node(&self, path: &[Seg]) -> Option<&Node> {
        let mut id = 0;
        for seg in path {
            id = *self.children.get(&(id, seg.clone()))?;
        }
        self.nodes.get(id)
    }

    /// The node `seg` below `parent`, made when new.
    fn child(&mut self, parent: usize, seg: Seg) -> usize {
        let next = self.nodes.len();
        let id = *self.children.entry((parent, seg)).or_insert(next);
        if id == next {
            self.nodes.push(Node::default());
        }
        id
    }
}

/// A YAML problem at a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YamlError {
    pub message: String,
    pub span: Span,
}

/// Converts saphyr's character indices to byte offsets.
struct Offsets {
    /// Empty for ASCII text, where the two are the same.
    char_to_byte: Vec<usize>,
    len: usize,
}

impl Offsets {
    fn new(text: &str) -> Offsets {
        let char_to_byte = if text.is_ascii() {
            Vec::new()
        } else {
            text.char_indices().map(|(b, _)| b).collect()
        };
        Offsets {
            char_to_byte,
            len: text.len(),
        }
    }

    fn byte(&self, char_index: usize) -> usize {
        if self.char_to_byte.is_empty() {
            return char_index.min(self.len);
        }
        self.char_to_byte
            .get(char_index)
            .copied()
            .unwrap_or(self.len)
    }

    fn span(&self, s: &PSpan) -> Span {
        let start = self.byte(s.start.index());
        let end = self.byte(s.end.index()).max(start);
        Span {
            offset: start,
            len: end - start,
            line: s.start.line(),
            col: s.start.col() + 1,
        }
    }
}

const ANCHOR_HELP: &str = "YAML anchors and aliases are refused: a few lines of nested aliases \
expand to more data than memory holds (the billion-laughs shape), and a reviewer cannot see \
what an alias stands for in a diff. Write the values out, or share them through `config:` and \
{{ config.<key> }}.";

/// Parse one YAML document. An empty document reads as null.
pub fn parse(text: &str) -> Result<(Value, Positions), YamlError> {
    parse_documents(text, false, true).map(|(v, p, _)| (v, p))
}

/// Parse one YAML document to its value only, recording no positions:
/// what queries compare and structure, at a fraction of the memory. A
/// refusal is found again with positions, so its span is exact.
pub fn parse_value(text: &str) -> Result<Value, YamlError> {
    if let Some(value) = simple::parse(text) {
        return Ok(value);
    }
    match parse_documents(text, false, false) {
        Ok((v, _, _)) => Ok(v),
        Err(_) => parse(text).map(|(v, _)| v),
    }
}

/// Parse the first YAML document and stop at the start of a second one,
/// returning where it starts (user-data ignores later documents).
pub fn parse_first(text: &str) -> Result<(Value, Positions, Option<Span>), YamlError> {
    parse_documents(text, true, true)
}

/// [`parse_first`] without positions: the first document's value and
/// whether a second one follows. An error's span is not set: a caller that
/// reports it parses again with [`parse_first`].
pub fn parse_first_value(text: &str) -> Result<(Value, bool), YamlError> {
    parse_documents(text, true, false).map(|(v, _, later)| (v, later.is_some()))
}

fn parse_documents(
    text: &str,
    first_only: bool,
    record: bool,
) -> Result<(Value, Positions, Option<Span>), YamlError> {
    // Without positions no span is converted: a refusal is parsed again
    // with them (`parse_value`).
    let offsets = record.then(|| Offsets::new(text));
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder {
        positions: record.then(Positions::default),
        stack: Vec::new(),
        root: None,
        documents: 0,
    };
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| {
            let m = e.marker();
            let offset = offsets.as_ref().map_or(0, |o| o.byte(m.index()));
            // saphyr's own bound on flow nesting (`[[[...`): the same
            // refusal as a block document's.
            let message = if e.info() == "recursion limit exceeded" {
                depth_message()
            } else {
                match remedy(e.info()) {
                    Some(remedy) => format!("invalid YAML: {}: {remedy}", e.info()),
                    None => format!("invalid YAML: {}", e.info()),
                }
            };
            let span = Span {
                offset,
                len: 0,
                line: m.line(),
                col: m.col() + 1,
            };
            // The scanner reports a tab where the token it was reading
            // began, often a line before: point at the tab itself.
            match (e.info().contains("tab"), &offsets) {
                (true, Some(_)) => tab_error(text, offset).unwrap_or(YamlError { message, span }),
                _ => YamlError { message, span },
            }
        })?;
        if matches!(event, Event::StreamEnd) {
            break;
        }
        let span = offsets.as_ref().map_or(NO_SPAN, |o| o.span(&span));
        if first_only && matches!(event, Event::DocumentStart(_)) && builder.documents == 1 {
            return Ok((
                builder.root.unwrap_or(Value::Null),
                builder.positions.unwrap_or_default(),
                Some(span),
            ));
        }
        builder.event(event, span)?;
    }
    Ok((
        builder.root.unwrap_or(Value::Null),
        builder.positions.unwrap_or_default(),
        None,
    ))
}

/// What the parser's words usually mean in a hand-written file, and what
/// to write instead: most are a line indented unlike its neighbours.
fn remedy(info: &str) -> Option<&'static str> {
    Some(match info {
        "mapping values are not allowed in this context" => {
            "usually a key indented deeper than the keys beside it, or a plain value holding ': ' -- line the key up with its neighbours, or quote the value"
        }
        "while parsing a block mapping, did not find expected key" => {
            "usually a line indented less than the keys of its mapping, or an unclosed quote -- line it up with the keys above it"
        }
        "while parsing a block collection, did not find expected '-' indicator" => {
            "usually a list entry indented unlike the entries before it -- line up its '- ' with theirs"
        }
        "block sequence entries are not allowed in this context" => {
            "a '- ' entry on the same line as its key -- put the list on the lines below the key, indented"
        }
        "simple key expect ':'" | "simple key expected" => {
            "a key without ':' after it -- write `key: value`"
        }
        _ => return None,
    })
}

/// The refusal of a tab in YAML's indentation or separation, at the first
/// tab from `from` on (else the document's first), with its line shown,
/// the tab as `→` (a terminal renders a tab as spaces).
fn tab_error(text: &str, from: usize) -> Option<YamlError> {
    let at = text
        .get(from..)
        .and_then(|rest| rest.find('\t'))
        .map(|i| from + i)
        .or_else(|| text.find('\t'))?;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let shown: String = text[line_start..line_end]
        .trim_end_matches('\r')
        .replace('\t', "→")
        .chars()
        .take(60)
        .collect();
    let line = text[..at].matches('\n').count() + 1;
    let col = text[line_start..at].chars().count() + 1;
    Some(YamlError {
        message: format!(
            "invalid YAML: a tab at line {line}, column {col} (`{shown}`, the tab shown as →): YAML indents and separates with spaces only -- replace the tab with spaces"
        ),
        span: Span {
            offset: at,
            len: 1,
            line,
            col,
        },
    })
}

/// The span of every node when positions are not recorded.
const NO_SPAN: Span = Span {
    offset: 0,
    len: 0,
    line: 0,
    col: 0,
};

/// How deeply lists and mappings may nest in one document. Every reader
/// of a value below (dropping it, comparing it, rendering it to JSON or
/// Jinja, walking it for reserved names) recurses once per level; this
/// bound keeps them all far from the end of a thread's stack.
pub const MAX_DEPTH: usize = 256;

/// The refusal of a document nested deeper than [`MAX_DEPTH`].
pub fn depth_message() -> String {
    format!(
        "nesting deeper than {MAX_DEPTH} levels; csis reads at most {MAX_DEPTH} levels of lists and \
mappings inside one another (block or flow style)"
    )
}

enum Frame {
    Seq {
        node: usize,
        items: Vec<Value>,
    },
    Map {
        node: usize,
        entries: Map,
        pending_key: Option<(String, Span)>,
    },
}

struct Builder {
    /// `None` when positions are not recorded.
    positions: Option<Positions>,
    stack: Vec<Frame>,
    root: Option<Value>,
    documents: usize,
}

impl Builder {
    /// Whether the next node is a mapping's key.
    fn key_next(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Map {
                pending_key: None,
                ..
            })
        )
    }

    /// Record where the next (value) node is; its position node, or 0
    /// when positions are not recorded.
    fn record_value(&mut self, span: Span) -> usize {
        let Some(positions) = self.positions.as_mut() else {
            return 0;
        };
        let (parent, seg) = match self.stack.last() {
            None => {
                positions.nodes[0].value = Some(span);
                return 0;
            }
            Some(Frame::Seq { node, items }) => (*node, Seg::Index(items.len())),
            Some(Frame::Map {
                node, pending_key, ..
            }) => (
                *node,
                Seg::Key(
                    pending_key
                        .as_ref()
                        .map(|k| k.0.as_str())
                        .unwrap_or_default()
                        .into(),
                ),
            ),
        };
        let id = positions.child(parent, seg);
        positions.nodes[id].value = Some(span);
        id
    }

    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), YamlError> {
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(YamlError {
                        message: "a file holds one YAML document; found a second `---`".to_string(),
                        span,
                    });
                }
            }
            Event::Alias(_) => {
                return Err(YamlError {
                    message: format!("YAML aliases (*name) are not accepted. {ANCHOR_HELP}"),
                    span,
                });
            }
            Event::Scalar(text, style, anchor, tag) => {
                refuse_anchor(anchor, span)?;
                let plain = matches!(style, ScalarStyle::Plain) && tag.is_none();
                let value = if plain && is_null(&text) {
                    Value::Null
                } else {
                    Value::Scalar {
                        text: text.into_owned(),
                        plain,
                    }
                };
                self.push(value, span)?;
            }
            Event::SequenceStart(anchor, _) => {
                refuse_anchor(anchor, span)?;
                let node = self.open(span)?;
                self.stack.push(Frame::Seq {
                    node,
                    items: Vec::new(),
                });
            }
            Event::MappingStart(anchor, _) => {
                refuse_anchor(anchor, span)?;
                let node = self.open(span)?;
                self.stack.push(Frame::Map {
                    node,
                    entries: Map::default(),
                    pending_key: None,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let value = match self.stack.pop() {
                    Some(Frame::Seq { items, .. }) => Value::Seq(items),
                    Some(Frame::Map { entries, .. }) => Value::map(entries),
                    None => return Ok(()),
                };
                self.attach(value, span)?;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
        Ok(())
    }

    /// Record the position of a collection that starts here, refusing one
    /// nested deeper than [`MAX_DEPTH`].
    fn open(&mut self, span: Span) -> Result<usize, YamlError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(YamlError {
                message: depth_message(),
                span,
            });
        }
        if self.key_next() {
            return Err(YamlError {
                message: "a mapping key must be a plain string, not a list or mapping".to_string(),
                span,
            });
        }
        Ok(self.record_value(span))
    }

    /// A scalar: either a mapping key or a value.
    fn push(&mut self, value: Value, span: Span) -> Result<(), YamlError> {
        if let Some(Frame::Map {
            node,
            entries,
            pending_key,
        }) = self.stack.last_mut()
            && pending_key.is_none()
        {
            let key = match value {
                Value::Scalar { text, .. } => text,
                _ => String::new(),
            };
            if entries.contains_key(&key) {
                return Err(YamlError {
                    message: format!("duplicate key '{key}' in one mapping"),
                    span,
                });
            }
            let parent = *node;
            if let Some(positions) = self.positions.as_mut() {
                let child = positions.child(parent, Seg::Key(key.as_str().into()));
                positions.nodes[child].key = Some(span);
            }
            *pending_key = Some((key, span));
            return Ok(());
        }
        self.record_value(span);
        self.attach(value, span)
    }

    /// Put a finished node into its parent.
    fn attach(&mut self, value: Value, span: Span) -> Result<(), YamlError> {
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map {
                entries,
                pending_key,
                ..
            }) => match pending_key.take() {
                Some((k, _)) => {
                    entries.insert(k, value);
                }
                None => {
                    return Err(YamlError {
                        message: "a mapping key must be a plain string, not a list or mapping"
                            .to_string(),
                        span,
                    });
                }
            },
        }
        Ok(())
    }
}

fn refuse_anchor(anchor: usize, span: Span) -> Result<(), YamlError> {
    if anchor == 0 {
        return Ok(());
    }
    Err(YamlError {
        message: format!("YAML anchors (&name) are not accepted. {ANCHOR_HELP}"),
        span,
    })
}

fn is_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_positions() {
        let text = "a: 1\nb:\n  - x\n  - 'y'\nc: ~\n";
        let (v, pos) = parse(text).unwrap();
        let b = v.get("b").unwrap().as_seq().unwrap();
        assert_eq!(b[1], Value::str("y"));
        assert_eq!(v.get("c"), Some(&Value::Null));
        let p = DocPath::root().key("b").index(1);
        let s = pos.value(&p).unwrap();
        assert_eq!((s.line, s.col), (4, 5));
        let k = pos.key(&DocPath::root().key("c")).unwrap();
        assert_eq!((k.line, k.col), (5, 1));
    }

    #[test]
    fn the_value_alone_is_the_value_with_positions_and_a_refusal_keeps_its_span() {
        for text in [
            "a: 1\nb:\n  - x\n  - {c: [1, 2], d: ~}\n",
            "",
            "- 1\n- [a, b]\n",
        ] {
            assert_eq!(parse_value(text).unwrap(), parse(text).unwrap().0);
        }
        for text in [
            "a: 1\na: 2\n",
            "a: &x [1]\nb: *x\n",
            "a: [1\n",
            "? [a]\n: 1\n",
        ] {
            assert_eq!(parse_value(text).unwrap_err(), parse(text).unwrap_err());
        }
    }

    #[test]
    fn comments_do_not_change_the_value() {
        let (a, _) = parse("a: 1 # one\nb: [x]\n").unwrap();
        let (b, _) = parse("# head\n\na: 1\nb:\n- x\n").unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn anchors_and_aliases_are_refused_with_the_reason() {
        let e = parse("a: &x [1]\nb: *x\n").unwrap_err();
        assert!(
            e.message
                .starts_with("YAML anchors (&name) are not accepted.")
        );
        assert!(e.message.contains("billion-laughs"));
        assert_eq!((e.span.line, e.span.col), (1, 4));
    }

    #[test]
    fn duplicate_keys_and_syntax_errors_have_positions() {
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.message, "duplicate key 'a' in one mapping");
        assert_eq!(e.span.line, 2);
        let e = parse("a: [1\n").unwrap_err();
        assert!(e.message.starts_with("invalid YAML"), "{}", e.message);
    }

    /// `- ` repeated: a block sequence in a block sequence, `depth` deep.
    fn block_seqs(depth: usize) -> String {
        format!("{}x\n", "- ".repeat(depth))
    }

    /// One key per line, each indented below the last.
    fn block_maps(depth: usize) -> String {
        (0..depth)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect()
    }

    #[test]
    fn nesting_stops_at_the_limit_in_block_and_flow_style() {
        assert!(parse(&block_seqs(MAX_DEPTH)).is_ok());
        let e = parse(&block_seqs(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(e.message, depth_message());
        assert_eq!((e.span.line, e.span.col), (1, 2 * MAX_DEPTH + 1));
        let e = parse(&block_seqs(4000)).unwrap_err();
        assert_eq!(e.message, depth_message());

        // The innermost key holds null: depth nested mappings hold it.
        assert!(parse(&block_maps(MAX_DEPTH)).is_ok());
        let e = parse(&block_maps(MAX_DEPTH + 2)).unwrap_err();
        assert_eq!(e.message, depth_message());
        assert_eq!(e.span.line, MAX_DEPTH + 1);

        let flow = |n: usize| format!("a: {}{}\n", "[".repeat(n), "]".repeat(n));
        assert!(parse(&flow(MAX_DEPTH - 1)).is_ok());
        let e = parse(&flow(MAX_DEPTH)).unwrap_err();
        assert_eq!(e.message, depth_message());
        let e = parse(&flow(1000)).unwrap_err();
        assert_eq!(e.message, depth_message());
        assert!(e.message.starts_with("nesting deeper than 256 levels"));
    }

    #[test]
    fn positions_grow_with_the_nodes_not_with_their_depth() {
        let text = block_maps(MAX_DEPTH);
        let (_, pos) = parse(&text).unwrap();
        // One node per key, plus the root.
        assert_eq!(pos.nodes.len(), MAX_DEPTH + 1);
        let mut deep = DocPath::root();
        for i in 0..MAX_DEPTH {
            deep = deep.key(&format!("k{i}"));
        }
        let k = pos.key(&deep).unwrap();
        assert_eq!((k.line, k.col), (MAX_DEPTH, MAX_DEPTH));
        // Below what the document has: the nearest ancestor.
        let below = deep.key("nothing").index(3);
        assert_eq!(pos.nearest(&below, true), Some(k));
        assert_eq!(pos.value(&below), None);
    }

    #[test]
    fn a_tab_is_refused_where_it_is_with_the_line_shown() {
        let e = parse("a:\n  b: x\n\tc: y\n").unwrap_err();
        assert_eq!((e.span.line, e.span.col, e.span.offset), (3, 1, 10));
        assert_eq!(
            e.message,
            "invalid YAML: a tab at line 3, column 1 (`→c: y`, the tab shown as →): YAML indents and separates with spaces only -- replace the tab with spaces"
        );
    }

    #[test]
    fn byte_offsets_of_non_ascii_text() {
        let (_, pos) = parse("é: ü\nb: x\n").unwrap();
        let s = pos.value(&DocPath::root().key("b")).unwrap();
        assert_eq!((s.offset, s.line, s.col), (10, 2, 4));
    }
}
