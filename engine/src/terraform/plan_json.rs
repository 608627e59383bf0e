//! The plan document `tofu show -json <planfile>` prints, read against
//! OpenTofu's documented JSON output format (docs: internals, "JSON Output
//! Format", the plan representation and the change representation), and
//! nothing else: a gate that judged what it half understood would pass
//! what it did not see.
//!
//! What is read: `format_version` (a string, major 1; a minor version adds
//! keys, which are ignored, as the format asks); `resource_changes`, an
//! array of objects, each with a string `address`, a string `type`, an
//! optional `index` and a `change` object whose `actions` is one of the
//! documented lists: `["no-op"]`, `["create"]`, `["read"]`, `["update"]`,
//! `["delete"]`, `["delete", "create"]`, `["create", "delete"]`. Anything
//! else is a problem of the plan, said with where it is. The format also
//! documents `["forget"]` (a `removed` block without destroy: the object
//! leaves the state, not the cloud); csis never writes one, and the gate
//! does not judge state removals, so it is refused too.
//!
//! `resource_changes` may be absent: OpenTofu omits it when there is no
//! resource at all (no resource in the configuration or the state), and
//! then `planned_values` holds none either; an absent `resource_changes`
//! beside planned resources is refused. `errored: true` (tofu could not
//! finish the plan) is refused.
//!
//! The document is read into these shapes directly, not into a JSON tree:
//! the values before and after each change (the bulk of a plan) are
//! skipped unread, so memory stays near the size of the text. A key
//! written twice in one of the objects read is refused (a JSON reader
//! would keep one of the two silently).

use serde::Deserialize;
use serde::de::{self, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as J;

/// The plan JSON format this gate reads (`format_version` 1.x).
const FORMAT_MAJOR: &str = "1";

/// What csis reads of `change.actions`, for messages.
pub const ACTIONS_READ: &str =
    "csis reads no-op, create, read, update, delete and the two replace pairs";

/// What csis reads of a resource change, for messages.
const ENTRY_READ: &str =
    "each resource change is an object with an address, a type and change.actions";

/// At most this many problems of one plan are listed.
const LISTED: usize = 20;

/// One documented `change.actions` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actions {
    NoOp,
    Create,
    Read,
    Update,
    Delete,
    /// A replace: destroy first, then create.
    DeleteCreate,
    /// A replace: create first (create_before_destroy), then destroy.
    CreateDelete,
}

impl Actions {
    fn of(names: &[&str]) -> Option<Actions> {
        Some(match names {
            ["no-op"] => Actions::NoOp,
            ["create"] => Actions::Create,
            ["read"] => Actions::Read,
            ["update"] => Actions::Update,
            ["delete"] => Actions::Delete,
            ["delete", "create"] => Actions::DeleteCreate,
            ["create", "delete"] => Actions::CreateDelete,
            _ => return None,
        })
    }

    /// The list as the plan wrote it, for messages: `delete, create`.
    pub fn names(self) -> &'static str {
        match self {
            Actions::NoOp => "no-op",
            Actions::Create => "create",
            Actions::Read => "read",
            Actions::Update => "update",
            Actions::Delete => "delete",
            Actions::DeleteCreate => "delete, create",
            Actions::CreateDelete => "create, delete",
        }
    }

    /// Whether the object changes (no-op and read leave it as it is).
    pub fn changes(self) -> bool {
        !matches!(self, Actions::NoOp | Actions::Read)
    }

    /// Whether the object is destroyed (a delete, or either replace).
    pub fn destroys(self) -> bool {
        matches!(
            self,
            Actions::Delete | Actions::DeleteCreate | Actions::CreateDelete
        )
    }

    pub fn replaces(self) -> bool {
        matches!(self, Actions::DeleteCreate | Actions::CreateDelete)
    }
}

/// One entry of `resource_changes`, understood.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceChange {
    pub address: String,
    pub ty: String,
    /// The instance key (`count` index or `for_each` key), when any.
    pub index: Option<J>,
    pub actions: Actions,
}

/// Why a document is not judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unjudged {
    /// Not a JSON document at all (exit 1).
    NotJson(String),
    /// JSON, but not a plan of this format (exit 1).
    NotAPlan(String),
    /// A plan, with parts that are not what the format documents: the
    /// plan is refused (exit 3). Each line says what and where.
    Refused(Vec<String>),
}

/// Read `text` as a plan document: its resource changes, in order.
pub fn read_plan(text: &str) -> Result<Vec<ResourceChange>, Unjudged> {
    let doc: Field<Doc> = serde_json::from_str(text).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => Unjudged::Refused(vec![format!(
            "the plan document is not one this gate reads: {e}; the plan is refused"
        )]),
        _ => Unjudged::NotJson(e.to_string()),
    })?;
    let doc = match doc {
        Field::Is(d) => d,
        other => {
            return Err(Unjudged::NotAPlan(format!(
                "not a plan document: it is {}, not an object",
                other.kind()
            )));
        }
    };
    check_version(&doc.format_version)?;
    let mut problems = Vec::new();
    match &doc.errored {
        Field::Absent | Field::Is(false) => {}
        Field::Is(true) => problems.push(
            "the plan says errored: true (tofu could not finish planning, and an errored plan is never applied); the plan is refused -- fix what tofu plan reported and plan again"
                .to_string(),
        ),
        other => problems.push(format!(
            "errored is {}, not true or false; the plan is refused",
            other.kind()
        )),
    }
    let entries: &[Field<Entry>] = match (&doc.resource_changes, &doc.planned_values) {
        (Field::Absent, Field::Absent) => {
            return Err(Unjudged::NotAPlan(
                "not a plan document: it has neither resource_changes nor planned_values (a state?)"
                    .into(),
            ));
        }
        (Field::Is(list), _) => list,
        (Field::Absent, planned) => {
            if let Some(why) = planned_resources(planned) {
                problems.push(format!(
                    "resource_changes is absent, yet {why}; the plan is refused (the plan format omits resource_changes only when there is no resource at all)"
                ));
            }
            &[]
        }
        (other, _) => {
            problems.push(format!(
                "resource_changes is {}, not an array of resource changes; the plan is refused ({ENTRY_READ})",
                other.kind()
            ));
            &[]
        }
    };
    let mut changes = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        match understood(entry) {
            Ok(c) => changes.push(c),
            Err((at, what, read)) => {
                let at = match at {
                    Some(address) => format!("resource_changes[{i}] ({address})"),
                    None => format!("resource_changes[{i}]"),
                };
                problems.push(format!("{at}: {what}; the plan is refused ({read})"));
            }
        }
    }
    if problems.is_empty() {
        return Ok(changes);
    }
    let more = problems.len().saturating_sub(LISTED);
    problems.truncate(LISTED);
    if more > 0 {
        problems.push(format!("... and {more} more problem(s) of the same plan"));
    }
    Err(Unjudged::Refused(problems))
}

/// `format_version` present, a string, of major version 1.
fn check_version(version: &Field<String>) -> Result<(), Unjudged> {
    let version = match version {
        Field::Is(v) => v,
        Field::Absent => {
            return Err(Unjudged::NotAPlan(
                "not a plan document: it has no format_version".into(),
            ));
        }
        other => {
            return Err(Unjudged::NotAPlan(format!(
                "not a plan document: its format_version is {}, not a version string",
                other.kind()
            )));
        }
    };
    if version.split('.').next() != Some(FORMAT_MAJOR) {
        return Err(Unjudged::NotAPlan(format!(
            "plan format_version '{version}' is not one this gate reads (1.x); refusing to judge it"
        )));
    }
    Ok(())
}

/// Why `planned_values` shows resources (or cannot be read), when it
/// does: then an absent `resource_changes` hides them.
fn planned_resources(planned: &Field<PlannedValues>) -> Option<String> {
    let module = match planned {
        Field::Is(p) => &p.root_module,
        other => return Some(format!("planned_values is {}", other.kind())),
    };
    let module = match module {
        Field::Absent => return None,
        Field::Is(m) => m,
        other => return Some(format!("planned_values.root_module is {}", other.kind())),
    };
    for (key, list) in [
        ("resources", &module.resources),
        ("child_modules", &module.child_modules),
    ] {
        match list {
            Field::Absent => {}
            Field::Is(items) if items.is_empty() => {}
            Field::Is(items) => {
                return Some(format!(
                    "planned_values.root_module.{key} holds {} entr{}",
                    items.len(),
                    if items.len() == 1 { "y" } else { "ies" }
                ));
            }
            other => {
                return Some(format!(
                    "planned_values.root_module.{key} is {}",
                    other.kind()
                ));
            }
        }
    }
    None
}

/// An entry understood, or what is wrong with it: its address when it
/// has one, the problem, and what csis reads instead.
type Misread = (Option<String>, String, &'static str);

fn understood(entry: &Field<Entry>) -> Result<ResourceChange, Misread> {
    let entry = match entry {
        Field::Is(e) => e,
        other => {
            return Err((
                None,
                format!("it is {}, not a resource change object", other.kind()),
                ENTRY_READ,
            ));
        }
    };
    let address = match &entry.address {
        Field::Is(a) => a.clone(),
        other => return Err((None, other.missing("address"), ENTRY_READ)),
    };
    let at = Some(address.clone());
    let ty = match &entry.ty {
        Field::Is(t) => t.clone(),
        other => return Err((at, other.missing("type"), ENTRY_READ)),
    };
    let change = match &entry.change {
        Field::Is(c) => c,
        Field::Absent => return Err((at, "it has no change".into(), ENTRY_READ)),
        other => {
            return Err((
                at,
                format!("change is {}, not an object", other.kind()),
                ENTRY_READ,
            ));
        }
    };
    let list = match &change.actions {
        Field::Is(list) => list,
        Field::Absent => return Err((at, "change has no actions".into(), ACTIONS_READ)),
        other => {
            return Err((
                at,
                format!(
                    "change.actions is {}, not an array of actions",
                    other.kind()
                ),
                ACTIONS_READ,
            ));
        }
    };
    let mut names = Vec::with_capacity(list.len());
    for (j, name) in list.iter().enumerate() {
        match name {
            Field::Is(n) => names.push(n.as_str()),
            other => {
                return Err((
                    at,
                    format!(
                        "change.actions[{j}] is {}, not an action name",
                        other.kind()
                    ),
                    ACTIONS_READ,
                ));
            }
        }
    }
    const KNOWN: [&str; 5] = ["no-op", "create", "read", "update", "delete"];
    if let Some(forget) = names.iter().find(|n| **n == "forget") {
        let what = format!(
            "action \"{forget}\" (the object leaves the state, not the cloud) is not one csis judges"
        );
        return Err((at, what, ACTIONS_READ));
    }
    if let Some(unknown) = names.iter().find(|n| !KNOWN.contains(n)) {
        return Err((
            at,
            format!("unknown action {}", J::from(*unknown)),
            ACTIONS_READ,
        ));
    }
    let Some(actions) = Actions::of(&names) else {
        return Err((
            at,
            format!(
                "actions {} are not a combination the plan format documents",
                J::from(names)
            ),
            ACTIONS_READ,
        ));
    };
    Ok(ResourceChange {
        address,
        ty,
        index: entry.index.clone(),
        actions,
    })
}

/// The plan representation's keys this gate reads; the others are
/// skipped unread.
#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    format_version: Field<String>,
    #[serde(default)]
    resource_changes: Field<Vec<Field<Entry>>>,
    #[serde(default)]
    planned_values: Field<PlannedValues>,
    #[serde(default)]
    errored: Field<bool>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    address: Field<String>,
    #[serde(default, rename = "type")]
    ty: Field<String>,
    #[serde(default)]
    index: Option<J>,
    #[serde(default)]
    change: Field<ChangeRep>,
}

#[derive(Deserialize)]
struct ChangeRep {
    #[serde(default)]
    actions: Field<Vec<Field<String>>>,
}

#[derive(Deserialize)]
struct PlannedValues {
    #[serde(default)]
    root_module: Field<Module>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(default)]
    resources: Field<Vec<IgnoredAny>>,
    #[serde(default)]
    child_modules: Field<Vec<IgnoredAny>>,
}

/// A value of the document as it is there: absent, null, of another JSON
/// kind than the format's (named, for the message), or read. A value of
/// another kind is skipped unread.
#[derive(Default)]
enum Field<T> {
    #[default]
    Absent,
    Null,
    Other(&'static str),
    Is(T),
}

impl<T: Shaped> Field<T> {
    /// What is there, for a message: `absent`, `null`, `a string`...
    fn kind(&self) -> &'static str {
        match self {
            Field::Absent => "absent",
            Field::Null => "null",
            Field::Other(kind) => kind,
            Field::Is(_) => T::KIND_NAME,
        }
    }

    /// The problem of a required `key` that is not what the format says.
    fn missing(&self, key: &str) -> String {
        match self {
            Field::Absent => format!("it has no {key}"),
            other => format!("{key} is {}, not a string", other.kind()),
        }
    }
}

/// Which JSON kind a shape is read from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Bool,
}

trait Shaped {
    const KIND: Kind;
}

trait KindName {
    const KIND_NAME: &'static str;
}

impl<T: Shaped> KindName for T {
    const KIND_NAME: &'static str = match T::KIND {
        Kind::Object => "an object",
        Kind::Array => "an array",
        Kind::String => "a string",
        Kind::Bool => "a boolean",
    };
}

impl Shaped for String {
    const KIND: Kind = Kind::String;
}
impl Shaped for bool {
    const KIND: Kind = Kind::Bool;
}
impl<T> Shaped for Vec<T> {
    const KIND: Kind = Kind::Array;
}
impl Shaped for Doc {
    const KIND: Kind = Kind::Object;
}
impl Shaped for Entry {
    const KIND: Kind = Kind::Object;
}
impl Shaped for ChangeRep {
    const KIND: Kind = Kind::Object;
}
impl Shaped for PlannedValues {
    const KIND: Kind = Kind::Object;
}
impl Shaped for Module {
    const KIND: Kind = Kind::Object;
}

impl<'de, T: Deserialize<'de> + Shaped> Deserialize<'de> for Field<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor(std::marker::PhantomData))
    }
}

struct FieldVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de> + Shaped> Visitor<'de> for FieldVisitor<T> {
    type Value = Field<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Field<T>, E> {
        Ok(Field::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Field<T>, E> {
        Ok(Field::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Field<T>, E> {
        if T::KIND == Kind::Bool {
            return T::deserialize(v.into_deserializer()).map(Field::Is);
        }
        Ok(Field::Other("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Field<T>, E> {
        Ok(Field::Other("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Field<T>, E> {
        Ok(Field::Other("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Field<T>, E> {
        Ok(Field::Other("a number"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Field<T>, E> {
        if T::KIND == Kind::String {
            return T::deserialize(v.into_deserializer()).map(Field::Is);
        }
        Ok(Field::Other("a string"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Field<T>, A::Error> {
        if T::KIND == Kind::Array {
            return T::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Field::Is);
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Field::Other("an array"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field<T>, A::Error> {
        if T::KIND == Kind::Object {
            return T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Field::Is);
        }
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Field::Other("an object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the gate says of a plan document, as text.
    fn said(doc: &str) -> Result<Vec<(String, &'static str)>, Unjudged> {
        read_plan(doc).map(|cs| {
            cs.into_iter()
                .map(|c| (c.address, c.actions.names()))
                .collect()
        })
    }

    fn refused(doc: &str) -> Vec<String> {
        match read_plan(doc) {
            Err(Unjudged::Refused(p)) => p,
            other => panic!("not refused: {other:?}"),
        }
    }

    fn entry(actions: &str) -> String {
        format!(
            r#"{{"format_version":"1.2","resource_changes":[{{"address":"a.b","type":"a","change":{{"actions":{actions},"before":{{"x":[1,2,{{"y":null}}]}}}}}}]}}"#
        )
    }

    const READS: &str = "; the plan is refused (csis reads no-op, create, read, update, delete and the two replace pairs)";

    #[test]
    fn every_documented_action_list_is_read_and_nothing_else() {
        for (list, names) in [
            (r#"["no-op"]"#, "no-op"),
            (r#"["create"]"#, "create"),
            (r#"["read"]"#, "read"),
            (r#"["update"]"#, "update"),
            (r#"["delete"]"#, "delete"),
            (r#"["delete","create"]"#, "delete, create"),
            (r#"["create","delete"]"#, "create, delete"),
        ] {
            assert_eq!(said(&entry(list)), Ok(vec![("a.b".into(), names)]));
        }
        for (list, what) in [
            (r#"["Delete"]"#, r#"unknown action "Delete""#),
            (r#"["obliterate"]"#, r#"unknown action "obliterate""#),
            (
                r#"["forget"]"#,
                r#"action "forget" (the object leaves the state, not the cloud) is not one csis judges"#,
            ),
            (
                r#"["create","update"]"#,
                r#"actions ["create","update"] are not a combination the plan format documents"#,
            ),
            (
                r#"["delete","delete"]"#,
                r#"actions ["delete","delete"] are not a combination the plan format documents"#,
            ),
            (
                "[]",
                "actions [] are not a combination the plan format documents",
            ),
            (
                "\"delete\"",
                "change.actions is a string, not an array of actions",
            ),
            ("null", "change.actions is null, not an array of actions"),
            ("{}", "change.actions is an object, not an array of actions"),
            ("[1]", "change.actions[0] is a number, not an action name"),
        ] {
            assert_eq!(
                refused(&entry(list)),
                [format!("resource_changes[0] (a.b): {what}{READS}")],
                "{list}"
            );
        }
    }

    #[test]
    fn an_entry_without_an_address_a_type_or_a_change_is_refused() {
        let doc =
            |entries: &str| format!(r#"{{"format_version":"1.0","resource_changes":[{entries}]}}"#);
        let shape = "; the plan is refused (each resource change is an object with an address, a type and change.actions)";
        for (e, what) in [
            (
                r#""x""#,
                "resource_changes[0]: it is a string, not a resource change object",
            ),
            (
                "null",
                "resource_changes[0]: it is null, not a resource change object",
            ),
            (
                r#"{"type":"a","change":{"actions":["delete"]}}"#,
                "resource_changes[0]: it has no address",
            ),
            (
                r#"{"address":7,"type":"a","change":{"actions":["delete"]}}"#,
                "resource_changes[0]: address is a number, not a string",
            ),
            (
                r#"{"address":"a.b","change":{"actions":["delete"]}}"#,
                "resource_changes[0] (a.b): it has no type",
            ),
            (
                r#"{"address":"a.b","type":"a"}"#,
                "resource_changes[0] (a.b): it has no change",
            ),
            (
                r#"{"address":"a.b","type":"a","change":null}"#,
                "resource_changes[0] (a.b): change is null, not an object",
            ),
            (
                r#"{"address":"a.b","type":"a","change":["delete"]}"#,
                "resource_changes[0] (a.b): change is an array, not an object",
            ),
        ] {
            assert_eq!(refused(&doc(e)), [format!("{what}{shape}")], "{e}");
        }
        let no_actions = refused(&doc(r#"{"address":"a.b","type":"a","change":{}}"#));
        assert_eq!(
            no_actions,
            [format!(
                "resource_changes[0] (a.b): change has no actions{READS}"
            )]
        );
    }

    #[test]
    fn resource_changes_is_an_array_and_absent_only_when_nothing_is_planned() {
        for (rc, kind) in [("{}", "an object"), ("null", "null"), ("\"x\"", "a string")] {
            assert_eq!(
                refused(&format!(
                    r#"{{"format_version":"1.0","resource_changes":{rc}}}"#
                )),
                [format!(
                    "resource_changes is {kind}, not an array of resource changes; the plan is refused (each resource change is an object with an address, a type and change.actions)"
                )]
            );
        }
        // An empty root: OpenTofu leaves resource_changes out.
        assert_eq!(
            said(r#"{"format_version":"1.2","planned_values":{"root_module":{}}}"#),
            Ok(vec![])
        );
        assert_eq!(
            said(r#"{"format_version":"1.2","planned_values":{"root_module":{"resources":[]}}}"#),
            Ok(vec![])
        );
        assert_eq!(
            refused(
                r#"{"format_version":"1.2","planned_values":{"root_module":{"resources":[{"address":"a.b"}]}}}"#
            ),
            [
                "resource_changes is absent, yet planned_values.root_module.resources holds 1 entry; the plan is refused (the plan format omits resource_changes only when there is no resource at all)"
            ]
        );
        assert_eq!(
            refused(
                r#"{"format_version":"1.2","planned_values":{"root_module":{"child_modules":[{},{}]}}}"#
            ),
            [
                "resource_changes is absent, yet planned_values.root_module.child_modules holds 2 entries; the plan is refused (the plan format omits resource_changes only when there is no resource at all)"
            ]
        );
        assert_eq!(
            refused(r#"{"format_version":"1.2","planned_values":null}"#),
            [
                "resource_changes is absent, yet planned_values is null; the plan is refused (the plan format omits resource_changes only when there is no resource at all)"
            ]
        );
    }

    #[test]
    fn a_document_that_is_not_a_version_1_plan_is_not_judged() {
        assert_eq!(
            said(r#"{"format_version":"1.2","resource_changes":[]}"#),
            Ok(vec![])
        );
        assert_eq!(
            said(r#"{"format_version":"2.0","resource_changes":[]}"#),
            Err(Unjudged::NotAPlan(
                "plan format_version '2.0' is not one this gate reads (1.x); refusing to judge it"
                    .into()
            ))
        );
        assert_eq!(
            said(r#"{"format_version":"1.0","values":{}}"#),
            Err(Unjudged::NotAPlan("not a plan document: it has neither resource_changes nor planned_values (a state?)".into()))
        );
        assert_eq!(
            said(r#"{"resource_changes":[]}"#),
            Err(Unjudged::NotAPlan(
                "not a plan document: it has no format_version".into()
            ))
        );
        assert_eq!(
            said(r#"{"format_version":1,"resource_changes":[]}"#),
            Err(Unjudged::NotAPlan(
                "not a plan document: its format_version is a number, not a version string".into()
            ))
        );
        assert_eq!(
            said("[1]"),
            Err(Unjudged::NotAPlan(
                "not a plan document: it is an array, not an object".into()
            ))
        );
        assert_eq!(
            said("Error: no"),
            Err(Unjudged::NotJson(
                "expected value at line 1 column 1".into()
            ))
        );
    }

    #[test]
    fn a_key_written_twice_and_an_errored_plan_are_refused() {
        assert_eq!(
            refused(
                r#"{"format_version":"1.2","resource_changes":[{"address":"a.b","type":"a","change":{"actions":["no-op"],"actions":["delete"]}}]}"#
            ),
            [
                "the plan document is not one this gate reads: duplicate field `actions` at line 1 column 111; the plan is refused"
            ]
        );
        assert_eq!(
            refused(r#"{"format_version":"1.2","errored":true,"resource_changes":[]}"#),
            [
                "the plan says errored: true (tofu could not finish planning, and an errored plan is never applied); the plan is refused -- fix what tofu plan reported and plan again"
            ]
        );
        assert_eq!(
            said(r#"{"format_version":"1.2","errored":false,"resource_changes":[]}"#),
            Ok(vec![])
        );
    }

    #[test]
    fn at_most_twenty_problems_are_listed() {
        let entries =
            vec![r#"{"address":"a.b","type":"a","change":{"actions":["x"]}}"#; 25].join(",");
        let p = refused(&format!(
            r#"{{"format_version":"1.2","resource_changes":[{entries}]}}"#
        ));
        assert_eq!(p.len(), 21);
        assert_eq!(p[20], "... and 5 more problem(s) of the same plan");
    }

    #[test]
    fn the_values_of_a_change_are_skipped_unread() {
        // Whatever before and after hold, and keys the gate does not
        // know (a later minor version's), only the actions count.
        let doc = r#"{"format_version":"1.9","future":{"a":[1]},"resource_changes":[{"address":"a.b","type":"a","index":"web/data","change":{"actions":["update"],"before":{"deep":[[[{"k":"v"}]]]},"after":null,"new_key":true}}]}"#;
        let got = read_plan(doc).unwrap();
        assert_eq!(got[0].index, Some(J::from("web/data")));
        assert_eq!(got[0].ty, "a");
        assert_eq!(got[0].actions, Actions::Update);
    }
}
