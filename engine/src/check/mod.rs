//! Checks: every validation rule, each a function over the database.
//! `report` gathers a load's refusals and `validate` lists the
//! validate-time families in the order they run; `item_checks` runs the
//! per-item rules, one query per item file, for both (`own_checks` is an
//! item's own rules); every other module is one family of rules, or
//! (`context`, `formats`) what the families share. A rule never calls
//! `item_checks`: the registry depends on the rules, not the reverse.

mod aliases;
pub mod bake_users;
mod base_images;
mod builder_lists;
pub(crate) mod capabilities;
pub mod cloud_names;
mod context;
pub mod executables;
mod foreign_keys;
pub mod formats;
pub mod global_ids;
pub mod groups;
pub mod hostname_claims;
mod hostnames;
pub mod identity_items;
pub mod item_checks;
pub mod kept_capabilities;
pub mod labels;
mod launch_params;
pub mod logins;
mod own_checks;
pub mod owned_directories;
mod policies;
pub mod released_pins;
pub mod report;
pub mod state_locations;
mod storages;
pub mod templates;
mod test_specs;
pub mod unfilled;
pub mod user_data;
pub mod validate;
pub mod vendor_images;
pub mod zones;
