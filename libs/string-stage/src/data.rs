//! Rendered values are data (issue 32, defect 2): text a tag substituted
//! from the environment, the clock, a builder or any value that is not
//! itself a template of the user's is never parsed as a template again.
//!
//! The string stage renders in passes (cfg/'s `interpolate` then
//! `scope-this`; an item's up to five passes), and a later pass renders
//! whatever still holds `{{`. Data is therefore marked where a tag writes
//! it: every `{` in it is fenced by [`MARK`] on both sides, so no later
//! pass sees `{{`, `{%`, `{#` or `${` in it, nor one formed with the text
//! around it (`{` + `{ ENV.B }}`). The marks are removed once, when the
//! stage's last pass is done ([`unmark_value`]).
//!
//! What is a template of the user's: a configured string that holds a
//! tag or a `${...}` placeholder ([`is_template_text`]), handed to
//! templates as minijinja's "safe" strings by [`crate::jinja_value`]; a
//! tag that prints one writes it unmarked, so `{{ image.name }}` whose
//! name is `web-{{ ENV.STAGE }}` still resolves as before.

use std::borrow::Cow;

use csis_model::Value;

/// The fence around a `{` of data: a private-use character, which
/// configuration text has no business holding next to a `{`.
pub const MARK: char = '\u{E000}';

/// Whether a configured string is a template of the user's: it holds a
/// Jinja tag or a `${...}` placeholder (interpolated after the Jinja
/// passes, so a tag may hand one on).
pub fn is_template_text(s: &str) -> bool {
    // Every scalar handed to a template is asked: a tag and a placeholder
    // both need a `{`, and one byte search rules most strings out before
    // the substring searches.
    s.contains('{') && (csis_model::value::has_template(s) || s.contains("${"))
}

/// `s` with every `{` fenced by [`MARK`]; a fence already there is kept,
/// so marking marked text changes nothing.
pub fn mark(s: &str) -> Cow<'_, str> {
    if !s.contains('{') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut prev: Option<char> = None;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '{' {
            if prev != Some(MARK) {
                out.push(MARK);
            }
            out.push('{');
            if chars.peek() != Some(&MARK) {
                out.push(MARK);
            }
        } else {
            out.push(c);
        }
        prev = Some(c);
    }
    Cow::Owned(out)
}

/// `s` without the fences [`mark`] put around its `{`s.
pub fn unmark(s: &str) -> Cow<'_, str> {
    if !s.contains(MARK) {
        return Cow::Borrowed(s);
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, c) in chars.iter().enumerate() {
        let fence = *c == MARK
            && (i.checked_sub(1).and_then(|p| chars.get(p)) == Some(&'{')
                || chars.get(i + 1) == Some(&'{'));
        if !fence {
            out.push(*c);
        }
    }
    Cow::Owned(out)
}

/// Every string below `v` unmarked: the end of a stage's passes.
pub fn unmark_value(v: &mut Value) {
    unmark_with(v, &unmark);
}

/// `s` unmarked for a field that is rendered again later (a builder's
/// `*_template`, rendered per item): each `{` of data is written as the
/// tag `{{ '{' }}`, which renders to that `{` as data, so the later
/// render prints what was substituted and reads nothing from it.
pub fn unmark_as_template(s: &str) -> Cow<'_, str> {
    if !s.contains(MARK) {
        return Cow::Borrowed(s);
    }
    let chars: Vec<char> = s.chars().collect();
    let at = |i: usize, c: char| chars.get(i) == Some(&c);
    let before = |i: usize, c: char| i.checked_sub(1).is_some_and(|p| at(p, c));
    let mut out = String::with_capacity(s.len() + 16);
    for (i, c) in chars.iter().enumerate() {
        match *c {
            MARK if before(i, '{') || at(i + 1, '{') => {}
            '{' if before(i, MARK) || at(i + 1, MARK) => out.push_str("{{ '{' }}"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Every string below `v` unmarked; below a mapping key that
/// `rendered_again` accepts, with [`unmark_as_template`].
pub fn unmark_document(v: &mut Value, rendered_again: &dyn Fn(&str) -> bool) {
    match v {
        Value::Map(m) => {
            for (k, item) in m.iter_mut() {
                if rendered_again(k) {
                    unmark_with(item, &unmark_as_template);
                } else {
                    unmark_document(item, rendered_again);
                }
            }
        }
        Value::Seq(items) => items
            .iter_mut()
            .for_each(|i| unmark_document(i, rendered_again)),
        other => unmark_value(other),
    }
}

fn unmark_with(v: &mut Value, f: &dyn Fn(&str) -> Cow<'_, str>) {
    match v {
        Value::Scalar { text, .. } => {
            if let Cow::Owned(t) = f(text) {
                *text = t;
            }
        }
        Value::Seq(items) => items.iter_mut().for_each(|i| unmark_with(i, f)),
        Value::Map(m) => m.values_mut().for_each(|i| unmark_with(i, f)),
        Value::Null => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_text_holds_no_opener_and_unmarks_to_itself() {
        for s in [
            "",
            "plain",
            "{{ ENV.B }}",
            "{% if x %}y{% endif %}",
            "{# c #}",
            "${env.B}",
            "{",
            "x{",
            "{{{",
            "a { b } c",
        ] {
            let m = mark(s);
            assert!(!m.contains("{{") && !m.contains("{%") && !m.contains("{#"));
            assert!(!m.contains("${"), "{m:?}");
            // Nor one formed with the text around it.
            if !s.is_empty() {
                assert!(!format!("{{{m}{{").contains("{{"), "{m:?}");
            }
            assert_eq!(mark(&m), m, "idempotent");
            assert_eq!(unmark(&m), s);
        }
    }

    #[test]
    fn data_in_a_field_rendered_again_renders_to_itself_once() {
        let r = crate::Renderer::new();
        let ctx = minijinja::context! { user => minijinja::context! { name => "ann" } };
        let field = format!("{{{{ user.name }}}}@{}", mark("{{ ENV.B }}"));
        let again = unmark_as_template(&field);
        assert_eq!(again, "{{ user.name }}@{{ '{' }}{{ '{' }} ENV.B }}");
        let rendered = r.render_tags(&again, &ctx).unwrap();
        assert_eq!(unmark(&rendered), "ann@{{ ENV.B }}");
        assert_eq!(unmark_as_template("no data {{ x }}"), "no data {{ x }}");
    }

    #[test]
    fn template_text_is_a_tag_or_a_placeholder() {
        assert!(is_template_text("{{ x }}"));
        assert!(is_template_text("a {% if %}"));
        assert!(is_template_text("${env.X}"));
        assert!(!is_template_text("awk '{print $1}'"));
        assert!(!is_template_text(&mark("{{ x }}")));
    }
}
