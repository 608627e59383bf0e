//! Archives: zip, gzip, tar (and tar.gz, tar.xz, tar.zst by nesting), xz,
//! zstd and 7z are opened and their members scanned, each with a
//! maintained pure-Rust crate. Every expansion draws on one budget per
//! scanned file: total uncompressed bytes, members and nesting depth. An
//! archive that would go past it is refused (rule `archive-bound`), not
//! expanded: a zip bomb costs at most the budget in time and memory.
//!
//! What cannot be read is never passed: an encrypted member, a compression
//! method no crate here decodes, a truncated or corrupt archive or stream,
//! and a compressed format csis recognises but does not open (bzip2, lzip,
//! ...) each come back as [`Unread`], which the scanner turns into an
//! `uninspectable-archive` finding (issue 32: the gate refuses what it did
//! not read).

use std::io::{Cursor, Read, Write};

mod containers;

/// The bounds on what one scanned file may expand to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Uncompressed bytes over every member at every depth.
    pub total_bytes: u64,
    /// Members over every archive at every depth.
    pub members: usize,
    /// Archives inside archives: 1 lets a tar.gz's tar be opened.
    pub depth: usize,
}

/// 64 MiB, 10,000 members, four levels: a saved plan or a release tarball
/// fits; a zip bomb does not.
pub const BOUNDS: Bounds = Bounds {
    total_bytes: 64 << 20,
    members: 10_000,
    depth: 4,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Zip,
    Gzip,
    Xz,
    Zstd,
    SevenZ,
    Tar,
    /// A compressed or archive format recognised by its magic bytes that
    /// no crate here decodes: its bytes read as text would hide what it
    /// holds, so the whole file is uninspectable.
    Unsupported(&'static str),
}

/// Formats recognised (by magic bytes) but not opened, with their names.
/// Each magic is long or binary enough that no text file starts with it.
const UNSUPPORTED: [(&[u8], &str); 7] = [
    (b"LZIP\x01", "lzip"),
    (b"LZIP\x00", "lzip"),
    (&[0x1f, 0x9d], "compress (.Z)"),
    (&[0x04, 0x22, 0x4d, 0x18], "lz4"),
    (b"Rar!\x1a\x07", "rar"),
    (b"MSCF\0\0\0\0", "cab"),
    (b"xar!", "xar"),
];

/// bzip2: `BZh`, the block size digit, then a block or the end-of-stream
/// magic (so a text starting with "BZh9" is still text).
fn bzip2(bytes: &[u8]) -> bool {
    bytes.starts_with(b"BZh")
        && bytes.get(3).is_some_and(|d| (b'1'..=b'9').contains(d))
        && matches!(
            bytes.get(4..10),
            Some([0x31, 0x41, 0x59, 0x26, 0x53, 0x59] | [0x17, 0x72, 0x45, 0x38, 0x50, 0x90])
        )
}

/// A zip with something before it (a self-extracting script or binary):
/// the end-of-central-directory record within its last 64 KiB + 22 bytes.
fn zip_at_end(bytes: &[u8]) -> bool {
    let from = bytes.len().saturating_sub((64 << 10) + 22);
    bytes
        .get(from..)
        .is_some_and(|tail| tail.windows(4).any(|w| w == b"PK\x05\x06"))
}

/// What a file is, by its magic bytes (tar by its `ustar` header).
pub fn kind(bytes: &[u8]) -> Option<Kind> {
    if bytes.starts_with(b"PK\x03\x04")
        || bytes.starts_with(b"PK\x05\x06")
        || bytes.starts_with(b"PK\x07\x08")
    {
        Some(Kind::Zip)
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        Some(Kind::Gzip)
    } else if bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Some(Kind::Xz)
    } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(Kind::Zstd)
    } else if bytes.starts_with(&[b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c]) {
        Some(Kind::SevenZ)
    } else if bytes.get(257..262) == Some(b"ustar") {
        Some(Kind::Tar)
    } else if bzip2(bytes) {
        Some(Kind::Unsupported("bzip2"))
    } else if let Some((_, name)) = UNSUPPORTED.iter().find(|(m, _)| bytes.starts_with(m)) {
        Some(Kind::Unsupported(name))
    } else if zip_at_end(bytes) {
        Some(Kind::Zip)
    } else {
        None
    }
}

/// Why an expansion stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Over {
    Bytes,
    Members,
    Depth,
}

impl std::fmt::Display for Over {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Over::Bytes => "bytes",
            Over::Members => "members",
            Over::Depth => "depth",
        })
    }
}

/// Why a member, or a whole archive, could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// Encrypted (zip's flag bit 0, a 7z AES coder).
    Encrypted,
    /// A compression method no crate here decodes, by name.
    Method(String),
    /// The archive or stream ends early or does not decode (the format).
    Corrupt(&'static str),
    /// A format recognised but not opened (bzip2, lzip, ...).
    Format(&'static str),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Encrypted => f.write_str("encrypted"),
            Why::Method(m) => write!(f, "unsupported compression method {m}"),
            Why::Corrupt(what) => write!(f, "truncated or corrupt {what}"),
            Why::Format(what) => write!(f, "unsupported archive format {what}"),
        }
    }
}

/// A member (`archive!member`) or a whole archive (its path) not read.
pub type Unread = (String, Why);

/// Why a read stopped: a bound, or the data itself.
pub(crate) enum Halt {
    Over(Over),
    /// The decoder or the archive failed mid-member: what was read is not
    /// the member.
    Broken,
}

/// The budget left for one scanned file.
pub struct Budget {
    bytes: u64,
    members: usize,
    max_depth: usize,
    /// The first bound crossed: the whole file is refused and nothing more
    /// is expanded.
    pub over: Option<Over>,
}

impl Budget {
    pub fn new(b: Bounds) -> Budget {
        Budget {
            bytes: b.total_bytes,
            members: b.members,
            max_depth: b.depth,
            over: None,
        }
    }

    fn member(&mut self, declared: Option<u64>) -> Result<(), Over> {
        if self.members == 0 {
            return Err(Over::Members);
        }
        self.members -= 1;
        match declared {
            Some(n) if n > self.bytes => Err(Over::Bytes),
            _ => Ok(()),
        }
    }

    /// Read a member, never more than the bytes left. A read error (a
    /// checksum, a stream cut short) is [`Halt::Broken`], never a shorter
    /// member.
    fn read(&mut self, r: &mut dyn Read) -> Result<Vec<u8>, Halt> {
        let mut data = Vec::new();
        let read = r.take(self.bytes.saturating_add(1)).read_to_end(&mut data);
        let n = data.len() as u64;
        if n > self.bytes {
            return Err(Halt::Over(Over::Bytes));
        }
        self.bytes -= n;
        match read {
            Ok(_) => Ok(data),
            Err(_) => Err(Halt::Broken),
        }
    }
}

/// A writer that refuses to grow past the budget (xz decodes into one).
struct Bounded<'a> {
    data: Vec<u8>,
    left: &'a mut u64,
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() as u64 > *self.left {
            return Err(std::io::Error::other("archive bound"));
        }
        *self.left -= buf.len() as u64;
        self.data.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One member: its name (joined to the archive's as `archive!member`) and
/// bytes.
pub type Member = (String, Vec<u8>);

/// One archive level expanded: the members read, in order; what could not
/// be read, and why; the first bound crossed (which ends the expansion).
#[derive(Default)]
pub struct Expansion {
    pub members: Vec<Member>,
    pub unread: Vec<Unread>,
    pub over: Option<Over>,
}

impl Expansion {
    /// A read that stopped: a bound ends the expansion (true: stop), a
    /// broken member is unread.
    pub(crate) fn halted(&mut self, name: String, halt: Halt, format: &'static str) -> bool {
        match halt {
            Halt::Over(o) => {
                self.over = Some(o);
                true
            }
            Halt::Broken => {
                self.unread.push((name, Why::Corrupt(format)));
                false
            }
        }
    }
}

/// Expand one archive level. Members come back in order; the first bound
/// crossed ends the expansion with what was read so far.
pub fn members(
    path: &str,
    kind: Kind,
    bytes: &[u8],
    depth: usize,
    budget: &mut Budget,
) -> Expansion {
    let mut out = Expansion::default();
    if let Kind::Unsupported(name) = kind {
        out.unread.push((path.to_string(), Why::Format(name)));
        return out;
    }
    if budget.over.is_some() {
        return out;
    }
    if depth >= budget.max_depth {
        out.over = Some(Over::Depth);
        return out;
    }
    match kind {
        Kind::Zip => containers::zip_members(path, bytes, budget, &mut out),
        Kind::Gzip => single(path, ".gz", "gz", "gzip stream", budget, &mut out, |b| {
            b.read(&mut flate2::read::MultiGzDecoder::new(bytes))
        }),
        Kind::Zstd => single(path, ".zst", "zst", "zstd stream", budget, &mut out, |b| {
            match ruzstd::decoding::StreamingDecoder::new(bytes) {
                Ok(mut d) => b.read(&mut d),
                Err(_) => Err(Halt::Broken),
            }
        }),
        Kind::Xz => single(path, ".xz", "xz", "xz stream", budget, &mut out, |b| {
            let mut sink = Bounded {
                data: Vec::new(),
                left: &mut b.bytes,
            };
            match lzma_rs::xz_decompress(&mut Cursor::new(bytes), &mut sink) {
                Ok(()) => Ok(sink.data),
                Err(lzma_rs::error::Error::IoError(e)) if e.to_string() == "archive bound" => {
                    Err(Halt::Over(Over::Bytes))
                }
                Err(_) => Err(Halt::Broken),
            }
        }),
        Kind::Tar => containers::tar_members(path, bytes, budget, &mut out),
        Kind::SevenZ => containers::sevenz_members(path, bytes, budget, &mut out),
        Kind::Unsupported(_) => {}
    }
    out
}

/// A single compressed stream (gzip, zstd, xz): one member named
/// `inner!tag`; a stream that does not decode to its end is the whole
/// file unread.
fn single(
    path: &str,
    suffix: &str,
    tag: &str,
    format: &'static str,
    budget: &mut Budget,
    out: &mut Expansion,
    decode: impl FnOnce(&mut Budget) -> Result<Vec<u8>, Halt>,
) {
    if let Err(o) = budget.member(None) {
        out.over = Some(o);
        return;
    }
    match decode(budget) {
        Ok(data) => {
            let inner = path.strip_suffix(suffix).unwrap_or(path);
            out.members.push((format!("{inner}!{tag}"), data));
        }
        Err(h) => {
            out.halted(path.to_string(), h, format);
        }
    }
}
