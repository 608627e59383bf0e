//! One Packer template per bake, and the steps that run it.
//!
//! `plans.rs` decides what each bake is (its parent, bake user, machine,
//! disk, lineage tags, variables) from the run; `runtime.rs` finds the
//! runtime the image builder bakes on and the bake-user order there;
//! `provisioners.rs` turns the admin setup, the modifications and the
//! in-bake verification into shell provisioners; `document.rs` assembles
//! the template around the runtime's source block and names the steps
//! that run it.

mod document;
mod plans;
mod provisioners;
mod runtime;

pub use plans::bakes;
pub use runtime::runtime_problem;

use csis_model::Diagnostic;
use csis_plugin_api::{Asset, BakeStep, Command, HookResult};

/// A template and the steps that run it, as one bake of the run's graph.
#[derive(Debug)]
pub struct Bake {
    pub asset: Asset,
    pub commands: Vec<Command>,
    pub step: BakeStep,
}

fn refuse<T>(msg: String) -> HookResult<T> {
    Err(vec![Diagnostic::error(msg)])
}
