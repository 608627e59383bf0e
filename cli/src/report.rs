//! Diagnostics rendered for a person: the message, then `file:line:col`
//! with the offending snippet (miette), then what to write instead.

use std::io::IsTerminal;

use clap::ValueEnum;
use csis_engine::workspace::Workspace;
use csis_model::{Diagnostic, Severity};
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
    let mut md = MietteDiagnostic::new(d.message.clone()).with_severity(severity);
    if let Some(h) = &d.help {
        md = md.with_help(h.clone());
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
            let label = format!("{}:{}:{}", loc.file, loc.span.line, loc.span.col);
            md = md.with_label(LabeledSpan::new(
                Some(label),
                loc.span.offset,
                loc.span
                    .len
                    .max(1)
                    .min(loc.text.len().saturating_sub(loc.span.offset).max(1)),
            ));
            let report = miette::Report::new(md)
                .with_source_code(NamedSource::new(loc.file.clone(), loc.text.to_string()));
            handler.render_report(&mut out, report.as_ref())
        }
        None => handler.render_report(&mut out, &md),
    };
    if result.is_err() {
        return format!("error: {}\n", d.message);
    }
    out
}
