//! The emitter's promise, tested over many generated strings: whatever a
//! string holds (every control character, U+2028/U+2029, a byte-order
//! mark, quotes, indicators, words and numbers YAML would read as
//! something else), as a value or as a key, it reads back unchanged, by
//! csis's own readers (the fast one and the full one) and, when python3
//! with PyYAML is installed, by `yaml.safe_load`.
//!
//! The generator is a small seeded PRNG: every run tries the same strings,
//! so a failure is reproduced by running the test again.

use std::io::Write;

use csis_yaml::emit::to_yaml;
use serde_json::{Value as J, json};

/// xorshift64*: deterministic, no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Pieces a string is made of, biased toward what YAML treats specially.
const WORDS: &[&str] = &[
    "null",
    "Null",
    "NULL",
    "~",
    "true",
    "True",
    "false",
    "FALSE",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "0",
    "-1",
    "+1",
    "1e3",
    "0x1F",
    "0o17",
    "1_000",
    ".5",
    ".inf",
    "-.Inf",
    ".nan",
    "1:20",
    "2001-12-14",
    "=",
    "<<",
    "-",
    "--",
    "---",
    "...",
    "? ",
    ": ",
    " #",
    "# ",
    "- ",
    "a",
    "web",
    "x",
    "/srv/data",
    "{{ x }}",
    "%YAML",
    "!tag",
    "&a",
    "*a",
    "|",
    ">",
    "@",
    "`",
    "\\",
    "\"",
    "'",
    "''",
    "\\n",
    "\\r",
    "\\x7F",
    "é",
    "😀",
    "日本",
];

fn piece(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 | 1 => {
            // A control character, or another character YAML treats apart.
            let special = [
                '\u{85}', '\u{a0}', '\u{2028}', '\u{2029}', '\u{feff}', '\u{fffe}', '\u{ffff}',
                '\u{7f}', '\u{3000}', '\u{200b}',
            ];
            let c = match rng.below(4) {
                0 | 1 => char::from_u32(rng.below(0x20) as u32),
                2 => char::from_u32(0x7f + rng.below(0x21) as u32),
                _ => Some(special[rng.below(special.len())]),
            };
            c.map(String::from).unwrap_or_default()
        }
        2 => {
            let punct = " :#-?,[]{}&*!|>'\"%@`~=<.\\\t ";
            let chars: Vec<char> = punct.chars().collect();
            chars[rng.below(chars.len())].to_string()
        }
        3 => {
            // Any Unicode scalar value.
            let mut c = None;
            while c.is_none() {
                c = char::from_u32(rng.below(0x11_0000) as u32);
            }
            c.map(String::from).unwrap_or_default()
        }
        _ => WORDS[rng.below(WORDS.len())].to_string(),
    }
}

fn string(rng: &mut Rng) -> String {
    let n = rng.below(7);
    (0..n).map(|_| piece(rng)).collect()
}

/// A string as a value, a key and a sequence entry: what each of the
/// many generated strings is tried in.
fn small(s: &str) -> J {
    let mut m = serde_json::Map::new();
    m.insert("v".into(), json!(s));
    m.insert(s.to_string(), json!([s]));
    J::Object(m)
}

/// The document a string is tried in: as a value at the top level, in a
/// mapping, in a sequence, under a sequence entry's mapping, and as keys.
fn doc(s: &str) -> J {
    let mut keyed = serde_json::Map::new();
    keyed.insert(s.to_string(), json!(s));
    keyed.insert(format!("{s}k"), json!([s, {"inner": s}]));
    json!({
        "value": s,
        "list": [s, s],
        "entries": [{"name": s, "at": 1}],
        "keys": J::Object(keyed.clone()),
        "nested": [J::Object(keyed)],
    })
}

/// What csis's readers give back for `text`, as JSON: `parse_value` (the
/// fast reader first) and `parse` (the full one) must agree.
fn read_back(text: &str) -> J {
    let fast = csis_yaml::parse_value(text)
        .unwrap_or_else(|e| panic!("{}: {text:?}", e.message))
        .to_json();
    let (full, _) = csis_yaml::parse(text).unwrap_or_else(|e| panic!("{}: {text:?}", e.message));
    assert_eq!(fast, full.to_json(), "{text:?}");
    fast
}

const CASES: usize = 20_000;

fn generated() -> Vec<String> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..CASES).map(|_| string(&mut rng)).collect()
}

#[test]
fn every_generated_string_reads_back_unchanged() {
    for (i, s) in generated().iter().enumerate() {
        let text = to_yaml(&json!(s));
        assert_eq!(read_back(&text), json!(s), "{text:?}");
        // Every shape for a tenth of them (the full parser's time).
        let d = if i % 10 == 0 { doc(s) } else { small(s) };
        let text = to_yaml(&d);
        assert_eq!(read_back(&text), d, "{text:?}");
    }
}

#[test]
fn every_character_alone_reads_back_unchanged() {
    // Every control character and separator on its own, between letters
    // and at either end, as a value and as a key.
    let chars = (0u32..0x100).chain([0x2028, 0x2029, 0xfeff, 0xfffe, 0xffff, 0x1_0000, 0x10_ffff]);
    for c in chars.filter_map(char::from_u32) {
        for s in [
            c.to_string(),
            format!("a{c}b"),
            format!("{c}a"),
            format!("a{c}"),
        ] {
            let d = doc(&s);
            let text = to_yaml(&d);
            assert_eq!(read_back(&text), d, "{text:?}");
            // No raw control character, line separator or BOM is written.
            assert!(
                !text.chars().any(|c| (c.is_control() && c != '\n')
                    || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')),
                "{text:?}"
            );
        }
    }
}

#[test]
fn a_key_longer_than_an_implicit_key_may_be_is_written_explicitly() {
    for k in ["k".repeat(2000), "\r".repeat(600), "é".repeat(1100)] {
        let d = doc(&k);
        let text = to_yaml(&d);
        assert!(text.contains("? "), "{text}");
        assert_eq!(read_back(&text), d);
    }
}

/// PyYAML reads the same documents to the same values. Skipped, with a
/// notice, where python3 or its yaml module is missing.
#[test]
fn pyyaml_reads_every_generated_string_alike() {
    let has_pyyaml = std::process::Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pyyaml {
        eprintln!("skipped: python3 with PyYAML is not installed");
        return;
    }
    // PyYAML is pure Python here: a tenth of the strings, in one document.
    let mut docs: Vec<J> = generated().iter().step_by(10).map(|s| small(s)).collect();
    docs.push(doc(&"\r".repeat(600)));
    let all = J::Array(docs);
    let text = to_yaml(&all);
    // The bytes go through stdin, read as bytes: PyYAML decodes them.
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin.buffer)))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: J = serde_json::from_slice(&out.stdout).unwrap();
    let J::Array(read) = read else {
        panic!("not a list")
    };
    let J::Array(want) = all else { unreachable!() };
    assert_eq!(read.len(), want.len());
    for (r, w) in read.iter().zip(&want) {
        assert_eq!(r, w);
    }
}
