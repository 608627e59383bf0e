//! Planning: input fingerprints and bake decisions.

pub mod bakes;
pub mod fingerprint;
pub mod hook_context;
