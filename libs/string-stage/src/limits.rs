//! What one render may cost: an instruction budget (minijinja's fuel) and
//! a cap on the bytes it writes. A render past either is refused with the
//! limit it hit, so a runaway template ends in milliseconds with an error
//! instead of hanging the load (docs/reliability.md, "Limits on
//! templates").

use std::cell::Cell;
use std::fmt;
use std::io;

use minijinja::value::{Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, Output, State};

/// The instructions one render may execute. A configuration value's
/// template runs tens of instructions (a few hundred for a loop over a
/// list); a million takes well under a second even in a debug build, and
/// three nested loops over `range(10000)` (10^12 steps) end here. The same
/// budget is charged one instruction per item for each item a filter
/// walks or an output prints (see [`guard`]), so a filter over a list
/// repeated 10^12 times ends here too.
pub const TEMPLATE_FUEL: u64 = 1_000_000;

/// The bytes a rendered value may hold: 1 MiB. A value is a description,
/// a script, a user-data document; none comes near.
pub const MAX_VALUE_BYTES: usize = 1 << 20;

/// The limits a renderer holds every render to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Instructions per render ([`TEMPLATE_FUEL`]).
    pub fuel: u64,
    /// Bytes per rendered value ([`MAX_VALUE_BYTES`]).
    pub max_bytes: usize,
}

impl Limits {
    /// The limits configuration is rendered with.
    pub const DEFAULT: Limits = Limits {
        fuel: TEMPLATE_FUEL,
        max_bytes: MAX_VALUE_BYTES,
    };
}

/// Why a template's value was refused rather than rendered or kept.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// It ran out of its instruction budget (the budget).
    Fuel(u64),
    /// It wrote more than a value may hold (the cap, in bytes).
    Size(usize),
    /// It called a function templates do not have (its name).
    UnknownFunction(String),
}

impl fmt::Display for Refusal {
    /// The end of "template in field 'x' of image 'y' ...".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Fuel(n) => write!(
                f,
                "ran out of its budget of {} instructions (a loop too large?)",
                thousands(*n)
            ),
            Refusal::Size(cap) => {
                write!(f, "rendered more than the {} a value may hold", bytes(*cap))
            }
            Refusal::UnknownFunction(name) => write!(
                f,
                "calls '{name}()', a function configuration templates do not have"
            ),
        }
    }
}

impl Refusal {
    /// What to do about it.
    pub fn help(&self) -> String {
        match self {
            Refusal::Fuel(n) => format!(
                "a template may execute at most {} instructions; loop over less, or generate the value outside csis",
                thousands(*n)
            ),
            Refusal::Size(cap) => format!(
                "a rendered value may hold at most {}; keep large content in a file the value names",
                bytes(*cap)
            ),
            Refusal::UnknownFunction(_) => "the functions templates have are range(), dict() and namespace(), besides minijinja's filters and tests".to_string(),
        }
    }
}

/// 1000000 as 1,000,000.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count the way a person reads it: 1 MiB, 512 KiB, 100 bytes.
fn bytes(n: usize) -> String {
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// The detail of the error a guarded filter or the formatter returns when
/// the render's budget is spent.
const SPENT: &str = "the template's budget of instructions is spent";

thread_local! {
    /// What the render running on this thread has left for items walked.
    static LEFT: Cell<u64> = const { Cell::new(0) };
}

/// A render with `fuel` starts on this thread.
pub(crate) fn start(fuel: u64) {
    LEFT.with(|l| l.set(fuel));
}

/// Charge the items of `v` (recursively, one per item) to this render's
/// budget, walking no more of it than the budget has left.
fn charge(v: &Value) -> Result<(), Error> {
    LEFT.with(|l| {
        let mut left = l.get();
        let ok = walk(v, &mut left, 0);
        l.set(left);
        if ok {
            Ok(())
        } else {
            l.set(0);
            Err(Error::new(ErrorKind::InvalidOperation, SPENT))
        }
    })
}

/// How deep [`charge`] follows nested values (input YAML nests far less).
const MAX_DEPTH: usize = 256;

fn walk(v: &Value, left: &mut u64, depth: usize) -> bool {
    if *left == 0 || depth > MAX_DEPTH {
        return false;
    }
    *left -= 1;
    match v.kind() {
        ValueKind::Seq | ValueKind::Iterable => {
            if v.len().is_some_and(|n| n as u64 > *left) {
                return false;
            }
            let Ok(items) = v.try_iter() else {
                return true;
            };
            for item in items {
                if !walk(&item, left, depth + 1) {
                    return false;
                }
            }
            true
        }
        ValueKind::Map => {
            let Ok(keys) = v.try_iter() else {
                return true;
            };
            for key in keys {
                let item = v.get_item(&key).unwrap_or_default();
                if !walk(&key, left, depth + 1) || !walk(&item, left, depth + 1) {
                    return false;
                }
            }
            true
        }
        _ => true,
    }
}

/// The builtin filters that walk (or lazily wrap) the value they filter:
/// each is charged its input's items before it runs.
pub(crate) fn guard(env: &mut Environment<'static>) {
    use minijinja::filters as f;
    let walking: [(&'static str, Value); 22] = [
        ("join", Value::from_function(f::join)),
        ("list", Value::from_function(f::list)),
        ("string", Value::from_function(f::string)),
        ("sort", Value::from_function(f::sort)),
        ("reverse", Value::from_function(f::reverse)),
        ("unique", Value::from_function(f::unique)),
        ("sum", Value::from_function(f::sum)),
        ("min", Value::from_function(f::min)),
        ("max", Value::from_function(f::max)),
        ("items", Value::from_function(f::items)),
        ("dictsort", Value::from_function(f::dictsort)),
        ("first", Value::from_function(f::first)),
        ("last", Value::from_function(f::last)),
        ("slice", Value::from_function(f::slice)),
        ("batch", Value::from_function(f::batch)),
        ("groupby", Value::from_function(f::groupby)),
        ("select", Value::from_function(f::select)),
        ("reject", Value::from_function(f::reject)),
        ("selectattr", Value::from_function(f::selectattr)),
        ("rejectattr", Value::from_function(f::rejectattr)),
        ("map", Value::from_function(f::map)),
        ("pprint", Value::from_function(f::pprint)),
    ];
    for (name, original) in walking {
        env.add_filter(
            name,
            move |state: &State, args: Rest<Value>| -> Result<Value, Error> {
                if let Some(v) = args.first() {
                    charge(v)?;
                }
                original.call(state, &args)
            },
        );
    }
    for name in ["length", "count"] {
        env.add_filter(name, |v: Value| -> Result<Value, Error> {
            if let Some(n) = v.len() {
                return Ok(Value::from(n));
            }
            charge(&v)?;
            minijinja::filters::length(&v).map(Value::from)
        });
    }
    // Filters that would make data a "safe" string, which the formatter
    // writes unmarked as a template of the user's (crate::data): each
    // returns a plain string instead.
    env.add_filter("safe", |v: String| Value::from(v));
    for name in ["escape", "e"] {
        env.add_filter(name, |state: &State, v: Value| -> Result<Value, Error> {
            let escaped = minijinja::filters::escape(state, &v)?;
            Ok(Value::from(escaped.to_string()))
        });
    }
    env.set_formatter(|out: &mut Output, state: &State, v: &Value| {
        charge(v)?;
        if v.is_safe() || v.is_undefined() || v.is_none() {
            return minijinja::escape_formatter(out, state, v);
        }
        // Anything but a template of the user's is data: marked so that
        // no later pass renders what it holds.
        let text = v.to_string();
        out.write_str(&crate::data::mark(&text))
            .map_err(|_| Error::new(minijinja::ErrorKind::WriteFailure, "output"))
    });
}

/// A writer that takes at most `cap` bytes and fails past them, so an
/// oversized render stops at the write that crosses the cap instead of
/// growing a buffer first.
pub(crate) struct Bounded {
    buf: Vec<u8>,
    cap: usize,
    over: bool,
}

impl Bounded {
    pub(crate) fn new(cap: usize) -> Bounded {
        Bounded {
            buf: Vec::new(),
            cap,
            over: false,
        }
    }

    /// What was written; `None` if it is not text (minijinja writes only
    /// whole `str`s, so it always is).
    pub(crate) fn into_string(self) -> Option<String> {
        String::from_utf8(self.buf).ok()
    }
}

impl io::Write for Bounded {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if b.len() > self.cap - self.buf.len() {
            self.over = true;
            return Err(io::Error::other("over the cap of a rendered value"));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The limit a failed render hit, if it hit one; `None` for an error a
/// later stage may mend (an unset name) or that keeps the text as written.
pub(crate) fn refusal(e: &Error, out: &Bounded, limits: &Limits) -> Option<Refusal> {
    if out.over {
        return Some(Refusal::Size(limits.max_bytes));
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(e) = err.downcast_ref::<Error>() {
            match e.kind() {
                ErrorKind::OutOfFuel => return Some(Refusal::Fuel(limits.fuel)),
                ErrorKind::InvalidOperation if e.detail() == Some(SPENT) => {
                    return Some(Refusal::Fuel(limits.fuel));
                }
                ErrorKind::UnknownFunction => {
                    let detail = e.detail().unwrap_or_default();
                    let name = detail.strip_suffix(" is unknown").unwrap_or(detail);
                    return Some(Refusal::UnknownFunction(name.to_string()));
                }
                _ => {}
            }
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_as_a_person_writes_them() {
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(bytes(1 << 20), "1 MiB");
        assert_eq!(bytes(2048), "2 KiB");
        assert_eq!(bytes(100), "100 bytes");
    }
}
