//! Archives: zip, gzip, tar (and tar.gz, tar.xz, tar.zst by nesting), xz,
//! zstd and 7z are opened and their members scanned, each with a
//! maintained pure-Rust crate. Every expansion draws on one budget per
//! scanned file: total uncompressed bytes, members and nesting depth. An
//! archive that would go past it is refused (rule `archive-bound`), not
//! expanded: a zip bomb costs at most the budget in time and memory.

use std::io::{Cursor, Read, Write};

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
}

/// What a file is, by its magic bytes (tar by its `ustar` header).
pub fn kind(bytes: &[u8]) -> Option<Kind> {
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
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

    /// Read a member, never more than the bytes left.
    fn read(&mut self, r: &mut dyn Read) -> Result<Vec<u8>, Over> {
        let mut data = Vec::new();
        let n = r
            .take(self.bytes.saturating_add(1))
            .read_to_end(&mut data)
            .unwrap_or(data.len()) as u64;
        if n > self.bytes {
            return Err(Over::Bytes);
        }
        self.bytes -= n;
        Ok(data)
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
/// bytes, or the bound it went past.
pub type Member = (String, Vec<u8>);

/// Expand one archive level. Members come back in order; the first bound
/// crossed ends the expansion with `Err` and what was read so far.
pub fn members(
    path: &str,
    kind: Kind,
    bytes: &[u8],
    depth: usize,
    budget: &mut Budget,
) -> (Vec<Member>, Option<Over>) {
    let mut out = Vec::new();
    if budget.over.is_some() {
        return (out, None);
    }
    if depth >= budget.max_depth {
        return (out, Some(Over::Depth));
    }
    let over = match kind {
        Kind::Zip => zip_members(path, bytes, budget, &mut out),
        Kind::Gzip => single(
            path,
            ".gz",
            "gz",
            budget,
            &mut out,
            |b, w| b.read(&mut flate2::read::MultiGzDecoder::new(w)),
            bytes,
        ),
        Kind::Zstd => single(
            path,
            ".zst",
            "zst",
            budget,
            &mut out,
            |b, w| match ruzstd::decoding::StreamingDecoder::new(w) {
                Ok(mut d) => b.read(&mut d),
                Err(_) => Ok(Vec::new()),
            },
            bytes,
        ),
        Kind::Xz => single(
            path,
            ".xz",
            "xz",
            budget,
            &mut out,
            |b, mut w| {
                let mut sink = Bounded {
                    data: Vec::new(),
                    left: &mut b.bytes,
                };
                match lzma_rs::xz_decompress(&mut w, &mut sink) {
                    Ok(()) => Ok(sink.data),
                    Err(lzma_rs::error::Error::IoError(e)) if e.to_string() == "archive bound" => {
                        Err(Over::Bytes)
                    }
                    Err(_) => Ok(sink.data),
                }
            },
            bytes,
        ),
        Kind::Tar => tar_members(path, bytes, budget, &mut out),
        Kind::SevenZ => sevenz_members(path, bytes, budget, &mut out),
    };
    (out, over)
}

fn single(
    path: &str,
    suffix: &str,
    tag: &str,
    budget: &mut Budget,
    out: &mut Vec<Member>,
    decode: impl FnOnce(&mut Budget, &[u8]) -> Result<Vec<u8>, Over>,
    bytes: &[u8],
) -> Option<Over> {
    if let Err(o) = budget.member(None) {
        return Some(o);
    }
    match decode(budget, bytes) {
        Ok(data) => {
            let inner = path.strip_suffix(suffix).unwrap_or(path);
            out.push((format!("{inner}!{tag}"), data));
            None
        }
        Err(o) => Some(o),
    }
}

fn zip_members(
    path: &str,
    bytes: &[u8],
    budget: &mut Budget,
    out: &mut Vec<Member>,
) -> Option<Over> {
    let Ok(mut archive) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        return None;
    };
    for i in 0..archive.len() {
        let Ok(mut member) = archive.by_index(i) else {
            continue;
        };
        if member.is_dir() {
            continue;
        }
        if let Err(o) = budget.member(Some(member.size())) {
            return Some(o);
        }
        let name = format!("{path}!{}", member.name());
        match budget.read(&mut member) {
            Ok(data) => out.push((name, data)),
            Err(o) => return Some(o),
        }
    }
    None
}

fn tar_members(
    path: &str,
    bytes: &[u8],
    budget: &mut Budget,
    out: &mut Vec<Member>,
) -> Option<Over> {
    let mut archive = tar::Archive::new(Cursor::new(bytes));
    let Ok(entries) = archive.entries() else {
        return None;
    };
    for entry in entries {
        let Ok(mut entry) = entry else {
            break;
        };
        if !entry.header().entry_type().is_file() {
            continue;
        }
        if let Err(o) = budget.member(entry.header().size().ok()) {
            return Some(o);
        }
        let name = format!(
            "{path}!{}",
            entry
                .path()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        match budget.read(&mut entry) {
            Ok(data) => out.push((name, data)),
            Err(o) => return Some(o),
        }
    }
    None
}

fn sevenz_members(
    path: &str,
    bytes: &[u8],
    budget: &mut Budget,
    out: &mut Vec<Member>,
) -> Option<Over> {
    let Ok(mut archive) =
        sevenz_rust2::ArchiveReader::new(Cursor::new(bytes), sevenz_rust2::Password::empty())
    else {
        return None;
    };
    // The declared sizes first: a member past the budget is refused before
    // anything is decoded.
    let mut declared: u64 = 0;
    for f in &archive.archive().files {
        declared = declared.saturating_add(f.size());
    }
    if declared > budget.bytes {
        return Some(Over::Bytes);
    }
    let mut over = None;
    let _ = archive.for_each_entries(|entry, reader| {
        if entry.is_directory() {
            return Ok(true);
        }
        if let Err(o) = budget.member(Some(entry.size())) {
            over = Some(o);
            return Ok(false);
        }
        match budget.read(reader) {
            Ok(data) => {
                out.push((format!("{path}!{}", entry.name()), data));
                Ok(true)
            }
            Err(o) => {
                over = Some(o);
                Ok(false)
            }
        }
    });
    over
}
