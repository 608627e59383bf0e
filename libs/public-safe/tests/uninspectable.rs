//! What the scanner cannot read is a finding, never a pass (issue 32):
//! every way an archive or member is given up on comes back as
//! `uninspectable-archive`, naming the archive and member and why. Each
//! archive is built here, by its bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Cursor, Write};

use csis_public_safe::{Allow, refusal, scan_bytes};

const SECRET: &[u8] = b"token: ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n";

fn found(path: &str, bytes: &[u8]) -> Vec<String> {
    scan_bytes(path, bytes, &Allow::default())
        .into_iter()
        .map(|f| f.to_string())
        .collect()
}

/// A zip of stored members (so the data and headers sit where the tests
/// patch them).
fn zip(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buf = Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in members {
        z.start_file(*name, stored).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap();
    buf.into_inner()
}

/// Every offset where a 4-byte signature starts.
fn at(bytes: &[u8], sig: &[u8; 4]) -> Vec<usize> {
    (0..bytes.len().saturating_sub(3))
        .filter(|&i| &bytes[i..i + 4] == sig)
        .collect()
}

/// Set a 16-bit field in every local header (at `local`) and central
/// directory header (at `central`) of a zip.
fn patch(mut z: Vec<u8>, local: usize, central: usize, f: impl Fn(u16) -> u16) -> Vec<u8> {
    for (sig, off) in [(b"PK\x03\x04", local), (b"PK\x01\x02", central)] {
        for i in at(&z, sig) {
            let v = u16::from_le_bytes([z[i + off], z[i + off + 1]]);
            z[i + off..i + off + 2].copy_from_slice(&f(v).to_le_bytes());
        }
    }
    z
}

fn encrypted(z: Vec<u8>) -> Vec<u8> {
    // General purpose flag bit 0: the member is encrypted.
    patch(z, 6, 8, |flags| flags | 1)
}

fn method(z: Vec<u8>, m: u16) -> Vec<u8> {
    patch(z, 8, 10, |_| m)
}

#[test]
fn an_encrypted_zip_member_is_a_finding_naming_it() {
    let z = encrypted(zip(&[("db.env", SECRET)]));
    assert_eq!(
        found("backup.zip", &z),
        ["backup.zip!db.env: uninspectable-archive: encrypted"]
    );
    // Nested, it is named through its archives.
    let outer = zip(&[("inner.zip", &z)]);
    assert_eq!(
        found("outer.zip", &outer),
        ["outer.zip!inner.zip!db.env: uninspectable-archive: encrypted"]
    );
}

#[test]
fn a_zip_member_compressed_with_bzip2_or_lzma_is_a_finding() {
    let two = || zip(&[("a.txt", b"hello"), ("b.txt", SECRET)]);
    assert_eq!(
        found("x.zip", &method(two(), 12)),
        [
            "x.zip!a.txt: uninspectable-archive: unsupported compression method bzip2",
            "x.zip!b.txt: uninspectable-archive: unsupported compression method bzip2"
        ]
    );
    assert_eq!(
        found("x.zip", &method(zip(&[("b.txt", SECRET)]), 14)),
        ["x.zip!b.txt: uninspectable-archive: unsupported compression method LZMA"]
    );
    assert_eq!(
        found("x.zip", &method(zip(&[("b.txt", SECRET)]), 77)),
        ["x.zip!b.txt: uninspectable-archive: unsupported compression method 77"]
    );
}

#[test]
fn a_readable_member_beside_an_unreadable_one_is_still_scanned() {
    let z = zip(&[("a.env", SECRET), ("b.env", SECRET)]);
    // Encrypt the second member only: its local header and its entry in
    // the central directory.
    let mut z = z;
    for sig in [b"PK\x03\x04", b"PK\x01\x02"] {
        let i = at(&z, sig)[1];
        let off = if sig == b"PK\x03\x04" { 6 } else { 8 };
        z[i + off] |= 1;
    }
    assert_eq!(
        found("two.zip", &z),
        [
            "two.zip!a.env: github-token: ghp_AB",
            "two.zip!b.env: uninspectable-archive: encrypted"
        ]
    );
}

#[test]
fn a_truncated_or_corrupt_zip_is_a_finding() {
    let z = zip(&[("db.env", SECRET)]);
    assert_eq!(
        found("cut.zip", &z[..z.len() / 2]),
        ["cut.zip: uninspectable-archive: truncated or corrupt zip"]
    );
    // A byte of the member changed: its checksum fails on reading.
    let mut bad = z.clone();
    let i = at(&bad, b"ghp_").into_iter().next().unwrap();
    bad[i] = b'X';
    assert_eq!(
        found("bad.zip", &bad),
        ["bad.zip!db.env: uninspectable-archive: truncated or corrupt zip member"]
    );
}

#[test]
fn bzip2_and_lzip_files_are_findings_by_their_magic_bytes() {
    // `bzip2` of "token: hello\n", and an lzip header with no stream.
    let bz2 = hex(
        "425a68393141592653591d1332b40000065980001040000010024d8400200031003021a0622b5c7b4a01bf1772453850901d1332b4",
    );
    assert_eq!(
        found("notes.txt.bz2", &bz2),
        ["notes.txt.bz2: uninspectable-archive: unsupported archive format bzip2"]
    );
    let lz = [b"LZIP\x01\x0c".as_slice(), &[0x00, 0x3a, 0x1d, 0x09]].concat();
    assert_eq!(
        found("notes.txt.lz", &lz),
        ["notes.txt.lz: uninspectable-archive: unsupported archive format lzip"]
    );
    // Inside a zip, a bzip2 member is named through the zip.
    assert_eq!(
        found("b.zip", &zip(&[("n.bz2", &bz2)])),
        ["b.zip!n.bz2: uninspectable-archive: unsupported archive format bzip2"]
    );
    // Text that merely starts like one is text.
    assert!(found("a.txt", b"BZh9 is a bzip2 header; LZIP too").is_empty());
    for (magic, name) in [
        (&[0x1f, 0x9d, 0x90][..], "compress (.Z)"),
        (&[0x04, 0x22, 0x4d, 0x18, 0x64], "lz4"),
        (b"Rar!\x1a\x07\x01\x00", "rar"),
        (b"MSCF\0\0\0\0\x10", "cab"),
    ] {
        assert_eq!(
            found("f", magic),
            [format!(
                "f: uninspectable-archive: unsupported archive format {name}"
            )]
        );
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn truncated_streams_are_findings_not_shorter_members() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(SECRET).unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(
        found("log.txt.gz", &gz[..gz.len() - 6]),
        ["log.txt.gz: uninspectable-archive: truncated or corrupt gzip stream"]
    );
    let mut xz = Vec::new();
    lzma_rs::xz_compress(&mut Cursor::new(SECRET), &mut xz).unwrap();
    assert_eq!(
        found("a.xz", &xz[..xz.len() - 8]),
        ["a.xz: uninspectable-archive: truncated or corrupt xz stream"]
    );
    let zst =
        ruzstd::encoding::compress_to_vec(SECRET, ruzstd::encoding::CompressionLevel::Fastest);
    assert_eq!(
        found("a.zst", &zst[..6]),
        ["a.zst: uninspectable-archive: truncated or corrupt zstd stream"]
    );
}

fn tar(name: &str, data: &[u8]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    b.append_data(&mut h, name, data).unwrap();
    b.into_inner().unwrap()
}

#[test]
fn a_truncated_tar_is_a_finding() {
    let t = tar("app.env", &[b"x".repeat(600).as_slice(), SECRET].concat());
    // Cut in the member's data.
    assert_eq!(
        found("r.tar", &t[..512 + 300]),
        [
            "r.tar!app.env: uninspectable-archive: truncated or corrupt tar member",
            "r.tar: uninspectable-archive: truncated or corrupt tar"
        ]
    );
    // Cut after the member, before the end-of-archive blocks: what
    // followed is lost.
    assert_eq!(
        found("r.tar", &t[..512 + 1024]),
        [
            "r.tar!app.env: github-token: ghp_AB",
            "r.tar: uninspectable-archive: truncated or corrupt tar"
        ]
    );
    // Whole, it is read.
    assert_eq!(found("r.tar", &t), ["r.tar!app.env: github-token: ghp_AB"]);
}

#[test]
fn a_truncated_7z_is_a_finding() {
    let mut sz = Cursor::new(Vec::new());
    {
        let mut w = sevenz_rust2::ArchiveWriter::new(&mut sz).unwrap();
        w.push_archive_entry(
            sevenz_rust2::ArchiveEntry::new_file("cfg/app.yml"),
            Some(SECRET),
        )
        .unwrap();
        w.finish().unwrap();
    }
    let b = sz.into_inner();
    assert_eq!(
        found("b.7z", &b[..b.len() - 10]),
        ["b.7z: uninspectable-archive: truncated or corrupt 7z"]
    );
}

#[test]
fn a_zip_behind_a_script_is_opened() {
    let z = zip(&[("db.env", SECRET)]);
    let sfx = [b"#!/bin/sh\nexec unzip \"$0\"\n".as_slice(), &encrypted(z)].concat();
    assert_eq!(
        found("install.sh", &sfx),
        ["install.sh!db.env: uninspectable-archive: encrypted"]
    );
}

#[test]
fn a_path_allowance_accepts_an_unreadable_archive_by_decision() {
    let z = encrypted(zip(&[("db.env", SECRET)]));
    let allow = Allow::from_entries(&["path:vendor/*.zip".into()]);
    assert!(scan_bytes("vendor/sdk.zip", &z, &allow).is_empty());
    let f = scan_bytes("backup.zip", &z, &Allow::default());
    let r = refusal("the tree", &f);
    assert!(
        r.ends_with("or accept it by decision with a `path:<glob>` entry in public_safe.allow"),
        "{r}"
    );
}
