//! Users (groups/, key `users`): the required name parts and the profile
//! fields, kept in one box that most users leave absent.

use crate::Map;

use serde::Serialize;

use super::refuse;
use crate::fields::Fields;
use crate::models::common::RootItem;
use crate::value::Value;

/// A user (groups/, key `users`). Its login, name parts and email are
/// compact strings, held in the struct when short (as [`NameTyped`]'s
/// are): users are most of a large tree's items.
///
/// [`NameTyped`]: crate::models::common::NameTyped
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct User {
    #[serde(flatten)]
    pub root: RootItem,
    /// The account an instance gives the user: the name as declared, or,
    /// when its builder sets `email_as_username`, the login derived from
    /// its email ([`crate::login::from_email`]); set by the engine, which
    /// knows the builder.
    pub login: compact_str::CompactString,
    pub first_name: compact_str::CompactString,
    pub last_name: compact_str::CompactString,
    pub middle_name: Option<String>,
    /// Templated later from the builder's email template.
    pub email: Option<compact_str::CompactString>,
    pub is_service_account: bool,
    pub is_enabled: bool,
    /// None means the builder's default.
    pub managed: Option<bool>,
    /// Boxed: most users and groups have none, and inline the map is 64
    /// bytes of every one (issue 40).
    pub attributes: Option<Box<Map>>,
    pub public_keys: Vec<String>,
    /// The profile fields, `mobile_phone:` to `manager:`.
    #[serde(flatten)]
    pub profile: Profile,
}

/// A user's profile fields (`mobile_phone:` to `manager:`): one box, absent
/// when none is set. Most users set none, and as 26 fields inline they
/// were three quarters of a user's size (a tree holds tens of thousands of
/// users). Serialized as every field, in [`PROFILE`] order, null when
/// unset, whether or not the box is there.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Profile(Option<Box<[Option<String>; PROFILE.len()]>>);

/// Each profile field: its key in the configuration and its name in the
/// resolved view (`display_name:` is `profile_display_name`, as
/// NameTyped's `display_name` is the name's original spelling).
pub const PROFILE: [(&str, &str); 26] = [
    ("mobile_phone", "mobile_phone"),
    ("honorific_prefix", "honorific_prefix"),
    ("honorific_suffix", "honorific_suffix"),
    ("title", "title"),
    ("display_name", "profile_display_name"),
    ("nick_name", "nick_name"),
    ("profile_url", "profile_url"),
    ("second_email", "second_email"),
    ("primary_phone", "primary_phone"),
    ("street_address", "street_address"),
    ("city", "city"),
    ("state", "state"),
    ("zip_code", "zip_code"),
    ("country_code", "country_code"),
    ("postal_address", "postal_address"),
    ("preferred_language", "preferred_language"),
    ("locale", "locale"),
    ("timezone", "timezone"),
    ("user_type", "user_type"),
    ("employee_number", "employee_number"),
    ("cost_center", "cost_center"),
    ("organization", "organization"),
    ("division", "division"),
    ("department", "department"),
    ("manager_id", "manager_id"),
    ("manager", "manager"),
];

impl Profile {
    fn read(f: &mut Fields<'_>) -> Profile {
        let keys = PROFILE.map(|(key, _)| key);
        // Most users set none: one pass over the user's own keys rather
        // than 26 lookups that miss.
        if !f.any_present(&keys) {
            return Profile(None);
        }
        let values = keys.map(|key| f.opt_str(key));
        Profile(values.iter().any(Option::is_some).then(|| Box::new(values)))
    }
}

impl Serialize for Profile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(PROFILE.len()))?;
        for (at, (_, name)) in PROFILE.iter().enumerate() {
            let value = self.0.as_ref().and_then(|v| v[at].as_deref());
            map.serialize_entry(name, &value)?;
        }
        map.end()
    }
}

impl User {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        if f.raw("aliases")
            .is_some_and(|v| !v.as_seq().is_some_and(<[Value]>::is_empty))
        {
            f.error_at("aliases", "Aliases are not allowed for User items.");
        }
        let first_name = required_name_part(f, &name, "first_name");
        let last_name = required_name_part(f, &name, "last_name");
        User {
            login: root.named.display_name.trim().into(),
            first_name: first_name.into(),
            last_name: last_name.into(),
            middle_name: f.opt_str("middle_name").inspect(|m| {
                if let Some(problem) = crate::naming::gecos_problem("middle_name", m) {
                    f.error_at("middle_name", format!("User {name}: {problem}"));
                }
            }),
            email: f.opt_str("email").map(Into::into),
            is_service_account: f.bool_or("is_service_account", false),
            is_enabled: f.bool_or("is_enabled", true),
            managed: f.opt_bool("managed"),
            attributes: f.opt_any_map("attributes").map(Box::new),
            public_keys: f.str_list("public_keys"),
            profile: Profile::read(f),
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// first_name / last_name: required, non-blank, never derived.
fn required_name_part(f: &mut Fields<'_>, user: &str, key: &'static str) -> String {
    let v = f.opt_str(key);
    match v {
        Some(s) if !s.trim().is_empty() => {
            // The name parts become the account's gecos.
            if let Some(problem) = crate::naming::gecos_problem(key, &s) {
                f.error_at(key, format!("User {user}: {problem}"));
            }
            s
        }
        other => {
            let got = match other.as_deref() {
                None => String::new(),
                Some(s) => format!(" (it is '{s}')"),
            };
            let msg = format!(
                "User {user} requires a non-blank {key}{got}; names are never derived from the user name."
            );
            refuse(f, key, msg);
            other.unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;

    #[test]
    fn a_user_without_profile_fields_has_no_profile_box_and_serializes_them_null() {
        let m = map(&[
            ("name", plain("carol")),
            ("first_name", plain("Carol")),
            ("last_name", plain("Jones")),
        ]);
        let (u, diags) = read(&m, User::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert!(u.profile.0.is_none());
        let json = serde_json::to_value(&u).unwrap_or_default();
        let keys: Vec<&str> = json
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys.last(), Some(&"manager"));
        assert!(keys.contains(&"mobile_phone"));
        assert_eq!(json["city"], serde_json::Value::Null);
        assert_eq!(json["profile_display_name"], serde_json::Value::Null);

        // One profile key alone is read; a misspelt one is refused with
        // the profile keys among those it could have meant.
        for (key, name) in PROFILE {
            let m = map(&[
                ("name", plain("carol")),
                ("first_name", plain("Carol")),
                ("last_name", plain("Jones")),
                (key, plain("x")),
            ]);
            let (u, diags) = read(&m, User::read);
            assert!(diags.is_empty(), "{key}: {diags:?}");
            let json = serde_json::to_value(&u).unwrap_or_default();
            assert_eq!(json[name], "x", "{key}");
        }
        let m = map(&[
            ("name", plain("carol")),
            ("first_name", plain("Carol")),
            ("last_name", plain("Jones")),
            ("citty", plain("Oslo")),
        ]);
        let (_, diags) = read(&m, User::read);
        assert_eq!(
            errors(&diags),
            [(
                "Owner 'x': unknown key 'citty'".to_string(),
                "things[0].citty".to_string()
            )]
        );
        let help = diags[0].help.as_deref().unwrap_or_default();
        assert!(help.ends_with("did you mean 'city'?"), "{help}");
        assert!(help.contains("manager_id"), "{help}");
    }

    #[test]
    fn user_reads_and_refuses() {
        let m = map(&[
            ("name", plain("alice@example.invalid")),
            ("first_name", plain("Alice")),
            ("last_name", plain("Smith")),
            ("display_name", plain("Alice S.")),
            ("city", plain("Oslo")),
        ]);
        let (u, diags) = read(&m, User::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert!(u.is_enabled);
        assert_eq!(u.managed, None);
        assert!(u.profile.0.is_some());
        assert_eq!(u.email, None);
        let json = serde_json::to_value(&u).unwrap_or_default();
        assert_eq!(json["name"], "alice@example.invalid");
        assert_eq!(json["type"], "default");
        assert_eq!(json["display_name"], "alice@example.invalid");
        assert_eq!(json["profile_display_name"], "Alice S.");
        assert_eq!(json["city"], "Oslo");
        assert_eq!(json["is_enabled"], true);

        let m = map(&[
            ("name", plain("bob")),
            ("last_name", quoted(" ")),
            ("aliases", strs(&["robert"])),
        ]);
        let (_, diags) = read(&m, User::read);
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "Aliases are not allowed for User items.",
                    "things[0].aliases"
                ),
                e(
                    "User bob requires a non-blank first_name; names are never derived from the user name.",
                    "things[0]"
                ),
                e(
                    "User bob requires a non-blank last_name (it is ' '); names are never derived from the user name.",
                    "things[0].last_name"
                ),
            ]
        );
    }

    #[test]
    fn a_name_part_that_cannot_be_a_gecos_is_refused_at_its_value() {
        let m = map(&[
            ("name", plain("bob")),
            ("first_name", plain("Bob")),
            ("last_name", quoted("Jo:nes")),
            ("middle_name", quoted("A\nB")),
        ]);
        let (u, diags) = read(&m, User::read);
        assert_eq!(u.last_name, "Jo:nes");
        assert_eq!(
            errors(&diags),
            vec![
                e(
                    "User bob: last_name 'Jo:nes' holds ':', which useradd refuses in a gecos (it separates /etc/passwd fields); write it without ':'",
                    "things[0].last_name"
                ),
                e(
                    "User bob: middle_name 'A\\nB' holds a control character (U+000A), which useradd refuses in a gecos; write it on one line without control characters",
                    "things[0].middle_name"
                ),
            ]
        );
    }
}
