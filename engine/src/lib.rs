//! csis-engine: the salsa database and every stage of csis.
//!
//! Invariants: the engine reaches files and the environment only through
//! [`system::System`]; inside queries it sees file texts as salsa inputs,
//! never paths on disk. It knows no plugin by name: the [`registry`] is
//! built from the plugins the cli links. Stages return values plus
//! diagnostics; nothing here prints.
//!
//! The stages, each a tracked query: [`files::parse_file`] →
//! [`files::file_document`] (positions dropped, so comment edits backdate)
//! → [`cfg::cfg_document`] and [`items::item_file_entries`] →
//! [`strings::rendered_cfg`] (the string stage) → [`builders::builders`] and
//! [`items::item_index`] → [`items_model::structured_item`] (template
//! resolution and structuring, per item) → [`load::load_diagnostics`].

pub mod check;
pub mod db;
pub mod load;
pub mod plan;
pub mod registry;
pub mod run;
pub mod state;
pub mod workspace;
