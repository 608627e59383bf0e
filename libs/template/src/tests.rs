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
            "t.yml:4:3: unknown key 'foo' in systemConfig; expected one of: name, description, hostname, packages, kernel, bootloader, network, immutability, fde, dkms, users, initramfs, additionalFiles, configurations, proxy, provisioning, cloudInit, aptPolicy, oepInstaller, installerPayload"
        ]
    );
}

#[test]
fn a_comment_only_edit_changes_nothing() {
    let a = p("image:\n  name: a\n  version: '1'\nsystemConfig:\n  packages: [x, y]\n");
    let b = p(
        "# c\nsystemConfig:\n  packages:\n    - x   # one\n    - y\nimage: {version: \"1\", name: a}\n",
    );
    assert_eq!(a, b);
    assert_eq!(to_yaml(&a, false), to_yaml(&b, false));
}

const HEAD: &str = "image:\n  name: img\n  version: 1.0.0\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n  arch: x86_64\n  imageType: raw\n";

/// The messages of validating HEAD + `body` as a user template.
fn user(body: &str) -> Vec<String> {
    let t = p(&format!("{HEAD}{body}"));
    validate_user(Path::new("t.yml"), &t)
        .into_iter()
        .map(|p| p.message)
        .collect()
}

fn merged(body: &str) -> Vec<String> {
    let t = p(&format!("{HEAD}{body}"));
    validate_merged(Path::new("t.yml"), &t)
        .into_iter()
        .map(|p| p.message)
        .collect()
}

fn one(body: &str, want: &str) {
    assert_eq!(user(body), vec![want.to_string()], "for {body}");
}

#[test]
fn a_minimal_user_template_is_valid_and_the_merged_one_needs_system_config() {
    assert!(user("").is_empty());
    assert_eq!(
        merged(""),
        vec!["systemConfig is required in the merged template"]
    );
}

#[test]
fn wrong_types_are_refused() {
    assert_eq!(
        perr("systemConfig:\n  packages: vim\n"),
        vec!["t.yml:2:13: systemConfig.packages must be a list of strings, not a scalar"]
    );
    assert_eq!(
        perr("systemConfig:\n  users:\n    - name: a\n      sudo: yes-please\n"),
        vec!["t.yml:4:13: systemConfig.users[0].sudo must be true or false"]
    );
    assert_eq!(
        perr("packageRepositories:\n  - codename: a\n    priority: high\n"),
        vec!["t.yml:3:15: packageRepositories[0].priority must be an integer"]
    );
    assert_eq!(
        perr("image: [a]\n"),
        vec!["t.yml:1:8: image must be a mapping, not a list"]
    );
    assert_eq!(
        perr("nope: 1\n"),
        vec![
            "t.yml:1:1: unknown key 'nope' in the template; expected one of: extends, metadata, image, target, baseline, overlayPolicy, disk, packageRepositories, systemConfig"
        ]
    );
}

#[test]
fn image_and_target_are_required_and_checked() {
    let t = p("image:\n  name: bad name\n");
    let m: Vec<String> = validate_user(Path::new("t.yml"), &t)
        .into_iter()
        .map(|p| p.message)
        .collect();
    assert_eq!(
        m,
        vec![
            "image.version is required",
            "image.name 'bad name' must be letters and digits with inner hyphens and underscores",
            "target.os is required",
            "target.dist is required",
            "target.arch is required",
            "target.imageType is required",
        ]
    );
    let bad = "image:\n  name: a-\n  version: v1\ntarget:\n  os: debianx\n  dist: x\n  arch: i386\n  imageType: vmdk\n";
    let t = p(bad);
    let m: Vec<String> = validate_user(Path::new("t.yml"), &t)
        .into_iter()
        .map(|p| p.to_string())
        .collect();
    assert_eq!(m.len(), 5);
    let located = validate_user_located(Path::new("t.yml"), bad, &t);
    let m: Vec<String> = located.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        m,
        vec![
            "t.yml:2:9: image.name 'a-' must be letters and digits with inner hyphens and underscores",
            "t.yml:3:12: image.version 'v1' is not semver-like (1.0.0, 24.04, 1.0.0+build1)",
            "t.yml:5:7: target.os: 'debianx' is not one of: azure-linux, edge-microvisor-toolkit, wind-river-elxr, ubuntu, redhat-compatible-distro, debian",
            "t.yml:7:9: target.arch: 'i386' is not one of: x86_64, aarch64, armv7hl",
            "t.yml:8:14: target.imageType: 'vmdk' is not one of: raw, iso, img, wsl2",
        ]
    );
    for v in ["1.0.0", "24.04", "1.0.0+build1", "3"] {
        assert!(version_ok(v), "{v}");
    }
    let t = p(
        "image:\n  name: a\n  version: 24.04\ntarget:\n  os: ubuntu\n  dist: emt3\n  arch: x86_64\n  imageType: raw\n",
    );
    assert_eq!(
        validate_user(Path::new("t.yml"), &t)[0].message,
        "target.dist 'emt3' is not a dist of ubuntu: ubuntu24, ubuntu26"
    );
    let t = p(
        "image:\n  name: a\n  version: '1'\ntarget:\n  os: redhat-compatible-distro\n  dist: el10\n  arch: x86_64\n  imageType: img\n",
    );
    assert!(validate_user(Path::new("t.yml"), &t).is_empty());
}

fn version_ok(v: &str) -> bool {
    let t = p(&format!(
        "image:\n  name: a\n  version: '{v}'\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n  arch: x86_64\n  imageType: raw\n"
    ));
    validate_user(Path::new("t.yml"), &t).is_empty()
}

#[test]
fn disk_rules() {
    one(
        "disk:\n  name: d\n  artifacts:\n    - type: iso\n",
        "disk.artifacts[0].type: 'iso' is not one of: raw, qcow2, vhd, vhdx, vmdk, vdi, tar",
    );
    one(
        "disk:\n  name: d\n  artifacts:\n    - type: raw\n      compression: lz4\n",
        "disk.artifacts[0].compression: 'lz4' is not one of: gz, gzip, xz, zstd, bz2",
    );
    one(
        "disk:\n  name: d\n  partitionTableType: dos\n",
        "disk.partitionTableType: 'dos' is not one of: gpt, mbr",
    );
    one(
        "disk:\n  name: d\n  partitions:\n    - id: a\n      start: 1MiB\n      end: \"0\"\n    - id: b\n      start: 2MiB\n      end: \"0\"\n",
        "disk.partitions[0].end: only the final partition may use end \"0\"",
    );
    one(
        "disk:\n  name: d\n  partitions:\n    - id: a\n      start: 1mb\n      end: \"-20GiB\"\n",
        "disk.partitions[0].start '1mb' is not an offset: a non-zero whole number, optionally negative, with one of KiB MiB GiB K M G KB MB GB",
    );
    one(
        "disk:\n  name: d\n  partitions:\n    - id: a\n      start: \"0\"\n      end: 5G\n",
        "disk.partitions[0].start '0' is not an offset: a non-zero whole number, optionally negative, with one of KiB MiB GiB K M G KB MB GB",
    );
    assert!(user("disk:\n  name: d\n  size: 4GiB\n  partitions:\n    - {id: a, start: 1MiB, end: 513MiB}\n    - {id: b, start: 513MiB, end: \"-4GiB\"}\n    - {id: c, start: \"-4GiB\", end: \"0\"}\n").is_empty());
    one("disk:\n  size: 4GiB\n", "disk.name is required");
    one(
        "disk:\n  name: d\n  maxSize: 8GiB\n",
        "disk.maxSize requires disk.size to be set",
    );
    one(
        "disk:\n  name: d\n  path: /dev/../etc\n",
        "disk.path '/dev/../etc' must be a clean /dev/... path",
    );
}

#[test]
fn repository_rules() {
    one(
        "packageRepositories:\n  - codename: a\n    url: https://x.example/repo\n",
        "packageRepositories[0].pkey is required",
    );
    one(
        "packageRepositories:\n  - codename: a\n    url: https://x.example/repo\n    pkey: '[trusted=yes]'\n    priority: 10000\n",
        "packageRepositories[0].priority 10000 is outside -9999..9999",
    );
    one(
        "packageRepositories:\n  - codename: a\n    url: x.example/repo\n    pkey: '[trusted=yes]'\n",
        "packageRepositories[0].url 'x.example/repo' is not a URI",
    );
    // allowPackages, and AllowPackages as an alias; globs allowed.
    let a = p(&format!(
        "{HEAD}packageRepositories:\n  - codename: a\n    url: https://x\n    pkey: /k\n    allowPackages: [libva*, kernel-6.17.11]\n"
    ));
    let b = p(&format!(
        "{HEAD}packageRepositories:\n  - codename: a\n    url: https://x\n    pkey: /k\n    AllowPackages: [libva*, kernel-6.17.11]\n"
    ));
    assert_eq!(a, b);
    assert_eq!(
        a.package_repositories[0].allow_packages,
        vec!["libva*", "kernel-6.17.11"]
    );
    assert!(validate_user(Path::new("t.yml"), &a).is_empty());
    assert_eq!(
        perr(&format!(
            "{HEAD}packageRepositories:\n  - codename: a\n    allowPackages: [x]\n    AllowPackages: [y]\n"
        )),
        vec![
            "t.yml:12:5: packageRepositories[0]: set allowPackages or its alias AllowPackages, not both"
        ]
    );
}

#[test]
fn package_names_and_uniqueness() {
    assert_eq!(
        user("systemConfig:\n  packages: [vim, 'bad name', vim, curl_8.5.0-2ubuntu10.13]\n"),
        vec![
            "systemConfig.packages: 'bad name' is not a valid package name or glob",
            "systemConfig.packages: package 'vim' is listed twice",
        ]
    );
}

#[test]
fn bootloader_and_network_rules() {
    one(
        "systemConfig:\n  bootloader:\n    bootType: bios\n",
        "systemConfig.bootloader.bootType: 'bios' is not one of: efi, legacy",
    );
    one(
        "systemConfig:\n  bootloader:\n    provider: lilo\n",
        "systemConfig.bootloader.provider: 'lilo' is not one of: grub, grub2, systemd-boot",
    );
    one(
        "systemConfig:\n  bootloader:\n    bootEntryPolicy: all\n",
        "systemConfig.bootloader.bootEntryPolicy: 'all' is not one of: preserve, exclusive",
    );
    one(
        "systemConfig:\n  network:\n    interfaces:\n      - name: e0\n",
        "systemConfig.network.backend is required when systemConfig.network is present",
    );
    one(
        "systemConfig:\n  network:\n    backend: nm\n",
        "systemConfig.network.backend: 'nm' is not one of: systemd-networkd, netplan",
    );
    assert_eq!(
        user(
            "systemConfig:\n  network:\n    backend: netplan\n    interfaces:\n      - name: e0\n        routes:\n          - to: 10.0.0.0/33\n"
        ),
        vec![
            "systemConfig.network.interfaces[0].routes[0].via is required",
            "systemConfig.network.interfaces[0].routes[0].to '10.0.0.0/33' is not default or a CIDR",
        ]
    );
    assert!(user("systemConfig:\n  network:\n    backend: systemd-networkd\n    interfaces:\n      - name: enp2s0\n        addresses: [10.0.0.100/24]\n        routes: [{to: default, via: 10.0.0.1}]\n        nameservers: [8.8.8.8]\n").is_empty());
}

#[test]
fn immutability_fde_dkms_rules() {
    let sb = "systemConfig.immutability: a secure-boot field is set, so secureBootDBKey, secureBootDBCrt and secureBootDBCer must all be set and enabled must be true";
    one(
        "systemConfig:\n  immutability:\n    enabled: true\n    secureBootDBKey: /k.key\n",
        sb,
    );
    one(
        "systemConfig:\n  immutability:\n    enabled: false\n    secureBootDBKey: /k.key\n    secureBootDBCrt: /k.crt\n    secureBootDBCer: /k.cer\n",
        sb,
    );
    assert_eq!(
        user(
            "systemConfig:\n  immutability:\n    secureBootDBKey: /k.key\n    secureBootDBCrt: /k.crt\n    secureBootDBCer: /k.cer\n"
        ),
        vec!["systemConfig.immutability.enabled is required", sb]
    );
    one(
        "systemConfig:\n  fde:\n    enabled: true\n",
        "systemConfig.fde.passphraseFile is required when fde.enabled is true",
    );
    one(
        "systemConfig:\n  fde:\n    enabled: false\n    unlock: tpm\n",
        "systemConfig.fde.unlock: 'tpm' is not one of: auto, manual",
    );
    assert_eq!(
        user(
            "systemConfig:\n  dkms:\n    enabled: false\n    secureBoot:\n      enabled: true\n      retainSigningIdentity: true\n"
        ),
        vec![
            "systemConfig.dkms.secureBoot.enabled requires systemConfig.dkms.enabled: true",
            "systemConfig.dkms.secureBoot.signingKeyPath is required when secureBoot.enabled is true",
            "systemConfig.dkms.secureBoot.signingCertPath is required when secureBoot.enabled is true",
            "systemConfig.dkms.secureBoot.targetKeyPath is required when retainSigningIdentity is true",
            "systemConfig.dkms.secureBoot.targetCertPath is required when retainSigningIdentity is true",
        ]
    );
    one(
        "systemConfig:\n  dkms:\n    enabled: true\n    secureBoot:\n      enabled: false\n      retainSigningIdentity: true\n      targetKeyPath: /a.key\n      targetCertPath: /a.crt\n",
        "systemConfig.dkms.secureBoot.retainSigningIdentity requires secureBoot.enabled: true",
    );
    one(
        "systemConfig:\n  dkms:\n    enabled: true\n    modules: [edge-gfx-dkms]\n",
        "systemConfig.dkms.modules: 'edge-gfx-dkms' is not name/version",
    );
}

#[test]
fn user_rules() {
    one(
        "systemConfig:\n  users:\n    - password: x\n",
        "systemConfig.users[0].name is required",
    );
    one(
        "systemConfig:\n  users:\n    - name: a\n      hash_algo: sha1\n",
        "systemConfig.users[0].hash_algo: 'sha1' is not one of: bcrypt, sha512, sha256, md5",
    );
    one(
        "systemConfig:\n  users:\n    - name: a\n    - name: a\n",
        "systemConfig.users: user 'a' is defined twice",
    );
    let t = p(&format!(
        "{HEAD}systemConfig:\n  users:\n    - name: a\n      hash_algo: md5\n"
    ));
    let w = validate_user(Path::new("t.yml"), &t);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].severity, Severity::Warning);
    assert_eq!(
        w[0].to_string(),
        "t.yml: warning: systemConfig.users[0].hash_algo md5 is insecure; avoid it in production"
    );
    assert_eq!(
        merged(
            "systemConfig:\n  users:\n    - name: a\n      sshAuthorizedKeys: [ssh-ed25519 AAAA a@b]\n"
        ),
        vec![
            "a user has SSH keys but systemConfig.packages has no openssh-server: key-based login needs it"
        ]
    );
}

#[test]
fn provisioning_rules() {
    assert_eq!(
        user(
            "systemConfig:\n  provisioning:\n    scripts:\n      - name: -bad\n        local: a.sh\n        final: /usr/local/sbin/a b.sh\n      - name: ok\n        local: b.sh\n        final: /usr/local/sbin/x\n        stage: sometimes\n        args: ['a b']\n        env: {'1X': v}\n      - name: ok\n        local: c.sh\n        final: /usr/local/sbin/x/y\n"
        ),
        vec![
            "systemConfig.provisioning.scripts[0].name '-bad' must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$",
            "systemConfig.provisioning.scripts[0].final '/usr/local/sbin/a b.sh' must be an absolute path of letters, digits and ._@%+-",
            "systemConfig.provisioning.scripts[1].stage: 'sometimes' is not one of: first-boot, every-boot",
            "systemConfig.provisioning.scripts[1].args: 'a b' must be 1-256 characters of letters, digits and ._@%+:/=,-",
            "systemConfig.provisioning.scripts[1].env: '1X' is not a variable name",
            "systemConfig.provisioning.scripts: script name 'ok' is used twice",
            "systemConfig.provisioning.scripts[2].final '/usr/local/sbin/x/y' collides with systemConfig.provisioning.scripts[1].final '/usr/local/sbin/x'",
        ]
    );
}

#[test]
fn reboot_after_only_on_the_last_first_boot_script() {
    let two = |a: &str, b: &str| {
        user(&format!(
            "systemConfig:\n  provisioning:\n    scripts:\n      - {{name: a, local: a, final: /a, order: 20{a}}}\n      - {{name: b, local: b, final: /b, order: 10{b}}}\n"
        ))
    };
    assert!(two(", rebootAfter: true", "").is_empty());
    assert_eq!(
        two("", ", rebootAfter: true"),
        vec![
            "systemConfig.provisioning.scripts[1].rebootAfter is only allowed on the last script to run (the reboot would cut later scripts off)"
        ]
    );
    assert_eq!(
        two(", rebootAfter: true, stage: every-boot", ""),
        vec!["systemConfig.provisioning.scripts[0].rebootAfter is for first-boot scripts only"]
    );
}

#[test]
fn proxy_rules() {
    one(
        "systemConfig:\n  proxy:\n    httpProxy: http://user:pw@proxy:3128\n",
        "systemConfig.proxy.httpProxy: a proxy URL must not contain credentials (they would land in world-readable files)",
    );
    one(
        "systemConfig:\n  proxy:\n    httpsProxy: http://proxy/?token=x\n",
        "systemConfig.proxy.httpsProxy: a proxy URL must not contain a query string or fragment",
    );
    one(
        "systemConfig:\n  proxy:\n    ftpProxy: ftp://proxy:21\n",
        "systemConfig.proxy.ftpProxy: scheme 'ftp' is not one of: http, https, socks5, socks5h",
    );
    one(
        "systemConfig:\n  proxy:\n    noProxy: localhost, .example.com\n",
        "systemConfig.proxy.noProxy is comma-separated with no spaces",
    );
    assert!(user("systemConfig:\n  proxy:\n    httpProxy: socks5h://proxy.example.com:1080\n    noProxy: localhost,127.0.0.1,.example.com\n").is_empty());
}

#[test]
fn baseline_and_overlay_rules() {
    one(
        "baseline:\n  mode: overlay\n",
        "baseline.source is required when baseline.mode is overlay",
    );
    one(
        "baseline:\n  source:\n    path: /a.img\n",
        "baseline.source must be absent in create mode (set baseline.mode: overlay)",
    );
    one(
        "baseline:\n  mode: overlay\n  source:\n    path: /a.img\n    url: https://x/a.img\n",
        "baseline.source must set exactly one of path and url",
    );
    one(
        "baseline:\n  mode: overlay\n  source:\n    url: http://x/a.img\n",
        "baseline.source.url 'http://x/a.img' must be an https:// URL (plain http is rejected)",
    );
    one(
        "overlayPolicy:\n  packageOperation: additive-only\n",
        "overlayPolicy may only be set when baseline.mode is overlay",
    );
    let ov = "baseline:\n  mode: overlay\n  source:\n    path: /a.img\n";
    one(
        &format!("{ov}overlayPolicy:\n  allowPackageRemoval: true\n"),
        "overlayPolicy.allowPackageRemoval is only valid with packageOperation: additive-and-upgrade",
    );
    one(
        &format!(
            "{ov}overlayPolicy:\n  packageOperation: additive-only\n  replaceKernel:\n    package: linux-image-*-oem\n"
        ),
        "overlayPolicy.replaceKernel is only valid with packageOperation: additive-and-upgrade",
    );
    assert!(user(&format!("{ov}overlayPolicy:\n  packageOperation: additive-and-upgrade\n  allowPackageRemoval: true\n  replaceKernel:\n    package: linux-image-*-oem\n")).is_empty());
    assert_eq!(
        user(&format!(
            "{ov}systemConfig:\n  hostname: h\n  kernel: {{version: '6.1'}}\n  bootloader: {{provider: grub}}\n  packages: [x]\n  oepInstaller:\n    url: https://raw.githubusercontent.com/o/r/c/f\n    sha256: {h}\n    sbomUrl: https://raw.githubusercontent.com/o/r/c/s\n    sbomSha256: {h}\n    modules: [m]\n    user: edge\n",
            h = "a".repeat(64)
        )),
        vec![
            "overlay mode cannot apply systemConfig sections: hostname, kernel, bootloader (configure them in the baseline image)",
            "systemConfig.oepInstaller is not supported in overlay mode",
        ]
    );
}

#[test]
fn apt_policy_refuses_an_allowed_and_a_pinned_repository_on_one_host() {
    let repos = "packageRepositories:\n  - {codename: a, url: 'https://ppa.launchpadcontent.net/a/ubuntu', pkey: /k}\n  - {codename: b, url: 'https://ppa.launchpadcontent.net/b/ubuntu', pkey: /k}\n  - {codename: c, url: 'https://other.example/c', pkey: /k}\n";
    assert_eq!(
        user(&format!(
            "{repos}systemConfig:\n  aptPolicy:\n    upgradeAllowedRepos: [a, c]\n"
        )),
        vec![
            "systemConfig.aptPolicy: repositories 'a' (may upgrade) and 'b' (may not) are both on ppa.launchpadcontent.net, and APT pins by host: list both, or neither"
        ]
    );
    assert!(
        user(&format!(
            "{repos}systemConfig:\n  aptPolicy:\n    upgradeAllowedRepos: [a, b]\n"
        ))
        .is_empty()
    );
    assert!(
        user(&format!(
            "{repos}systemConfig:\n  aptPolicy:\n    upgradeAllowedRepos: []\n"
        ))
        .is_empty()
    );
}

#[test]
fn replace_kernel_names() {
    let ov = "baseline:\n  mode: overlay\n  source:\n    path: /a.img\noverlayPolicy:\n  packageOperation: additive-and-upgrade\n  replaceKernel:\n";
    assert_eq!(
        user(&format!(
            "{ov}    package: 'linux image'\n    enableExtraModules: 'a  b'\n"
        )),
        vec![
            "overlayPolicy.replaceKernel.package: 'linux image' is not a package name or glob",
            "overlayPolicy.replaceKernel.enableExtraModules is module names separated by single spaces",
        ]
    );
}

#[test]
fn oep_installer_rules() {
    let h = "b".repeat(64);
    assert_eq!(
        merged(&format!(
            "systemConfig:\n  users: [{{name: edge}}]\n  oepInstaller:\n    url: https://github.com/o/r/blob/c/f\n    sha256: xyz\n    sbomUrl: http://x/s\n    sbomSha256: {h}\n    modules: [m]\n    user: nobody\n    args: ['--a;b']\n"
        )),
        vec![
            "systemConfig.oepInstaller.url: 'https://github.com/o/r/blob/c/f' is a GitHub page URL; use the file's raw.githubusercontent.com URL",
            "systemConfig.oepInstaller.sbomUrl: 'http://x/s' must be an https:// URL",
            "systemConfig.oepInstaller.sha256 is not a hex SHA-256 digest",
            "systemConfig.oepInstaller.user 'nobody' is not a systemConfig.users entry",
            "systemConfig.oepInstaller.args: '--a;b' has a character systemd would interpret (no spaces, quotes, $ or ;)",
        ]
    );
}

#[test]
fn wsl_rules() {
    let wsl = "image:\n  name: w\n  version: '1'\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n  arch: x86_64\n  imageType: wsl2\n";
    let msgs = |body: &str, full: bool| -> Vec<String> {
        let t = p(&format!("{wsl}{body}"));
        let v = if full {
            validate_merged(Path::new("t.yml"), &t)
        } else {
            validate_user(Path::new("t.yml"), &t)
        };
        v.into_iter().map(|p| p.message).collect()
    };
    assert_eq!(
        msgs("systemConfig: {}\n", true),
        vec![
            "disk is required when target.imageType is wsl2 (name, and artifacts of type tar with compression gz)"
        ]
    );
    assert_eq!(
        msgs(
            "disk:\n  name: w\n  partitionTableType: gpt\n  artifacts:\n    - type: tar\n      compression: xz\nsystemConfig:\n  kernel:\n    version: '6.8'\n",
            false
        ),
        vec![
            "disk.artifacts[0]: a wsl2 image's artifacts must be type tar with compression gz",
            "disk.partitionTableType is not used for wsl2 templates",
            "systemConfig.kernel is not allowed for wsl2 templates",
        ]
    );
    assert!(msgs("disk:\n  name: w\n  artifacts:\n    - type: tar\n      compression: gz\nsystemConfig: {}\n", true).is_empty());
    assert_eq!(
        user("disk:\n  name: d\n  artifacts: [{type: tar}]\n"),
        vec!["disk.artifacts[0].type: tar is only for target.imageType wsl2"]
    );
}

// ---- merge ----

fn layer(body: &str) -> Template {
    p(&format!("{HEAD}{body}"))
}

fn sc(t: &Template) -> &SystemConfig {
    match &t.system_config {
        Some(s) => s,
        None => panic!("no systemConfig"),
    }
}

#[test]
fn merge_table_scalars_sections_and_lists() {
    let parent = layer(
        "disk:\n  name: p\n  size: 4GiB\npackageRepositories:\n  - {codename: a, url: https://a, pkey: /a}\n  - {codename: b, url: https://b, pkey: /b}\nsystemConfig:\n  name: P\n  hostname: ph\n  packages: [x, y]\n  kernel:\n    version: '6.1'\n    cmdline: quiet\n    packages: [k1]\n  bootloader: {bootType: efi, provider: grub}\n  network:\n    backend: netplan\n    interfaces: [{name: e0, dhcp4: true}]\n  configurations: [{cmd: one}]\n  immutability: {enabled: true}\n",
    );
    let child = p(
        "image:\n  name: child\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n  arch: x86_64\n  imageType: raw\ndisk: {}\npackageRepositories:\n  - {codename: b, url: https://b2, pkey: /b2}\n  - {codename: c, url: https://c, pkey: /c}\nsystemConfig:\n  packages: [y, z]\n  kernel:\n    cmdline: verbose\n  bootloader: {provider: systemd-boot}\n  network:\n    interfaces: [{name: e1, dhcp4: true}]\n  configurations: [{cmd: two}, {cmd: one}]\n",
    );
    let m = merge(&child, &parent);
    assert_eq!(m.image.name, "child");
    assert_eq!(m.image.version, "1.0.0");
    // An empty child disk does not replace.
    assert_eq!(m.disk.as_ref().map(|d| d.name.as_str()), Some("p"));
    let repos: Vec<(&str, &str)> = m
        .package_repositories
        .iter()
        .map(|r| (r.codename.as_str(), r.url.as_str()))
        .collect();
    assert_eq!(
        repos,
        vec![("a", "https://a"), ("b", "https://b2"), ("c", "https://c")]
    );
    let s = sc(&m);
    assert_eq!(s.name, "P");
    assert_eq!(s.hostname, "ph");
    assert_eq!(s.packages, vec!["x", "y", "z"]);
    let k = s.kernel.clone().unwrap_or_default();
    assert_eq!((k.version.as_str(), k.cmdline.as_str()), ("6.1", "verbose"));
    assert_eq!(k.packages, vec!["k1"]);
    let b = s.bootloader.clone().unwrap_or_default();
    assert_eq!(
        (b.boot_type.as_str(), b.provider.as_str()),
        ("efi", "systemd-boot")
    );
    let n = s.network.clone().unwrap_or_default();
    assert_eq!(n.backend, "netplan");
    assert_eq!(n.interfaces.len(), 1);
    assert_eq!(n.interfaces[0].name, "e1");
    let cmds: Vec<&str> = s.configurations.iter().map(|c| c.cmd.as_str()).collect();
    assert_eq!(cmds, vec!["one", "two", "one"]);
    assert_eq!(
        s.immutability,
        Some(Immutability {
            enabled: Some(true),
            ..Default::default()
        })
    );
    // A child disk with content replaces the parent's whole.
    let child2 = layer("disk:\n  name: c\n");
    let m2 = merge(&child2, &parent);
    assert_eq!(
        m2.disk,
        Some(Disk {
            name: "c".into(),
            ..Default::default()
        })
    );
}

#[test]
fn users_and_additional_files_keep_first_seen_order() {
    let parent = layer(
        "systemConfig:\n  users:\n    - {name: a, shell: /bin/sh, passwordMaxAge: 90, sudo: true}\n    - {name: b}\n  additionalFiles:\n    - {local: p1, final: /etc/one}\n    - {local: p2, final: /etc/two}\n",
    );
    let child = layer(
        "systemConfig:\n  users:\n    - {name: c}\n    - {name: a, password: pw, passwordMaxAge: 0, sudo: false}\n  additionalFiles:\n    - {local: c3, final: /etc/three}\n    - {local: c1, final: /etc/one}\n",
    );
    let m = merge(&child, &parent);
    let s = sc(&m);
    let names: Vec<&str> = s.users.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, vec!["a", "b", "c"]);
    let a = &s.users[0];
    assert_eq!(a.shell, "/bin/sh");
    assert_eq!(a.password, "pw");
    // passwordMaxAge 0 overrides an inherited value; sudo false too.
    assert_eq!(a.password_max_age, Some(0));
    assert_eq!(a.sudo, Some(false));
    let files: Vec<(&str, &str)> = s
        .additional_files
        .iter()
        .map(|f| (f.local.as_str(), f.final_path.as_str()))
        .collect();
    assert_eq!(
        files,
        vec![("c1", "/etc/one"), ("p2", "/etc/two"), ("c3", "/etc/three")]
    );
    // And the same again: stable.
    assert_eq!(merge(&child, &parent), m);
}

#[test]
fn dkms_merge_semantics() {
    let parent = layer(
        "systemConfig:\n  dkms:\n    enabled: true\n    modules: [a/1, b/2]\n    secureBoot:\n      enabled: true\n      signingKeyPath: /p.key\n      signingCertPath: /p.crt\n      retainSigningIdentity: true\n      targetKeyPath: /t.key\n",
    );
    let child = layer(
        "systemConfig:\n  dkms:\n    enabled: false\n    modules: []\n    secureBoot:\n      enabled: false\n      signingKeyPath: /c.key\n",
    );
    let m = merge(&child, &parent);
    let d = sc(&m).dkms.clone().unwrap_or_default();
    assert_eq!(d.enabled, Some(false));
    assert_eq!(d.modules, vec!["a/1", "b/2"]);
    let sb = d.secure_boot.unwrap_or_default();
    assert_eq!(sb.enabled, Some(false));
    assert_eq!(sb.retain_signing_identity, Some(true));
    assert_eq!(sb.signing_key_path, "/c.key");
    assert_eq!(sb.signing_cert_path, "/p.crt");
    assert_eq!(sb.target_key_path, "/t.key");
    let child = layer("systemConfig:\n  dkms:\n    enabled: true\n    modules: [c/3]\n");
    let d = sc(&merge(&child, &parent)).dkms.clone().unwrap_or_default();
    assert_eq!(d.modules, vec!["c/3"]);
}

#[test]
fn whole_section_replacements_proxy_provisioning_cloud_init_apt_policy_oep() {
    let parent = layer(
        "systemConfig:\n  proxy: {httpProxy: 'http://p:3128', noProxy: localhost}\n  provisioning:\n    beforeLogin: true\n    scripts:\n      - {name: s1, local: a, final: /a, args: [x], env: {A: '1'}}\n      - {name: s2, local: b, final: /b}\n  cloudInit: {enabled: true, userDataFile: u}\n  aptPolicy: {upgradeAllowedRepos: [r1]}\n  oepInstaller: {url: 'https://x/a', user: u1}\n",
    );
    let child = layer(
        "systemConfig:\n  proxy: {httpsProxy: 'http://q:3128'}\n  provisioning:\n    beforeLogin: false\n    scripts:\n      - {name: s3, local: c, final: /c}\n      - {name: s1, local: a2, final: /a2}\n  cloudInit: {enabled: false}\n  aptPolicy: {upgradeAllowedRepos: []}\n  oepInstaller: {url: 'https://y/b', user: u2}\n",
    );
    let m = merge(&child, &parent);
    let s = sc(&m);
    assert_eq!(
        s.proxy,
        Some(Proxy {
            https_proxy: "http://q:3128".into(),
            ..Default::default()
        })
    );
    let pr = s.provisioning.clone().unwrap_or_default();
    assert_eq!(pr.before_login, Some(false));
    let names: Vec<(&str, &str)> = pr
        .scripts
        .iter()
        .map(|x| (x.name.as_str(), x.local.as_str()))
        .collect();
    assert_eq!(names, vec![("s1", "a2"), ("s2", "b"), ("s3", "c")]);
    // Replaced as a whole, args and env too.
    assert!(pr.scripts[0].args.is_empty() && pr.scripts[0].env.is_empty());
    assert_eq!(
        s.cloud_init,
        Some(CloudInit {
            enabled: Some(false),
            ..Default::default()
        })
    );
    assert_eq!(
        s.apt_policy,
        Some(AptPolicy {
            upgrade_allowed_repos: Some(vec![])
        })
    );
    assert_eq!(
        s.oep_installer.as_ref().map(|o| o.user.as_str()),
        Some("u2")
    );
    // `proxy: {}` clears; an absent section inherits; beforeLogin absent inherits.
    let clear = layer("systemConfig:\n  proxy: {}\n  provisioning:\n    scripts: []\n");
    let m = merge(&clear, &parent);
    let s = sc(&m);
    assert_eq!(s.proxy, Some(Proxy::default()));
    assert!(to_yaml(&m, false).contains("  proxy: {}\n"));
    assert_eq!(
        s.provisioning.as_ref().and_then(|p| p.before_login),
        Some(true)
    );
    assert_eq!(
        s.apt_policy,
        Some(AptPolicy {
            upgrade_allowed_repos: Some(vec!["r1".into()])
        })
    );
    assert_eq!(
        s.cloud_init.as_ref().map(|c| c.user_data_file.as_str()),
        Some("u")
    );
}

#[test]
fn overlay_leaf_packages_are_exactly_its_own() {
    let parent = layer("systemConfig:\n  packages: [grub-efi, shim]\n");
    let child = layer(
        "baseline:\n  mode: overlay\n  source: {path: /b.img}\nsystemConfig:\n  packages: [htop]\n",
    );
    assert_eq!(sc(&merge(&child, &parent)).packages, vec!["htop"]);
}

// ---- extends ----

// A library test writes its temp dir directly (no engine System here).
#[allow(clippy::disallowed_methods)]
fn write(dir: &Path, name: &str, text: &str) {
    if let Err(e) = std::fs::write(dir.join(name), text) {
        panic!("{e}");
    }
}

fn tmp() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    }
}

fn symlink(target: &Path, link: &Path) {
    if let Err(e) = std::os::unix::fs::symlink(target, link) {
        panic!("{e}");
    }
}

fn chain_err(leaf: &Path) -> Vec<String> {
    match load_chain(&OsFs, leaf, &Variables::new()) {
        Ok(c) => panic!("loaded {:?}", c.files),
        Err(e) => e.iter().map(|p| p.to_string()).collect(),
    }
}

fn chain_ok(leaf: &Path) -> Chain {
    match load_chain(&OsFs, leaf, &Variables::new()) {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn the_worked_example() {
    let d = tmp();
    let dir = d.path();
    write(
        dir,
        "root.yml",
        &format!(
            "{HEAD}systemConfig:\n  packages: [docker-cli, containerd]\n  kernel:\n    version: '6.8'\n"
        ),
    );
    write(
        dir,
        "middle.yml",
        &format!(
            "extends: root.yml\n{HEAD}systemConfig:\n  packages: [prometheus-node-exporter, grafana-agent]\n  kernel:\n    version: '6.12'\n"
        ),
    );
    write(
        dir,
        "leaf.yml",
        &format!("extends: ./middle.yml\n{HEAD}systemConfig:\n  packages: [my-custom-app]\n"),
    );
    let defaults = layer(
        "systemConfig:\n  packages: [openssh-server]\n  kernel:\n    version: '6.1'\n    cmdline: quiet\n",
    );
    let c = chain_ok(&dir.join("leaf.yml"));
    assert_eq!(
        c.describe(),
        "Extends chain: root.yml -> middle.yml -> leaf.yml"
    );
    assert_eq!(
        c.files,
        vec![
            dir.join("root.yml"),
            dir.join("middle.yml"),
            dir.join("leaf.yml")
        ]
    );
    assert!(c.warnings.is_empty());
    let full = resolve_full(&c, Some(&defaults));
    let s = sc(&full);
    assert_eq!(
        s.packages,
        vec![
            "openssh-server",
            "docker-cli",
            "containerd",
            "prometheus-node-exporter",
            "grafana-agent",
            "my-custom-app"
        ]
    );
    let k = s.kernel.clone().unwrap_or_default();
    assert_eq!((k.version.as_str(), k.cmdline.as_str()), ("6.12", "quiet"));
    // extends is stripped from every output.
    assert_eq!(full.extends, None);
    assert!(!to_yaml(&c.layers[2], false).contains("extends"));
    // Chain-only: no defaults.
    assert_eq!(sc(&c.fold()).packages.len(), 5);
    // Overlay: the OS defaults do not apply.
    write(
        dir,
        "ov.yml",
        &format!(
            "extends: root.yml\n{HEAD}baseline:\n  mode: overlay\n  source: {{path: /b.img}}\nsystemConfig:\n  packages: [htop]\n"
        ),
    );
    let c = chain_ok(&dir.join("ov.yml"));
    assert_eq!(
        sc(&resolve_full(&c, Some(&defaults))).packages,
        vec!["htop"]
    );
}

#[test]
fn a_cycle_through_a_directory_symlink_is_caught_on_canonical_paths() {
    let d = tmp();
    let dir = d.path();
    symlink(dir, &dir.join("same"));
    write(dir, "a.yml", &format!("extends: same/b.yml\n{HEAD}"));
    write(dir, "b.yml", &format!("extends: same/a.yml\n{HEAD}"));
    // `same/same/a.yml` is `a.yml`: caught, and shown as `A -> B -> A` with
    // the paths as the chain names them, not canonical ones.
    let (a, b) = (dir.join("a.yml"), dir.join("same/b.yml"));
    assert_eq!(
        chain_err(&a),
        vec![format!(
            "{}:1:10: circular extends detected: {} -> {} -> {}",
            b.display(),
            a.display(),
            b.display(),
            a.display()
        )]
    );
}

/// Templates in memory by relative path; their canonical paths are below
/// `/real`, so a message that showed one would say so.
struct MemFs(Vec<(&'static str, String)>);

impl TemplateFs for MemFs {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        self.0
            .iter()
            .find(|(p, _)| Path::new(p) == path)
            .map(|(_, text)| text.clone())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }

    fn canonicalize(&self, path: &Path) -> std::io::Result<std::path::PathBuf> {
        let rel: std::path::PathBuf = path
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect();
        let dir = self.0.iter().any(|(p, _)| Path::new(p).starts_with(&rel));
        if dir || rel.as_os_str().is_empty() {
            Ok(Path::new("/real").join(rel))
        } else {
            Err(std::io::Error::from(std::io::ErrorKind::NotFound))
        }
    }

    fn is_symlink(&self, _: &Path) -> bool {
        false
    }
}

#[test]
fn a_cycle_is_shown_with_the_paths_as_written() {
    let fs = MemFs(vec![
        ("t/a.yml", format!("extends: b.yml\n{HEAD}")),
        ("t/b.yml", format!("extends: ./c.yml\n{HEAD}")),
        ("t/c.yml", format!("{HEAD}extends: b.yml\n")),
    ]);
    let err: Vec<String> = match load_chain(&fs, Path::new("t/a.yml"), &Variables::new()) {
        Ok(c) => panic!("loaded {:?}", c.files),
        Err(e) => e.iter().map(|p| p.to_string()).collect(),
    };
    assert_eq!(
        err,
        ["t/c.yml:9:10: circular extends detected: t/b.yml -> t/c.yml -> t/b.yml"]
    );
}

#[test]
fn escapes_lexical_and_through_a_symlinked_directory() {
    let d = tmp();
    let top = d.path();
    let dir = top.join("t");
    if let Err(e) = std::fs::create_dir_all(top.join("elsewhere")) {
        panic!("{e}");
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("{e}");
    }
    write(top, "x.yml", HEAD);
    write(&top.join("elsewhere"), "p.yml", HEAD);
    write(&dir, "lex.yml", &format!("extends: ../x.yml\n{HEAD}"));
    assert_eq!(
        chain_err(&dir.join("lex.yml")),
        vec![format!(
            "{}:1:10: extends path escapes child template's directory: ../x.yml",
            dir.join("lex.yml").display()
        )]
    );
    write(
        &dir,
        "abs.yml",
        &format!("extends: {}\n{HEAD}", top.join("x.yml").display()),
    );
    assert_eq!(chain_err(&dir.join("abs.yml")).len(), 1);
    symlink(&top.join("elsewhere"), &dir.join("link"));
    write(&dir, "sym.yml", &format!("extends: link/p.yml\n{HEAD}"));
    assert_eq!(
        chain_err(&dir.join("sym.yml")),
        vec![format!(
            "{}:1:10: extends path escapes child template's directory: link/p.yml",
            dir.join("sym.yml").display()
        )]
    );
    // A parent that is itself a symlink, and a wrong extension.
    symlink(&dir.join("lex.yml"), &dir.join("alias.yml"));
    write(&dir, "viasym.yml", &format!("extends: alias.yml\n{HEAD}"));
    assert_eq!(
        chain_err(&dir.join("viasym.yml")),
        vec![format!(
            "{}:1:10: extends parent is a symbolic link: {}",
            dir.join("viasym.yml").display(),
            dir.join("alias.yml").display()
        )]
    );
    write(&dir, "ext.yml", &format!("extends: parent.json\n{HEAD}"));
    assert_eq!(
        chain_err(&dir.join("ext.yml")),
        vec![format!(
            "{}:1:10: extends must name a .yml or .yaml file: parent.json",
            dir.join("ext.yml").display()
        )]
    );
    // The leaf itself may not be a symlink either.
    assert_eq!(
        chain_err(&dir.join("alias.yml")),
        vec![format!(
            "{}: template is a symbolic link: {} (name the file it points to)",
            dir.join("alias.yml").display(),
            dir.join("alias.yml").display()
        )]
    );
}

#[test]
fn target_mismatch_at_level_two() {
    let d = tmp();
    let dir = d.path();
    write(dir, "root.yml", &HEAD.replace("x86_64", "aarch64"));
    write(dir, "mid.yml", &format!("{HEAD}extends: root.yml\n"));
    write(dir, "leaf.yml", &format!("extends: mid.yml\n{HEAD}"));
    assert_eq!(
        chain_err(&dir.join("leaf.yml")),
        vec![format!(
            "{}:9:10: extends target mismatch at level 2: child targets ubuntu/ubuntu24/x86_64/raw but parent targets ubuntu/ubuntu24/aarch64/raw",
            dir.join("mid.yml").display()
        )]
    );
}

#[test]
fn depth_five_warns_and_succeeds() {
    let d = tmp();
    let dir = d.path();
    write(dir, "l0.yml", HEAD);
    for i in 1..5 {
        write(
            dir,
            &format!("l{i}.yml"),
            &format!("extends: l{}.yml\n{HEAD}", i - 1),
        );
    }
    let c = chain_ok(&dir.join("l4.yml"));
    assert_eq!(c.layers.len(), 5);
    let w: Vec<String> = c.warnings.iter().map(|p| p.to_string()).collect();
    // On the `extends` that brought in the fifth template: l1's.
    assert_eq!(
        w,
        vec![format!(
            "{}:1:10: warning: extends chain depth 5 exceeds recommended maximum of 4",
            dir.join("l1.yml").display()
        )]
    );
    assert!(chain_ok(&dir.join("l3.yml")).warnings.is_empty());
}

#[test]
fn a_template_that_cannot_be_read_is_refused_at_its_first_line() {
    let d = tmp();
    let dir = d.path();
    // A missing leaf, and a parent that is a directory.
    assert_eq!(
        chain_err(&dir.join("gone.yml")),
        vec![format!(
            "{}:1:1: cannot read template: {}",
            dir.join("gone.yml").display(),
            std::io::Error::from_raw_os_error(2)
        )]
    );
    if let Err(e) = std::fs::create_dir_all(dir.join("p.yml")) {
        panic!("{e}");
    }
    write(dir, "leaf.yml", &format!("extends: p.yml\n{HEAD}"));
    let err = chain_err(&dir.join("leaf.yml"));
    let want = format!(
        "{}:1:1: cannot read template: ",
        dir.join("p.yml").display()
    );
    assert!(err.len() == 1 && err[0].starts_with(&want), "{err:?}");
}

// ---- variables, defaults path, output ----

#[test]
fn variables_substitute_before_typing() {
    let mut v =
        match Variables::from_yaml(Path::new("v.yml"), "name: edge\nsudo: 'true'\nver: 2.0.1\n") {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        };
    v.set("ver", "3.0.0");
    let t = match parse(
        Path::new("t.yml"),
        "image:\n  name: ${name}-img\n  version: ${ver}\nsystemConfig:\n  users:\n    - name: ${name}\n      sudo: ${sudo}\n",
        &v,
    ) {
        Ok(t) => t,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(t.image.name, "edge-img");
    assert_eq!(t.image.version, "3.0.0");
    assert_eq!(sc(&t).users[0].sudo, Some(true));
    assert_eq!(
        perr("image:\n  name: ${nope}\n"),
        vec![
            "t.yml:2:9: unknown variable '${nope}': give it with --var nope=VALUE or in a variables file"
        ]
    );
    match Variables::from_yaml(Path::new("v.yml"), "a:\n  b: 1\n") {
        Ok(_) => panic!("nested accepted"),
        Err(e) => assert_eq!(
            e.to_string(),
            "v.yml:2:3: variable 'a' must be a scalar, not a mapping (a variables file is a flat mapping)"
        ),
    }
}

#[test]
fn defaults_path_maps_img_to_initrd() {
    let t = Target {
        os: "ubuntu".into(),
        dist: "ubuntu24".into(),
        arch: "x86_64".into(),
        image_type: "img".into(),
    };
    assert_eq!(
        defaults_path(Path::new("config/osv"), &t),
        Path::new(
            "config/osv/ubuntu/ubuntu24/imageconfigs/defaultconfigs/default-initrd-x86_64.yml"
        )
    );
    let t = Target {
        image_type: "raw".into(),
        ..t
    };
    assert!(defaults_path(Path::new("d"), &t).ends_with("default-raw-x86_64.yml"));
}

#[test]
fn redaction_and_field_order() {
    let t = layer(
        "systemConfig:\n  immutability:\n    enabled: true\n    secureBootDBKey: /k.key\n    secureBootDBCrt: /k.crt\n    secureBootDBCer: /k.cer\n  users:\n    - {shell: /bin/sh, name: admin, password: '$6$s$h', hash_algo: sha512}\n  dkms:\n    enabled: true\n    secureBoot: {enabled: true, signingKeyPath: /s.key, signingCertPath: /s.crt}\n",
    );
    let y = to_yaml(&t, true);
    assert_eq!(
        y,
        "image:\n  name: img\n  version: \"1.0.0\"\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n  arch: x86_64\n  imageType: raw\nsystemConfig:\n  immutability:\n    enabled: true\n    secureBootDBKey: \"<redacted>\"\n    secureBootDBCrt: \"<redacted>\"\n    secureBootDBCer: \"<redacted>\"\n  dkms:\n    enabled: true\n    secureBoot:\n      enabled: true\n      signingKeyPath: \"<redacted>\"\n      signingCertPath: \"<redacted>\"\n  users:\n    - name: admin\n      password: \"<redacted>\"\n      hash_algo: \"<redacted>\"\n      shell: /bin/sh\n"
    );
    assert!(to_yaml(&t, false).contains("/k.key"));
    assert!(to_json(&t, true).contains("\"password\": \"<redacted>\""));
    // The canonical text reads back to the same template.
    assert_eq!(p(&to_yaml(&t, false)), t);
}

#[test]
fn package_globs_are_names() {
    assert_eq!(
        user(
            "systemConfig:\n  packages: ['wayland*', 'libva*', 'lib?x', 'linux-[0-9]*']\n  kernel:\n    packages: ['linux-image-generic*']\n"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        user("systemConfig:\n  packages: ['*', '[a]x', 'a[', 'a[]', 'a]', 'a[[b]]']\n"),
        vec![
            "systemConfig.packages: '*' is not a valid package name or glob",
            "systemConfig.packages: '[a]x' is not a valid package name or glob",
            "systemConfig.packages: 'a[' is not a valid package name or glob",
            "systemConfig.packages: 'a[]' is not a valid package name or glob",
            "systemConfig.packages: 'a]' is not a valid package name or glob",
            "systemConfig.packages: 'a[[b]]' is not a valid package name or glob",
        ]
    );
}

#[test]
fn debian13_and_elxr13_targets() {
    let t = |os: &str, dist: &str| {
        let t = p(&format!(
            "image: {{name: a, version: '1'}}\ntarget: {{os: {os}, dist: {dist}, arch: x86_64, imageType: raw}}\n"
        ));
        validate_user(Path::new("t.yml"), &t)
            .into_iter()
            .map(|p| p.message)
            .collect::<Vec<_>>()
    };
    assert_eq!(t("debian", "debian13"), Vec::<String>::new());
    assert_eq!(t("wind-river-elxr", "elxr13"), Vec::<String>::new());
    assert_eq!(
        t("debian", "debian12"),
        vec!["target.dist 'debian12' is not a dist of debian: debian13"]
    );
}

#[test]
fn icts_fields_are_read_merged_and_emitted() {
    let parent = p(&format!(
        "{HEAD}disk:\n  name: d\n  selectionPolicy: {{strategy: largest, excludeRemovable: true}}\n  extendLastPartitionToFillDisk: true\npackageRepositories:\n  - codename: local\n    packages: ['https://x/a.deb']\n    pkey: '[trusted=yes]'\n    insecureSkipVerify: true\n  - codename: base\n    url: https://r/\n    pkeys: [https://k/1, https://k/2]\nsystemConfig:\n  kernel: {{name: kernel, cmdline: quiet}}\n  fde: {{enabled: true, passphrase: '12345'}}\n  installerPayload: {{enabled: true, compression: zstd}}\n"
    ));
    assert_eq!(validate_user(Path::new("t.yml"), &parent), Vec::new());
    let child = p("systemConfig:\n  kernel: {name: other}\n  installerPayload: {enabled: false}\n");
    let m = merge(&child, &parent);
    let y = to_yaml(&m, true);
    for want in [
        "  selectionPolicy:\n    strategy: largest\n    excludeRemovable: true\n",
        "  extendLastPartitionToFillDisk: true\n",
        "    packages:\n      - \"https://x/a.deb\"\n    insecureSkipVerify: true\n",
        "    pkeys:\n      - \"https://k/1\"\n      - \"https://k/2\"\n",
        "    cmdline: quiet\n    name: other\n",
        "    passphrase: \"<redacted>\"\n",
        "  installerPayload:\n    enabled: false\n",
    ] {
        assert!(y.contains(want), "{want:?} not in:\n{y}");
    }
    assert!(!y.contains("12345"));
    assert!(to_yaml(&m, false).contains("12345"));
    let op = p("overlayPolicy: {allowDiskResize: true}\n");
    assert_eq!(
        op.overlay_policy.and_then(|o| o.allow_disk_resize),
        Some(true)
    );
    assert_eq!(
        perr("disk:\n  extendLastPartitionToFillDisk: maybe\n"),
        vec!["t.yml:2:34: disk.extendLastPartitionToFillDisk must be true or false"]
    );
}

#[test]
fn only_a_plain_name_is_a_variable() {
    let t = p("systemConfig:\n  configurations:\n    - cmd: 'echo ${p:-MISSING} ${VAR#x} ${}'\n");
    assert_eq!(
        sc(&t).configurations[0].cmd,
        "echo ${p:-MISSING} ${VAR#x} ${}"
    );
}
