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
        vec!["t.yml:1:1: unknown key 'nope' in the template; expected one of: extends, metadata, image, target, baseline, overlayPolicy, disk, packageRepositories, systemConfig"]
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
            "t.yml:2:3: image.name 'a-' must be letters and digits with inner hyphens and underscores",
            "t.yml:3:3: image.version 'v1' is not semver-like (1.0.0, 24.04, 1.0.0+build1)",
            "t.yml:5:3: target.os: 'debianx' is not one of: azure-linux, edge-microvisor-toolkit, wind-river-elxr, ubuntu, redhat-compatible-distro",
            "t.yml:7:3: target.arch: 'i386' is not one of: x86_64, aarch64, armv7hl",
            "t.yml:8:3: target.imageType: 'vmdk' is not one of: raw, iso, img, wsl2",
        ]
    );
    for v in ["1.0.0", "24.04", "1.0.0+build1", "3"] {
        assert!(version_ok(v), "{v}");
    }
    let t = p("image:\n  name: a\n  version: 24.04\ntarget:\n  os: ubuntu\n  dist: emt3\n  arch: x86_64\n  imageType: raw\n");
    assert_eq!(
        validate_user(Path::new("t.yml"), &t)[0].message,
        "target.dist 'emt3' is not a dist of ubuntu: ubuntu24, ubuntu26"
    );
    let t = p("image:\n  name: a\n  version: '1'\ntarget:\n  os: redhat-compatible-distro\n  dist: el10\n  arch: x86_64\n  imageType: img\n");
    assert!(validate_user(Path::new("t.yml"), &t).is_empty());
}

fn version_ok(v: &str) -> bool {
    let t = p(&format!("image:\n  name: a\n  version: '{v}'\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n  arch: x86_64\n  imageType: raw\n"));
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
    let a = p(&format!("{HEAD}packageRepositories:\n  - codename: a\n    url: https://x\n    pkey: /k\n    allowPackages: [libva*, kernel-6.17.11]\n"));
    let b = p(&format!("{HEAD}packageRepositories:\n  - codename: a\n    url: https://x\n    pkey: /k\n    AllowPackages: [libva*, kernel-6.17.11]\n"));
    assert_eq!(a, b);
    assert_eq!(a.package_repositories[0].allow_packages, vec!["libva*", "kernel-6.17.11"]);
    assert!(validate_user(Path::new("t.yml"), &a).is_empty());
    assert_eq!(
        perr(&format!("{HEAD}packageRepositories:\n  - codename: a\n    allowPackages: [x]\n    AllowPackages: [y]\n")),
        vec!["t.yml:12:5: packageRepositories[0]: set allowPackages or its alias AllowPackages, not both"]
    );
}

#[test]
fn package_names_and_uniqueness() {
    assert_eq!(
        user("systemConfig:\n  packages: [vim, 'bad name', vim, curl_8.5.0-2ubuntu10.13]\n"),
        vec![
            "systemConfig.packages: 'bad name' is not a valid package name",
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
        user("systemConfig:\n  network:\n    backend: netplan\n    interfaces:\n      - name: e0\n        routes:\n          - to: 10.0.0.0/33\n"),
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
    one("systemConfig:\n  immutability:\n    enabled: true\n    secureBootDBKey: /k.key\n", sb);
    one(
        "systemConfig:\n  immutability:\n    enabled: false\n    secureBootDBKey: /k.key\n    secureBootDBCrt: /k.crt\n    secureBootDBCer: /k.cer\n",
        sb,
    );
    assert_eq!(
        user("systemConfig:\n  immutability:\n    secureBootDBKey: /k.key\n    secureBootDBCrt: /k.crt\n    secureBootDBCer: /k.cer\n"),
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
        user("systemConfig:\n  dkms:\n    enabled: false\n    secureBoot:\n      enabled: true\n      retainSigningIdentity: true\n"),
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
    let t = p(&format!("{HEAD}systemConfig:\n  users:\n    - name: a\n      hash_algo: md5\n"));
    let w = validate_user(Path::new("t.yml"), &t);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].severity, Severity::Warning);
    assert_eq!(
        w[0].to_string(),
        "t.yml: warning: systemConfig.users[0].hash_algo md5 is insecure; avoid it in production"
    );
    assert_eq!(
        merged("systemConfig:\n  users:\n    - name: a\n      sshAuthorizedKeys: [ssh-ed25519 AAAA a@b]\n"),
        vec!["a user has SSH keys but systemConfig.packages has no openssh-server: key-based login needs it"]
    );
}

#[test]
fn provisioning_rules() {
    assert_eq!(
        user("systemConfig:\n  provisioning:\n    scripts:\n      - name: -bad\n        local: a.sh\n        final: /usr/local/sbin/a b.sh\n      - name: ok\n        local: b.sh\n        final: /usr/local/sbin/x\n        stage: sometimes\n        args: ['a b']\n        env: {'1X': v}\n      - name: ok\n        local: c.sh\n        final: /usr/local/sbin/x/y\n"),
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
        &format!("{ov}overlayPolicy:\n  packageOperation: additive-only\n  replaceKernel:\n    package: linux-image-*-oem\n"),
        "overlayPolicy.replaceKernel is only valid with packageOperation: additive-and-upgrade",
    );
    assert!(user(&format!("{ov}overlayPolicy:\n  packageOperation: additive-and-upgrade\n  allowPackageRemoval: true\n  replaceKernel:\n    package: linux-image-*-oem\n")).is_empty());
    assert_eq!(
        user(&format!("{ov}systemConfig:\n  hostname: h\n  kernel: {{version: '6.1'}}\n  bootloader: {{provider: grub}}\n  packages: [x]\n  oepInstaller:\n    url: https://raw.githubusercontent.com/o/r/c/f\n    sha256: {h}\n    sbomUrl: https://raw.githubusercontent.com/o/r/c/s\n    sbomSha256: {h}\n    modules: [m]\n    user: edge\n", h = "a".repeat(64))),
        vec![
            "overlay mode cannot apply systemConfig sections: hostname, kernel, bootloader (configure them in the baseline image)",
            "systemConfig.oepInstaller is not supported in overlay mode",
        ]
    );
}

#[test]
fn oep_installer_rules() {
    let h = "b".repeat(64);
    assert_eq!(
        merged(&format!("systemConfig:\n  users: [{{name: edge}}]\n  oepInstaller:\n    url: https://github.com/o/r/blob/c/f\n    sha256: xyz\n    sbomUrl: http://x/s\n    sbomSha256: {h}\n    modules: [m]\n    user: nobody\n    args: ['--a;b']\n")),
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
        vec!["disk is required when target.imageType is wsl2 (name, and artifacts of type tar with compression gz)"]
    );
    assert_eq!(
        msgs("disk:\n  name: w\n  partitionTableType: gpt\n  artifacts:\n    - type: tar\n      compression: xz\nsystemConfig:\n  kernel:\n    version: '6.8'\n", false),
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
