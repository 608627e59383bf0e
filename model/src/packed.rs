//! A [`Value`] held in one allocation, for what is kept long and read
//! seldom: the entries of every item file, which a cold plan holds in
//! memos from the load to its end but reads once each, when the item is
//! structured (issue 40). As a tree, each node is 32 bytes and each
//! string, map and list one more allocation; packed, an entry is its text
//! without the indentation, a few bytes of framing, and one allocation.
//!
//! Equal values pack to equal bytes (maps keep their order), so a memo
//! that holds a packed value is still backdated when an edit leaves the
//! value as it was.

use bytes::Bytes;

use crate::value::{Map, Value};

const NULL: u8 = 0;
const PLAIN: u8 = 1;
const QUOTED: u8 = 2;
const SEQ: u8 = 3;
const MAP: u8 = 4;

/// A value's bytes: see the constants above for the node tags; lengths
/// and counts are LEB128. The bytes may be a range of a buffer that other
/// values share: a file's entries taken from the persisted cache are
/// ranges of the cache file as it was read, with no copy (issue 40).
#[derive(Clone)]
pub struct PackedValue {
    bytes: Bytes,
}

impl PartialEq for PackedValue {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for PackedValue {}

impl std::hash::Hash for PackedValue {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PackedValue {
    pub fn pack(value: &Value) -> PackedValue {
        let mut out = Vec::new();
        write(value, &mut out);
        // Copied to its size: a buffer grown by doubling, shrunk in place,
        // kept up to half of it unused for every entry of a cold plan.
        PackedValue {
            bytes: Bytes::copy_from_slice(&out),
        }
    }

    /// The value again, as a tree of its own.
    pub fn unpack(&self) -> Value {
        let mut at = 0;
        read(self.as_bytes(), &mut at).unwrap_or_default()
    }

    /// A top-level key's value, unpacked alone (None when the value is not
    /// a mapping or has no such key).
    pub fn get(&self, key: &str) -> Option<Value> {
        let bytes = self.as_bytes();
        let mut at = 0;
        if *bytes.first()? != MAP {
            return None;
        }
        at += 1;
        for _ in 0..read_len(bytes, &mut at)? {
            let k = read_str(bytes, &mut at)?;
            if k == key {
                return read(bytes, &mut at);
            }
            skip(bytes, &mut at)?;
        }
        None
    }

    /// The bytes, for a store that keeps a value as it is held (the
    /// persisted cache).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The value at `range` of `buf`, bytes [`PackedValue::as_bytes`] gave
    /// that a store kept (the persisted cache's units), sharing the buffer;
    /// None when the range is not in it. The value's framing is not walked
    /// here: the store's checksum proves the bytes are those written, and
    /// bytes the packer could not have made unpack to null, never panic.
    pub fn in_buffer(buf: &Bytes, range: std::ops::Range<usize>) -> Option<PackedValue> {
        buf.get(range.clone())?;
        Some(PackedValue {
            bytes: buf.slice(range),
        })
    }

    /// The packed size, for measurements.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }
}

impl From<&Value> for PackedValue {
    fn from(value: &Value) -> PackedValue {
        PackedValue::pack(value)
    }
}

impl std::fmt::Debug for PackedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.unpack().fmt(f)
    }
}

/// A length or count as LEB128: the framing of packed values, which the
/// persisted cache's store also writes in.
pub fn write_len(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// A flag as one byte, 0 or 1.
pub fn write_flag(flag: bool, out: &mut Vec<u8>) {
    out.push(u8::from(flag));
}

/// A flag [`write_flag`] wrote; None for any other byte.
pub fn read_flag(bytes: &[u8], at: &mut usize) -> Option<bool> {
    let flag = match *bytes.get(*at)? {
        0 => false,
        1 => true,
        _ => return None,
    };
    *at += 1;
    Some(flag)
}

/// A string as its length, then its bytes.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    write_len(s.len(), out);
    out.extend_from_slice(s.as_bytes());
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(NULL),
        Value::Scalar { text, plain } => {
            out.push(if *plain { PLAIN } else { QUOTED });
            write_str(text, out);
        }
        Value::Seq(items) => {
            out.push(SEQ);
            write_len(items.len(), out);
            for item in items {
                write(item, out);
            }
        }
        Value::Map(map) => {
            out.push(MAP);
            write_len(map.len(), out);
            for (k, v) in map.iter() {
                write_str(k, out);
                write(v, out);
            }
        }
    }
}

// The readers return None on bytes `write` cannot have made; `unpack`
// then gives Null rather than panic.

/// A length [`write_len`] wrote, at `at`, which it moves past it.
pub fn read_len(bytes: &[u8], at: &mut usize) -> Option<usize> {
    let mut n = 0usize;
    let mut shift = 0u32;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        n |= usize::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(n);
        }
        shift += 7;
    }
}

/// Bytes framed by their length ([`write_str`]'s framing), at `at`,
/// which it moves past them.
pub fn read_bytes<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let len = read_len(bytes, at)?;
    let end = at.checked_add(len)?;
    let s = bytes.get(*at..end)?;
    *at = end;
    Some(s)
}

/// A string [`write_str`] wrote.
pub fn read_str<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a str> {
    std::str::from_utf8(read_bytes(bytes, at)?).ok()
}

fn skip(bytes: &[u8], at: &mut usize) -> Option<()> {
    let tag = *bytes.get(*at)?;
    *at += 1;
    match tag {
        NULL => {}
        PLAIN | QUOTED => {
            let len = read_len(bytes, at)?;
            *at = at.checked_add(len)?;
        }
        SEQ => {
            for _ in 0..read_len(bytes, at)? {
                skip(bytes, at)?;
            }
        }
        MAP => {
            for _ in 0..read_len(bytes, at)? {
                let len = read_len(bytes, at)?;
                *at = at.checked_add(len)?;
                skip(bytes, at)?;
            }
        }
        _ => return None,
    }
    Some(())
}

fn read(bytes: &[u8], at: &mut usize) -> Option<Value> {
    let tag = *bytes.get(*at)?;
    *at += 1;
    Some(match tag {
        NULL => Value::Null,
        PLAIN | QUOTED => Value::Scalar {
            text: read_str(bytes, at)?.into(),
            plain: tag == PLAIN,
        },
        SEQ => {
            let n = read_len(bytes, at)?;
            // Capped by what the bytes can hold: one byte per node at least.
            let mut items = Vec::with_capacity(n.min(bytes.len() - *at));
            for _ in 0..n {
                items.push(read(bytes, at)?);
            }
            Value::Seq(items)
        }
        MAP => {
            let n = read_len(bytes, at)?;
            let mut map =
                Map::with_capacity_and_hasher(n.min(bytes.len() - *at), Default::default());
            for _ in 0..n {
                let k = read_str(bytes, at)?.into();
                let v = read(bytes, at)?;
                map.insert(k, v);
            }
            Value::map(map)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        let mut inner = Map::default();
        inner.insert(
            "plain".into(),
            Value::Scalar {
                text: "yes".into(),
                plain: true,
            },
        );
        inner.insert(
            "quoted".into(),
            Value::Scalar {
                text: "10".into(),
                plain: false,
            },
        );
        inner.insert("none".into(), Value::Null);
        inner.insert("long".into(), Value::str("x".repeat(300)));
        let mut map = Map::default();
        map.insert("name".into(), Value::str("ada"));
        map.insert(
            "list".into(),
            Value::Seq(vec![
                Value::map(inner),
                Value::Seq(Vec::new()),
                Value::str("é"),
            ]),
        );
        map.insert("empty".into(), Value::map(Map::default()));
        Value::map(map)
    }

    #[test]
    fn a_value_unpacks_to_itself_order_and_quoting_kept() {
        let v = sample();
        let p = PackedValue::pack(&v);
        assert_eq!(p.unpack(), v);
        let keys: Vec<String> = match p.unpack() {
            Value::Map(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        assert_eq!(keys, ["name", "list", "empty"]);
    }

    #[test]
    fn a_key_is_read_without_unpacking_the_rest() {
        let p = PackedValue::pack(&sample());
        assert_eq!(p.get("empty"), Some(Value::map(Map::default())));
        assert_eq!(p.get("name"), Some(Value::str("ada")));
        assert_eq!(p.get("missing"), None);
        assert_eq!(PackedValue::pack(&Value::str("x")).get("name"), None);
    }

    #[test]
    fn equal_values_pack_equal_and_different_ones_do_not() {
        assert_eq!(PackedValue::pack(&sample()), PackedValue::pack(&sample()));
        let mut other = sample();
        if let Value::Map(m) = &mut other {
            m.insert("name".into(), Value::str("bob"));
        }
        assert_ne!(PackedValue::pack(&sample()), PackedValue::pack(&other));
        // A plain and a quoted scalar of the same text are different values.
        let plain = Value::Scalar {
            text: "yes".into(),
            plain: true,
        };
        assert_ne!(
            PackedValue::pack(&Value::str("yes")),
            PackedValue::pack(&plain)
        );
    }

    #[test]
    fn values_sharing_one_buffer_are_the_values_packed_alone() {
        let (a, b) = (
            PackedValue::pack(&sample()),
            PackedValue::pack(&Value::str("x")),
        );
        let buf = Bytes::from([a.as_bytes(), b.as_bytes()].concat());
        let cut = a.len();
        let shared_a = PackedValue::in_buffer(&buf, 0..cut).unwrap();
        let shared_b = PackedValue::in_buffer(&buf, cut..buf.len()).unwrap();
        assert_eq!(shared_a, a);
        assert_eq!(shared_b, b);
        assert_eq!(shared_a.unpack(), sample());
        assert_eq!(shared_b.get("name"), None);
        let hash = |v: &PackedValue| {
            use std::hash::{Hash, Hasher};
            let mut h = std::hash::DefaultHasher::new();
            v.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&shared_a), hash(&a));
        assert!(PackedValue::in_buffer(&buf, cut..buf.len() + 1).is_none());
    }

    /// A value that is all of `bytes`, as a store could hand them back.
    fn whole(bytes: Vec<u8>) -> PackedValue {
        let bytes = Bytes::from(bytes);
        PackedValue::in_buffer(&bytes, 0..bytes.len()).unwrap()
    }

    #[test]
    fn bytes_the_packer_cannot_make_unpack_to_null_without_panicking() {
        let p = PackedValue::pack(&sample());
        for cut in 0..p.len() {
            let short = whole(p.as_bytes()[..cut].to_vec());
            let _ = short.unpack();
        }
        assert_eq!(whole(vec![9u8]).unpack(), Value::Null);
        // A count far past the bytes: no huge allocation, no panic.
        assert_eq!(
            whole(vec![SEQ, 0xff, 0xff, 0xff, 0xff, 0x0f]).unpack(),
            Value::Null
        );
    }
}
