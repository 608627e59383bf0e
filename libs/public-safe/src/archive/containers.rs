//! The archives of many members: zip, tar and 7z. Each member is read
//! within the budget; one that cannot be read (encrypted, a method not
//! decoded here, cut short) is recorded as unread with its name, and the
//! others are still read.

use std::io::Cursor;

use super::{Budget, Expansion, Why};

/// Zip's compression methods by number (APPNOTE 4.4.5), for the finding.
fn zip_method(m: zip::CompressionMethod) -> String {
    use zip::CompressionMethod as M;
    let named = [
        (M::SHRINK, "shrink"),
        (M::REDUCE_1, "reduce"),
        (M::REDUCE_2, "reduce"),
        (M::REDUCE_3, "reduce"),
        (M::REDUCE_4, "reduce"),
        (M::IMPLODE, "implode"),
        (M::DEFLATE64, "deflate64"),
        (M::PKWARE_IMPLODE, "PKWARE DCL implode"),
        (M::BZIP2, "bzip2"),
        (M::LZMA, "LZMA"),
        (M::IBM_ZOS_CMPSC, "IBM z/OS CMPSC"),
        (M::IBM_TERSE, "IBM TERSE"),
        (M::ZSTD_DEPRECATED, "zstd"),
        (M::ZSTD, "zstd"),
        (M::MP3, "MP3"),
        (M::XZ, "xz"),
        (M::JPEG, "JPEG"),
        (M::WAVPACK, "WavPack"),
        (M::PPMD, "PPMd"),
        (M::AES, "AES"),
    ];
    match named.iter().find(|(k, _)| *k == m) {
        Some((_, name)) => (*name).to_string(),
        // The crate shows an unknown method as `Unsupported(N)`: keep N.
        None => m
            .to_string()
            .trim_start_matches("Unsupported(")
            .trim_end_matches(')')
            .to_string(),
    }
}

pub(super) fn zip_members(path: &str, bytes: &[u8], budget: &mut Budget, out: &mut Expansion) {
    // No central directory (cut short, or not a zip at all): nothing in it
    // can be listed, so the whole file is unread.
    let Ok(mut archive) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        out.unread.push((path.to_string(), Why::Corrupt("zip")));
        return;
    };
    for i in 0..archive.len() {
        let listed = archive.name_for_index(i).unwrap_or_default().to_string();
        let name = format!("{path}!{listed}");
        // The raw entry first: flags, method and size, nothing decoded.
        let (dir, encrypted, method, size) = match archive.by_index_raw(i) {
            Ok(m) => (m.is_dir(), m.encrypted(), m.compression(), m.size()),
            Err(_) => {
                out.unread.push((name, Why::Corrupt("zip")));
                continue;
            }
        };
        if dir && size == 0 {
            continue;
        }
        if encrypted {
            out.unread.push((name, Why::Encrypted));
            continue;
        }
        if !zip::SUPPORTED_COMPRESSION_METHODS.contains(&method) {
            out.unread.push((name, Why::Method(zip_method(method))));
            continue;
        }
        if let Err(o) = budget.member(Some(size)) {
            out.over = Some(o);
            return;
        }
        let read = match archive.by_index(i) {
            Ok(mut member) => budget.read(&mut member),
            Err(_) => Err(super::Halt::Broken),
        };
        match read {
            Ok(data) => out.members.push((name, data)),
            Err(h) => {
                if out.halted(name, h, "zip member") {
                    return;
                }
            }
        }
    }
}

pub(super) fn tar_members(path: &str, bytes: &[u8], budget: &mut Budget, out: &mut Expansion) {
    let mut archive = tar::Archive::new(Cursor::new(bytes));
    let Ok(entries) = archive.entries() else {
        out.unread.push((path.to_string(), Why::Corrupt("tar")));
        return;
    };
    // Where the last entry's data ends: an archive ends with a zero block
    // there, or it was cut at a header and lost what followed.
    let mut end: u64 = 0;
    for entry in entries {
        let Ok(mut entry) = entry else {
            // A header that does not parse, or data cut short: nothing
            // after it can be found.
            out.unread.push((path.to_string(), Why::Corrupt("tar")));
            return;
        };
        let size = entry.size();
        end = entry
            .raw_file_position()
            .saturating_add(entry.header().entry_size().unwrap_or(size).div_ceil(512) * 512);
        // Every entry holding data is read, whatever its type (a GNU sparse
        // file, a contiguous file, a vendor type): directories, links and
        // devices hold none.
        if !entry.header().entry_type().is_file() && size == 0 {
            continue;
        }
        if let Err(o) = budget.member(Some(size)) {
            out.over = Some(o);
            return;
        }
        let name = format!(
            "{path}!{}",
            entry
                .path()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        match budget.read(&mut entry) {
            Ok(data) if data.len() as u64 == size => out.members.push((name, data)),
            Ok(_) => out.unread.push((name, Why::Corrupt("tar member"))),
            Err(h) => {
                if out.halted(name, h, "tar member") {
                    return;
                }
            }
        }
    }
    let marker = usize::try_from(end)
        .ok()
        .and_then(|e| bytes.get(e..e.saturating_add(512)));
    if !marker.is_some_and(|b| b.iter().all(|&x| x == 0)) {
        out.unread.push((path.to_string(), Why::Corrupt("tar")));
    }
}

/// A 7z decoder's error as the reason a member was not read.
fn sevenz_why(e: &sevenz_rust2::Error) -> Why {
    use sevenz_rust2::Error as E;
    match e {
        E::PasswordRequired | E::MaybeBadPassword(_) => Why::Encrypted,
        // Without the crate's aes256 feature, the AES coder is a method it
        // does not know.
        E::UnsupportedCompressionMethod(m) if m.to_uppercase().contains("AES") => Why::Encrypted,
        E::UnsupportedCompressionMethod(m) => Why::Method(m.clone()),
        E::ExternalUnsupported => Why::Method("external".to_string()),
        _ => Why::Corrupt("7z"),
    }
}

pub(super) fn sevenz_members(path: &str, bytes: &[u8], budget: &mut Budget, out: &mut Expansion) {
    let password = sevenz_rust2::Password::empty();
    let mut source = Cursor::new(bytes);
    let archive = match sevenz_rust2::Archive::read(&mut source, &password) {
        Ok(a) => a,
        Err(e) => {
            out.unread.push((path.to_string(), sevenz_why(&e)));
            return;
        }
    };
    // The declared sizes first: a member past the budget is refused before
    // anything is decoded.
    let mut declared: u64 = 0;
    for f in &archive.files {
        declared = declared.saturating_add(f.size());
    }
    if declared > budget.bytes {
        out.over = Some(super::Over::Bytes);
        return;
    }
    // Block by block, so a block that cannot be decoded (encrypted, an
    // unknown coder) names its own members and the others are still read.
    for block in 0..archive.blocks.len() {
        let decoder = sevenz_rust2::BlockDecoder::new(1, block, &archive, &password, &mut source);
        let members: Vec<String> = decoder
            .entries()
            .iter()
            .filter(|e| !e.is_directory() && e.has_stream && e.size() > 0)
            .map(|e| format!("{path}!{}", e.name()))
            .collect();
        // Members the closure was given; a broken one stops the block, and
        // every member of the block not read is unread, with the reason.
        let mut seen = 0;
        let mut stop = false;
        let mut broken = false;
        let done = decoder.for_each_entries(&mut |entry, reader| {
            if entry.is_directory() || !entry.has_stream || entry.size() == 0 {
                return Ok(true);
            }
            seen += 1;
            let name = format!("{path}!{}", entry.name());
            if let Err(o) = budget.member(Some(entry.size())) {
                out.over = Some(o);
                stop = true;
                return Ok(false);
            }
            match budget.read(reader) {
                Ok(data) => {
                    out.members.push((name, data));
                    Ok(true)
                }
                Err(h) => {
                    stop = out.halted(name, h, "7z member");
                    broken = !stop;
                    Ok(false)
                }
            }
        });
        if stop {
            return;
        }
        let why = match done {
            Err(e) => sevenz_why(&e),
            Ok(_) if broken => Why::Corrupt("7z"),
            Ok(_) => continue,
        };
        for name in members.into_iter().skip(seen) {
            out.unread.push((name, why.clone()));
        }
    }
}
