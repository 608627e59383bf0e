//! Loading: the tree's files become structured items. cfg/ merge, overlays,
//! the string stage, the item index, builders, template resolution and
//! structuring, each a query per file or per item over the database's
//! inputs, so an edit re-structures only what it reached.
//!
//! May not: read meta-state, decide a bake, or judge a rule that spans
//! items (check/ does). Uses registry/ and db/ only.

pub(crate) mod builder_labels;
pub mod builders;
pub mod cfg;
pub mod entries;
pub mod index;
pub mod interp;
pub mod items;
pub mod items_model;
pub(crate) mod kept_env;
pub mod kept_instances;
pub mod kept_quiet;
pub mod kept_scripts;
pub mod kept_users;
pub mod kept_world;
pub mod overlay;
pub mod render;
pub mod reserved;
pub mod resolve;
pub mod strings;
pub mod templates;
pub mod user_identity;
pub(crate) mod world;
