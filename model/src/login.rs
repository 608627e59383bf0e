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

/// What an account name must be, as useradd, sudo drop-ins and
/// cloud-init accept it (one rule for users' logins, group names and an
/// image's `admin_user`).
pub const ACCOUNT_NAME_RULE: &str =
    "an account name is at most 32 characters of [A-Za-z0-9._-], not beginning with '.' or '-'";

/// Why a string is not an account or group name, if it is not
/// ([`ACCOUNT_NAME_RULE`]).
pub fn account_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name.chars().count() > MAX_LOGIN {
        return Some("is over 32 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Some("has characters outside [A-Za-z0-9._-]");
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Some("begins with a dot or a dash");
    }
    None
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

    #[test]
    fn an_account_name_is_32_characters_of_a_narrow_set() {
        assert_eq!(account_name_problem("csisadmin"), None);
        assert_eq!(account_name_problem("ops.admin_2-x"), None);
        assert_eq!(account_name_problem(""), Some("is empty"));
        assert_eq!(
            account_name_problem("my admin"),
            Some("has characters outside [A-Za-z0-9._-]")
        );
        assert_eq!(
            account_name_problem("-x"),
            Some("begins with a dot or a dash")
        );
        assert_eq!(
            account_name_problem(&"a".repeat(33)),
            Some("is over 32 characters")
        );
    }
}
