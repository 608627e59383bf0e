//! The value patterns of the reference (names, versions, sizes, paths,
//! package globs), each compiled once on first use.

use std::sync::OnceLock;

use regex::Regex;

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| {
        #[allow(clippy::unwrap_used)]
        Regex::new(pattern).unwrap()
    })
}

macro_rules! pattern {
    ($name:ident, $re:expr) => {
        pub(super) fn $name() -> &'static Regex {
            static CELL: OnceLock<Regex> = OnceLock::new();
            re(&CELL, $re)
        }
    };
}

pattern!(image_name_re, r"^[a-zA-Z0-9]([a-zA-Z0-9\-_]*[a-zA-Z0-9])?$");
pattern!(
    version_re,
    r"^[0-9]+(\.([0-9]+|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)){0,2}(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
);
pattern!(package_glob_re, r"^[A-Za-z0-9][A-Za-z0-9+_.:~*?\[\]-]*$");

/// A package name, or a glob over names: the reference's replaceKernel note
/// says a package "accepts the same glob wildcards as an ordinary
/// systemConfig package (`*`, `?`, `[...]`)". It starts with a letter or
/// digit (so a glob-only `*` is refused), and every `[` opens a non-empty
/// class closed by `]` (no nesting, no stray `]`).
pub(super) fn is_package_glob(s: &str) -> bool {
    if !package_glob_re().is_match(s) {
        return false;
    }
    let mut open: Option<usize> = None;
    for (i, c) in s.char_indices() {
        match (c, open) {
            ('[', None) => open = Some(i),
            ('[', Some(_)) => return false,
            (']', Some(o)) if i > o + 1 => open = None,
            (']', _) => return false,
            _ => {}
        }
    }
    open.is_none()
}
pattern!(offset_re, r"^-?[1-9][0-9]*(KiB|MiB|GiB|K|M|G|KB|MB|GB)$");
pattern!(
    size_re,
    r"^[1-9][0-9]*(KiB|MiB|GiB|TiB|K|M|G|T|KB|MB|GB|TB)$"
);
pattern!(script_name_re, r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$");
pattern!(script_final_re, r"^/[A-Za-z0-9._@%+/-]*[A-Za-z0-9._@%+-]$");
pattern!(arg_re, r"^[A-Za-z0-9._@%+:/=,-]{1,256}$");
pattern!(env_value_re, r"^[A-Za-z0-9._@%+:/=,-]{0,256}$");
pattern!(env_name_re, r"^[A-Za-z_][A-Za-z0-9_]{0,63}$");
pattern!(user_name_re, r"^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,31}$");
pattern!(dkms_module_re, r"^[A-Za-z0-9_.+-]+/[A-Za-z0-9_.+~-]+$");
pattern!(
    hostname_re,
    r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
);
pattern!(uri_scheme_re, r"^[A-Za-z][A-Za-z0-9+.-]*:");
pattern!(sha256_re, r"^[0-9a-fA-F]{64}$");
pattern!(
    modules_re,
    r"^[A-Za-z0-9_][A-Za-z0-9_.-]*( [A-Za-z0-9_][A-Za-z0-9_.-]*)*$"
);
pattern!(iface_re, r"^[a-zA-Z0-9][a-zA-Z0-9._-]{0,14}$");
