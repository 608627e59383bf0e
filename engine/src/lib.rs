//! csis-engine: the salsa database and every stage of csis, in layer
//! folders lowest first: [`registry`] ← [`db`] ← [`load`] ← [`state`] ←
//! [`plan`] ← [`check`] ← [`workspace`] ← [`run`] ← [`terraform`]. A folder uses only the
//! ones before it (tests/e2e/layering.rs); docs/architecture.md says what
//! each owns and may not do.
//!
//! Invariants: the engine reaches files and the environment only through
//! [`db::system::System`]; inside queries it sees file texts as salsa
//! inputs, never paths on disk. It knows no plugin by name: the
//! [`registry`] is built from the plugins the cli links. Stages return
//! values plus diagnostics; nothing here prints.
//!
//! The stages, each a tracked query: [`db::files::parse_file`] →
//! [`db::files::file_document`] (positions dropped, so comment edits
//! backdate) → [`load::cfg::cfg_document`] and
//! [`load::items::item_file_entries`] → [`load::strings::rendered_cfg`]
//! (the string stage) → [`load::builders::builders`] and
//! [`load::items::item_index`] → [`load::items_model::structured_item`]
//! (template resolution and structuring, per item) →
//! [`check::report::load_diagnostics`] → [`plan::bakes::bake_plan`] →
//! [`run::generate`].

pub mod check;
pub mod db;
pub mod load;
pub mod plan;
pub mod registry;
pub mod run;
pub mod state;
pub mod terraform;
pub mod workspace;
