//! The run's head: the requested lifecycles, the selection and the
//! refusals that need nothing else (before the state query), then the
//! validation that decides whether the run may go on (after it).

use csis_plugin_api::LifecycleSpec;

use crate::db::Db;
use crate::db::run_input::RunInput;
use crate::db::system::System;
use crate::load::items::item_index;
use crate::plan::bakes::image_graph;
use crate::plan::hook_context::EngineContext;
use crate::registry::lifecycles::parse_lifecycles;
use crate::run::steps::Runner;
use crate::run::{Level, RunSummary};
use crate::workspace::Workspace;

impl Runner<'_> {
    /// The run's head: a root with no configuration, the overlays and
    /// undeclared items the summary lists, the requested lifecycles, the
    /// selection, and `--migrate-state` refused in a dry run. Every
    /// lifecycle, and the requested ones. A refusal here means the run
    /// never started: it leaves nothing behind.
    pub(super) fn head(
        &mut self,
        summary: &mut RunSummary,
    ) -> Result<(Vec<LifecycleSpec>, Vec<LifecycleSpec>), String> {
        let db = &self.ws.db;
        let tree = self.ws.tree;
        if let Some(missing) = crate::load::cfg::missing_cfg(db, tree) {
            let help = missing.help.as_deref().unwrap_or_default();
            return Err(format!("{}: {help}", missing.message));
        }
        summary.overlays = tree
            .overlays(db)
            .iter()
            .map(|f| f.path(db).to_string())
            .collect();
        let index = item_index(db, tree);
        summary.undeclared = index
            .undeclared
            .iter()
            .map(|(k, n)| format!("{}:{n}", k.singular()))
            .collect();
        let lifecycles: Vec<LifecycleSpec> = db.registry().lifecycles().to_vec();
        let requested: Vec<LifecycleSpec> = parse_lifecycles(&lifecycles, &self.req.lifecycles)?
            .into_iter()
            .cloned()
            .collect();
        summary.requested = requested.iter().map(|l| l.name.to_string()).collect();
        crate::plan::bakes::check_selection(&self.ws.db, self.ws.tree, &self.req.options)?;
        if self.req.options.dry_run && !self.req.options.migrate_state.is_empty() {
            return Err(
                "--migrate-state moves state and needs --no-dry-run: a dry run never moves state."
                    .into(),
            );
        }
        Ok((lifecycles, requested))
    }

    /// What the load refuses, image cycles, run-hook validators, and the
    /// registries' claims when this run launches. Whether the run may go on.
    pub(super) fn validate(&mut self, summary: &mut RunSummary, launches: bool) -> bool {
        let (mut infos, warnings, mut errors) = validation(self.ws, self.system, self.run_input);
        if !self.req.no_state_query {
            let (notes, refused) = crate::check::vendor_images::check(&self.ws.db, self.ws.tree);
            infos.extend(notes);
            errors.extend(refused.iter().map(|d| self.ws.describe(d)));
        }
        if launches {
            errors.extend(crate::check::hostname_claims::check(
                &self.ws.db,
                self.ws.tree,
                &self.ws.root,
                &self.req.options,
            ));
        }
        for i in infos {
            self.log.line(Level::Info, i);
        }
        for w in warnings {
            self.log.line(Level::Warn, w);
        }
        if errors.is_empty() {
            return true;
        }
        for e in &errors {
            self.log.line(Level::Error, format!("validation: {e}"));
        }
        summary.ok = false;
        summary.error = Some(format!("validation failed with {} error(s)", errors.len()));
        summary.validation_errors = errors;
        false
    }
}

/// The validation at the head of every run: (infos, warnings, errors),
/// each a `file:line:col: message` line where it has a place. What the load
/// refuses, the validate checks, image chain cycles, the executables, and
/// every run hook's validators.
pub fn validation(
    ws: &Workspace,
    system: &dyn System,
    run: RunInput,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let diags = ws.load_diagnostics();
    let warnings = diags
        .iter()
        .filter(|d| !d.is_error())
        .map(|d| ws.describe(d).replacen("warning: ", "", 1))
        .collect();
    // As `validate --brief` has them: what to write instead on a line of
    // its own.
    let mut errors: Vec<String> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let mut line = match d.consequences_note() {
                Some(note) => format!("{} ({note})", ws.describe(d)),
                None => ws.describe(d),
            };
            if let Some(help) = &d.help {
                line.push_str(&format!("\n  help: {}", csis_model::escape_controls(help)));
            }
            line
        })
        .collect();
    errors.extend(
        image_graph(&ws.db, ws.tree)
            .diags
            .iter()
            .map(|d| d.message.clone()),
    );
    let ctx = EngineContext {
        db: &ws.db,
        tree: ws.tree,
        run: Some(run),
        lifecycle: String::new(),
        about: None,
    };
    for hooks in ws.db.registry().run_hooks() {
        errors.extend(hooks.validators(&ctx));
    }
    let (mut infos, exe_errors) =
        crate::check::executables::check(&ws.db, ws.tree, &ws.root, system);
    infos.extend(crate::state::alias_pool::remaining_info(&ws.db, ws.tree));
    errors.extend(exe_errors.iter().map(|d| ws.describe(d)));
    errors.extend(
        crate::check::owned_directories::check(&ws.db, ws.tree, &ws.root, system)
            .iter()
            .map(|d| ws.describe(d)),
    );
    errors.extend(
        crate::check::state_locations::check(&ws.db, ws.tree, &run.options(&ws.db).migrate_state)
            .iter()
            .map(|d| ws.describe(d)),
    );
    errors.extend(crate::run::state_query::check_last_report(
        system,
        &ws.root.join(ws.generation_dir_name()),
    ));
    (infos, warnings, errors)
}
