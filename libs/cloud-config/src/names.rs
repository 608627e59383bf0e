//! The narrow character sets of names, hostnames and paths: what comes
//! from the seed becomes file names, config fields and arguments.

/// Why a string is not an account or group name, if it is not: the
/// rule every account csis makes is held to.
pub fn name_problem(name: &str) -> Option<&'static str> {
    csis_model::login::account_name_problem(name)
}

pub(crate) fn repo_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Some("has characters outside letters, digits, '.', '_' and '-'");
    }
    if name.starts_with('.') {
        return Some("begins with a dot");
    }
    None
}

/// Why a hostname is not valid, if it is not: at most 64 bytes of
/// dot-separated labels of letters, digits and '-', none empty, none
/// starting or ending with '-'.
pub fn hostname_problem(h: &str) -> Option<&'static str> {
    if h.is_empty() {
        return Some("is empty");
    }
    if h.len() > 64 {
        return Some("is over 64 bytes");
    }
    for label in h.split('.') {
        if label.is_empty() {
            return Some("has an empty label");
        }
        if !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Some("has characters other than letters, digits, '-' and '.'");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Some("has a label starting or ending with '-'");
        }
    }
    None
}

/// Why a write_files path is refused, if it is.
pub fn path_problem(p: &str) -> Option<&'static str> {
    if !p.starts_with('/') {
        return Some("the path must be absolute");
    }
    if p.split('/').any(|c| c == "..") {
        return Some("the path has a '..' component");
    }
    if p.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("the path holds whitespace or a control character");
    }
    if p.chars().any(|c| matches!(c, '%' | '\\' | '"' | '\'')) {
        return Some("the path holds %, \\, \" or ' (tmpfiles would expand or decode it)");
    }
    None
}
