//! Diagnostics rendered for a person: the message, then `file:line:col`
//! with the offending snippet (miette), then what to write instead.

use std::io::IsTerminal;

use clap::ValueEnum;
use csis_engine::workspace::Workspace;
use csis_model::{Diagnostic, Severity, escape_controls};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource};

/// `--color`: as cargo has it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless NO_COLOR is set (to anything).
    #[default]
    Auto,
    Always,
    Never,
}

/// How diagnostics are shown on stderr, decided once per process.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// `--brief`: one `file:line:col: message` line each.
    pub brief: bool,
    pub color: bool,
    /// Wrapped to the width of a terminal; never wrapped into a pipe or a
    /// file, where a tool reads the lines.
    pub wrap: bool,
}

impl Style {
    /// `no_color`: NO_COLOR is set to a non-empty value.
    pub fn new(brief: bool, choice: ColorChoice, no_color: bool) -> Style {
        let terminal = std::io::stderr().is_terminal();
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !no_color,
        };
        Style {
            brief,
            color,
            wrap: terminal,
        }
    }
}

pub fn render(ws: &Workspace, d: &Diagnostic, style: Style) -> String {
    let severity = match d.severity {
        Severity::Error => miette::Severity::Error,
        Severity::Warning => miette::Severity::Warning,
    };
    // A file's name in the message or the help prints escaped: it cannot
    // fake a line of its own.
    let mut md =
        MietteDiagnostic::new(escape_controls(&d.message).into_owned()).with_severity(severity);
    if let Some(h) = &d.help {
        md = md.with_help(escape_controls(h).into_owned());
    }
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_wrap_lines(style.wrap);
    let mut out = String::new();
    let result = match ws.locate(d) {
        Some(loc) => {
            let file = escape_controls(&loc.file).into_owned();
            // The header names the place already; the span is marked
            // without repeating it.
            md = md.with_label(LabeledSpan::new(
                None,
                loc.span.offset,
                loc.span
                    .len
                    .max(1)
                    .min(loc.text.len().saturating_sub(loc.span.offset).max(1)),
            ));
            let report = miette::Report::new(md)
                .with_source_code(NamedSource::new(file, loc.text.to_string()));
            handler.render_report(&mut out, report.as_ref())
        }
        None => handler.render_report(&mut out, &md),
    };
    if result.is_err() {
        out = format!("error: {}\n", escape_controls(&d.message));
    }
    if let Some(note) = d.consequences_note() {
        out.push_str(&format!("  note: {note}\n"));
    }
    out
}

/// `validate --format`: for people, or one record per diagnostic for CI and
/// editors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DiagnosticFormat {
    /// Snippets on stderr (or `--brief` lines).
    #[default]
    Human,
    /// One JSON object per line on stdout.
    Json,
    /// GitHub Actions workflow commands (`::error file=...::message`) on
    /// stdout, shown in place on a pull request.
    Github,
}

/// A diagnostic with its place resolved: what the machine formats print.
struct Placed<'a> {
    severity: &'static str,
    code: Option<&'a str>,
    message: &'a str,
    file: Option<String>,
    line: Option<usize>,
    column: Option<usize>,
    help: Option<&'a str>,
    /// Errors folded under this one (they follow from it).
    consequences: usize,
}

fn placed<'a>(ws: &Workspace, d: &'a Diagnostic) -> Placed<'a> {
    let loc = ws.locate(d);
    Placed {
        severity: match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        },
        code: rule_code(&d.message),
        message: &d.message,
        file: loc.as_ref().map(|l| l.file.clone()),
        line: loc.as_ref().map(|l| l.span.line),
        column: loc.as_ref().map(|l| l.span.col),
        help: d.help.as_deref(),
        consequences: d.consequences,
    }
}

/// Where the spec numbers the rule a message states (`... (N26)`,
/// `(Q4)`), that number is the diagnostic's code.
fn rule_code(message: &str) -> Option<&str> {
    let is_code = |w: &&str| {
        w.len() > 1
            && w.starts_with(|x: char| x.is_ascii_uppercase())
            && w[1..].chars().all(|x| x.is_ascii_digit())
    };
    // The last parenthesis that names one: `(N26)`, `(N9 dead end)`,
    // `(... in the next; N21)`.
    let groups: Vec<&str> = message.split('(').skip(1).collect();
    groups.into_iter().rev().find_map(|tail| {
        let inside = tail.split(')').next()?;
        inside
            .split(|c: char| !c.is_ascii_alphanumeric())
            .find(is_code)
    })
}

/// One line for `format`: a JSON object, or a GitHub workflow command.
/// `prefix` is the root as given, so a file names its place in the
/// repository the command ran in.
pub fn machine_line(
    ws: &Workspace,
    d: &Diagnostic,
    format: DiagnosticFormat,
    prefix: &str,
) -> String {
    let p = placed(ws, d);
    let file = p.file.map(|f| match prefix {
        "" | "." => f,
        root => format!("{}/{f}", root.trim_end_matches('/')),
    });
    match format {
        DiagnosticFormat::Json | DiagnosticFormat::Human => serde_json::json!({
            "severity": p.severity,
            "code": p.code,
            "message": p.message,
            "file": file,
            "line": p.line,
            "column": p.column,
            "help": p.help,
            "consequences": p.consequences,
        })
        .to_string(),
        DiagnosticFormat::Github => {
            let mut props = Vec::new();
            if let Some(f) = &file {
                props.push(format!("file={}", github_property(&escape_controls(f))));
            }
            if let Some(l) = p.line {
                props.push(format!("line={l}"));
            }
            if let Some(c) = p.column {
                props.push(format!("col={c}"));
            }
            props.push(format!(
                "title={}",
                github_property(&format!("csis {}", p.severity))
            ));
            let mut message = escape_controls(p.message).into_owned();
            if let Some(h) = p.help {
                message.push_str("\nhelp: ");
                message.push_str(&escape_controls(h));
            }
            if let Some(note) = d.consequences_note() {
                message.push_str("\nnote: ");
                message.push_str(&note);
            }
            format!(
                "::{} {}::{}",
                p.severity,
                props.join(","),
                github_data(&message)
            )
        }
    }
}

/// A workflow command's message: `%`, CR and LF escaped.
fn github_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: also `:` and `,`.
fn github_property(s: &str) -> String {
    github_data(s).replace(':', "%3A").replace(',', "%2C")
}

pub fn print_diagnostic(ws: &Workspace, d: &Diagnostic, style: Style) {
    if style.brief {
        eprintln!("{}", ws.describe(d));
        // The help is what to write instead: a brief line keeps it.
        if let Some(help) = &d.help {
            eprintln!("  help: {}", escape_controls(help));
        }
        if let Some(note) = d.consequences_note() {
            eprintln!("  note: {note}");
        }
    } else {
        eprint!("{}", render(ws, d, style));
    }
}

/// Print every load diagnostic; the number of errors.
pub fn print_load_diagnostics(ws: &Workspace, style: Style) -> usize {
    let diags = ws.load_diagnostics();
    for d in &diags {
        print_diagnostic(ws, d, style);
    }
    diags.iter().filter(|d| d.is_error()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_codes_and_github_escapes() {
        assert_eq!(
            rule_code("launch parameters are immutable after launch -- replace the instance (N26)"),
            Some("N26")
        );
        assert_eq!(
            rule_code("belongs to exactly one group (Q4); fix it"),
            Some("Q4")
        );
        assert_eq!(
            rule_code("has NO debug path: no admin public key (N9 dead end)"),
            Some("N9")
        );
        assert_eq!(
            rule_code("cannot move a -> b while attached by [x] (detach in one run; N21)"),
            Some("N21")
        );
        assert_eq!(rule_code("a word in parentheses (Word)"), None);
        assert_eq!(rule_code("no code here"), None);
        assert_eq!(github_data("50% done\nnext"), "50%25 done%0Anext");
        assert_eq!(github_property("a:b,c"), "a%3Ab%2Cc");
    }
}
