//! The pool of pre-approved machine names in meta-state/aliases.txt.
//!
//! Not a record file but a pool the operator appends to: one free name per
//! line; a spent line is commented out (`# <name> -- instance ...`) by the
//! run that launches a new durable machine. An absent file means no aliases
//! and no error. Validate refuses a free line that could never become a
//! hostname (check/aliases.rs), so the launch that draws it cannot fail on
//! it.

use crate::db::{Db, Tree};

/// The pool's file name inside meta-state/.
pub const FILE: &str = "aliases.txt";

/// The free lines: (1-based line number, name), in file order. Blank lines
/// and `#` lines (spent names, comments) are not free.
pub fn free_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// The pool with its first free line spent for `instance` (a new durable
/// machine named `hostname`): the line becomes
/// `# <alias> -- instance <i> as <hostname> <time> run <run>`. None when no
/// line is free.
pub fn draw(
    text: &str,
    instance: &str,
    hostname: &str,
    time: &str,
    run: &str,
) -> Option<(String, String)> {
    let (line, alias) = free_lines(text).into_iter().next()?;
    let alias = alias.to_string();
    let mut out: Vec<String> = text.lines().map(str::to_string).collect();
    out[line - 1] = format!("# {alias} -- instance {instance} as {hostname} {time} run {run}");
    Some((format!("{}\n", out.join("\n")), alias))
}

/// The line validate logs for a pool that has free names: how many remain.
pub fn remaining_info(db: &dyn Db, tree: Tree) -> Option<String> {
    let file = crate::state::lineage::meta_file(db, tree, FILE)?;
    let n = free_lines(file.text(db)).len();
    (n > 0).then(|| format!("Alias pool: {n} free name(s) remaining in meta-state/{FILE}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_lines_skip_blanks_and_spent_names() {
        let text = "alpha\n\n# beta -- instance web as web-001 2026-01-01 run 3\n  gamma  \n";
        assert_eq!(free_lines(text), vec![(1, "alpha"), (4, "gamma")]);
    }

    #[test]
    fn drawing_spends_the_first_free_line_in_place() {
        let text = "# spent -- instance a as a-001 t run r0\n\nkestrel\nheron\n";
        let (after, alias) = draw(text, "web", "web-001", "2026-12-02T15:53:24Z", "r1").unwrap();
        assert_eq!(alias, "kestrel");
        assert_eq!(
            after,
            "# spent -- instance a as a-001 t run r0\n\n# kestrel -- instance web as web-001 2026-12-02T15:53:24Z run r1\nheron\n"
        );
        assert_eq!(free_lines(&after), vec![(4, "heron")]);
        assert!(draw("# all spent\n", "web", "web-001", "t", "r").is_none());
    }
}
