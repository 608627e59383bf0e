//! Diagnostics rendered for a person: the message, then `file:line:col`
//! with the offending snippet (miette), then what to write instead.

use std::io::IsTerminal;

use csis_engine::workspace::Workspace;
use csis_model::{Diagnostic, Severity};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource};

pub fn render(ws: &Workspace, d: &Diagnostic) -> String {
    let severity = match d.severity {
        Severity::Error => miette::Severity::Error,
        Severity::Warning => miette::Severity::Warning,
    };
    let mut md = MietteDiagnostic::new(d.message.clone()).with_severity(severity);
    if let Some(h) = &d.help {
        md = md.with_help(h.clone());
    }
    let theme = if std::io::stderr().is_terminal() {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
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
