//! YAML text to a [`Value`] and a separate position map.
//!
//! Built on saphyr-parser's event stream, which reports a span for every
//! node and reports anchors and aliases as such, so they can be refused
//! before anything is expanded. docs/yaml.md says why this parser.

use std::collections::HashMap;

use csis_model::{DocPath, Map, Value};
use saphyr_parser::{Event, Parser, ScalarStyle, Span as PSpan};

pub mod emit;

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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Positions {
    values: HashMap<DocPath, Span>,
    keys: HashMap<DocPath, Span>,
}

impl Positions {
    pub fn value(&self, path: &DocPath) -> Option<Span> {
        self.values.get(path).copied()
    }

    pub fn key(&self, path: &DocPath) -> Option<Span> {
        self.keys.get(path).copied()
    }

    /// The span of the nearest node at or above `path` that has one.
    pub fn nearest(&self, path: &DocPath, key: bool) -> Option<Span> {
        let mut p = path.clone();
        loop {
            let found = if key {
                self.key(&p).or_else(|| self.value(&p))
            } else {
                self.value(&p)
            };
            if found.is_some() {
                return found;
            }
            p.0.pop()?;
        }
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
    char_to_byte: Vec<usize>,
}

impl Offsets {
    fn new(text: &str) -> Offsets {
        let mut char_to_byte: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        char_to_byte.push(text.len());
        Offsets { char_to_byte }
    }

    fn byte(&self, char_index: usize) -> usize {
        self.char_to_byte
            .get(char_index)
            .copied()
            .unwrap_or_else(|| self.char_to_byte.last().copied().unwrap_or(0))
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
    parse_documents(text, false).map(|(v, p, _)| (v, p))
}

/// Parse the first YAML document and stop at the start of a second one,
/// returning where it starts (user-data ignores later documents).
pub fn parse_first(text: &str) -> Result<(Value, Positions, Option<Span>), YamlError> {
    parse_documents(text, true)
}

fn parse_documents(
    text: &str,
    first_only: bool,
) -> Result<(Value, Positions, Option<Span>), YamlError> {
    let offsets = Offsets::new(text);
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder {
        positions: Positions::default(),
        stack: Vec::new(),
        root: None,
        documents: 0,
    };
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| {
            let m = e.marker();
            let offset = offsets.byte(m.index());
            YamlError {
                message: format!("invalid YAML: {}", e.info()),
                span: Span {
                    offset,
                    len: 0,
                    line: m.line(),
                    col: m.col() + 1,
                },
            }
        })?;
        if matches!(event, Event::StreamEnd) {
            break;
        }
        let span = offsets.span(&span);
        if first_only && matches!(event, Event::DocumentStart(_)) && builder.documents == 1 {
            return Ok((
                builder.root.unwrap_or(Value::Null),
                builder.positions,
                Some(span),
            ));
        }
        builder.event(event, span)?;
    }
    Ok((builder.root.unwrap_or(Value::Null), builder.positions, None))
}

enum Frame {
    Seq {
        path: DocPath,
        items: Vec<Value>,
    },
    Map {
        path: DocPath,
        entries: Map,
        pending_key: Option<(String, Span)>,
    },
}

struct Builder {
    positions: Positions,
    stack: Vec<Frame>,
    root: Option<Value>,
    documents: usize,
}

impl Builder {
    /// The path the next node will have, or `None` when the next node is a
    /// mapping key.
    fn next_path(&self) -> Option<DocPath> {
        match self.stack.last() {
            None => Some(DocPath::root()),
            Some(Frame::Seq { path, items }) => Some(path.index(items.len())),
            Some(Frame::Map {
                path, pending_key, ..
            }) => pending_key.as_ref().map(|(k, _)| path.key(k)),
        }
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
                let path = self.open(span)?;
                self.stack.push(Frame::Seq {
                    path,
                    items: Vec::new(),
                });
            }
            Event::MappingStart(anchor, _) => {
                refuse_anchor(anchor, span)?;
                let path = self.open(span)?;
                self.stack.push(Frame::Map {
                    path,
                    entries: Map::new(),
                    pending_key: None,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let value = match self.stack.pop() {
                    Some(Frame::Seq { items, .. }) => Value::Seq(items),
                    Some(Frame::Map { entries, .. }) => Value::Map(entries),
                    None => return Ok(()),
                };
                self.attach(value, span)?;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
        Ok(())
    }

    /// Record the position of a collection that starts here.
    fn open(&mut self, span: Span) -> Result<DocPath, YamlError> {
        match self.next_path() {
            Some(path) => {
                self.positions.values.insert(path.clone(), span);
                Ok(path)
            }
            None => Err(YamlError {
                message: "a mapping key must be a plain string, not a list or mapping".to_string(),
                span,
            }),
        }
    }

    /// A scalar: either a mapping key or a value.
    fn push(&mut self, value: Value, span: Span) -> Result<(), YamlError> {
        if let Some(Frame::Map {
            path,
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
            self.positions.keys.insert(path.key(&key), span);
            *pending_key = Some((key, span));
            return Ok(());
        }
        if let Some(path) = self.next_path() {
            self.positions.values.insert(path, span);
        }
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
}
