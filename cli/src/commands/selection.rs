//! `--only`, `--only-runtime`, `--force-bake`, `--apply-runtime`: the
//! arguments `run`, `plan` and `watch` share, and the run options they
//! become.

use csis_engine::db::run_input::RunOptions;

/// Which bakes a run or a plan covers.
#[derive(clap::Args)]
pub struct Selection {
    /// Bake only these images (`image` or `image@runtime`; `none` for an
    /// empty bake surface). Repeatable.
    #[arg(long, value_name = "IMAGE", add = crate::complete::image_names())]
    only: Vec<String>,
    /// Bake on this runtime only: the other runtimes' bakes are skipped
    /// (a run keeps their generated builder directories as they are).
    #[arg(long, value_name = "RUNTIME", add = crate::complete::runtime_names())]
    only_runtime: Option<String>,
    /// Bake these images whatever the plan says. Repeatable.
    #[arg(long, value_name = "IMAGE", add = crate::complete::image_names())]
    force_bake: Vec<String>,
    /// A run applies storage and instance roots on this runtime only;
    /// implies --only-runtime unless --only selects images.
    #[arg(long, value_name = "RUNTIME", add = crate::complete::runtime_names())]
    apply_runtime: Option<String>,
}

impl Selection {
    pub fn options(&self, dry_run: bool) -> RunOptions {
        let only = match self.only.as_slice() {
            [] => None,
            [one] if one == "none" => Some(Vec::new()),
            list => Some(list.to_vec()),
        };
        // --apply-runtime implies --only-runtime unless images were
        // selected explicitly.
        let only_runtime = self
            .only_runtime
            .clone()
            .or_else(|| self.apply_runtime.clone().filter(|_| only.is_none()));
        RunOptions {
            dry_run,
            only,
            only_runtime,
            force_bake: self.force_bake.clone(),
            apply_runtime: self.apply_runtime.clone(),
            allow_unscoped_bakes: false,
            migrate_state: Vec::new(),
        }
    }
}
