//! Values from outside the tree (spec 003): `${env.NAME}` and
//! `${terraform.KEY}` placeholders, resolved per entry of the
//! interpolatable sections by the `interpolate-external` pass.
//!
//! Pure: the engine reads the environment, the `env_file:` files and the
//! state files and hands them over as text ([`External`]); this module
//! parses them and substitutes.
//!
//! Finding a string's placeholders is placeholders.rs's; which state file
//! a key reads (the declared sources, the entry's tokens) is sources.rs's;
//! parsing what the engine hands over is inputs.rs's; resolving and
//! substituting one entry's placeholders is resolve.rs's. This file holds
//! what the pass reads and reports, and its entry points.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_model::{DocPath, Seg, Value};

mod inputs;
mod placeholders;
mod resolve;
mod sources;

pub use inputs::{Output, Outputs, parse_dotenv, tfstate_outputs, value_of_json};
pub use placeholders::{Piece, Ref, has_placeholder, pieces, refs_in};
pub use sources::{Source, Tokens, entry_reads, split_key, substitute_tokens};

use resolve::{Entry, walk};

/// The key an entry names its environment file by; consumed by the pass.
pub const ENV_FILE_KEY: &str = "env_file";

/// What the engine hands over for a file it refused to read (too large,
/// not UTF-8, not a regular file), as a state's error and as an
/// env_file's text: the refusal is already reported, with the file's
/// position, so a field reading the file fails without a second message.
pub const REFUSED_READ: &str = "\u{0}csis: refused when read (reported above)\u{0}";

/// Everything the pass reads, handed over by the engine.
#[derive(Debug, Clone, Default)]
pub struct External {
    /// The top-level keys whose entries are interpolated.
    pub sections: Vec<String>,
    pub tolerate_missing_env: bool,
    /// The process environment csis read at load.
    pub env: BTreeMap<String, String>,
    /// `env_file:` paths to their text (`None`: the file is missing).
    pub env_files: BTreeMap<String, Option<Arc<str>>>,
    pub sources: Vec<Source>,
    /// Resolved state locations to their outputs (or why not).
    pub states: BTreeMap<String, Result<Arc<Outputs>, String>>,
    /// The document's `config.environment` ({environment}'s default).
    pub environment: Option<String>,
}

/// One substitution made. Debug shows a sensitive value as `<sensitive>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Used {
    pub path: DocPath,
    /// `env FOO` or `terraform output subnet_id of <location>`.
    pub source: String,
    pub placeholder: String,
    /// The value as text (a list or map: its JSON).
    pub text: String,
    pub sensitive: bool,
}

impl std::fmt::Debug for Used {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Used")
            .field("path", &self.path)
            .field("source", &self.source)
            .field("placeholder", &self.placeholder)
            .field(
                "text",
                &if self.sensitive {
                    "<sensitive>"
                } else {
                    self.text.as_str()
                },
            )
            .field("sensitive", &self.sensitive)
            .finish()
    }
}

/// What the pass did to a document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub used: Vec<Used>,
    /// (path, section, entry, message).
    pub failures: Vec<Failure>,
    /// Unresolved `${env.*}` names substituted by their placeholder.
    pub missing_env: Vec<(DocPath, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub path: DocPath,
    pub section: String,
    pub entry: String,
    pub message: String,
}

/// The marked placeholder of a missing variable under tolerate-missing.
pub fn missing_env_placeholder(name: &str) -> String {
    format!("<missing env {name}>")
}

/// Interpolates one entry of `section` at `path`, consuming its
/// `env_file:`.
pub fn interpolate_entry(
    entry: &mut Value,
    section: &str,
    path: &[Seg],
    ext: &External,
    out: &mut Outcome,
) {
    let name = entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // A failure of the entry's `env_file:` key, at that key.
    let mut env_file_failure = |message: String| {
        let mut p = path.to_vec();
        p.push(Seg::Key(ENV_FILE_KEY.into()));
        out.failures.push(Failure {
            path: DocPath(p.into()),
            section: section.into(),
            entry: name.clone(),
            message,
        });
    };
    let env_file = match entry
        .as_map_mut()
        .and_then(|m| m.shift_remove(ENV_FILE_KEY))
    {
        Some(Value::Scalar { text, .. }) => {
            match ext.env_files.get(&text) {
                Some(Some(t)) if &**t == REFUSED_READ => Some((text, Err(None))),
                Some(Some(t)) => match parse_dotenv(t) {
                    Ok(vars) => Some((text, Ok(vars))),
                    Err(e) => {
                        env_file_failure(format!("{text}:{}:{}: {}", e.line, e.col, e.message));
                        Some((text, Err(Some(e))))
                    }
                },
                _ => {
                    // A path that would leave the root was never read: say
                    // why (the one confinement rule), not "missing".
                    env_file_failure(
                    csis_model::confine::relative_path_problem("env_file", &text).unwrap_or_else(
                        || format!("env_file '{text}' does not exist (paths are relative to the root)"),
                    ),
                );
                    None
                }
            }
        }
        _ => None,
    };
    let e = Entry {
        ext,
        section,
        tokens: Tokens::of(entry, ext.environment.as_deref()),
        name,
        env_file,
    };
    let mut p = path.to_vec();
    walk(entry, &mut p, &e, out);
}

/// The `interpolate-external` pass: every entry of every interpolatable
/// section of `doc` (a list of entries, or one mapping).
pub fn interpolate_document(doc: &mut Value, ext: &External) -> Outcome {
    let mut out = Outcome::default();
    let Value::Map(top) = doc else { return out };
    for (key, v) in top.iter_mut() {
        if !ext.sections.iter().any(|s| s == key) {
            continue;
        }
        match v {
            Value::Seq(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    if item.as_map().is_some() {
                        let path = [Seg::Key(key.as_str().into()), Seg::Index(i)];
                        interpolate_entry(item, key, &path, ext, &mut out);
                    }
                }
            }
            Value::Map(_) => {
                let path = [Seg::Key(key.as_str().into())];
                interpolate_entry(v, key, &path, ext, &mut out);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use csis_yaml::parse;

    fn ext() -> External {
        let state = r#"{"version": 4, "outputs": {
            "subnet_id": {"value": "subnet-123", "type": "string"},
            "port": {"value": 8080, "type": "number"},
            "zones": {"value": ["a", "b"]},
            "tags": {"value": {"team": "ops"}},
            "db_password": {"value": "hunter2-secret", "sensitive": true},
            "web_subnet": {"value": "subnet-web"},
            "db_subnet": {"value": "subnet-db"}
        }}"#;
        let stage_state = r#"{"version": 4, "outputs": {"subnet_id": {"value": "subnet-stage"}}}"#;
        let mut states = BTreeMap::new();
        states.insert(
            "state/prod.tfstate".to_string(),
            Ok(Arc::new(tfstate_outputs(state).unwrap())),
        );
        states.insert(
            "state/stage.tfstate".to_string(),
            Ok(Arc::new(tfstate_outputs(stage_state).unwrap())),
        );
        let mut env_files = BTreeMap::new();
        env_files.insert(
            "web.env".to_string(),
            Some(Arc::from(
                "# comment\nIMAGE_TAG=\"from-file\"\nexport OTHER='x y'\n",
            )),
        );
        External {
            sections: vec!["instances".into()],
            tolerate_missing_env: false,
            env: [
                ("Image_Tag".to_string(), "from-env".to_string()),
                ("HOME".to_string(), "/root".to_string()),
            ]
            .into_iter()
            .collect(),
            env_files,
            sources: vec![Source {
                name: "net".into(),
                location: "state/{environment}.tfstate".into(),
            }],
            states,
            environment: Some("prod".into()),
        }
    }

    fn run(yaml: &str, ext: &External) -> (Value, Outcome) {
        let (mut doc, _) = parse(yaml).unwrap();
        let out = interpolate_document(&mut doc, ext);
        (doc, out)
    }

    fn field<'a>(doc: &'a Value, section: &str, i: usize, key: &str) -> &'a Value {
        &doc.get(section).unwrap().as_seq().unwrap()[i]
            .as_map()
            .unwrap()[key]
    }

    #[test]
    fn env_is_case_insensitive_and_env_file_wins() {
        let (doc, out) = run(
            "instances:\n  - name: a\n    tag: \"${env.IMAGE_TAG}\"\n  - name: b\n    env_file: web.env\n    tag: \"v-${env.image_tag}\"\n",
            &ext(),
        );
        assert!(out.failures.is_empty(), "{:?}", out.failures);
        assert_eq!(
            field(&doc, "instances", 0, "tag").as_str(),
            Some("from-env")
        );
        assert_eq!(
            field(&doc, "instances", 1, "tag").as_str(),
            Some("v-from-file")
        );
        assert!(
            doc.get("instances").unwrap().as_seq().unwrap()[1]
                .get("env_file")
                .is_none()
        );
    }

    #[test]
    fn a_missing_env_fails_naming_section_entry_and_name_or_is_tolerated() {
        let yaml = "instances:\n  - name: web\n    tag: \"${env.NOPE}\"\n";
        let (_, out) = run(yaml, &ext());
        assert_eq!(out.failures.len(), 1);
        let f = &out.failures[0];
        assert_eq!((f.section.as_str(), f.entry.as_str()), ("instances", "web"));
        assert!(f.message.contains("'NOPE'"), "{}", f.message);
        assert_eq!(f.path.to_string(), "instances[0].tag");
        let mut e = ext();
        e.tolerate_missing_env = true;
        let (doc, out) = run(yaml, &e);
        assert!(out.failures.is_empty());
        assert_eq!(out.missing_env.len(), 1);
        assert_eq!(
            field(&doc, "instances", 0, "tag").as_str(),
            Some("<missing env NOPE>")
        );
    }

    #[test]
    fn terraform_values_are_native_when_whole_and_refused_when_embedded() {
        let (doc, out) = run(
            "instances:\n  - name: web\n    subnet: \"${terraform.subnet_id}\"\n    port: \"${terraform.port}\"\n    zones: \"${terraform.zones}\"\n    tags: \"${terraform.net.tags}\"\n",
            &ext(),
        );
        assert!(out.failures.is_empty(), "{:?}", out.failures);
        assert_eq!(
            field(&doc, "instances", 0, "subnet").as_str(),
            Some("subnet-123")
        );
        assert_eq!(field(&doc, "instances", 0, "port").as_str(), Some("8080"));
        let zones = field(&doc, "instances", 0, "zones").as_seq().unwrap();
        assert_eq!(zones.len(), 2);
        assert_eq!(
            field(&doc, "instances", 0, "tags")
                .get("team")
                .unwrap()
                .as_str(),
            Some("ops")
        );
        let (_, out) = run(
            "instances:\n  - name: web\n    z: \"zones: ${terraform.zones}\"\n",
            &ext(),
        );
        assert!(
            out.failures[0].message.contains("cannot be embedded"),
            "{:?}",
            out.failures
        );
    }

    #[test]
    fn a_missing_key_fails_naming_section_entry_and_key() {
        let (_, out) = run(
            "instances:\n  - name: web\n    s: \"${terraform.nope}\"\n",
            &ext(),
        );
        let f = &out.failures[0];
        assert_eq!((f.section.as_str(), f.entry.as_str()), ("instances", "web"));
        assert!(f.message.contains("'nope'"), "{}", f.message);
    }

    #[test]
    fn tokens_substitute_in_location_and_key() {
        let (doc, out) = run(
            "instances:\n  - name: web\n    s: \"${terraform.{name}_subnet}\"\n  - name: db\n    config: {environment: stage}\n    s: \"${terraform.subnet_id}\"\n",
            &ext(),
        );
        assert!(out.failures.is_empty(), "{:?}", out.failures);
        assert_eq!(
            field(&doc, "instances", 0, "s").as_str(),
            Some("subnet-web")
        );
        assert_eq!(
            field(&doc, "instances", 1, "s").as_str(),
            Some("subnet-stage")
        );
        let (entry, _) =
            parse("name: db\nconfig: {environment: stage}\ns: \"${terraform.subnet_id}\"\n")
                .unwrap();
        let (locs, _) = entry_reads(&entry, &ext().sources, Some("prod"));
        assert_eq!(locs, ["state/stage.tfstate"]);
    }

    #[test]
    fn other_sections_are_left_alone_and_escapes_stay_literal() {
        let (doc, out) = run(
            "interpolation:\n  terraform:\n    - name: x\n      path: \"${env.HOME}\"\ninstances:\n  - name: web\n    s: \"$${env.HOME} ${env.HOME}\"\n",
            &ext(),
        );
        assert!(out.failures.is_empty());
        let decl = &doc
            .get("interpolation")
            .unwrap()
            .get("terraform")
            .unwrap()
            .as_seq()
            .unwrap()[0];
        assert_eq!(decl.get("path").unwrap().as_str(), Some("${env.HOME}"));
        assert_eq!(
            field(&doc, "instances", 0, "s").as_str(),
            Some("${env.HOME} /root")
        );
    }

    #[test]
    fn a_sensitive_output_is_marked() {
        let (doc, out) = run(
            "instances:\n  - name: web\n    p: \"pw=${terraform.db_password}\"\n",
            &ext(),
        );
        assert_eq!(
            field(&doc, "instances", 0, "p").as_str(),
            Some("pw=${terraform.db_password}")
        );
        assert!(
            out.used
                .iter()
                .any(|u| u.sensitive && u.text == "hunter2-secret")
        );
    }

    #[test]
    fn dotenv_syntax() {
        let v = parse_dotenv("A=1\n# c\nB = \"x\\\"y\" \nexport C='q # r'\nD=plain # comment\n")
            .unwrap();
        assert_eq!(v["A"], "1");
        assert_eq!(v["B"], "x\"y");
        assert_eq!(v["C"], "q # r");
        assert_eq!(v["D"], "plain");
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_key() {
        let v = parse_dotenv("\u{feff}FIRST=one\nB=two\n").unwrap();
        assert_eq!(v.get("FIRST").map(String::as_str), Some("one"));
    }

    #[test]
    fn unicode_escapes_are_decoded_and_unknown_ones_refused() {
        let v = parse_dotenv("U=\"\\u0041\\u00e9\\$x\"\n").unwrap();
        assert_eq!(v["U"], "Aé$x");
        let at = |text: &str| {
            parse_dotenv(text)
                .map(|_| ())
                .map_err(|e| (e.line, e.col, e.message))
        };
        assert_eq!(
            at("A=1\nU=\"x\\u00g1\""),
            Err((
                2,
                5,
                "'\\u' is followed by four hex digits naming a character (\\u0041 is A) -- write \\\\u for a backslash and a u".to_string()
            ))
        );
        assert_eq!(
            at("Q=\"a\\qb\""),
            Err((
                1,
                5,
                "'\\q' is not an escape csis knows (\\n \\t \\r \\\" \\\\ \\' \\$ \\uXXXX) -- write \\\\ for a backslash".to_string()
            ))
        );
    }

    #[test]
    fn an_open_quote_is_refused_at_the_quote() {
        let e = parse_dotenv("A=1\n  Q = \"unterminated\nB=2\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 7));
        assert_eq!(
            e.message,
            "the double quote opened on this line is not closed -- close it (a value spans one line; write \\n for a line break)"
        );
        let e = parse_dotenv("S='open\n").unwrap_err();
        assert_eq!((e.line, e.col), (1, 3));
        assert_eq!(
            e.message,
            "the single quote opened here is not closed on this line -- close it: S='...'"
        );
    }
}
