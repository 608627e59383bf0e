//! How the layering rules read Rust sources: the paths each file of a
//! crate's src/ names inside the crate (`crate::`, `super::`, `self::`,
//! child modules and the names its `use`s bind; comments, literals and
//! test items left out), resolved to the files that define them, and the
//! import graph and its cycles over those files. A reader of text, not a
//! compiler: macros are not expanded. layering.rs holds the rules.

use std::collections::BTreeMap;

/// A source text with its comments (doc comments too), string and
/// character literals blanked, newlines kept so that lines still count.
pub(crate) fn code_only(text: &str) -> Vec<char> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::with_capacity(s.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.extend([' ', ' ']);
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.extend([' ', ' ']);
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(s[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (i == 0
                || !is_ident(s[i - 1])
                || (s[i - 1] == 'b' && (i < 2 || !is_ident(s[i - 2]))))
            && matches!(next, Some('"') | Some('#'))
            && {
                let hashes = s[i + 1..].iter().take_while(|c| **c == '#').count();
                s.get(i + 1 + hashes) == Some(&'"')
            }
        {
            let hashes = s[i + 1..].iter().take_while(|c| **c == '#').count();
            let body = i + 2 + hashes;
            let mut end = body;
            while end < s.len()
                && !(s[end] == '"'
                    && s[end + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|c| **c == '#')
                        .count()
                        == hashes)
            {
                end += 1;
            }
            let stop = (end + 1 + hashes).min(s.len());
            out.extend(s[i..stop].iter().map(|c| blank(*c)));
            i = stop;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < s.len() && s[i] != '"' {
                if s[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < s.len() {
                    out.push(blank(s[i]));
                    i += 1;
                }
            }
            if i < s.len() {
                out.push(' ');
                i += 1;
            }
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: '\n', '\'', '\u{..}'.
            out.extend([' ', ' ']);
            i += 2;
            if i < s.len() {
                out.push(' ');
                i += 1;
            }
            while i < s.len() && s[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            if i < s.len() {
                out.push(' ');
                i += 1;
            }
        } else if c == '\'' && s.get(i + 2) == Some(&'\'') {
            out.extend([' ', ' ', ' ']);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Blanks each item that follows a `#[cfg(test)]` (a test module, a
/// test-only `use` or function, a field, an arm or an element): up to its
/// first `;` outside brackets or the end of its first brace group,
/// whichever comes first, and never past a `,` at its own level or the
/// `}` of the block around it (a field or an arm ends there, and what
/// follows it is not test code). Returns the test-only modules declared
/// in files of their own.
fn drop_test_items(code: &mut [char]) -> Vec<String> {
    let mut test_files = Vec::new();
    let attr: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + attr.len() <= code.len() {
        if code[i..i + attr.len()] != attr[..] {
            i += 1;
            continue;
        }
        let mut j = i + attr.len();
        let (mut braces, mut brackets) = (0usize, 0usize);
        let mut stop = code.len();
        while j < code.len() {
            let outside = braces == 0 && brackets == 0;
            match code[j] {
                '}' | ',' if outside => {
                    stop = j;
                    break;
                }
                ';' if outside => {
                    stop = j + 1;
                    break;
                }
                '{' => braces += 1,
                '}' => {
                    braces -= 1;
                    if braces == 0 && brackets == 0 {
                        stop = j + 1;
                        break;
                    }
                }
                '(' | '[' => brackets += 1,
                ')' | ']' => brackets = brackets.saturating_sub(1),
                _ => {}
            }
            j += 1;
        }
        test_files.extend(declared_children(&code[i..stop]));
        for c in &mut code[i..stop] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = stop;
    }
    test_files
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn skip_ws(code: &[char], mut at: usize) -> usize {
    while at < code.len() && code[at].is_whitespace() {
        at += 1;
    }
    at
}

fn word_at(code: &[char], at: usize) -> String {
    code[at.min(code.len())..]
        .iter()
        .take_while(|c| is_ident(**c))
        .collect()
}

/// The word that ends right before `at` (whitespace between skipped).
fn word_before(code: &[char], at: usize) -> (String, usize) {
    let mut end = at;
    while end > 0 && code[end - 1].is_whitespace() {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && is_ident(code[start - 1]) {
        start -= 1;
    }
    (code[start..end].iter().collect(), start)
}

/// A path as written, the name a `use` of it binds, and where its last
/// segment is.
type Tree = (Vec<String>, Option<String>, usize);

/// One use tree (or a plain path) from `at`: each path it names with the
/// name it binds (its last segment, or its `as` alias; `self` in a group
/// binds the group's prefix), and where the tree ends.
fn use_tree(code: &[char], at: usize, prefix: &[String]) -> (Vec<Tree>, usize) {
    let at = skip_ws(code, at);
    match code.get(at) {
        Some('{') => {
            let mut out = Vec::new();
            let mut p = at + 1;
            loop {
                p = skip_ws(code, p);
                if code.get(p) == Some(&'}') {
                    return (out, p + 1);
                }
                let (sub, end) = use_tree(code, p, prefix);
                out.extend(sub);
                p = skip_ws(code, end);
                match code.get(p) {
                    Some(',') => p += 1,
                    Some('}') => return (out, p + 1),
                    _ => return (out, p),
                }
            }
        }
        Some('*') => (vec![(prefix.to_vec(), None, at)], at + 1),
        Some(c) if is_ident(*c) => {
            let w = word_at(code, at);
            let after = skip_ws(code, at + w.chars().count());
            if w == "self" && !prefix.is_empty() {
                return (vec![(prefix.to_vec(), prefix.last().cloned(), at)], after);
            }
            let mut path = prefix.to_vec();
            path.push(w.clone());
            if code.get(after) == Some(&':') && code.get(after + 1) == Some(&':') {
                let next = skip_ws(code, after + 2);
                if code
                    .get(next)
                    .is_some_and(|c| is_ident(*c) || *c == '{' || *c == '*')
                {
                    return use_tree(code, next, &path);
                }
                return (vec![(path, None, at)], after);
            }
            if word_at(code, after) == "as" {
                let alias_at = skip_ws(code, after + 2);
                let alias = word_at(code, alias_at);
                let end = alias_at + alias.chars().count();
                return (vec![(path, Some(alias), at)], end);
            }
            (vec![(path, Some(w), at)], after)
        }
        _ => (vec![(prefix.to_vec(), None, at)], at),
    }
}

/// A path one file names inside the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    /// 1-based.
    pub(crate) line: usize,
    /// From the crate root.
    pub(crate) path: Vec<String>,
    /// The name a `use` binds in the file, if this is one.
    binds: Option<String>,
}

/// The module a file under src/ is: `lib.rs` the crate root, `a/mod.rs`
/// and `a.rs` the module `a`.
fn module_of(file: &str) -> Vec<String> {
    let mut segs: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if segs
        .last()
        .is_some_and(|s| s == "mod" || s == "lib" || s == "main")
    {
        segs.pop();
    }
    segs
}

/// The child modules `code` declares with `mod x;` (the test-only ones
/// were blanked before).
fn declared_children(code: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if (i == 0 || !is_ident(code[i - 1])) && word_at(code, i) == "mod" {
            let name_at = skip_ws(code, i + 3);
            let name = word_at(code, name_at);
            let end = skip_ws(code, name_at + name.chars().count());
            if !name.is_empty() && code.get(end) == Some(&';') {
                out.push(name);
            }
        }
        i += 1;
    }
    out
}

/// Every path the code of `file` (under src/, its comments, literals and
/// test items blanked) names inside the crate: from `crate::`, `super::`,
/// `self::` or a child module it declares, in a `use` (grouped ones
/// expanded, `pub use` too) or in code, resolved from the crate root
/// (`super::` inside an inline module is read as the file's own).
/// `pub(in crate::...)` is a visibility, not a path. A module the file
/// imports by name (`use crate::run;`) is a root in its code too, so
/// `run::b::f()` names `run::b`.
pub(crate) fn crate_paths(file: &str, code: &[char]) -> Vec<Named> {
    let imported = paths_from(file, code, &BTreeMap::new());
    let bound: BTreeMap<String, Vec<String>> = imported
        .into_iter()
        .filter_map(|n| Some((n.binds?, n.path)))
        .collect();
    paths_from(file, code, &bound)
}

/// `crate_paths` with `bound` (a name the file's `use`s bind, and the
/// crate path it stands for) as further roots of paths in code.
fn paths_from(file: &str, code: &[char], bound: &BTreeMap<String, Vec<String>>) -> Vec<Named> {
    let module = module_of(file);
    let children = declared_children(code);
    let mut line_starts = vec![0usize];
    line_starts.extend(
        code.iter()
            .enumerate()
            .filter(|(_, c)| **c == '\n')
            .map(|(i, _)| i + 1),
    );
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if !is_ident(code[i]) || (i > 0 && is_ident(code[i - 1])) {
            i += 1;
            continue;
        }
        let w = word_at(code, i);
        let len = w.chars().count();
        let after = skip_ws(code, i + len);
        let (before, before_at) = word_before(code, i);
        let is_use = before == "use";
        let is_root = matches!(w.as_str(), "crate" | "super" | "self")
            || children.contains(&w)
            || (!is_use && bound.contains_key(&w));
        let continues = i >= 2 && code[i - 1] == ':' && code[i - 2] == ':';
        let is_path = code.get(after) == Some(&':') && code.get(after + 1) == Some(&':');
        if !is_root || continues || !is_path {
            i += len;
            continue;
        }
        let visibility = before == "in"
            && code[..before_at]
                .iter()
                .rposition(|c| !c.is_whitespace())
                .is_some_and(|p| code[p] == '(');
        if visibility {
            i += len;
            continue;
        }
        let (trees, end) = use_tree(code, i, &[]);
        for (raw, binds, last) in trees {
            let mut path = match raw[0].as_str() {
                "crate" => Vec::new(),
                "self" | "super" => module.clone(),
                w if !is_use && !children.contains(&raw[0]) && bound.contains_key(w) => {
                    bound[w].clone()
                }
                _ => {
                    let mut m = module.clone();
                    m.push(raw[0].clone());
                    m
                }
            };
            let mut rest = &raw[1..];
            if raw[0] == "super" {
                path.pop();
                while rest.first().is_some_and(|s| s == "super") {
                    path.pop();
                    rest = &rest[1..];
                }
            }
            path.extend(rest.iter().cloned());
            out.push(Named {
                line: line_starts.partition_point(|s| *s <= last),
                path,
                binds: if is_use { binds } else { None },
            });
        }
        i = end.max(i + len);
    }
    out
}

/// One file under src/ as the graph reads it.
struct Parsed {
    module: Vec<String>,
    named: Vec<Named>,
    /// Its `#[cfg(test)] mod x;` files.
    test_children: Vec<String>,
}

fn parse(file: &str, text: &str) -> Parsed {
    let mut code = code_only(text);
    let test_children = drop_test_items(&mut code);
    Parsed {
        module: module_of(file),
        named: crate_paths(file, &code),
        test_children,
    }
}

/// The file a crate path names: the longest prefix of it that is a
/// file's module; a name that file binds with a `use` is followed to
/// where it was imported from (so a `pub use` in a folder's mod.rs hands
/// its users to the file that defines the name).
fn resolve<'a>(
    modules: &BTreeMap<Vec<String>, &'a str>,
    binds: &BTreeMap<&str, BTreeMap<String, Vec<String>>>,
    path: &[String],
    depth: usize,
) -> Option<&'a str> {
    let k = (0..=path.len())
        .rev()
        .find(|k| modules.contains_key(&path[..*k]))?;
    let file = modules[&path[..k]];
    let bound = path.get(k).and_then(|first| binds.get(file)?.get(first));
    if let Some(target) = bound.filter(|_| depth < 8) {
        let mut through = target.clone();
        through.extend(path[k + 1..].iter().cloned());
        if through != path {
            return resolve(modules, binds, &through, depth + 1).or(Some(file));
        }
    }
    Some(file)
}

/// The import graph between the files of one crate's src/, given as
/// (path under src/, text) pairs: each file, each other file it imports,
/// with the first line that names it. A `mod x;` is no import of x; a
/// test-only module's file is left out.
pub(crate) fn import_graph(
    files: &[(String, String)],
) -> BTreeMap<String, BTreeMap<String, usize>> {
    let parsed: Vec<(&str, Parsed)> = files
        .iter()
        .map(|(f, t)| (f.as_str(), parse(f, t)))
        .collect();
    let test_modules: Vec<Vec<String>> = parsed
        .iter()
        .flat_map(|(_, p)| {
            p.test_children.iter().map(|c| {
                let mut m = p.module.clone();
                m.push(c.clone());
                m
            })
        })
        .collect();
    let parsed: Vec<(&str, Parsed)> = parsed
        .into_iter()
        .filter(|(_, p)| !test_modules.iter().any(|t| p.module.starts_with(t)))
        .collect();
    let modules: BTreeMap<Vec<String>, &str> =
        parsed.iter().map(|(f, p)| (p.module.clone(), *f)).collect();
    let binds: BTreeMap<&str, BTreeMap<String, Vec<String>>> = parsed
        .iter()
        .map(|(f, p)| {
            let b = p
                .named
                .iter()
                .filter_map(|n| Some((n.binds.clone()?, n.path.clone())))
                .collect();
            (*f, b)
        })
        .collect();
    let mut graph = BTreeMap::new();
    for (f, p) in &parsed {
        let edges: &mut BTreeMap<String, usize> = graph.entry(f.to_string()).or_default();
        for n in &p.named {
            let Some(to) = resolve(&modules, &binds, &n.path, 0) else {
                continue;
            };
            if to != *f {
                let line = edges.entry(to.to_string()).or_insert(n.line);
                *line = (*line).min(n.line);
            }
        }
    }
    graph
}

/// The strongly connected sets of two or more files (Tarjan), each
/// sorted, in order of their first file.
fn strong_sets(graph: &BTreeMap<String, BTreeMap<String, usize>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeMap<String, usize>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        out: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            let graph = self.graph;
            for w in graph.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut set = Vec::new();
                while let Some(w) = self.stack.pop() {
                    set.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.out.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out.sort();
    walk.out
}

/// Each cycle of imports between the files given, as its files and the
/// imports that close it (`file:line -> file`).
pub(crate) fn import_cycles(files: &[(String, String)]) -> Vec<String> {
    let graph = import_graph(files);
    strong_sets(&graph)
        .into_iter()
        .map(|set| {
            let edges: Vec<String> = set
                .iter()
                .flat_map(|f| {
                    graph[f]
                        .iter()
                        .filter(|(to, _)| set.contains(to))
                        .map(move |(to, line)| format!("  {f}:{line} -> {to}"))
                })
                .collect();
            format!("{}\n{}", set.join(", "), edges.join("\n"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[(&str, &str)]) -> Vec<(String, String)> {
        files
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect()
    }

    /// The graph as `from:line -> to` lines.
    fn edges(files: &[(String, String)]) -> Vec<String> {
        import_graph(files)
            .into_iter()
            .flat_map(|(from, to)| {
                to.into_iter()
                    .map(move |(to, line)| format!("{from}:{line} -> {to}"))
            })
            .collect()
    }

    /// The cycle checker: two files that import each other (one of them
    /// through its folder's `pub use`) are one cycle, named with the imports
    /// that close it; a third file importing one of them is no part of it.
    #[test]
    fn the_cycle_checker_finds_two_files_importing_each_other() {
        let files = sources(&[
            ("lib.rs", "pub mod a;\n"),
            ("a/mod.rs", "mod b;\nmod c;\nmod d;\npub use b::B;\n"),
            ("a/b.rs", "use crate::a::c::C;\npub struct B(C);\n"),
            ("a/c.rs", "pub struct C;\n\nfn f(_: &super::B) {}\n"),
            ("a/d.rs", "fn g(_: crate::a::c::C) {}\n"),
        ]);
        assert_eq!(
            import_cycles(&files),
            vec!["a/b.rs, a/c.rs\n  a/b.rs:1 -> a/c.rs\n  a/c.rs:3 -> a/b.rs"]
        );
        let three = sources(&[
            ("lib.rs", "mod x;\nmod y;\nmod z;\n"),
            ("x.rs", "use crate::y::Y;\n"),
            ("y.rs", "pub fn y() { crate::z::z() }\n"),
            ("z.rs", "pub use crate::x::X;\n"),
        ]);
        assert_eq!(
            import_cycles(&three),
            vec!["x.rs, y.rs, z.rs\n  x.rs:1 -> y.rs\n  y.rs:1 -> z.rs\n  z.rs:1 -> x.rs"]
        );
    }

    /// Two cycles a reader could miss: one closed through a module imported
    /// by name and used as a path in code, one behind a test-only field (only
    /// the field is test code; the field after it is not).
    #[test]
    fn the_cycle_checker_sees_past_a_module_import_and_a_test_field() {
        let through_module = sources(&[
            (
                "lib.rs",
                "mod a;
    mod run;
    ",
            ),
            (
                "a.rs",
                "use crate::run;
    pub struct A;
    fn f() { run::b::fb(); }
    ",
            ),
            (
                "run/mod.rs",
                "pub mod b;
    ",
            ),
            (
                "run/b.rs",
                "pub fn fb() {}
    fn g(_: crate::a::A) {}
    ",
            ),
        ]);
        assert_eq!(
            import_cycles(&through_module),
            vec!["a.rs, run/b.rs\n  a.rs:3 -> run/b.rs\n  run/b.rs:2 -> a.rs"]
        );
        let after_test_field = sources(&[
            (
                "lib.rs",
                "mod a;
    mod b;
    ",
            ),
            (
                "a.rs",
                "pub struct A {\n    #[cfg(test)]\n    t: u8,\n    pub b: crate::b::B,\n}\n",
            ),
            ("b.rs", "pub struct B(Box<crate::a::A>);\n"),
        ]);
        assert_eq!(
            import_cycles(&after_test_field),
            vec!["a.rs, b.rs\n  a.rs:4 -> b.rs\n  b.rs:1 -> a.rs"]
        );
    }

    /// What the reader counts as an import: `crate::`, `super::`, `self::`
    /// and child-module paths, in a `use` (grouped over lines, `self` in a
    /// group, an alias, a re-export) or in code, each resolved to the longest
    /// prefix that is a file, a name a folder's mod.rs re-exports to the file
    /// it comes from; not a `mod` line, a comment, a string, a visibility, a
    /// test module or a test module's file. An acyclic set passes.
    #[test]
    fn the_cycle_checker_reads_each_form_of_path() {
        let files = sources(&[
            ("lib.rs", "pub mod a;\npub mod d;\n#[cfg(test)]\nmod t;\n"),
            ("t.rs", "use crate::a::c;\n"),
            (
                "a/mod.rs",
                "mod b;\npub mod c;\npub use b::B; // re-exported\n",
            ),
            ("a/b.rs", "pub struct B;\n"),
            (
                "a/c.rs",
                "use crate::{\n    a::B,\n    d::{e::E, self},\n};\nfn f() { self::g(); super::b::B; }\nfn g() {}\n",
            ),
            ("d/mod.rs", "pub mod e;\npub mod f;\n"),
            (
                "d/e.rs",
                "pub struct E;\n// use crate::a::c;\nconst S: &str = \"crate::a::c\";\nconst Q: char = '\"';\nconst R: &str = r#\"crate::a::c\"#;\npub(in crate::d) fn h() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::c::*;\n}\n",
            ),
            ("d/f.rs", "pub(crate) use super::super::a::c as see;\n"),
        ]);
        assert_eq!(
            edges(&files),
            vec![
                "a/c.rs:2 -> a/b.rs",
                "a/c.rs:3 -> d/e.rs",
                "a/c.rs:3 -> d/mod.rs",
                "a/mod.rs:3 -> a/b.rs",
                "d/f.rs:1 -> a/c.rs",
            ]
        );
        assert!(import_cycles(&files).is_empty());
    }
}
