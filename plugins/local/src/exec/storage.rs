//! A storage step: a storage's directory in the store and its record,
//! created once, removed when the storage is requested destroyed.

use std::fs;

use serde_json::Value as J;

use super::store::{entry, io_err, write_atomic};
use super::{Env, field, store};

/// A storage: its directory, created once and never emptied here; removed
/// with its record when the storage is requested destroyed.
pub(super) fn storage(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let name = field(spec, "name")?;
    let dir = entry(&store, "storages", "storage name", name)?;
    match spec.get("state").and_then(J::as_str).unwrap_or("active") {
        "active" => {}
        "destroyed" => {
            if dir.exists() {
                fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
            }
            let record = store.join("storages").join(format!("{name}.json"));
            if record.exists() {
                fs::remove_file(&record).map_err(io_err(&record))?;
            }
            return Ok(format!("storage {name} destroyed"));
        }
        other => {
            return Err(format!(
                "storage '{name}': the local runtime does not realize the state '{other}'"
            ));
        }
    }
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let text = serde_json::to_string_pretty(spec).map_err(|e| e.to_string())?;
    write_atomic(
        &store.join("storages").join(format!("{name}.json")),
        format!("{text}\n").as_bytes(),
    )?;
    Ok(format!("storage {name} at {}", dir.display()))
}
