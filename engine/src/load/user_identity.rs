//! A user's identity and its login, by its builder's `email_as_username`
//! (spec: true by default, "a user's name must equal its email,
//! case-insensitively; a blank name is set from the email"). With it, the
//! name is an email and the account an instance gives the user is the
//! login derived from it ([`csis_model::login`]); without it, the name is
//! the login.

use csis_model::models::{BaseBuilder, Secret, User, emit_with};
use csis_model::{Diagnostic, ItemKind, Origin, Subject, Value, Vct};

use crate::load::builders::Builders;

/// The user builder a user entry names, with its `email_as_username`.
pub(crate) struct UserRule<'b> {
    pub builder: &'b str,
    pub email_as_username: bool,
}

impl<'b> UserRule<'b> {
    pub(crate) fn of(b: &'b Builders, value: &Value) -> Option<Self> {
        let t = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("default");
        let decl = b.resolve(Vct::UserBuilderModel, t)?;
        let BaseBuilder::User(ub) = &decl.base else {
            return None;
        };
        Some(UserRule {
            builder: decl.name(),
            email_as_username: ub.email_as_username,
        })
    }

    /// A blank name is set from the (resolved) email; under a builder
    /// without `email_as_username`, it is refused.
    pub(crate) fn fill_blank_name(&self, value: &mut Value, origin: &Origin) -> Option<Diagnostic> {
        let Value::Map(m) = value else { return None };
        if m.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.trim().is_empty())
        {
            return None;
        }
        let email = m
            .get("email")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default();
        // Without an email, the blank name is refused as a reserved word.
        if email.is_empty() {
            return None;
        }
        let email = email.to_string();
        let refusal = (!self.email_as_username).then(|| {
            Diagnostic::error(format!(
                "User at {} has a blank name; user builder '{}' sets email_as_username: false, so the name is not taken from the email",
                origin.path, self.builder
            ))
            .at(origin.key("name"))
            .help("write the user's login as `name:`")
            .refusing(Subject::item(ItemKind::USERS, &email))
        });
        // Refused or not, the user reads on under the name its index
        // entry has, so the refusal is its only error.
        m.insert("name".into(), Value::str(email));
        refusal
    }

    /// The user's login; under `email_as_username`, the refusal of a name
    /// that is not its email.
    pub(crate) fn set_login(
        &self,
        user: &mut User,
        origin: &Origin,
        secrets: &[Secret],
    ) -> Option<Diagnostic> {
        if !self.email_as_username {
            return None;
        }
        let name = user.root.named.display_name.trim().to_string();
        let email = user
            .email
            .as_deref()
            .map(str::trim)
            .unwrap_or(&name)
            .to_string();
        user.login = csis_model::login::from_email(&email).into();
        if name.to_lowercase() == email.to_lowercase() {
            return None;
        }
        let shown = emit_with(secrets, &email);
        let builder = self.builder;
        Some(
            Diagnostic::error(format!(
                "User '{name}': its name must equal its email '{shown}' (case-insensitively), because user builder '{builder}' sets email_as_username: true"
            ))
            .at(origin.key("name"))
            .help(format!(
                "write `name: {shown}`, or set `email_as_username: false` on user builder '{builder}' to keep names that are logins"
            )),
        )
    }
}
