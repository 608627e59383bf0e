//! End-to-end tests of the `csis` binary over fixture trees.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

mod bounds;
mod cases;
mod cloud_config;
mod clouds;
mod commit;
mod concurrency;
mod crash;
mod diagnostics;
mod example;
mod explain;
mod gate;
mod generation_gate;
mod hostnames;
mod identity;
mod launch;
mod layering;
mod lineage;
mod live;
mod operations;
mod packer;
mod public_safe;
mod run;
mod secrets;
mod shell;
mod state;
mod state_locations;
mod storage;
mod store_root;
mod support;
mod templates_bounded;
mod tofu_bind;
mod tofu_run;
mod users;
mod watch;
