//! The pool of pre-approved machine names in meta-state/aliases.txt.
//!
//! Not a record file but a pool the operator appends to: one free name per
//! line; a spent line is commented out (`# <name> -- instance ...`) by the
//! run that launches a new durable machine. An absent file means no aliases
//! and no error. Validate refuses a free line that could never become a
//! hostname, so the launch that draws it cannot fail on it.

use std::collections::BTreeMap;

use csis_model::{Diagnostic, ItemKind};

use crate::db::{Db, Tree};
use crate::load::items::item_index;

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

/// Why a free line cannot be a hostname label, if it cannot.
fn label_problem(name: &str) -> Option<String> {
    let len = name.chars().count();
    if len > 63 {
        return Some(format!(
            "is {len} characters, over the 63 a hostname label allows"
        ));
    }
    let mut bad: Vec<char> = name
        .chars()
        .filter(|c| !(c.is_ascii_alphanumeric() || *c == '-'))
        .collect();
    bad.sort_unstable();
    bad.dedup();
    if !bad.is_empty() {
        let shown: Vec<String> = bad.iter().map(|c| format!("{:?}", c.to_string())).collect();
        return Some(format!(
            "contains [{}], which a hostname may not",
            shown.join(", ")
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("starts or ends with '-', which a hostname label may not".into());
    }
    None
}

/// The line validate logs for a pool that has free names: how many remain.
pub fn remaining_info(db: &dyn Db, tree: Tree) -> Option<String> {
    let file = crate::state::lineage::meta_file(db, tree, FILE)?;
    let n = free_lines(file.text(db)).len();
    (n > 0).then(|| format!("Alias pool: {n} free name(s) remaining in meta-state/{FILE}"))
}

/// The pool's refusals and its warning; nothing when there is no pool.
#[salsa::tracked(returns(ref))]
pub fn alias_pool_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let Some(file) = crate::state::lineage::meta_file(db, tree, FILE) else {
        return Vec::new();
    };
    let instances: Vec<&String> = item_index(db, tree).names(ItemKind::INSTANCES).collect();
    check(file.text(db), |name| {
        instances.iter().any(|i| i.eq_ignore_ascii_case(name))
    })
}

fn check(text: &str, names_an_instance: impl Fn(&str) -> bool) -> Vec<Diagnostic> {
    let free = free_lines(text);
    if free.is_empty() {
        return vec![Diagnostic::warning(format!(
            "alias pool {FILE}: EMPTY -- a new machine launches without an alias; append names to refill"
        ))];
    }
    let mut first_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (line, name) in free {
        let problem = label_problem(name)
            .or_else(|| {
                first_seen
                    .get(&name.to_ascii_lowercase())
                    .map(|_| "repeats an earlier free line".to_string())
            })
            .or_else(|| {
                names_an_instance(name)
                    .then(|| "is a name the configuration already gives an instance".to_string())
            });
        first_seen.entry(name.to_ascii_lowercase()).or_insert(line);
        if let Some(problem) = problem {
            out.push(
                Diagnostic::error(format!(
                    "alias pool {FILE}: line {line}: '{name}' {problem}"
                ))
                .help("edit the free line in meta-state/aliases.txt"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str) -> Vec<String> {
        check(text, |n| n == "web")
            .iter()
            .map(|d| d.message.clone())
            .collect()
    }

    #[test]
    fn free_lines_skip_blanks_and_spent_names() {
        let text = "alpha\n\n# beta -- instance web as web-001 2026-01-01 run 3\n  gamma  \n";
        assert_eq!(free_lines(text), vec![(1, "alpha"), (4, "gamma")]);
    }

    #[test]
    fn each_refusal_names_its_line() {
        let long = "a".repeat(64);
        let text = format!("ok-1\n{long}\nbad_name.x\n-dash\nOK-1\nweb\n");
        assert_eq!(
            messages(&text),
            vec![
                format!(
                    "alias pool aliases.txt: line 2: '{long}' is 64 characters, over the 63 a hostname label allows"
                ),
                "alias pool aliases.txt: line 3: 'bad_name.x' contains [\".\", \"_\"], which a hostname may not".to_string(),
                "alias pool aliases.txt: line 4: '-dash' starts or ends with '-', which a hostname label may not".to_string(),
                "alias pool aliases.txt: line 5: 'OK-1' repeats an earlier free line".to_string(),
                "alias pool aliases.txt: line 6: 'web' is a name the configuration already gives an instance".to_string(),
            ]
        );
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

    #[test]
    fn an_empty_pool_is_a_warning() {
        let d = check("# spent -- instance a as a-001\n", |_| false);
        assert_eq!(d.len(), 1);
        assert!(!d[0].is_error());
        assert_eq!(
            d[0].message,
            "alias pool aliases.txt: EMPTY -- a new machine launches without an alias; append names to refill"
        );
    }
}
