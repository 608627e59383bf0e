//! Planning: input fingerprints, the image graph and bake decisions, and
//! the hooks' window on the tree ([`hook_context::EngineContext`]), and
//! the user-data each instance's builder emits ([`user_data`]).
//!
//! May not: validate (a plan is asked only of a tree that validated),
//! write anything, or emit. Uses the layers up to state/.

pub mod bakes;
pub mod fingerprint;
pub mod graph;
pub mod hook_context;
pub mod kept_fingerprints;
pub mod user_data;
