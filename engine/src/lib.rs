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

pub mod alias_pool;
pub mod bake_users;
pub mod builders;
pub mod cfg;
pub mod clock;
pub mod commit;
pub mod db;
pub mod emit;
pub mod executables;
pub mod explain;
pub mod files;
pub mod fingerprint;
pub mod generate;
pub mod global_ids;
pub mod hostname_claims;
pub mod identity_items;
pub mod instance_state;
pub mod item_checks;
pub mod items;
pub mod items_model;
pub mod labels;
pub mod launch_params;
pub mod lifecycles;
pub mod lineage;
pub mod load;
pub mod meta_state;
pub mod operations;
pub mod overlay;
pub mod plan;
pub mod prewarm;
pub mod read_models;
pub mod registry;
pub mod render;
pub mod reserved;
pub mod resolve;
pub mod run;
pub mod script;
pub mod state_locations;
pub mod state_query;
pub mod stats;
pub mod storage_state;
pub mod strings;
pub mod system;
pub mod user_data;
pub mod validate;
pub mod workspace;
pub mod zones;
