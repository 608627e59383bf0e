//! Reading scalars as instance-setup does.

use csis_model::Value;

use crate::MAX_CARRIED;

pub(crate) fn scalar_text(v: &Value) -> String {
    match v {
        Value::Scalar { text, .. } => text.clone(),
        Value::Null => String::new(),
        other => format!("<{}>", other.kind_name()),
    }
}

pub(crate) fn shown_scalar(v: &Value) -> String {
    match v {
        Value::Scalar { text, plain: true } => text.clone(),
        Value::Scalar { text, plain: false } => format!("{text:?}"),
        other => format!("a {}", other.kind_name()),
    }
}

/// Booleans as cloud-init reads them.
pub(crate) fn bool_of(v: &Value) -> Option<bool> {
    match scalar_text(v).to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Why a carried text (a file's content, a trust anchor) cannot be
/// written: a NUL byte, or more than the launch script can carry.
pub(crate) fn carried_problem(text: &str, subject: &str, carrier: &str) -> Option<String> {
    if text.contains('\0') {
        Some(format!("{subject} holds a NUL byte"))
    } else if text.len() > MAX_CARRIED {
        Some(format!(
            "{subject} is {} bytes, over the {MAX_CARRIED} {carrier} can carry",
            text.len()
        ))
    } else {
        None
    }
}
