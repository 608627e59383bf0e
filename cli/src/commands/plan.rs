//! `csis plan`: the bake plan alone, one decision per <series>@<runtime>
//! with its reason, as text or as the JSON plan report.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use csis_engine::db::system::{OsSystem, System};
use csis_engine::workspace::Workspace;

use super::selection::Selection;

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    selection: Selection,
    /// text (a line per decision), json (the plan report on stdout) or
    /// matrix (the bakes in independent groups, one line of JSON a CI
    /// matrix takes: `{"include":[...]}`).
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    format: PlanFormat,
    /// Under each bake, the chain of inputs that caused it: the input
    /// that changed, where it is declared, the lineage path.
    #[arg(long)]
    explain: bool,
    /// Print time, executed and reused queries of validate and plan,
    /// and peak memory (under `stats` with --format json).
    #[arg(long)]
    pub stats: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum PlanFormat {
    Text,
    Json,
    Matrix,
}

pub fn plan(ws: &Workspace, args: &PlanArgs) -> ExitCode {
    ExitCode::from(printed(ws, args, &OsSystem).0)
}

/// The plan, printed; its exit code and what it printed on stderr.
pub fn printed(ws: &Workspace, args: &PlanArgs, system: &dyn System) -> (u8, String) {
    planned(ws, args, system).print()
}

/// The plan as it will be printed: everything it reads of the workspace
/// is read here, so that [`Planned::print`] may run on another thread
/// while the workspace is busy (the cache written back).
pub fn planned(ws: &Workspace, args: &PlanArgs, system: &dyn System) -> Planned {
    let PlanArgs {
        selection,
        format,
        explain,
        stats,
    } = args;
    let ask = csis_engine::run::plan_report::PlanAsk {
        explain: *explain,
        stats: *stats,
    };
    let options = selection.options(true);
    let force_bake = options.force_bake.clone();
    let report = csis_engine::run::plan_report::plan_report(ws, system, options, ask);
    let matrix = match format {
        PlanFormat::Matrix if report.ok => Some(csis_engine::run::plan_matrix::matrix(
            ws,
            &report.plan,
            &force_bake,
        )),
        _ => None,
    };
    Planned {
        format: *format,
        report,
        matrix,
    }
}

/// A plan computed, to print.
pub struct Planned {
    format: PlanFormat,
    report: csis_engine::run::plan_report::PlanReport,
    /// The bakes' groups, for `--format matrix`.
    matrix: Option<csis_engine::run::plan_matrix::Matrix>,
}

impl Planned {
    /// Print the plan; its exit code and what it printed on stderr.
    pub fn print(self) -> (u8, String) {
        let Planned {
            format,
            report,
            matrix,
        } = self;
        let mut err = String::new();
        match format {
            PlanFormat::Json => {
                // Written as it is made: at four times the reference tree
                // the report is 1.7 MB, held twice over at the plan's peak
                // memory.
                let mut out = csis_plugin_api::stdout::Stdout::default();
                let _ = serde_json::to_writer_pretty(&mut out, &report);
                let _ = out.write_all(b"\n");
            }
            PlanFormat::Matrix => {
                report_errors(&report, &mut err);
                if let Some(m) = matrix {
                    csis_plugin_api::outln!("{}", serde_json::to_string(&m).unwrap_or_default());
                }
            }
            PlanFormat::Text => {
                report_errors(&report, &mut err);
                // One write for the whole plan: a line each was thousands
                // of system calls for a large tree.
                let mut text = String::new();
                for p in &report.plan {
                    let _ = writeln!(text, "{}@{}: {}", p.series, p.runtime, p.reason);
                    for line in &p.explain {
                        let _ = writeln!(text, "    {line}");
                    }
                }
                for line in report.summary.iter().flat_map(|s| s.lines()) {
                    let _ = writeln!(text, "{line}");
                }
                csis_plugin_api::out!("{text}");
                for line in report
                    .stats
                    .iter()
                    .flat_map(csis_engine::db::stats::describe)
                {
                    say(&mut err, &line);
                }
            }
        }
        (if report.ok { 0 } else { 1 }, err)
    }
}

fn report_errors(report: &csis_engine::run::plan_report::PlanReport, err: &mut String) {
    for e in &report.validation_errors {
        say(err, &format!("error: validation: {e}"));
    }
    if let Some(e) = &report.error {
        say(err, &format!("error: {e}"));
    }
}

/// A line on stderr, kept in `err` too.
fn say(err: &mut String, line: &str) {
    eprintln!("{line}");
    err.push_str(line);
    err.push('\n');
}
