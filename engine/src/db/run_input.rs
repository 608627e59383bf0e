//! What a run was asked for, as a salsa input: queries keyed by the run
//! (the bake plan, generation) read it, nothing below the run layer sets it.

/// What a run was asked for, besides the lifecycles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RunOptions {
    pub dry_run: bool,
    /// `--only`: image names or `<image>@<runtime>`; `Some(empty)` is
    /// `--only none`, an explicitly empty bake surface.
    pub only: Option<Vec<String>>,
    /// `--only-runtime`: the runtime scope.
    pub only_runtime: Option<String>,
    /// `--force-bake`: images baked whatever the plan says.
    pub force_bake: Vec<String>,
    /// `--apply-runtime`: apply storage and instance roots on this runtime
    /// only (the run's apply scope).
    pub apply_runtime: Option<String>,
    /// `--allow-unscoped-bakes`: a real run may bake outside its apply scope.
    pub allow_unscoped_bakes: bool,
    /// `--migrate-state`: workspaces whose state location may move this
    /// (real) run while resources stand in them.
    pub migrate_state: Vec<String>,
}

impl RunOptions {
    /// Whether `--only` selects `<image>@<runtime>`.
    pub fn selects(&self, image: &str, runtime: &str) -> bool {
        match &self.only {
            None => true,
            Some(list) => list.iter().any(|s| match s.split_once('@') {
                Some((i, r)) => i == image && r == runtime,
                None => s == image,
            }),
        }
    }

    pub fn in_runtime_scope(&self, runtime: &str) -> bool {
        self.only_runtime.as_deref().is_none_or(|r| r == runtime)
    }
}

#[salsa::input(debug)]
pub struct RunInput {
    #[returns(ref)]
    pub options: RunOptions,
}
