//! The fuzz target (docs/reliability.md, "Fuzzing"): arbitrary YAML text
//! through csis-yaml, arbitrary templates through the renderer, and
//! arbitrary item files and templates through a whole load of an in-memory
//! tree. The property is that nothing panics and every render ends within
//! its limits.
//!
//! In the normal suite each property runs a few dozen to a few hundred
//! cases (a couple of seconds in a debug build). To fuzz longer, set
//! `PROPTEST_CASES`, for example
//! `PROPTEST_CASES=100000 cargo test --release -p csis-engine --test fuzz`.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use csis_engine::workspace::{LoadOptions, Workspace};
use csis_string_stage::limits::Limits;
use csis_string_stage::{Refusal, Renderer};
use csis_test_support::{LINKED, LOCAL_BASE, memory_system, parse, registry};
use proptest::prelude::*;

/// `PROPTEST_CASES`, or `default` cases.
fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Pieces YAML is made of, and some it must refuse.
const YAML_BITS: &[&str] = &[
    "images:",
    "\n",
    "\n  ",
    "  - ",
    "name: web",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\"",
    "'",
    "#",
    "&a ",
    "*a",
    "!age ",
    "!!str ",
    "|\n",
    ">\n",
    "---\n",
    "...\n",
    "? ",
    "%YAML 1.2\n",
    "\t",
    "\\",
    "\u{0}",
    "\u{feff}",
    "é",
    "🦀",
    "~",
    "null",
    "0x1F",
    "1e999",
    "-.inf",
    "<<: ",
    "{{ image.name }}",
    "{% for i in range(3) %}",
    "ENC[age:AAAA]",
    "\r\n",
];

fn yaml_text() -> impl Strategy<Value = String> {
    let bit = prop_oneof![
        4 => proptest::sample::select(YAML_BITS).prop_map(str::to_string),
        1 => any::<char>().prop_map(|c| c.to_string()),
        1 => "[a-z0-9_]{1,8}".prop_map(|s| s),
    ];
    proptest::collection::vec(bit, 0..60).prop_map(|v| v.concat())
}

/// Pieces templates are made of: tags, blocks, loops, filters, the
/// functions there are and some there are not, big numbers, operators
/// that grow values.
const TEMPLATE_BITS: &[&str] = &[
    "{{ ",
    " }}",
    "{% ",
    " %}",
    "{# ",
    " #}",
    "{%- ",
    " -%}",
    "image.name",
    "this",
    "ENV.USER",
    "execution.timestamp",
    "debug()",
    "range(",
    "range(10000)",
    "range(100000)",
    "dict(a=1)",
    "namespace()",
    "loop.index",
    ")",
    "(",
    "[",
    "]",
    "[1]",
    "{'a': 1}",
    " * ",
    " ~ ",
    " + ",
    " - ",
    " // ",
    " % ",
    " ** ",
    "10",
    "1000000000",
    "1000000000000",
    "-1",
    "0",
    "'x'",
    "'ab'",
    "|join",
    "|list",
    "|length",
    "|sort",
    "|unique",
    "|sum",
    "|string",
    "|pprint",
    "|first",
    "|last",
    "|indent(100)",
    "|replace('x', 'xxxxxxxx')",
    "|select('odd')",
    "|map('upper')",
    "|batch(3)",
    "|default('d')",
    "|upper",
    "|unknownfilter",
    "for a in ",
    "for b in ",
    "endfor",
    "if ",
    "endif",
    "else",
    "set s = ",
    "endset",
    "macro m() ",
    "endmacro",
    "m()",
    "s",
    "a",
    "b",
    " in ",
    " is defined",
    "filter upper",
    "endfilter",
    "raw",
    "endraw",
    "include 'x'",
    "extends 'x'",
    "import 'x' as y",
    "import 'x' as ",
    "from 'x' import ",
    "\n",
    " ",
    "text ",
];

fn template() -> impl Strategy<Value = String> {
    let bit = prop_oneof![
        8 => proptest::sample::select(TEMPLATE_BITS).prop_map(str::to_string),
        1 => any::<char>().prop_map(|c| c.to_string()),
    ];
    proptest::collection::vec(bit, 0..24).prop_map(|v| v.concat())
}

/// Small limits, so that a case that spends its budget stays fast in a
/// debug build; the code paths are those of the real limits.
const SMALL: Limits = Limits {
    fuel: 20_000,
    max_bytes: 64 << 10,
};

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn yaml_never_panics(text in yaml_text()) {
        let _ = csis_yaml::parse(&text);
        let _ = csis_yaml::parse_first(&text);
    }

    #[test]
    fn a_render_ends_within_its_limits(text in template()) {
        let r = Renderer::with_limits(SMALL);
        let ctx = minijinja::context! {
            image => minijinja::context! { name => "web", source_image => "base" },
            this => minijinja::context! { name => "web" },
            ENV => minijinja::context! { USER => "avery" },
        };
        match r.render_tags(&text, &ctx) {
            Ok(out) => {
                // A value that rendered (not kept as written) fits.
                prop_assert!(out.len() <= SMALL.max_bytes || out == text);
            }
            Err(Refusal::Fuel(n)) => prop_assert_eq!(n, SMALL.fuel),
            Err(Refusal::Size(n)) => prop_assert_eq!(n, SMALL.max_bytes),
            Err(Refusal::UnknownFunction(_)) => {}
        }
    }
}

/// A template as a YAML double-quoted scalar.
fn quoted() -> impl Strategy<Value = String> {
    template().prop_map(|t| {
        let escaped = t
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        format!("\"{escaped}\"")
    })
}

/// An item file: well-formed images whose fields are arbitrary templates,
/// or arbitrary YAML.
fn item_file() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => (quoted(), quoted(), quoted()).prop_map(|(a, b, c)| format!(
            "images:\n  - name: web\n    source_image: alma\n    description: {a}\n    tags:\n      t: {b}\n    modifications:\n      - name: m\n        script: {c}\n"
        )),
        1 => yaml_text(),
    ]
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn a_load_never_panics(images in item_file(), extra in yaml_text()) {
        let mut files = parse(LOCAL_BASE);
        files.insert("images/fuzz.yml".into(), images);
        files.insert("storages/fuzz.yml".into(), extra);
        let root = Path::new("/t");
        let sys = memory_system(root, &files);
        if let Ok(ws) = Workspace::load(&sys, registry(LINKED), root, &LoadOptions::default()) {
            let _ = ws.load_diagnostics();
        }
    }
}
