//! Meta-state records: what earlier runs left in meta-state/ (lineage,
//! pins, releases, storage state, launch parameters, instance generations,
//! aliases, read-models, state locations), read as queries over the
//! files' texts, and the one writer ([`meta_state::write`]: a whole file,
//! atomically, behind the public-safe gate).
//!
//! May not: decide to write a record; only run/ writes, after what a
//! record says happened. Uses registry/, db/ and load/.

pub mod alias_pool;
pub mod instance_state;
pub mod launch_params;
pub mod lineage;
pub mod meta_state;
pub mod read_models;
pub mod state_locations;
pub mod storage_state;
