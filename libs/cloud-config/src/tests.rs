//! The reader's rules, each with the message it gives.

use super::*;

/// `line:col level message` per finding.
fn found(text: &str, offline: bool) -> Vec<String> {
    check(text.as_bytes(), offline)
        .into_iter()
        .map(|f| {
            let level = match f.severity {
                Severity::Refused => "error",
                Severity::Skipped => "warning",
            };
            format!("{}:{} {level} {}", f.line, f.col, f.message)
        })
        .collect()
}

#[test]
fn whole_document_refusals() {
    assert_eq!(
        check(b"#cloud-config\nhostname: \xff\n", false)[0].message,
        "user-data is not UTF-8; the whole document is refused"
    );
    assert_eq!(
        found("#cloud-config\n- a\n- b\n", false),
        ["2:1 error the top level is a list, not a mapping; the whole document is refused"]
    );
    assert_eq!(
        found("a: &x [1]\nb: *x\n", false),
        [
            "1:4 error YAML anchors and aliases are refused: nested aliases expand beyond memory, and cloud-config has no use for them; the whole document is refused"
        ]
    );
    assert_eq!(
        found("#!/bin/sh\necho hi\n", false),
        [
            "1:1 warning user-data starting with #! is a script; scripts are not implemented, so nothing happens"
        ]
    );
    assert!(
        found("#cloud-config\n", false).is_empty(),
        "an empty document does nothing"
    );
    assert_eq!(
        found(
            "users:\n  - name: a\n    sudo: ALL=(ALL) NOPASSWD: ALL\n",
            false
        ),
        [
            "3:29 error invalid YAML: mapping values are not allowed in this context: usually a key indented deeper than the keys beside it, or a plain value holding ': ' -- line the key up with its neighbours, or quote the value; the whole document is refused"
        ]
    );
    assert_eq!(
        found("hostname: a\n---\nhostname: b\n", false),
        ["2:1 warning a second YAML document: everything after the first document is ignored"]
    );
}

#[test]
fn unknown_and_not_implemented_keys_are_skipped_and_offline_refuses_them() {
    let text = "colour: blue\npackages: [vim]\n";
    assert_eq!(
        found(text, false),
        [
            "1:1 warning unknown key 'colour'; it is skipped",
            "2:1 warning 'packages' is recognised but not implemented yet; it is skipped",
        ]
    );
    assert!(found(text, true).iter().all(|f| f.contains(" error ")));
}

#[test]
fn accounts() {
    let text = "\
users:
  - default
  - name: ok_user
    lock_passwd: Off
    system: YES
    uid: \"1001\"
    no-log-init: true
  - name: waytoolongnamewaytoolongnamewaytoolong
  - name: bad/name
  - gecos: no name
  - name: ids
    uid: 4294967295
    gid: abc
  - name: flags
    system: sometimes
  - name: grp
    primary-group: \"-wheel\"
    groups: [ok, \"bad group\"]
  - name: dotted.name
    sudo: ALL=(ALL) ALL
  - name: extra
    favourite: tea
";
    assert_eq!(
        found(text, false),
        [
            "2:5 warning users: the entry 'default' is skipped: there is no baked-in default user for it to refer to",
            "7:5 warning users: account 'ok_user': 'no-log-init' is accepted and ignored (a systemd user record has nothing to map it to)",
            "8:11 error users: account name 'waytoolongnamewaytoolongnamewaytoolong' is over 32 characters; the account is skipped",
            "9:11 error users: account name 'bad/name' has characters outside [A-Za-z0-9._-]; the account is skipped",
            "10:5 error users: an account without a name is skipped",
            "12:10 error users: account 'ids': uid 4294967295 is outside 0 to 4294967294; the account is refused",
            "13:10 error users: account 'ids': gid 'abc' is not a number; the account is refused",
            "15:13 error users: account 'flags': system must be a boolean (true/false, yes/no, on/off), not 'sometimes'; the account is refused",
            "17:20 warning users: account 'grp': primary-group '-wheel' begins with a dot or a dash; it is dropped and the account kept",
            "18:13 warning users: account 'grp': group 'bad group' has characters outside [A-Za-z0-9._-]; it is dropped and the account kept",
            "20:11 warning users: account 'dotted.name': a name with a dot gets no sudo grant (sudo skips a drop-in whose file name holds a dot)",
            "22:5 error users: account 'extra': unknown key 'favourite'; the account is refused",
        ]
    );
    assert_eq!(
        found("users:\n  - name: a\n    uid: 65535\n", false),
        [
            "3:10 error users: account 'a': uid 65535 is refused (systemd refuses it, and a refused record fails every account in the seed); the account is refused"
        ]
    );
}

#[test]
fn keys_without_accounts_and_groups() {
    assert_eq!(
        found("ssh_authorized_keys: ssh-ed25519 AAAA a@b\n", false),
        [
            "1:22 warning ssh_authorized_keys go to the first account in users, and there is none; the keys are not installed"
        ]
    );
    assert_eq!(
        found(
            "groups:\n  - admins\n  - devs: [alice, .bob]\n  - \"9 x\"\n",
            false
        ),
        [
            "3:11 warning groups: group 'devs': member '.bob' begins with a dot or a dash; the member is skipped",
            "4:5 error groups: group name '9 x' has characters outside [A-Za-z0-9._-]; the group is skipped",
        ]
    );
}

#[test]
fn hostnames() {
    assert!(found("hostname: web-001.example.com\n", false).is_empty());
    let long = format!("hostname: {}\n", "a".repeat(65));
    assert_eq!(
        found(&long, false),
        [format!(
            "1:11 warning hostname '{}' is over 64 bytes; it is skipped",
            "a".repeat(65)
        )]
    );
    assert_eq!(
        found("fqdn: a..b\nhostname: -a\n", false),
        [
            "1:7 warning fqdn 'a..b' has an empty label; it is skipped",
            "2:11 warning hostname '-a' has a label starting or ending with '-'; it is skipped",
        ]
    );
    assert_eq!(
        found("hostname: web_1\n", false),
        [
            "1:11 warning hostname 'web_1' has characters other than letters, digits, '-' and '.'; it is skipped"
        ]
    );
}

#[test]
fn write_files_entries() {
    let big = "x".repeat(MAX_CARRIED + 1);
    let text = format!(
        "write_files:
  - path: /etc/ok.conf
    permissions: \"0600\"
    owner: root:wheel
  - path: etc/rel
  - path: /etc/../shadow
  - path: /etc/%h
  - path: \"/etc/a\\tb\"
  - path: /etc/perm
    permissions: 0600
  - path: /etc/perm2
    permissions: \"rw\"
  - path: /etc/own
    owner: \"root:-x\"
  - path: /etc/nul
    content: \"a\\0b\"
  - path: /etc/big
    content: {big}
  - path: /etc/app
    append: true
  - content: x
"
    );
    assert_eq!(
        found(&text, false),
        [
            "5:11 error write_files: 'etc/rel': the path must be absolute; the file is skipped",
            "6:11 error write_files: '/etc/../shadow': the path has a '..' component; the file is skipped",
            "7:11 error write_files: '/etc/%h': the path holds %, \\, \" or ' (tmpfiles would expand or decode it); the file is skipped",
            "8:11 error write_files: '/etc/a\tb': the path holds whitespace or a control character; the file is skipped",
            "10:18 error write_files: '/etc/perm': permissions 0600 must be a quoted string of three or four octal digits, such as \"0644\"; the file is skipped",
            "12:18 error write_files: '/etc/perm2': permissions \"rw\" must be a quoted string of three or four octal digits, such as \"0644\"; the file is skipped",
            "14:12 error write_files: '/etc/own': owner 'root:-x': a name begins with a dot or a dash; the file is skipped",
            "16:14 error write_files: '/etc/nul': the content holds a NUL byte; the file is skipped",
            "18:14 error write_files: '/etc/big': the content is 4096 bytes, over the 4095 a file can carry; the file is skipped",
            "20:5 error write_files: '/etc/app': 'append' changes what ends up in the file and is refused; the file is skipped",
            "21:5 error write_files: '': path is required; the file is skipped",
        ]
    );
}

#[test]
fn repositories() {
    let text = "repos:
  - name: Base
    url: http://r/Base
    priority: 10
    tuf_root: '{}'
  - name: BASE
    path: /srv/r
  - name: Common
    url: http://r/Common
    consumes: [Base, OnTarget]
    tuf_root: '{}'
  - name: NoAnchor
    url: http://r/x
  - name: Both
    url: http://r/y
    path: /y
    tuf_root: '{}'
  - name: LocalAnchor
    path: /z
    tuf_root: '{}'
  - name: .dot
    path: /d
  - name: Off
    path: /o
    enabled: false
  - name: OnOff
    path: /p
    consumes: [Off]
  - name: OnRefused
    path: /q
    consumes: [NoAnchor]
  - name: X
    path: /x
    consumes: [Y]
    priority: high
  - name: Y
    path: /y
    consumes: [Y2]
  - name: Y2
    path: /y2
    consumes: [Y]
  - name: Z
    path: /z
    mirror: true
";
    assert_eq!(
        found(text, false),
        [
            "6:11 error repos: 'BASE': another repository's name differs only in case (the file names are lowercased and would collide); the repository is skipped",
            "10:15 warning repos: 'Common': consumes 'OnTarget', which this document does not define; it must be an enabled repository already on the target",
            "13:10 error repos: 'NoAnchor': url needs tuf_root (the trust anchor's content); the repository is skipped",
            "14:5 error repos: 'Both': url and path cannot be combined; the repository is skipped",
            "20:15 error repos: 'LocalAnchor': tuf_root with path is an error: a local repository has no trust anchor; the repository is skipped",
            "21:11 error repos: '.dot': the name begins with a dot; the repository is skipped",
            "28:15 error repos: 'OnOff': it consumes 'Off', which is disabled; the repository is skipped",
            "31:15 error repos: 'OnRefused': it consumes 'NoAnchor', which is refused; the repository is skipped",
            "35:15 error repos: 'X': priority must be an integer, not high; the repository is skipped",
            "38:15 error repos: 'Y': it is part of a consumes cycle; the repository is skipped",
            "41:15 error repos: 'Y2': it is part of a consumes cycle; the repository is skipped",
            "44:5 error repos: 'Z': unknown key 'mirror'; the repository is skipped",
        ]
    );
}

#[test]
fn a_nul_byte_in_a_sudo_rule_refuses_the_account() {
    assert_eq!(
        found(
            "users:\n  - name: ops\n    sudo: \"ALL=(ALL) \\0ALL\"\n  - name: dev\n    sudo: [\"ALL=(ALL) ALL\", \"x\\0y\"]\n",
            false
        ),
        [
            "3:11 error users: account 'ops': a sudo rule holds a NUL byte; the account is refused",
            "5:11 error users: account 'dev': a sudo rule holds a NUL byte; the account is refused",
        ]
    );
}

/// useradd refuses a gecos with `:` or a line break (the account is
/// never created), and sudoers reads one rule per line.
#[test]
fn a_gecos_or_a_sudo_rule_that_breaks_its_file_refuses_the_account() {
    assert_eq!(
        found(
            "users:\n  - name: ops\n    gecos: 'Ops: team'\n  - name: dev\n    gecos: \"Dev\\tTeam\"\n  - name: adm\n    sudo: [\"ALL=(ALL) ALL\", \"a\\nb\"]\n  - name: fine\n    gecos: Ann O'Neil, ops\n",
            false
        ),
        [
            "3:12 error users: account 'ops': gecos 'Ops: team' holds ':', which useradd refuses in a gecos (it separates /etc/passwd fields); write it without ':'; the account is refused",
            "5:12 error users: account 'dev': gecos 'Dev\\tTeam' holds a control character (U+0009), which useradd refuses in a gecos; write it on one line without control characters; the account is refused",
            "7:11 error users: account 'adm': sudo rule 'a\\nb' holds a control character (U+000A); sudoers reads one rule per line: write each rule as its own line without control characters; the account is refused",
        ]
    );
}

#[test]
fn trust_anchors_with_a_nul_byte_or_too_big_to_carry() {
    let big = "x".repeat(MAX_CARRIED + 1);
    let text = format!(
        "repos:
  - name: Nul
    url: http://r/n
    tuf_root: \"{{\\0}}\"
  - name: Big
    url: http://r/b
    tuf_root: {big}
  - name: Fits
    url: http://r/f
    tuf_root: {fits}
",
        fits = "x".repeat(MAX_CARRIED)
    );
    assert_eq!(
        found(&text, false),
        [
            "4:15 error repos: 'Nul': tuf_root holds a NUL byte; the repository is skipped",
            "7:15 error repos: 'Big': tuf_root is 4096 bytes, over the 4095 a trust anchor can carry; the repository is skipped",
        ]
    );
}

#[test]
fn repository_names_locations_and_flags() {
    let text = "repos:
  - url: http://r/anon
    tuf_root: '{}'
  - name: \"a b\"
    path: /ab
  - name: \"Ünïcode\"
    path: /u
  - name: Nowhere
    priority: 3
  - name: Maybe
    path: /m
    enabled: sometimes
  - name: Yes
    path: /y
    enabled: yes
  - name: Scalar
    path: /s
    consumes: Base
  - name: Mapped
    path: /mp
    consumes: {Base: true}
";
    assert_eq!(
        found(text, false),
        [
            "2:5 error repos: '': name is required; the repository is skipped",
            "4:11 error repos: 'a b': the name has characters outside letters, digits, '.', '_' and '-'; the repository is skipped",
            "6:11 error repos: 'Ünïcode': the name has characters outside letters, digits, '.', '_' and '-'; the repository is skipped",
            "8:5 error repos: 'Nowhere': one of url or path is required; the repository is skipped",
            "12:14 error repos: 'Maybe': enabled must be true or false; the repository is skipped",
            "18:15 error repos: 'Scalar': consumes must be a list of repository names, not a scalar; the repository is skipped",
            "21:15 error repos: 'Mapped': consumes must be a list of repository names, not a mapping; the repository is skipped",
        ]
    );
}

#[test]
fn a_known_key_with_a_value_of_the_wrong_shape() {
    let text = "users: operator
groups: {admins: [a]}
write_files: /etc/motd
repos: {name: Base}
ssh_authorized_keys: {key: ssh-ed25519 AAAA a@b}
";
    assert_eq!(
        found(text, false),
        [
            "1:8 warning users must be a list, not a scalar; it is skipped",
            "2:9 warning groups must be a list, not a mapping; it is skipped",
            "3:14 warning write_files must be a list, not a scalar; it is skipped",
            "4:8 warning repos must be a list, not a mapping; it is skipped",
            "5:22 warning ssh_authorized_keys must be a list of lines or one line, not a mapping; it is skipped",
        ]
    );
    // --offline ignores nothing.
    assert!(found(text, true).iter().all(|f| f.contains(" error ")));
}

#[test]
fn entries_of_the_wrong_shape() {
    let text = "users:
  - operator
  - [a, b]
  - name: keys
    ssh-authorized-keys: [ssh-ed25519 AAAA k@h, {a: b}]
    sudo: {ALL: ALL}
groups:
  - [admins]
  - {devs: [a], ops: [b]}
  - {wheel: [a]}
write_files:
  - /etc/motd
repos:
  - Base
ssh_authorized_keys: [ssh-ed25519 AAAA k@h, [x]]
";
    assert_eq!(
        found(text, false),
        [
            "2:5 error users: an account must be a mapping, not a scalar; the entry is refused",
            "3:5 error users: an account must be a mapping, not a list; the entry is refused",
            "5:49 warning ssh-authorized-keys: an entry is a mapping, not a line; it is skipped",
            "6:11 warning sudo must be a list of lines or one line, not a mapping; it is skipped",
            "8:5 error groups: an entry must be a name or a single-key mapping of a name to its members, not a list; it is skipped",
            "9:5 error groups: an entry must be a name or a single-key mapping of a name to its members, not a mapping; it is skipped",
            "12:5 error write_files: an entry must be a mapping, not a scalar; it is skipped",
            "14:5 error repos: an entry must be a mapping, not a scalar; it is skipped",
            "15:45 warning ssh_authorized_keys: an entry is a list, not a line; it is skipped",
        ]
    );
}

#[test]
fn groups_as_one_comma_separated_string() {
    assert!(
        found(
            "users:\n  - name: a\n    groups: \"wheel, adm,,video\"\n",
            false
        )
        .is_empty()
    );
    assert_eq!(
        found(
            "users:\n  - name: a\n    groups: \"wheel, bad group,.hidden\"\ngroups:\n  - devs: \"alice, .bob\"\n",
            false
        ),
        [
            "3:13 warning users: account 'a': group 'bad group' has characters outside [A-Za-z0-9._-]; it is dropped and the account kept",
            "3:13 warning users: account 'a': group '.hidden' begins with a dot or a dash; it is dropped and the account kept",
            "5:11 warning groups: group 'devs': member '.bob' begins with a dot or a dash; the member is skipped",
        ]
    );
}

/// Sudo rules and key lines are never split on commas: a sudoers
/// command list and key options (`no-pty,from="a,b"`) use them.
#[test]
fn sudo_and_key_lines_are_never_split_on_commas() {
    let mut c = Checker {
        positions: Positions::default(),
        out: Vec::new(),
        offline: false,
    };
    let sudo = "ALL=(ALL) NOPASSWD: /usr/bin/systemctl restart a, /usr/bin/journalctl";
    let key = "no-pty,from=\"10.0.0.1,10.0.0.2\" ssh-ed25519 AAAA k@h";
    for line in [sudo, key] {
        assert_eq!(
            c.lines(&Value::str(line), &DocPath::root(), "sudo"),
            Some(vec![line.to_string()])
        );
    }
    assert_eq!(
        c.lines(
            &Value::Seq(vec![Value::str(sudo), Value::str(key)]),
            &DocPath::root(),
            "sudo"
        ),
        Some(vec![sudo.to_string(), key.to_string()])
    );
    assert!(c.out.is_empty());
    // Read from a document: one rule, one grant refused for the dot,
    // and nothing about a second rule.
    let doc =
        format!("users:\n  - name: a.b\n    sudo: '{sudo}'\n    ssh-authorized-keys: '{key}'\n");
    assert_eq!(
        found(&doc, false),
        [
            "3:11 warning users: account 'a.b': a name with a dot gets no sudo grant (sudo skips a drop-in whose file name holds a dot)"
        ]
    );
}

#[test]
fn a_space_in_a_path_is_refused() {
    assert_eq!(
        found("write_files:\n  - path: \"/etc/my file\"\n", false),
        [
            "2:11 error write_files: '/etc/my file': the path holds whitespace or a control character; the file is skipped"
        ]
    );
}

#[test]
fn encoding_defer_and_unknown_file_keys_refuse_the_file() {
    let text = "write_files:
  - path: /etc/a
    encoding: b64
    content: eA==
  - path: /etc/b
    defer: true
  - path: /etc/c
    mode: \"0644\"
";
    assert_eq!(
        found(text, false),
        [
            "3:5 error write_files: '/etc/a': 'encoding' changes what ends up in the file and is refused; the file is skipped",
            "6:5 error write_files: '/etc/b': 'defer' changes what ends up in the file and is refused; the file is skipped",
            "8:5 error write_files: '/etc/c': unknown key 'mode'; the file is skipped",
        ]
    );
}

#[test]
fn passwd_is_a_hash_never_a_plaintext_password() {
    let hashes = [
        "$6$rounds=4096$saltsalt$2pMNN0Fv0GEvrN0lD3e0x1ZSbVW7hnhj5LYcoIxmPC6/",
        "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7",
        "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
        "$1$salt$hash",
        "!$6$saltsalt$hash",
    ];
    for h in hashes {
        let doc = format!("users:\n  - name: a\n    lock_passwd: false\n    passwd: '{h}'\n");
        assert!(found(&doc, false).is_empty(), "{h}");
    }
    let refused = "4:13 error users: account 'a': passwd must be a password hash (crypt(5), such as $6$<salt>$<hash> from mkpasswd), never a plaintext password; the account is refused";
    for plain in [
        "hunter2",
        "''",
        "'$ecret'",
        "'$6$onlysalt'",
        "'$6$salt$has h'",
        "abcdefghijklm",
        "[a]",
    ] {
        let doc = format!("users:\n  - name: a\n    lock_passwd: false\n    passwd: {plain}\n");
        let f = found(&doc, false);
        assert_eq!(f, [refused], "{plain}");
    }
    // The value itself is never repeated in a finding.
    assert!(!found("users:\n  - name: a\n    passwd: hunter2\n", false)[0].contains("hunter2"));
}

#[test]
fn the_unplaced_pass_finds_what_the_placed_one_finds() {
    let texts = [
        "#cloud-config\nhostname: web-001.example.com\n",
        "#cloud-config\nusers:\n  - name: ops\n    groups: [adm]\npackages: [htop]\n",
        "#cloud-config\npackages: htop\nbogus: 1\n",
        "#cloud-config\nruncmd:\n  - [ls, -l]\n---\nsecond: doc\n",
        "#cloud-config\nusers: [a: *x]\n",
        "- a\n- b\n",
        "",
    ];
    for text in texts {
        for offline in [false, true] {
            let unplaced = check_with(text.as_bytes(), offline, false);
            let placed = check_with(text.as_bytes(), offline, true);
            let messages = |f: &[Finding]| f.iter().map(|f| f.message.clone()).collect::<Vec<_>>();
            let mut a = messages(&unplaced);
            let mut b = messages(&placed);
            a.sort();
            b.sort();
            assert_eq!(a, b, "{text:?}");
            assert_eq!(check(text.as_bytes(), offline), placed, "{text:?}");
        }
    }
    assert!(check(texts[0].as_bytes(), false).is_empty());
}
