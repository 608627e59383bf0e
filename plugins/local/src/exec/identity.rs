//! An identity step: the users or groups of one kind, recorded in the
//! store.

use serde_json::Value as J;

use super::store::write_atomic;
use super::{Env, field, store};

/// Users or groups, recorded in the store.
pub(super) fn identity(env: &Env, spec: &J) -> Result<String, String> {
    let store = store(env, spec)?;
    let kind = field(spec, "kind")?;
    let text = serde_json::to_string_pretty(spec.get("entries").unwrap_or(&J::Null))
        .map_err(|e| e.to_string())?;
    write_atomic(
        &store.join("identity").join(format!("{kind}.json")),
        format!("{text}\n").as_bytes(),
    )?;
    Ok(format!("identity: {kind} recorded"))
}
