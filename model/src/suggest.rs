//! "Did you mean ...?": the closest of the names that exist to a name that
//! does not, when it is close enough to be a slip of the keyboard.

/// The candidate nearest to `word` by edit distance (case-insensitive),
/// when at most a third of `word`'s length (and at least one edit) away;
/// the first of equally near ones.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    let word = word.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = distance(&word, &c.to_lowercase());
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `; did you mean '<name>'?` when a candidate is one slip from `word`,
/// else nothing: the tail every refusal of an unknown name ends with.
pub fn hint<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(word, candidates)
        .map(|m| format!("; did you mean '{m}'?"))
        .unwrap_or_default()
}

/// The sentence for a reference to a name nothing declares: `<referrer> names <what> '<value>', which
/// is not declared (declared: [...])`, then `; did you mean '<name>'?` when
/// a declared name is one slip away.
pub fn undeclared<'a>(
    referrer: &str,
    what: &str,
    value: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    let hint = hint(value, names.iter().copied());
    format!(
        "{referrer} names {what} '{value}', which is not declared (declared: [{}]){hint}",
        names.join(", ")
    )
}

/// Edit distance in characters, a swap of two neighbours counting as one
/// edit (optimal string alignment): `bsae` is one slip from `base`.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_names_are_suggested_far_ones_are_not() {
        let lifecycles = ["all", "identity", "storage", "base-image", "instance-image"];
        assert_eq!(did_you_mean("al", lifecycles), Some("all"));
        assert_eq!(did_you_mean("storgae", lifecycles), Some("storage"));
        assert_eq!(did_you_mean("Base-Imgae", lifecycles), Some("base-image"));
        assert_eq!(did_you_mean("bogus", lifecycles), None);
        assert_eq!(did_you_mean("bsae", ["base", "web"]), Some("base"));
        assert_eq!(
            did_you_mean("scrpit", ["run", "script", "name"]),
            Some("script")
        );
        assert_eq!(did_you_mean("x", std::iter::empty()), None);
    }

    #[test]
    fn edit_distance() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
        assert_eq!(distance("bsae", "base"), 1);
    }
}
