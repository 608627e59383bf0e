//! The one door to the file system and the process environment.
//!
//! The engine never calls `std::fs` or `std::env` itself (clippy's
//! `disallowed-methods` keeps it so); it asks a [`System`]. Tests hand it a
//! [`MemorySystem`] and run the whole engine on an in-memory tree.
//!
//! `door.rs` holds the door itself ([`System`]) and the types it speaks
//! in; `os/` is the real machine's side ([`OsSystem`], the one place
//! allowed the `std::fs` and `std::env` calls clippy refuses elsewhere)
//! and `memory.rs` the in-memory tree of tests ([`MemorySystem`]).

mod door;
mod memory;
mod os;
mod recording;

pub use door::{
    HeldLock, LimitedRun, Process, ProcessOutput, RunLimits, SourceRead, Stream, System, TEMP_MARK,
    is_unfinished_write,
};
pub use memory::MemorySystem;
pub use os::OsSystem;
pub use recording::{Ask, Probe, ReadAhead, Recording, digest_parts, digest_text};
