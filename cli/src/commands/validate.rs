//! `csis validate`: the load's diagnostics and the checks that read the
//! machine or the records, printed for a person or a machine.

use std::process::ExitCode;

use clap::Args;
use csis_engine::db::system::OsSystem;
use csis_engine::workspace::Workspace;

use crate::report::{self, print_diagnostic};

#[derive(Args)]
pub struct ValidateArgs {
    /// human (snippets on stderr), json (one object per diagnostic on
    /// stdout) or github (GitHub Actions annotations on stdout).
    #[arg(long, value_enum, default_value_t = report::DiagnosticFormat::Human)]
    format: report::DiagnosticFormat,
    /// Ask no provider: the vendor images OS builders pin by image_id are
    /// not looked up.
    #[arg(long)]
    offline: bool,
}

/// `csis validate`: the load's diagnostics, then the checks that read the
/// machine or the records (executables, state locations, the last state
/// report), all printed; exit 1 on any error.
pub fn validate(ws: &Workspace, style: report::Style, args: &ValidateArgs) -> ExitCode {
    let format = args.format;
    // The load's diagnostics come before the infos the checks below log.
    let load = ws.load_diagnostics();
    let prefix = ws.tree.root_display(&ws.db).to_string();
    let show = |d: &csis_model::Diagnostic| match format {
        report::DiagnosticFormat::Human => print_diagnostic(ws, d, style),
        machine => csis_plugin_api::outln!("{}", report::machine_line(ws, d, machine, &prefix)),
    };
    load.iter().for_each(show);
    let (mut infos, executables) =
        csis_engine::check::executables::check(&ws.db, ws.tree, &ws.root, &OsSystem);
    infos.extend(csis_engine::state::alias_pool::remaining_info(
        &ws.db, ws.tree,
    ));
    let (notes, vendor_images) = if args.offline {
        (Vec::new(), Vec::new())
    } else {
        csis_engine::check::vendor_images::check(&ws.db, ws.tree)
    };
    infos.extend(notes.into_iter().map(|n| format!("note: {n}")));
    for i in infos {
        eprintln!("{i}");
    }
    // A source_image cycle, as the run refuses it at its head.
    let mut diags = csis_engine::plan::bakes::image_graph(&ws.db, ws.tree)
        .diags
        .clone();
    diags.extend(executables);
    diags.extend(vendor_images);
    diags.extend(csis_engine::check::owned_directories::check(
        &ws.db, ws.tree, &ws.root, &OsSystem,
    ));
    diags.extend(csis_engine::check::state_locations::check(
        &ws.db,
        ws.tree,
        &[],
    ));
    let drift = csis_engine::run::state_query::check_last_report(
        &OsSystem,
        &ws.root.join(ws.generation_dir_name()),
    );
    diags.extend(drift.into_iter().map(csis_model::Diagnostic::error));
    diags.iter().for_each(show);
    let errors = load.iter().filter(|d| d.is_error()).count() + diags.len();
    if errors > 0 {
        eprintln!("validate: {errors} error(s)");
        ExitCode::from(1)
    } else {
        eprintln!("validate: ok");
        ExitCode::SUCCESS
    }
}
