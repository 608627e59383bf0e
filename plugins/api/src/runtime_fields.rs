//! Fields the cloud runtime plugins (aws, gce) read alike.

use csis_model::{Fields, Map, Value};

/// Each of `keys` that is declared, as text.
pub fn read_strings(f: &mut Fields<'_>, m: &mut Map, keys: &[&'static str]) {
    for key in keys {
        if let Some(v) = f.opt_str(key) {
            m.insert((*key).into(), Value::str(v));
        }
    }
}

/// `key` when declared, as a boolean (`true` / `false`).
pub fn read_bool(f: &mut Fields<'_>, m: &mut Map, key: &'static str) {
    if let Some(b) = f.opt_bool(key) {
        m.insert(
            key.into(),
            Value::Scalar {
                text: b.to_string(),
                plain: true,
            },
        );
    }
}

/// `key` when declared and not empty, as a list of text; what was read.
pub fn read_string_list(f: &mut Fields<'_>, m: &mut Map, key: &'static str) -> Vec<String> {
    let items = f.str_list(key);
    if !items.is_empty() {
        m.insert(
            key.into(),
            Value::Seq(items.iter().cloned().map(Value::str).collect()),
        );
    }
    items
}

/// `default_disk_size` when declared: the bake disk (GiB) of every image
/// on the runtime, at least `min`; `cloud` ends the refusal (` on GCE`).
pub fn read_disk_size(f: &mut Fields<'_>, m: &mut Map, min: i64, cloud: &str) {
    let Some(size) = f.opt_int("default_disk_size") else {
        return;
    };
    if size < min {
        f.error_at(
            "default_disk_size",
            format!("default_disk_size is a size in GiB, at least {min}{cloud} (not {size})"),
        );
    }
    m.insert(
        "default_disk_size".into(),
        Value::Scalar {
            text: size.to_string(),
            plain: true,
        },
    );
}
