//! The alias pool's refusals (meta-state/aliases.txt): a free line that
//! could never become a hostname label, one that repeats an earlier free
//! line or names a declared instance is refused, so the launch that draws
//! it cannot fail on it; an empty pool is a warning. The pool's format and
//! drawing from it are state/alias_pool.rs's.

use std::collections::BTreeMap;

use csis_model::{Diagnostic, ItemKind};

use crate::db::{Db, Tree};
use crate::load::items::item_index;
use crate::state::alias_pool::{FILE, free_lines};

/// The pool's refusals and its warning; nothing when there is no pool.
#[salsa::tracked(returns(ref))]
pub fn alias_pool_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let Some(file) = crate::state::lineage::meta_file(db, tree, FILE) else {
        return Vec::new();
    };
    let instances: Vec<&str> = item_index(db, tree).names(ItemKind::INSTANCES).collect();
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
