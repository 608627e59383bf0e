//! csis-engine: the salsa database and every stage of csis.
//!
//! Invariants: the engine reaches files and the environment only through
//! [`system::System`]; inside queries it sees file texts as salsa inputs,
//! never paths on disk. It knows no plugin by name: the [`registry`] is
//! built from the plugins the cli links. Stages return values plus
//! diagnostics; nothing here prints.

pub mod cfg;
pub mod clock;
pub mod db;
pub mod files;
pub mod items;
pub mod overlay;
pub mod registry;
pub mod reserved;
pub mod strings;
pub mod system;
pub mod yaml;
