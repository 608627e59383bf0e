//! Naming rules: safe names, reserved words, guarded config keys.

/// The words that mean "not set" wherever a value is read (OOPS_DEFAULTS).
/// An empty name counts too; `None` is `none` in another case.
pub const RESERVED_WORDS: [&str; 5] = ["default", "self", "none", "empty", "None"];

/// Keys refused in a document's top-level `config:` (INVALID_CONFIG_KEYS).
pub const INVALID_CONFIG_KEYS: [&str; 17] = [
    "self",
    "this",
    "same",
    "runtime",
    "os",
    "default",
    "defaults",
    "any",
    "anything",
    "none",
    "null",
    "",
    "timestamp",
    "date",
    "datetime",
    "config",
    "configuration",
];

/// The reserved word a name spells, in any case or spacing; `Some("")` for
/// an empty name.
pub fn reserved_word(name: &str) -> Option<&'static str> {
    // Every name of a tree is asked: an ASCII name is compared in place,
    // without the two strings the general reading makes.
    let mut ascii = [0u8; 7];
    let mut len = 0;
    for c in name.chars().filter(|c| !c.is_whitespace()) {
        if len == ascii.len() {
            // Longer than every reserved word; lower-casing never shortens.
            return None;
        }
        if !c.is_ascii() {
            return reserved_word_unicode(name);
        }
        ascii[len] = c.to_ascii_lowercase() as u8;
        len += 1;
    }
    if len == 0 {
        return Some("");
    }
    RESERVED_WORDS
        .into_iter()
        .find(|w| w.as_bytes() == &ascii[..len])
}

/// [`reserved_word`] of a name with a non-ASCII letter, which may lower-case
/// to an ASCII one (the Kelvin sign to `k`).
fn reserved_word_unicode(name: &str) -> Option<&'static str> {
    let squeezed: String = name
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_lowercase();
    if squeezed.is_empty() {
        return Some("");
    }
    RESERVED_WORDS.into_iter().find(|w| *w == squeezed)
}

/// Whether a `config:` key is one of the guarded words (any case).
pub fn is_invalid_config_key(key: &str) -> bool {
    let k = key.trim().to_lowercase();
    INVALID_CONFIG_KEYS.contains(&k.as_str())
}

/// Strip whitespace, replace spaces and `:` with `_`, lower-case.
pub fn safe_name(name: &str) -> String {
    as_safe_name(name).into_owned()
}

/// [`safe_name`], borrowed when the name is safe already: most are, and
/// every reference between items is looked up through here.
pub fn as_safe_name(name: &str) -> std::borrow::Cow<'_, str> {
    let safe = |b: u8| b.is_ascii_graphic() && !b.is_ascii_uppercase() && b != b':';
    if name.bytes().all(safe) {
        return std::borrow::Cow::Borrowed(name);
    }
    std::borrow::Cow::Owned(name.trim().replace([' ', ':'], "_").to_lowercase())
}

/// [`safe_name`] with `+ . / \ - @` also replaced by `_`: terraform
/// workspace and state file names.
pub fn super_safe_name(name: &str) -> String {
    safe_name(name).replace(['+', '.', '/', '\\', '-', '@'], "_")
}

/// The first character of `text` that no name, path or mount point may
/// hold: a control character (C0 with TAB and the line breaks, DEL, C1),
/// a line or paragraph separator (U+2028, U+2029) or a byte-order mark.
/// Such a value becomes a directory name, an fstab field, a record key in
/// meta-state or a word of a runner script, where it splits a line, moves
/// the terminal or reads as something else.
pub fn control_char(text: &str) -> Option<char> {
    text.chars()
        .find(|&c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}'))
}

/// Why `value`, read as `what` (`name`, `mount point`, `path`), cannot be
/// used when it holds a control character: the value quoted with the
/// character escaped, and the character's code point.
pub fn control_char_problem(what: &str, value: &str) -> Option<String> {
    let c = control_char(value)?;
    let shown: String = value
        .chars()
        .map(|c| match control_char(c.encode_utf8(&mut [0; 4])) {
            Some(_) => c.escape_debug().to_string(),
            None => c.to_string(),
        })
        .collect();
    Some(format!(
        "{what} '{shown}' holds a control character (U+{:04X}); write it without control characters",
        c as u32
    ))
}

/// Why `value`, a mount point, cannot be written into /etc/fstab: a
/// control character (see [`control_char_problem`]) or whitespace, which
/// splits the fstab line (`UUID=... /srv/my data ext4 ...` mounts at
/// `/srv/my` and reads `data` as the type). Refused rather than escaped
/// as `\040`, so that no writer of an fstab line has to escape it.
pub fn mount_point_problem(value: &str) -> Option<String> {
    if let Some(problem) = control_char_problem("mount point", value) {
        return Some(problem);
    }
    if value.chars().any(char::is_whitespace) {
        return Some(format!(
            "mount point '{value}' holds whitespace, which /etc/fstab cannot hold unescaped; write it without spaces"
        ));
    }
    // The local runtime links a storage at the mount point below the
    // instance's directory: `..` would climb out of it (the one
    // confinement rule's test).
    crate::confine::climbs(value).then(|| {
        format!(
            "mount point '{value}' holds '..', which climbs out of the directory it is mounted under; write the absolute path it means without '..', such as '/srv/data'"
        )
    })
}

/// Why `value`, read as `what` (`first_name`, `gecos`), cannot be part of
/// a gecos (the real-name field of /etc/passwd): `useradd` refuses a
/// `:` (the field separator) and a line break or other control character,
/// and the account is then never created.
pub fn gecos_problem(what: &str, value: &str) -> Option<String> {
    if let Some(c) = control_char(value) {
        return Some(format!(
            "{what} '{}' holds a control character (U+{:04X}), which useradd refuses in a gecos; write it on one line without control characters",
            value.escape_debug(),
            c as u32
        ));
    }
    value.contains(':').then(|| {
        format!(
            "{what} '{value}' holds ':', which useradd refuses in a gecos (it separates /etc/passwd fields); write it without ':'"
        )
    })
}

/// Why `rule`, a sudoers rule, cannot be written as one: sudoers reads
/// one rule per line, so a line break (or any control character) makes
/// the rest a rule of its own or a syntax error that breaks sudo.
pub fn sudo_rule_problem(rule: &str) -> Option<String> {
    let c = control_char(rule)?;
    Some(format!(
        "sudo rule '{}' holds a control character (U+{:04X}); sudoers reads one rule per line: write each rule as its own line without control characters",
        rule.escape_debug(),
        c as u32
    ))
}

/// Why a name or alias cannot be used, if it cannot.
pub fn name_problem(name: &str) -> Option<String> {
    if let Some(c) = control_char(name) {
        return Some(format!(
            "holds a control character (U+{:04X}); write it without control characters",
            c as u32
        ));
    }
    if let Some(word) = reserved_word(name) {
        return Some(if word.is_empty() {
            "may not be empty".to_string()
        } else {
            format!("may not be '{word}'")
        });
    }
    if name.contains('/') || name.contains('\\') {
        return Some("may not contain '/' or '\\'".to_string());
    }
    // A storage or instance name becomes a directory of a store: `..`
    // would be the store's parent, `.` the directory itself. What is left
    // of the one file-name rule after the checks above is exactly this.
    if crate::confine::file_name_problem("name", name).is_some() {
        return Some(
            "may not be '.' or '..', which would name a directory itself or its parent where the name becomes a directory; write a plain name such as 'data-01'"
                .to_string(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_point_that_climbs_is_refused() {
        assert_eq!(
            mount_point_problem("/srv/../../x").as_deref(),
            Some(
                "mount point '/srv/../../x' holds '..', which climbs out of the directory it is mounted under; write the absolute path it means without '..', such as '/srv/data'"
            )
        );
        for fine in ["/srv/data", "/srv/..data", "/a/b..c"] {
            assert_eq!(mount_point_problem(fine), None, "{fine}");
        }
    }

    #[test]
    fn control_characters_are_named_by_code_point() {
        for (text, code) in [
            ("/data\r", "U+000D"),
            ("a\tb", "U+0009"),
            ("\0", "U+0000"),
            ("x\u{7f}", "U+007F"),
            ("x\u{85}", "U+0085"),
            ("\u{2028}", "U+2028"),
            ("\u{feff}x", "U+FEFF"),
        ] {
            let why = control_char_problem("mount point", text).unwrap_or_default();
            assert!(why.contains(code), "{why}");
            assert!(name_problem(text).is_some_and(|p| p.contains(code)));
        }
        assert_eq!(
            control_char_problem("mount point", "/data\r").as_deref(),
            Some(
                "mount point '/data\\r' holds a control character (U+000D); write it without control characters"
            )
        );
        assert_eq!(
            control_char_problem("path", "a\u{2028}b").as_deref(),
            Some(
                "path 'a\\u{2028}b' holds a control character (U+2028); write it without control characters"
            )
        );
        for fine in ["/srv/data", "web-01", "été", "日本", "a b", ""] {
            assert_eq!(control_char(fine), None);
        }
    }

    #[test]
    fn reserved_words_in_any_case_or_spacing() {
        assert_eq!(reserved_word("Default"), Some("default"));
        assert_eq!(reserved_word(" N one "), Some("none"));
        assert_eq!(reserved_word("None"), Some("none"));
        assert_eq!(reserved_word("EMPTY"), Some("empty"));
        assert_eq!(reserved_word(""), Some(""));
        assert_eq!(reserved_word("defaults"), None);
        // Non-ASCII letters lower-case as Unicode says.
        assert_eq!(reserved_word("NONE\u{a0}"), Some("none"));
        assert_eq!(reserved_word("SELF\u{2003}"), Some("self"));
        assert_eq!(reserved_word("dé"), None);
        // Past seven letters nothing is reserved, whatever the case.
        assert_eq!(reserved_word("DefaultX"), None);
        assert_eq!(reserved_word(" d e f a u l t "), Some("default"));
        for name in ["web-01", "Self", "ÉMPTY", "\u{212a}", "empty", "", "  "] {
            let slow = reserved_word_unicode(name);
            assert_eq!(reserved_word(name), slow, "{name:?}");
        }
    }

    #[test]
    fn safe_names() {
        assert_eq!(safe_name(" My Image:v2 "), "my_image_v2");
        // The already-safe fast path and the general one agree.
        for name in [
            "web-01",
            "img_00005",
            "a.b@c",
            "Web",
            "tab\tname",
            "ÄBC",
            "x:y",
            "\u{a0}nb",
            "v\x0btab",
            "",
        ] {
            let general = name.trim().replace([' ', ':'], "_").to_lowercase();
            assert_eq!(safe_name(name), general, "{name:?}");
        }
        assert_eq!(super_safe_name("a.b-c@d+e/f"), "a_b_c_d_e_f");
    }

    #[test]
    fn config_keys_guarded_in_any_case() {
        assert!(is_invalid_config_key("Timestamp"));
        assert!(is_invalid_config_key(""));
        assert!(!is_invalid_config_key("systemuser"));
        assert_eq!(INVALID_CONFIG_KEYS.len(), 17);
    }

    #[test]
    fn a_mount_point_with_whitespace_is_refused() {
        assert_eq!(
            mount_point_problem("/srv/my data").as_deref(),
            Some(
                "mount point '/srv/my data' holds whitespace, which /etc/fstab cannot hold unescaped; write it without spaces"
            )
        );
        assert!(mount_point_problem("/srv/a\u{a0}b").is_some());
        assert!(mount_point_problem("/srv/a\nb").is_some_and(|p| p.contains("U+000A")));
        assert_eq!(mount_point_problem("/srv/data"), None);
    }

    #[test]
    fn a_gecos_part_with_a_colon_or_a_line_break_is_refused() {
        assert_eq!(
            gecos_problem("last_name", "Jo:nes").as_deref(),
            Some(
                "last_name 'Jo:nes' holds ':', which useradd refuses in a gecos (it separates /etc/passwd fields); write it without ':'"
            )
        );
        assert_eq!(
            gecos_problem("last_name", "Jo\nnes").as_deref(),
            Some(
                "last_name 'Jo\\nnes' holds a control character (U+000A), which useradd refuses in a gecos; write it on one line without control characters"
            )
        );
        assert_eq!(gecos_problem("gecos", "Ann O'Neil, ops"), None);
    }

    #[test]
    fn a_sudo_rule_with_a_line_break_is_refused() {
        assert_eq!(
            sudo_rule_problem("ALL=(ALL) ALL\nALL ALL=(ALL) NOPASSWD:ALL").as_deref(),
            Some(
                "sudo rule 'ALL=(ALL) ALL\\nALL ALL=(ALL) NOPASSWD:ALL' holds a control character (U+000A); sudoers reads one rule per line: write each rule as its own line without control characters"
            )
        );
        assert_eq!(
            sudo_rule_problem("ALL=(ALL) NOPASSWD: /bin/a, /bin/b"),
            None
        );
    }
}
