//! Read-time refusals that look at a parsed document, before any model is
//! built: reserved names, guarded `config:` keys.

use csis_model::naming::{INVALID_CONFIG_KEYS, is_invalid_config_key, reserved_word};
use csis_model::path::Step;
use csis_model::{Diagnostic, DocPath, Origin, Value};

/// Every `name:` at any depth and every `aliases:` entry that is a reserved
/// word, each one reported with the file, its place and the word.
pub fn refuse_reserved_names(file: &str, value: &Value, base: &DocPath) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    walk(file, value, base, &mut Vec::new(), &mut out);
    out
}

/// `path` is the place of `value` below `base`, extended and restored on
/// the way down: every node of every file is walked.
fn walk<'a>(
    file: &str,
    value: &'a Value,
    base: &DocPath,
    path: &mut Vec<Step<'a>>,
    out: &mut Vec<Diagnostic>,
) {
    match value {
        Value::Map(m) => {
            for (k, v) in m.iter() {
                path.push(Step::Key(k));
                if k == "name" {
                    check_name(file, v, base, path, out);
                } else if k == "aliases"
                    && let Some(items) = v.as_seq()
                {
                    for (j, a) in items.iter().enumerate() {
                        let word = match a {
                            Value::Null => Some(""),
                            Value::Scalar { text, .. } => reserved_word(text),
                            _ => None,
                        };
                        if let Some(w) = word {
                            let ap = base.with_steps(path).index(j);
                            let msg = if w.is_empty() {
                                format!("{file}: {ap}: an alias may not be empty (null)")
                            } else {
                                format!("{file}: {ap}: an alias may not be '{w}'")
                            };
                            out.push(reserved_diag(msg, file, ap));
                        }
                    }
                }
                walk(file, v, base, path, out);
                path.pop();
            }
        }
        Value::Seq(items) => {
            for (i, v) in items.iter().enumerate() {
                path.push(Step::Index(i));
                walk(file, v, base, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn check_name(file: &str, v: &Value, base: &DocPath, path: &[Step<'_>], out: &mut Vec<Diagnostic>) {
    let word = match v {
        Value::Null => Some(""),
        Value::Scalar { text, .. } => reserved_word(text),
        _ => None,
    };
    if let Some(w) = word {
        let p = base.with_steps(path);
        let msg = if w.is_empty() {
            format!("{file}: {p}: a name may not be empty (null)")
        } else {
            format!("{file}: {p}: a name may not be '{w}'")
        };
        out.push(reserved_diag(msg, file, p));
    }
}

const RESERVED_HELP: &str = "rename the entry or drop the alias; the reserved words are \
default, self, none, the empty string and null, in any case";

fn reserved_diag(msg: String, file: &str, path: DocPath) -> Diagnostic {
    Diagnostic::error(msg)
        .at(Origin::new(file, path))
        .help(RESERVED_HELP)
}

/// Whether a diagnostic is a read-time reserved-name refusal. The models
/// hold the rule again as a backstop for objects made in code; on a file,
/// the read-time refusal is the one a person needs, once.
pub fn is_reserved_refusal(d: &Diagnostic) -> bool {
    d.help.as_deref() == Some(RESERVED_HELP)
}

/// Keys of the document's top-level `config:` that are guarded words.
pub fn refuse_invalid_config_keys(file: &str, doc: &Value) -> Vec<Diagnostic> {
    let Some(config) = doc.get("config").and_then(Value::as_map) else {
        return Vec::new();
    };
    let guarded = INVALID_CONFIG_KEYS
        .iter()
        .map(|k| format!("'{k}'"))
        .collect::<Vec<_>>()
        .join(", ");
    config
        .keys()
        .filter(|k| is_invalid_config_key(k))
        .map(|k| {
            Diagnostic::error(format!(
                "{file}: config.{k}: '{k}' may not be a `config:` key"
            ))
            .at(Origin::new(file, DocPath::root().key("config").key(k)))
            .on_key()
            .help(format!(
                "rename the key; these words are guarded in any case: {guarded}"
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use csis_yaml::parse;

    #[test]
    fn every_reserved_name_and_alias_is_listed() {
        let (v, _) = parse(
            "images:\n  - name: Default\n    runtimes:\n      - name: none\n  - name: ok\n    aliases: [self, fine, '']\n",
        )
        .unwrap();
        let d = refuse_reserved_names("images/a.yml", &v, &DocPath::root());
        let msgs: Vec<_> = d.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "images/a.yml: images[0].name: a name may not be 'default'",
                "images/a.yml: images[0].runtimes[0].name: a name may not be 'none'",
                "images/a.yml: images[1].aliases[0]: an alias may not be 'self'",
                "images/a.yml: images[1].aliases[2]: an alias may not be empty (null)",
            ]
        );
    }

    #[test]
    fn guarded_config_keys() {
        let (v, _) = parse("config:\n  Timestamp: x\n  fine: y\n").unwrap();
        let d = refuse_invalid_config_keys("cfg/_config.yml", &v);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].message,
            "cfg/_config.yml: config.Timestamp: 'Timestamp' may not be a `config:` key"
        );
    }
}
