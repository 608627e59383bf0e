//! What every kept unit of a file's checks (`kept_users`,
//! `kept_instances`) is computed under besides its key: the environment
//! variables the writing process had looked up, with a digest of their
//! values then (a superset of those the file's templates read), and
//! whether anything may be kept of this tree at all.

use csis_model::packed::{read_len, read_str, write_len, write_str};

use crate::db::system::digest_parts;
use crate::db::{Db, Tree};

/// The variables a unit was kept under, and the digest of their values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeptEnv {
    vars: Vec<String>,
    values: [u8; 32],
}

impl KeptEnv {
    /// `vars` as this process sees them.
    pub(crate) fn now(db: &dyn Db, tree: Tree, vars: Vec<String>) -> KeptEnv {
        let values = values(db, tree, &vars);
        KeptEnv { vars, values }
    }

    /// What a unit this process computed is kept under: every variable
    /// it looked up; `None` when it read the clock or the whole
    /// environment, and nothing of it may be kept. Asked once the unit's
    /// contents are computed: reads are noted as they happen.
    pub(crate) fn of_process(db: &dyn Db, tree: Tree) -> Option<KeptEnv> {
        let reads = db.cache()?.env_reads();
        if reads.read_clock() {
            return None;
        }
        Some(KeptEnv::now(db, tree, reads.vars()?))
    }

    /// Whether every variable has the value it had when the unit was kept.
    /// Each is read as a template's lookup is, and so noted: a unit kept
    /// later in this process (the world's files, `load::kept_world`) is
    /// then kept under the variables of the units it took unread too (a
    /// users file's, whose users it never structured).
    /// engine/tests/kept_world.rs fails when they are read unnoted.
    pub(crate) fn holds(&self, db: &dyn Db, tree: Tree) -> bool {
        self.values == values(db, tree, &self.vars)
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        write_len(self.vars.len(), out);
        for var in &self.vars {
            write_str(var, out);
        }
        out.extend_from_slice(&self.values);
    }

    pub(crate) fn read(bytes: &[u8], at: &mut usize) -> Option<KeptEnv> {
        let n = read_len(bytes, at)?;
        let mut vars = Vec::with_capacity(n.min(bytes.len()));
        for _ in 0..n {
            vars.push(read_str(bytes, at)?.to_string());
        }
        let values = bytes.get(*at..*at + 32)?.try_into().ok()?;
        *at += 32;
        Some(KeptEnv { vars, values })
    }
}

/// A run with overlays or `--undeclare` changes items for itself alone:
/// nothing of it is kept or taken.
pub(crate) fn keyable(db: &dyn Db, tree: Tree) -> bool {
    tree.overlays(db).is_empty() && tree.undeclare(db).is_empty()
}

/// The digest of the values of `vars` (an unset one differs from every
/// value).
fn values(db: &dyn Db, tree: Tree, vars: &[String]) -> [u8; 32] {
    digest_parts(vars.iter().flat_map(|var| {
        let value = crate::db::reads::env_var(db, tree, var);
        [
            var.as_bytes(),
            if value.is_some() { b"set" } else { b"unset" },
            value.map_or(&b""[..], |v| v.as_bytes()),
        ]
    }))
}

#[cfg(test)]
impl KeptEnv {
    /// Two variables and a made-up digest, for the units' own tests.
    pub(crate) fn now_for_test() -> KeptEnv {
        KeptEnv {
            vars: vec!["HOME".into(), "USER".into()],
            values: [7; 32],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_reads_back_as_written_and_a_short_one_not_at_all() {
        let env = KeptEnv::now_for_test();
        let mut bytes = Vec::new();
        env.write(&mut bytes);
        let mut at = 0;
        assert_eq!(KeptEnv::read(&bytes, &mut at), Some(env));
        assert_eq!(at, bytes.len());
        assert_eq!(KeptEnv::read(&bytes[..bytes.len() - 1], &mut 0), None);
    }
}
