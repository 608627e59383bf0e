//! public-safe fails closed (issue 32, defect 4): a file PATH is scanned
//! like a file of the tree, and an archive it cannot read is a finding
//! (`uninspectable-archive`) in `public-safe` and in `run --commit` alike.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::git;
use csis_test_support::plain_tree;

fn csis(root: &Path, args: &[&str]) -> Output {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_csis"));
    crate::support::with_git_identity(
        Command::new(&bin)
            .current_dir(root)
            .arg("--root-dir")
            .arg(root)
            .args(args)
            .env("CSIS_NOW", "1796226804"),
    )
    .output()
    .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

const LEAK: &str = "db:\n  password: \"Orchid!42river\"\n";

/// A zip of one stored member whose general-purpose flag says encrypted
/// (bit 0), written byte by byte: what `zip -e` leaves, as far as a reader
/// that has no password can tell.
fn encrypted_zip(name: &str, data: &[u8]) -> Vec<u8> {
    let n = name.len() as u16;
    let size = (data.len() as u32).to_le_bytes();
    let mut z = Vec::new();
    z.extend(b"PK\x03\x04\x14\x00\x01\x00\x00\x00\x00\x00\x21\x00");
    z.extend([0u8; 4]); // crc-32: never reached without the password
    z.extend(size);
    z.extend(size);
    z.extend(n.to_le_bytes());
    z.extend([0, 0]);
    z.extend(name.as_bytes());
    z.extend(data);
    let central = z.len() as u32;
    z.extend(b"PK\x01\x02\x14\x03\x14\x00\x01\x00\x00\x00\x00\x00\x21\x00");
    z.extend([0u8; 4]);
    z.extend(size);
    z.extend(size);
    z.extend(n.to_le_bytes());
    z.extend([0u8; 12]); // extra, comment, disk, attributes
    z.extend([0u8; 4]); // the local header's offset
    z.extend(name.as_bytes());
    let central_size = z.len() as u32 - central;
    z.extend(b"PK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x00");
    z.extend(central_size.to_le_bytes());
    z.extend(central.to_le_bytes());
    z.extend([0, 0]);
    z
}

#[test]
fn a_file_path_is_scanned_like_a_file_of_the_tree() {
    let t = plain_tree("local-run");
    let r = t.path();
    std::fs::write(r.join("leak.yml"), LEAK).unwrap();
    let out = csis(r, &["public-safe", "leak.yml"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "leak.yml: secret-assignment: passwo\nerror: Refusing leak.yml: material that must not be public -- leak.yml: secret-assignment: passwo (public-safe by construction; allow a value by decision in cfg/_config.yml public_safe.allow)\n"
    );
    let out = csis(r, &["public-safe", "leak.yml", "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"scanned": 1, "findings": [{"path": "leak.yml", "rule": "secret-assignment", "excerpt": "passwo"}]})
    );
    let out = csis(r, &["public-safe", "cfg/_config.yml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "public-safe: 1 file(s) scanned, no findings\n"
    );
}

#[test]
fn a_file_git_ignores_is_scanned_when_named_and_a_missing_path_is_an_error() {
    let t = plain_tree("local-run");
    let r = t.path();
    git(r, &["init", "-q", "-b", "main"]);
    std::fs::write(r.join(".gitignore"), "leak.yml\n").unwrap();
    std::fs::write(r.join("leak.yml"), LEAK).unwrap();
    let out = csis(r, &["public-safe", "leak.yml"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("leak.yml: secret-assignment: passwo\n"),
        "{}",
        stderr(&out)
    );
    let out = csis(r, &["public-safe", "no-such.yml"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "error: public-safe: {}: no such file or directory; nothing was scanned\n",
            r.join("no-such.yml").display()
        )
    );
}

#[test]
fn an_encrypted_zip_is_an_uninspectable_archive_finding() {
    let t = plain_tree("local-run");
    let r = t.path();
    let zip = encrypted_zip("db.env", LEAK.as_bytes());
    std::fs::write(r.join("backup.zip"), &zip).unwrap();
    let line = "backup.zip!db.env: uninspectable-archive: encrypted";
    let out = csis(r, &["public-safe", "backup.zip"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with(&format!("{line}\n")), "{err}");
    assert!(err.contains(&format!("error: Refusing backup.zip: material that must not be public -- {line} (public-safe by construction; allow a value by decision in cfg/_config.yml public_safe.allow); an archive public-safe cannot read is refused: keep it out of the tree, store it unencrypted as zip (stored or deflate), gzip, tar, xz, zstd or 7z, or accept it by decision with a `path:<glob>` entry in public_safe.allow\n")), "{err}");
    // The tree scan refuses it the same way.
    let out = csis(r, &["public-safe"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).starts_with(&format!("{line}\n")));
    let out = csis(r, &["public-safe", "--format", "sarif"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let result = &v["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "uninspectable-archive");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "backup.zip"
    );
    // Accepted by decision, by path.
    std::fs::write(
        r.join("cfg/_config.yml"),
        format!(
            "{}\npublic_safe:\n  allow: [\"path:backup.zip\"]\n",
            std::fs::read_to_string(r.join("cfg/_config.yml")).unwrap()
        ),
    )
    .unwrap();
    let out = csis(r, &["public-safe", "backup.zip"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn explain_lists_uninspectable_archive_and_each_finding_says_why() {
    let t = plain_tree("local-run");
    let r = t.path();
    let out = csis(r, &["public-safe", "--explain", "uninspectable-archive"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).starts_with("uninspectable-archive: An archive, or an archive member, the scanner cannot read: encrypted, an unsupported compression method"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("\n  layer: hard: applies everywhere"));
    std::fs::write(r.join("backup.zip"), encrypted_zip("db.env", b"x")).unwrap();
    let out = csis(
        r,
        &["public-safe", "--explain", "uninspectable-archive", "."],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stdout(&out).ends_with("\nbackup.zip!db.env: encrypted\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn run_commit_refuses_an_uninspectable_archive_and_stages_nothing() {
    let t = plain_tree("local-run");
    let r = t.path();
    git(r, &["init", "-q", "-b", "main"]);
    git(r, &["add", "-A"]);
    git(r, &["commit", "-q", "-m", "the tree"]);
    std::fs::create_dir_all(r.join("meta-state")).unwrap();
    std::fs::write(
        r.join("meta-state/backup.zip"),
        encrypted_zip("db.env", LEAK.as_bytes()),
    )
    .unwrap();
    let out = csis(r, &["run", "storage", "--commit"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error: Refusing the run's meta-state commit: material that must not be public -- meta-state/backup.zip!db.env: uninspectable-archive: encrypted (public-safe by construction"), "{err}");
    assert_eq!(git(r, &["diff", "--cached", "--name-only"]), "");
    assert_eq!(git(r, &["log", "--format=%s"]).lines().count(), 1);
}

/// CRC-32 (IEEE), for the gzip trailer.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A gzip of one stored deflate block: binary (0x8b), so git's output as
/// text would not carry it.
fn gzip(data: &[u8]) -> Vec<u8> {
    let n = data.len() as u16;
    let mut g = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1];
    g.extend(n.to_le_bytes());
    g.extend((!n).to_le_bytes());
    g.extend(data);
    g.extend(crc32(data).to_le_bytes());
    g.extend((data.len() as u32).to_le_bytes());
    g
}

#[test]
fn the_staged_scan_reads_binary_blobs_byte_for_byte() {
    let t = plain_tree("local-run");
    let r = t.path();
    git(r, &["init", "-q", "-b", "main"]);
    std::fs::write(
        r.join("notes.gz"),
        gzip(b"token: ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n"),
    )
    .unwrap();
    git(r, &["add", "notes.gz"]);
    let out = csis(r, &["public-safe", "--staged"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("notes!gz: github-token: ghp_AB\n"),
        "{}",
        stderr(&out)
    );
    // Changed on disk after staging: the staged blob cannot be read.
    std::fs::write(r.join("notes.gz"), gzip(b"clean\n")).unwrap();
    let out = csis(r, &["public-safe", "--staged"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("notes.gz: uninspectable-archive: staged content is not text and differs from the working tree (stage the file as it is on disk)\n"),
        "{}",
        stderr(&out)
    );
    git(r, &["add", "notes.gz"]);
    let out = csis(r, &["public-safe", "--staged"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_file_that_cannot_be_read_is_an_error_not_a_file_skipped() {
    let t = plain_tree("local-run");
    let r = t.path();
    // A symlink to itself exists and cannot be read (as root, unlike a
    // file without permissions).
    std::os::unix::fs::symlink("loop.yml", r.join("loop.yml")).unwrap();
    let out = csis(r, &["public-safe"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("error: public-safe: cannot read loop.yml: "),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).ends_with("; a file that cannot be read is not passed\n"),
        "{}",
        stderr(&out)
    );
}
