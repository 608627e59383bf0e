//! Loading: the tree's files become structured items. cfg/ merge, overlays,
//! the string stage, the item index, builders, template resolution and
//! structuring, each a query over the database's inputs.

pub mod builders;
pub mod cfg;
pub mod items;
pub mod items_model;
pub mod overlay;
pub mod render;
pub mod reserved;
pub mod resolve;
pub mod strings;
