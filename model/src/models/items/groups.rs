//! Groups (groups/, key `groups`): members and admins as `in_both` says,
//! and the gid's range.

use crate::Map;

use serde::Serialize;

use crate::fields::Fields;
use crate::models::common::RootItem;
use crate::value::Value;

/// A group (groups/, key `groups`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    #[serde(flatten)]
    pub root: RootItem,
    pub is_default: bool,
    pub is_root: bool,
    /// Sorted; `in_both` applied.
    pub members: Vec<String>,
    pub admins: Vec<String>,
    /// None defers the gid to the provider; otherwise at least 1024.
    pub gid: Option<i64>,
    pub include_root_group_in_admins: bool,
    pub unmanaged: bool,
    /// Boxed: most users and groups have none, and inline the map is 64
    /// bytes of every one (issue 40).
    pub attributes: Option<Box<Map>>,
    pub in_both: Option<bool>,
}

impl Group {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let root = RootItem::read(f, "default");
        let name = root.name().to_string();
        let mut members = f.str_set("members");
        let admins = f.str_set("admins");
        let in_both = f.opt_bool("in_both");
        match in_both {
            Some(true) => {
                members.extend(admins.iter().cloned());
                members.sort();
                members.dedup();
            }
            Some(false) => members.retain(|m| !admins.contains(m)),
            None => {}
        }
        let gid = read_gid(f, &name);
        Group {
            is_default: f.bool_or("is_default", false),
            is_root: f.bool_or("is_root", false),
            members,
            admins,
            gid,
            include_root_group_in_admins: f.bool_or("include_root_group_in_admins", true),
            unmanaged: f.bool_or("unmanaged", false),
            attributes: f.opt_any_map("attributes").map(Box::new),
            in_both,
            root,
        }
    }

    pub fn name(&self) -> &str {
        self.root.name()
    }
}

/// The largest gid: Unix ids are 32 bits, and 4294967295 is `(gid_t) -1`,
/// "no group".
pub const MAX_GID: i64 = 4_294_967_294;

/// `gid:` normalised: None, 0, "0" and "default" defer; otherwise an
/// integer from 1024 to [`MAX_GID`].
fn read_gid(f: &mut Fields<'_>, name: &str) -> Option<i64> {
    let v = f.raw("gid")?;
    let text = match v {
        Value::Scalar { text, .. } => text.trim().to_string(),
        other => other.kind_name().to_string(),
    };
    if text.eq_ignore_ascii_case("default") {
        return None;
    }
    match (v.as_str(), text.parse::<i64>()) {
        (Some(_), Ok(0)) => None,
        (Some(_), Ok(n)) if (1024..=MAX_GID).contains(&n) => Some(n),
        _ => {
            let msg = format!(
                "Group {name} has gid {text}; gid must be an integer from 1024 to 4294967294, a string representing one, or 'default'/0/None to defer it."
            );
            f.error_at("gid", msg);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;

    #[test]
    fn group_in_both_and_gid() {
        let m = map(&[
            ("name", plain("devs")),
            ("members", strs(&["b", "a"])),
            ("admins", strs(&["c", "a"])),
            ("in_both", plain("true")),
            ("gid", plain("2000")),
        ]);
        let (g, diags) = read(&m, Group::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(g.members, vec!["a", "b", "c"]);
        assert_eq!(g.gid, Some(2000));
        assert!(g.include_root_group_in_admins);

        let m = map(&[
            ("name", plain("devs")),
            ("members", strs(&["b", "a"])),
            ("admins", strs(&["a"])),
            ("in_both", plain("false")),
            ("gid", quoted("default")),
        ]);
        let (g, diags) = read(&m, Group::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(g.members, vec!["b"]);
        assert_eq!(g.gid, None);

        for ok in [plain("0"), quoted("0"), Value::Null] {
            let (g, diags) = read(&map(&[("name", plain("g")), ("gid", ok)]), Group::read);
            assert!(diags.is_empty() && g.gid.is_none());
        }
        for (bad, shown) in [
            (plain("500"), "500"),
            (quoted("abc"), "abc"),
            (plain("4294967295"), "4294967295"),
            (plain("4294967296"), "4294967296"),
            (plain("9223372036854775807"), "9223372036854775807"),
            (plain("99999999999999999999"), "99999999999999999999"),
        ] {
            let (_, diags) = read(&map(&[("name", plain("g")), ("gid", bad)]), Group::read);
            assert_eq!(
                errors(&diags),
                vec![e(
                    &format!(
                        "Group g has gid {shown}; gid must be an integer from 1024 to 4294967294, a string representing one, or 'default'/0/None to defer it."
                    ),
                    "things[0].gid"
                )]
            );
        }
    }
}
