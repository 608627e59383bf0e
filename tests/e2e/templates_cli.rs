//! `csis template validate` and `csis template resolve` through the
//! binary: exact output, exit codes, the extends chain line, redaction,
//! OS defaults found from the template's directory up or given.

use std::process::Command;

fn csis(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(dir)
        .arg("template")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

const TARGET: &str = "target: {os: ubuntu, dist: ubuntu24, arch: x86_64, imageType: raw}\n";

fn tree() -> tempfile::TempDir {
    csis_test_support::temp_tree([
        (
            "ict/config/osv/ubuntu/ubuntu24/imageconfigs/defaultconfigs/default-raw-x86_64.yml",
            format!(
                "image: {{name: default, version: '24.04'}}\n{TARGET}disk:\n  name: Default_Raw\n  size: 4GiB\nsystemConfig:\n  name: default\n  packages: [openssh-server]\n  kernel: {{version: '6.8', cmdline: quiet}}\n"
            ),
        ),
        (
            "ict/templates/base.yml",
            format!(
                "image: {{name: base, version: 1.0.0}}\n{TARGET}systemConfig:\n  packages: [docker-cli]\n  users:\n    - name: admin\n      password: \"$6$salt$hash\"\n      hash_algo: sha512\n      sudo: true\n"
            ),
        ),
        (
            "ict/templates/leaf.yml",
            format!(
                "# a leaf\nextends: base.yml\nimage:\n  name: ${{name}}\n  version: 1.0.1\n{TARGET}systemConfig:\n  packages: [htop]\n  kernel: {{version: '6.12'}}\n"
            ),
        ),
        (
            "ict/templates/bad.yml",
            format!(
                "image: {{name: bad, version: 1.0.0}}\n{TARGET}systemConfig:\n  packages: [htop, htop]\n  fde: {{enabled: true}}\n"
            ),
        ),
        (
            "ict/templates/typo.yml",
            format!("image: {{name: t, version: '1'}}\n{TARGET}systemConfig:\n  pakages: [x]\n"),
        ),
        ("ict/templates/vars.yml", "name: from-file\n".to_string()),
        (
            "loose/alone.yml",
            format!("image: {{name: alone, version: '2'}}\n{TARGET}"),
        ),
    ])
}

#[test]
fn resolve_folds_the_chain_and_redacts() {
    let t = tree();
    let dir = t.path().join("ict/templates");
    let (code, out, err) = csis(&dir, &["resolve", "leaf.yml", "--var", "name=edge"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "Extends chain: base.yml -> leaf.yml\n");
    assert_eq!(
        out,
        "image:\n  name: edge\n  version: \"1.0.1\"\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n  arch: x86_64\n  imageType: raw\nsystemConfig:\n  packages:\n    - docker-cli\n    - htop\n  kernel:\n    version: \"6.12\"\n  users:\n    - name: admin\n      password: \"<redacted>\"\n      hash_algo: \"<redacted>\"\n      sudo: true\n"
    );
    assert!(!out.contains("$6$"));
}

#[test]
fn resolve_full_puts_the_os_defaults_underneath() {
    let t = tree();
    let dir = t.path().join("ict/templates");
    // Found from the template's directory up: ict/config/osv.
    let (code, out, err) = csis(
        &dir,
        &[
            "resolve",
            "--full",
            "--format",
            "json",
            "leaf.yml",
            "--vars-file",
            "vars.yml",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "Extends chain: base.yml -> leaf.yml\n");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["image"]["name"], "from-file");
    assert_eq!(v["disk"]["name"], "Default_Raw");
    assert_eq!(
        v["systemConfig"]["packages"],
        serde_json::json!(["openssh-server", "docker-cli", "htop"])
    );
    assert_eq!(v["systemConfig"]["kernel"]["version"], "6.12");
    assert_eq!(v["systemConfig"]["kernel"]["cmdline"], "quiet");
    assert_eq!(v["systemConfig"]["users"][0]["password"], "<redacted>");
    assert!(v.get("extends").is_none());
}

#[test]
fn resolve_full_without_defaults_says_to_pass_defaults_dir() {
    let t = tree();
    let (code, out, err) = csis(&t.path().join("loose"), &["resolve", "--full", "alone.yml"]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "Extends chain: alone.yml\nerror: --full needs the OS defaults: no config/osv/ found from alone.yml up; pass --defaults-dir DIR\n"
    );
    let osv = t.path().join("ict/config/osv");
    let (code, out, err) = csis(
        &t.path().join("loose"),
        &[
            "resolve",
            "--full",
            "alone.yml",
            "--defaults-dir",
            osv.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("  name: Default_Raw\n"), "{out}");
}

#[test]
fn validate_prints_ok_or_the_problems_with_positions() {
    let t = tree();
    let dir = t.path().join("ict/templates");
    let (code, out, err) = csis(&dir, &["validate", "leaf.yml", "--var", "name=edge"]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "leaf.yml: ok\n", "")
    );
    let (code, out, err) = csis(
        &dir,
        &[
            "validate",
            "bad.yml",
            "typo.yml",
            "leaf.yml",
            "--var",
            "name=edge",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(out, "leaf.yml: ok\n");
    assert_eq!(
        err,
        "bad.yml:4:20: systemConfig.packages: package 'htop' is listed twice\n\
         bad.yml:5:3: systemConfig.fde.passphraseFile is required when fde.enabled is true\n\
         typo.yml:4:3: unknown key 'pakages' in systemConfig; expected one of: name, description, hostname, packages, kernel, bootloader, network, immutability, fde, dkms, users, initramfs, additionalFiles, configurations, proxy, provisioning, cloudInit, aptPolicy, oepInstaller, installerPayload\n"
    );
    // An unknown variable is named.
    let (code, _, err) = csis(&dir, &["validate", "leaf.yml"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "leaf.yml:4:9: unknown variable '${name}': give it with --var name=VALUE or in a variables file\n"
    );
}

#[test]
fn validate_checks_the_merged_template_with_defaults_and_warns_without_failing() {
    let t = csis_test_support::temp_tree([
        (
            "osv/ubuntu/ubuntu24/imageconfigs/defaultconfigs/default-raw-x86_64.yml",
            format!("image: {{name: d, version: '1'}}\n{TARGET}disk: {{name: D}}\n"),
        ),
        (
            "t/keys.yml",
            format!(
                "image: {{name: k, version: '1'}}\n{TARGET}systemConfig:\n  users:\n    - name: ops\n      sshAuthorizedKeys: [ssh-ed25519 AAAA ops@x]\n"
            ),
        ),
        (
            "t/nosc.yml",
            format!("image: {{name: n, version: '1'}}\n{TARGET}"),
        ),
    ]);
    let osv = t.path().join("osv");
    let dir = t.path().join("t");
    let (code, out, err) = csis(
        &dir,
        &[
            "validate",
            "keys.yml",
            "nosc.yml",
            "--defaults-dir",
            osv.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(out, "keys.yml: ok\n");
    assert_eq!(
        err,
        "keys.yml: warning: a user has SSH keys but systemConfig.packages has no openssh-server: key-based login needs it\n\
         nosc.yml: systemConfig is required in the merged template\n"
    );
}

#[test]
fn chain_refusals_and_parent_problems_name_their_file() {
    let t = csis_test_support::temp_tree([
        (
            "t/a.yml",
            format!("extends: b.yml\nimage: {{name: a, version: '1'}}\n{TARGET}"),
        ),
        (
            "t/b.yml",
            format!("extends: a.yml\nimage: {{name: b, version: '1'}}\n{TARGET}"),
        ),
        (
            "t/child.yml",
            format!("extends: parent.yml\nimage: {{name: c, version: '1'}}\n{TARGET}"),
        ),
        (
            "t/parent.yml",
            format!(
                "image: {{name: p, version: '1'}}\n{TARGET}systemConfig:\n  bootloader: {{provider: lilo}}\n"
            ),
        ),
        (
            "t/out.yml",
            format!("extends: ../x.yml\nimage: {{name: o, version: '1'}}\n{TARGET}"),
        ),
    ]);
    let dir = t.path().join("t");
    let (code, out, err) = csis(&dir, &["resolve", "a.yml"]);
    assert_eq!((code, out.as_str()), (1, ""));
    // The cycle as the user named its files, not their canonical paths.
    assert_eq!(
        err,
        "b.yml:1:10: circular extends detected: a.yml -> b.yml -> a.yml\n"
    );
    let (code, out, err) = csis(&dir, &["validate", "child.yml", "out.yml"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "parent.yml:4:26: systemConfig.bootloader.provider: 'lilo' is not one of: grub, grub2, systemd-boot\n\
         out.yml:1:10: extends path escapes child template's directory: ../x.yml\n"
    );
}

#[test]
fn found_defaults_without_the_targets_file_warn_in_validate_and_refuse_resolve_full() {
    let t = csis_test_support::temp_tree([
        (
            "ict/config/osv/ubuntu/ubuntu24/imageconfigs/defaultconfigs/default-raw-x86_64.yml",
            format!("image: {{name: d, version: '1'}}\n{TARGET}disk: {{name: D}}\n"),
        ),
        (
            "ict/templates/iso.yml",
            "image: {name: i, version: '1'}\ntarget: {os: ubuntu, dist: ubuntu24, arch: x86_64, imageType: iso}\nsystemConfig:\n  fde: {enabled: true, passphrase: \"12345\"}\n  configurations:\n    - cmd: echo ${p:-MISSING}\n".to_string(),
        ),
    ]);
    let dir = t.path().join("ict/templates");
    let osv = t.path().join("ict/config/osv");
    let want = osv.join("ubuntu/ubuntu24/imageconfigs/defaultconfigs/default-iso-x86_64.yml");
    let want = std::fs::canonicalize(t.path())
        .unwrap()
        .join(want.strip_prefix(t.path()).unwrap());
    // Found by walking up: a warning naming the path, the user checks ran.
    let (code, out, err) = csis(&dir, &["validate", "iso.yml"]);
    assert_eq!((code, out.as_str()), (0, "iso.yml: ok\n"), "{err}");
    assert_eq!(
        err,
        format!(
            "iso.yml: warning: no OS defaults for ubuntu/ubuntu24/x86_64/iso at {}; the merged template is not checked\n",
            want.display()
        )
    );
    // Given with --defaults-dir: still an error.
    let (code, out, err) = csis(
        &dir,
        &[
            "validate",
            "iso.yml",
            "--defaults-dir",
            osv.to_str().unwrap(),
        ],
    );
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(
        err.contains("cannot read the OS defaults for ubuntu/ubuntu24/x86_64/iso"),
        "{err}"
    );
    // resolve --full cannot show the full view: an error saying to pass --defaults-dir.
    let (code, out, err) = csis(&dir, &["resolve", "--full", "iso.yml"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "Extends chain: iso.yml\nerror: --full needs the OS defaults: no OS defaults for ubuntu/ubuntu24/x86_64/iso at {} (in the config/osv/ found from iso.yml up); pass --defaults-dir DIR\n",
            want.display()
        )
    );
    // ICT's inline passphrase is redacted; a shell `${p:-MISSING}` is left as written.
    let (code, out, err) = csis(&dir, &["resolve", "iso.yml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("passphrase: \"<redacted>\""), "{out}");
    assert!(!out.contains("12345"), "{out}");
    assert!(out.contains("echo ${p:-MISSING}"), "{out}");
}
