//! Checks: every validation rule, each a function over the database.

pub mod bake_users;
pub mod executables;
pub mod global_ids;
pub mod hostname_claims;
pub mod identity_items;
pub mod item_checks;
pub mod labels;
pub mod report;
pub mod user_data;
pub mod validate;
pub mod zones;
