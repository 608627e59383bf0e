//! csis-model: the configuration models as pure data.
//!
//! Invariants: no IO, no salsa, no knowledge of any plugin by name. Values
//! carry no positions ([`value::Value`]); diagnostics name a file and a
//! document path ([`diag::Origin`]) and get their line and column at the
//! edge. Every model is read through [`fields::Fields`], which refuses
//! unknown keys.

pub mod apply_flags;
pub mod cause;
pub mod confine;
pub mod diag;
pub mod fields;
pub mod kinds;
pub mod login;
pub mod models;
pub mod naming;
pub mod packed;
pub mod path;
pub mod suggest;
pub mod value;
mod value_de;
pub mod vct;

pub use cause::Subject;
pub use diag::{Anchor, Diagnostic, Diagnostics, Origin, Severity, escape_controls};
pub use fields::Fields;
pub use kinds::ItemKind;
pub use packed::PackedValue;
pub use path::{DocPath, Seg};
pub use value::{Map, SparseMap, Value};
pub use vct::Vct;
