//! A plan kept whole (issue 40): what `csis plan` printed, kept in the
//! cache directory with every question the process asked the machine
//! (`db::system::Recording`: each listing, each file read, with a digest
//! of its answer) and the environment variables its templates looked up.
//! A later process asked the same thing, whose questions all get the same
//! answers, prints the same plan without loading the tree: a job run
//! again, or a commit that changes nothing csis reads, plans in the time
//! it takes to read the tree's files once.
//!
//! Kept only when everything the plan depended on can be asked again:
//! not when it read the clock or the whole environment, ran a process,
//! wrote or locked anything (through the recording), read remote state,
//! or decrypted with an identity (the record never holds what a secret
//! made). The file: [`MAGIC`]; the cache's key (format, csis build,
//! plugins) and the request; the variables; the questions; the output;
//! then the blake3 digest of everything before it. A file that fails any
//! of this is ignored with a notice, and rewritten by the plan that
//! follows.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use csis_model::packed::{read_bytes, read_len, read_str, write_len, write_str};
use rayon::prelude::*;

use crate::db::cache::{checked, ignoring, malformed};
use crate::db::system::{Ask, Probe, ReadAhead, Recording, System};

/// The record's file in the cache directory.
pub const FILE: &str = "plan.record";
const MAGIC: &[u8] = b"csis plan record\n";
const DIGEST: usize = 32;

/// What a plan printed, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Printed {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: u8,
}

/// What the record in a cache directory says for a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Every question answered as before: the plan it printed.
    Same(Printed),
    /// No record, or one of another request, or something it read changed.
    Changed,
    /// A record that cannot be used: the notice to print.
    Ignored(String),
}

/// What a record answers: the command line, the tree's root and the
/// environment variables that shape csis's options (`CSIS_*`, `NO_COLOR`),
/// each in full.
pub fn request(args: &[String], root: &Path, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for a in args {
        out.push_str(&format!("arg {a:?}\n"));
    }
    out.push_str(&format!("root {:?}\n", root.as_os_str()));
    for (k, v) in env {
        if k.starts_with("CSIS_") || k == "NO_COLOR" {
            out.push_str(&format!("env {k:?}={v:?}\n"));
        }
    }
    out
}

/// What the record in `dir` says for `request` in the environment `env`,
/// asking each question the plan it holds asked (on every core) through
/// `asker`, the recording the plan that follows reads through when the
/// record does not hold: the files read here are not read again.
pub fn find(
    asker: &Recording<'_>,
    env: &BTreeMap<String, String>,
    dir: &Path,
    key: &str,
    request: &str,
) -> Found {
    let path = dir.join(FILE);
    let bytes = match asker.map_bytes(&path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Found::Changed,
        // The directory is a file: the cache's own write says so.
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Found::Changed,
        Err(e) => return Found::Ignored(ignoring(&path, &format!("it could not be read ({e})"))),
    };
    let record = match decode(&bytes, key) {
        Ok(record) => record,
        Err(why) => return Found::Ignored(ignoring(&path, &why)),
    };
    if record.request != request {
        return Found::Changed;
    }
    let vars_hold = record
        .vars
        .iter()
        .all(|(k, d)| *d == var_digest(env.get(*k)));
    if !vars_hold {
        return Found::Changed;
    }
    // Each file read into its probe's slot: gathered into the recording
    // only when the record does not hold, so a plan printed again pays
    // for no map of them.
    let read: Vec<std::sync::OnceLock<ReadAhead>> = record
        .probes
        .iter()
        .map(|_| std::sync::OnceLock::new())
        .collect();
    let holds = record.probes.par_iter().zip(&read).all(|(p, slot)| {
        let (holds, got) = asker.holds_ahead(p);
        if let Some(got) = got {
            let _ = slot.set(got);
        }
        holds
    });
    if holds {
        return Found::Same(Printed {
            stdout: record.stdout.to_vec(),
            stderr: record.stderr.to_vec(),
            code: record.code,
        });
    }
    asker.read_ahead(record.probes.into_iter().zip(read).filter_map(|(p, slot)| {
        let (got, digest) = slot.into_inner()?;
        let Ask::ReadSource(max) = p.ask else {
            return None;
        };
        Some((p.path, max, got, digest))
    }));
    Found::Changed
}

/// Keep `printed` in `dir` as the answer to `request`, with the questions
/// it was made from and the variables of `env` it read.
#[allow(clippy::too_many_arguments)]
pub fn keep(
    system: &dyn System,
    env: &BTreeMap<String, String>,
    dir: &Path,
    key: &str,
    request: &str,
    probes: &[Probe],
    vars: &[String],
    printed: &Printed,
) -> io::Result<()> {
    let mut out = Vec::with_capacity(probes.len() * 96 + 4096);
    out.extend_from_slice(MAGIC);
    write_str(key, &mut out);
    write_str(request, &mut out);
    write_len(vars.len(), &mut out);
    for k in vars {
        write_str(k, &mut out);
        out.extend_from_slice(&var_digest(env.get(k.as_str())));
    }
    write_len(probes.len(), &mut out);
    for p in probes {
        let Some(path) = p.path.to_str() else {
            return Err(io::Error::other("a path read is not UTF-8"));
        };
        let (tag, max) = ask_tag(p.ask);
        out.push(tag);
        write_len(max as usize, &mut out);
        write_str(path, &mut out);
        out.extend_from_slice(&p.answer);
    }
    // The output is written from where it is, not copied in: at four
    // times the reference tree the JSON plan alone is 1.7 MB.
    let len = |n: usize| {
        let mut b = Vec::new();
        write_len(n, &mut b);
        b
    };
    let (stdout_len, stderr_len) = (len(printed.stdout.len()), len(printed.stderr.len()));
    let parts: [&[u8]; 6] = [
        &out,
        &stdout_len,
        &printed.stdout,
        &stderr_len,
        &printed.stderr,
        &[printed.code],
    ];
    system.write_replace_streamed(&dir.join(FILE), &mut |w| {
        let mut sum = blake3::Hasher::new();
        for part in parts {
            sum.update(part);
            w.write_all(part)?;
        }
        w.write_all(sum.finalize().as_bytes())
    })
}

/// A variable's value as the record holds it: set or not, and a digest.
fn var_digest(value: Option<&String>) -> [u8; DIGEST] {
    match value {
        Some(v) => *blake3::hash(format!("set {v}").as_bytes()).as_bytes(),
        None => *blake3::hash(b"unset").as_bytes(),
    }
}

fn ask_tag(ask: Ask) -> (u8, u64) {
    match ask {
        Ask::ReadToString => (0, 0),
        Ask::ReadSource(max) => (1, max),
        Ask::Resolve => (2, 0),
        Ask::ListFiles => (3, 0),
        Ask::IsDir => (4, 0),
        Ask::ReadBytes => (5, 0),
        Ask::Digest => (6, 0),
        Ask::Canonicalize => (7, 0),
        Ask::IsSymlink => (8, 0),
        Ask::Modified => (9, 0),
    }
}

fn ask_of(tag: u8, max: u64) -> Option<Ask> {
    Some(match tag {
        0 => Ask::ReadToString,
        1 => Ask::ReadSource(max),
        2 => Ask::Resolve,
        3 => Ask::ListFiles,
        4 => Ask::IsDir,
        5 => Ask::ReadBytes,
        6 => Ask::Digest,
        7 => Ask::Canonicalize,
        8 => Ask::IsSymlink,
        9 => Ask::Modified,
        _ => return None,
    })
}

/// A record as its file holds it: what is only compared or printed is
/// read in place (the output is copied only when the record holds).
struct Record<'a> {
    request: &'a str,
    vars: Vec<(&'a str, [u8; DIGEST])>,
    probes: Vec<Probe>,
    stdout: &'a [u8],
    stderr: &'a [u8],
    code: u8,
}

fn decode<'a>(bytes: &'a [u8], key: &str) -> Result<Record<'a>, String> {
    let (body, mut at) = checked(bytes, MAGIC, "a csis plan record", key)?;
    let request = read_str(body, &mut at).ok_or_else(malformed)?;
    let digest = |at: &mut usize| -> Option<[u8; DIGEST]> {
        let d = body.get(*at..*at + DIGEST)?.try_into().ok()?;
        *at += DIGEST;
        Some(d)
    };
    let count = read_len(body, &mut at).ok_or_else(malformed)?;
    let mut vars = Vec::with_capacity(count.min(body.len()));
    for _ in 0..count {
        let k = read_str(body, &mut at).ok_or_else(malformed)?;
        vars.push((k, digest(&mut at).ok_or_else(malformed)?));
    }
    let count = read_len(body, &mut at).ok_or_else(malformed)?;
    let mut probes = Vec::with_capacity(count.min(body.len()));
    for _ in 0..count {
        let tag = *body.get(at).ok_or_else(malformed)?;
        at += 1;
        let max = read_len(body, &mut at).ok_or_else(malformed)? as u64;
        let ask = ask_of(tag, max).ok_or_else(malformed)?;
        let path = PathBuf::from(read_str(body, &mut at).ok_or_else(malformed)?);
        let answer = digest(&mut at).ok_or_else(malformed)?;
        probes.push(Probe { ask, path, answer });
    }
    let stdout = read_bytes(body, &mut at).ok_or_else(malformed)?;
    let stderr = read_bytes(body, &mut at).ok_or_else(malformed)?;
    let code = *body.get(at).ok_or_else(malformed)?;
    if at + 1 != body.len() {
        return Err(malformed());
    }
    Ok(Record {
        request,
        vars,
        probes,
        stdout,
        stderr,
        code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::system::{OsSystem, Recording};

    fn printed() -> Printed {
        Printed {
            stdout: b"base@local: bake\n".to_vec(),
            stderr: b"error: validation: x\n".to_vec(),
            code: 1,
        }
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A tree of one cfg/ file, and the record of a plan that listed
    /// cfg/, read that file and looked up `USER`.
    fn kept() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        OsSystem
            .write_atomic(&root.join("cfg/a.yml"), "a: 1\n".as_ref(), false)
            .unwrap();
        let rec = Recording::new(&OsSystem);
        let _ = rec.list_files(&root.join("cfg"));
        let _ = rec.read_source(&root.join("cfg/a.yml"), 1 << 20);
        let dir = root.join(".csis/cache");
        let probes = rec.take_probes().unwrap();
        assert_eq!(probes.len(), 2);
        let vars = ["USER".to_string()];
        keep(
            &OsSystem,
            &env(&[("USER", "ana")]),
            &dir,
            "k",
            "plan",
            &probes,
            &vars,
            &printed(),
        )
        .unwrap();
        (tmp, dir)
    }

    #[test]
    fn a_record_answers_while_what_it_read_is_the_same() {
        let (tmp, dir) = kept();
        let ana = env(&[("USER", "ana"), ("HOME", "/h")]);
        let find = |request| find(&Recording::new(&OsSystem), &ana, &dir, "k", request);
        assert_eq!(find("plan"), Found::Same(printed()));
        assert_eq!(find("plan --format json"), Found::Changed);

        let file = tmp.path().join("cfg/a.yml");
        OsSystem
            .write_atomic(&file, "a: 2\n".as_ref(), false)
            .unwrap();
        assert_eq!(find("plan"), Found::Changed);
        OsSystem
            .write_atomic(&file, "a: 1\n".as_ref(), false)
            .unwrap();
        assert_eq!(find("plan"), Found::Same(printed()));
        OsSystem
            .write_atomic(&tmp.path().join("cfg/b.yml"), "b: 1\n".as_ref(), false)
            .unwrap();
        assert_eq!(
            find("plan"),
            Found::Changed,
            "a new file changes the listing"
        );
    }

    #[test]
    fn a_variable_the_plan_looked_up_is_part_of_the_answer() {
        let (_tmp, dir) = kept();
        let find = |env| find(&Recording::new(&OsSystem), &env, &dir, "k", "plan");
        assert_eq!(find(env(&[("USER", "bo")])), Found::Changed);
        assert_eq!(find(env(&[])), Found::Changed);
        assert_eq!(
            find(env(&[("USER", "ana"), ("CI_JOB", "7")])),
            Found::Same(printed())
        );
    }

    #[test]
    fn a_damaged_or_foreign_record_is_ignored_with_a_notice() {
        let (_tmp, dir) = kept();
        let ana = env(&[("USER", "ana")]);
        let path = dir.join(FILE);
        let bytes = OsSystem.read_bytes(&path).unwrap().unwrap();
        let ignored = |why: &str| {
            Found::Ignored(format!(
                "note: ignoring the cache file {}: {why}; this run rebuilds it",
                path.display()
            ))
        };
        assert_eq!(
            find(&Recording::new(&OsSystem), &ana, &dir, "k2", "plan"),
            ignored("it was written by another csis build or plugin set (k, not k2)")
        );
        let damaged = "it is truncated or damaged (its checksum does not match)";
        OsSystem
            .write_atomic(&path, &bytes[..bytes.len() - 5], false)
            .unwrap();
        assert_eq!(
            find(&Recording::new(&OsSystem), &ana, &dir, "k", "plan"),
            ignored(damaged)
        );
        let mut flipped = bytes.clone();
        flipped[MAGIC.len() + 3] ^= 0x10;
        OsSystem.write_atomic(&path, &flipped, false).unwrap();
        assert_eq!(
            find(&Recording::new(&OsSystem), &ana, &dir, "k", "plan"),
            ignored(damaged)
        );
        OsSystem
            .write_atomic(&path, "something else".as_ref(), false)
            .unwrap();
        assert_eq!(
            find(&Recording::new(&OsSystem), &ana, &dir, "k", "plan"),
            ignored("it is not a csis plan record")
        );
        OsSystem.remove_file(&path).unwrap();
        assert_eq!(
            find(&Recording::new(&OsSystem), &ana, &dir, "k", "plan"),
            Found::Changed
        );
    }
}
