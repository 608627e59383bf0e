use std::path::Path;

use super::*;

fn p(text: &str) -> Template {
    match parse(Path::new("t.yml"), text, &Variables::new()) {
        Ok(t) => t,
        Err(e) => panic!("{e:?}"),
    }
}

fn perr(text: &str) -> Vec<String> {
    match parse(Path::new("t.yml"), text, &Variables::new()) {
        Ok(t) => panic!("parsed: {t:?}"),
        Err(e) => e.iter().map(|p| p.to_string()).collect(),
    }
}

#[test]
fn unknown_key_is_refused_with_its_position() {
    let e = perr("image:\n  name: a\nsystemConfig:\n  foo: 1\n");
    assert_eq!(
        e,
        vec![
            "t.yml:4:3: unknown key 'foo' in systemConfig; expected one of: name, description, hostname, packages, kernel, bootloader, network, immutability, fde, dkms, users, initramfs, additionalFiles, configurations, proxy, provisioning, cloudInit, aptPolicy, oepInstaller"
        ]
    );
}

#[test]
fn a_comment_only_edit_changes_nothing() {
    let a = p("image:\n  name: a\n  version: '1'\nsystemConfig:\n  packages: [x, y]\n");
    let b = p("# c\nsystemConfig:\n  packages:\n    - x   # one\n    - y\nimage: {version: \"1\", name: a}\n");
    assert_eq!(a, b);
    assert_eq!(to_yaml(&a, false), to_yaml(&b, false));
}
