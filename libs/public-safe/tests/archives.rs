//! Archives: every format issue 18 names is opened and its members
//! scanned; key stores are refused by name; a zip bomb is refused within
//! the budget, not expanded.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::io::{Cursor, Write};
use std::time::{Duration, Instant};

use csis_public_safe::archive::{BOUNDS, Bounds};
use csis_public_safe::{Allow, Finding, scan_bytes, scan_bytes_bounded};

const SECRET: &[u8] = b"token: ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n";

fn found(path: &str, bytes: &[u8]) -> Vec<(String, &'static str)> {
    scan_bytes(path, bytes, &Allow::default())
        .into_iter()
        .map(|Finding { path, rule, .. }| (path, rule))
        .collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
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

fn zip(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buf = Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    for (name, data) in members {
        z.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap();
    buf.into_inner()
}

#[test]
fn every_format_is_opened_and_its_members_scanned() {
    let t = tar("deploy/app.env", SECRET);
    assert_eq!(
        found("release.tar", &t),
        [("release.tar!deploy/app.env".to_string(), "github-token")]
    );
    assert_eq!(
        found("release.tar.gz", &gzip(&t)),
        [("release.tar!gz!deploy/app.env".to_string(), "github-token")]
    );
    let mut xz = Vec::new();
    lzma_rs::xz_compress(&mut Cursor::new(&t), &mut xz).unwrap();
    assert_eq!(
        found("release.tar.xz", &xz),
        [("release.tar!xz!deploy/app.env".to_string(), "github-token")]
    );
    let zst =
        ruzstd::encoding::compress_to_vec(SECRET, ruzstd::encoding::CompressionLevel::Fastest);
    assert_eq!(
        found("notes.txt.zst", &zst),
        [("notes.txt!zst".to_string(), "github-token")]
    );
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
    assert_eq!(
        found("backup.7z", sz.get_ref()),
        [("backup.7z!cfg/app.yml".to_string(), "github-token")]
    );
    let z = zip(&[("inner.tar", &t)]);
    assert_eq!(
        found("bundle.zip", &z),
        [(
            "bundle.zip!inner.tar!deploy/app.env".to_string(),
            "github-token"
        )]
    );
    // Harmless archives pass.
    assert!(found("ok.tar.gz", &gzip(&tar("a.txt", b"hello"))).is_empty());
}

#[test]
fn key_stores_are_refused_by_name() {
    for p in [
        "certs/client.p12",
        "a/b/server.pfx",
        "release.jks",
        "android/app.keystore",
    ] {
        let f = found(p, b"\x30\x82");
        assert_eq!(f, [(p.to_string(), "refused-name")], "{p}");
    }
    assert!(found("certs/README.txt", b"the keystore lives in vault").is_empty());
}

/// 1,024 gzip members of 1 MiB of zeros each, concatenated: 1 GiB behind
/// 1 MiB of file, one logical stream.
fn gigabyte_gzip() -> Vec<u8> {
    let one = gzip(&vec![0u8; 1 << 20]);
    one.repeat(1024)
}

/// 42.zip's shape: 1 MiB of zeros, each level 16 copies of the one
/// below, five levels: 16^5 MiB (1 TiB) expanded, 40 KiB of file.
fn nested_bomb() -> Vec<u8> {
    let mut level = zip(&[("zeros", vec![0u8; 1 << 20].as_slice())]);
    for _ in 0..5 {
        let names: Vec<String> = (0..16).map(|i| format!("{i}.zip")).collect();
        let members: Vec<(&str, &[u8])> = names
            .iter()
            .map(|n| (n.as_str(), level.as_slice()))
            .collect();
        level = zip(&members);
    }
    level
}

/// 1,024 members of 1 MiB of zeros in one zip (each copied raw from one
/// compressed member): 1 GiB declared, 1 MiB of file.
fn wide_bomb() -> Vec<u8> {
    let one = zip(&[("zeros", vec![0u8; 1 << 20].as_slice())]);
    let mut src = zip::ZipArchive::new(Cursor::new(one)).unwrap();
    let mut buf = Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    for i in 0..1024 {
        let member = src.by_index_raw(0).unwrap();
        z.raw_copy_file_rename(member, format!("{i}.bin")).unwrap();
    }
    z.finish().unwrap();
    buf.into_inner()
}

fn refused_in_time(path: &str, bytes: &[u8], limit: Duration) {
    let start = Instant::now();
    let f = found(path, bytes);
    let took = start.elapsed();
    println!("{path}: {} byte(s) refused in {took:?}", bytes.len());
    assert!(
        f.iter().any(|(p, r)| p == path && *r == "archive-bound"),
        "{f:?}"
    );
    assert!(took < limit, "{path}: {took:?}");
}

#[test]
fn a_zip_bomb_is_refused_not_expanded() {
    // Debug builds decode several times slower than release; the bound
    // is what keeps both in time (release: well under a second).
    let limit = if cfg!(debug_assertions) {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(1)
    };
    refused_in_time("plan.gz", &gigabyte_gzip(), limit);
    refused_in_time("42.zip", &nested_bomb(), limit);
    refused_in_time("wide.zip", &wide_bomb(), limit);
}

#[test]
fn the_bounds_are_bytes_members_and_depth() {
    let allow = Allow::default();
    let rules = |b: &[u8], bounds: Bounds| -> Vec<&'static str> {
        scan_bytes_bounded("a.zip", b, &allow, bounds)
            .into_iter()
            .map(|f| f.rule)
            .collect()
    };
    let two = zip(&[("a.txt", b"hello"), ("b.txt", b"world")]);
    assert!(rules(&two, BOUNDS).is_empty());
    let bytes = Bounds {
        total_bytes: 7,
        ..BOUNDS
    };
    assert_eq!(rules(&two, bytes), ["archive-bound"]);
    let members = Bounds {
        members: 1,
        ..BOUNDS
    };
    assert_eq!(rules(&two, members), ["archive-bound"]);
    let nested = zip(&[("in.zip", &two)]);
    let depth = Bounds { depth: 1, ..BOUNDS };
    assert_eq!(rules(&nested, depth), ["archive-bound"]);
    assert!(rules(&nested, BOUNDS).is_empty());
}
