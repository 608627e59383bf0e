//! The login an instance gives a user whose identity is an email address
//! (`email_as_username: true`), as cloud providers derive one for email
//! identities (Google's OS Login is the well-known precedent): the
//! address's local part, lower-cased, every character outside
//! `[a-z0-9_-]` turned into `_`, at most 32 characters.

/// The longest login: what useradd and cloud-init accept.
pub const MAX_LOGIN: usize = 32;

/// The login of an email identity. A string without `@` is all local part.
pub fn from_email(email: &str) -> String {
    let local = email
        .trim()
        .rsplit_once('@')
        .map_or(email.trim(), |(l, _)| l);
    local
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_LOGIN)
        .collect()
}

/// Why a derived login cannot be an account name, if it cannot: the only
/// ways the rule above can still fail.
pub fn problem(login: &str) -> Option<&'static str> {
    if login.is_empty() {
        Some("is empty")
    } else if login.starts_with('-') {
        Some("starts with '-'")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_part_lowered_with_other_characters_as_underscores() {
        assert_eq!(from_email("avery.alpha@example.com"), "avery_alpha");
        assert_eq!(from_email("Avery.Alpha@Example.com"), "avery_alpha");
        assert_eq!(from_email("o'neil+ops@example.com"), "o_neil_ops");
        assert_eq!(from_email("ci-bot_2@example.com"), "ci-bot_2");
        assert_eq!(from_email("plain"), "plain");
        assert_eq!(from_email("élan@example.com"), "_lan");
    }

    #[test]
    fn at_most_32_characters() {
        let long = format!("{}@example.com", "a".repeat(40));
        assert_eq!(from_email(&long), "a".repeat(32));
    }

    #[test]
    fn empty_and_dash_first_logins_are_refused() {
        assert_eq!(problem(&from_email("@example.com")), Some("is empty"));
        assert_eq!(
            problem(&from_email("-x@example.com")),
            Some("starts with '-'")
        );
        assert_eq!(problem("avery_alpha"), None);
    }
}
