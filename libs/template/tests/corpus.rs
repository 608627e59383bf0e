//! The project's own ICT template corpus (fixtures/ict-corpus): templates
//! written for csis from the format's reference, laid out the way
//! `defaults_path` looks up OS defaults. Every template parses, its
//! extends chain loads, each layer validates as a user template, the full
//! view (OS defaults underneath, or the folded chain for an overlay)
//! validates as a merged template, and the warnings are exactly the ones
//! the corpus provokes. The refused cases (fixtures/ict-corpus/refused)
//! each give their exact messages.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::path::{Path, PathBuf};

use csis_template::{
    Chain, OsFs, Problem, REDACTED, Template, TemplateFs, Variables, defaults_path, load_chain,
    parse, resolve_full, to_yaml, validate_merged, validate_user, validate_user_located,
};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ict-corpus")
}

fn osv() -> PathBuf {
    corpus().join("config/osv")
}

/// A problem as printed, its path relative to the corpus.
fn shown(p: &Problem) -> String {
    let root = format!("{}/", corpus().display());
    p.to_string().replace(&root, "")
}

/// The YAML files under `dir`, sorted, recursively (`deep`) or not.
fn yaml_files(dir: &Path, deep: bool, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if deep {
                yaml_files(&p, deep, out);
            }
        } else if p.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            out.push(p);
        }
    }
}

fn rel(file: &Path, under: &Path) -> String {
    file.strip_prefix(under)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Which full view a template was validated in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum View {
    /// The OS defaults of its target under the folded chain.
    WithDefaults,
    /// Overlay mode: the defaults do not apply; the folded chain is the view.
    Overlay,
    /// The corpus holds no OS defaults for its target.
    NoDefaults,
}

#[derive(Debug, Default)]
struct Outcome {
    errors: Vec<String>,
    warnings: Vec<String>,
    view: Option<View>,
}

impl Outcome {
    fn add(&mut self, problems: Vec<Problem>) {
        for p in problems {
            if p.is_error() {
                self.errors.push(shown(&p));
            } else {
                self.warnings.push(shown(&p));
            }
        }
    }
}

fn read(file: &Path) -> String {
    OsFs.read(file).unwrap()
}

fn defaults_for(folded: &Template) -> Option<Template> {
    let dp = defaults_path(&osv(), &folded.target);
    let text = OsFs.read(&dp).ok()?;
    Some(parse(&dp, &text, &Variables::new()).unwrap())
}

/// Every check the CLI's `validate` makes, stopping at the first stage
/// that refuses (as the CLI does).
fn check(file: &Path, vars: &Variables) -> Outcome {
    let mut out = Outcome::default();
    if let Err(e) = parse(file, &read(file), vars) {
        out.add(e);
        return out;
    }
    let chain = match load_chain(&OsFs, file, vars) {
        Ok(c) => c,
        Err(e) => {
            out.add(e);
            return out;
        }
    };
    out.add(chain.warnings.clone());
    for (f, layer) in chain.files.iter().zip(&chain.layers) {
        out.add(validate_user_located(f, &read(f), layer));
    }
    let folded = chain.fold();
    if chain.layers.len() > 1 {
        out.add(validate_user(file, &folded));
    }
    if !out.errors.is_empty() {
        return out;
    }
    let (view, full) = if folded.is_overlay() {
        (View::Overlay, resolve_full(&chain, None))
    } else if let Some(d) = defaults_for(&folded) {
        (View::WithDefaults, resolve_full(&chain, Some(&d)))
    } else {
        // Without its OS defaults there is no full view to validate (a
        // user template may leave systemConfig to them).
        out.view = Some(View::NoDefaults);
        return out;
    };
    out.add(validate_merged(file, &full));
    out.view = Some(view);
    out
}

fn chain_of(file: &Path) -> Chain {
    load_chain(&OsFs, file, &Variables::new()).unwrap()
}

fn template(rel: &str) -> PathBuf {
    corpus().join("image-templates").join(rel)
}

/// The warnings the corpus provokes on purpose, exactly.
const EXPECTED_WARNINGS: &[&str] = &[
    // From validating the full view (no positions: it is a merged value).
    "image-templates/ubuntu24/cloud-raw.yml: warning: systemConfig.cloudInit.networkConfigFile and systemConfig.network are both set and may conflict",
    "image-templates/ubuntu24/cloud-raw.yml: warning: systemConfig.users[0].hash_algo md5 is insecure; avoid it in production",
    // From validating the layer as written.
    "image-templates/ubuntu24/cloud-raw.yml:28:24: warning: systemConfig.cloudInit.networkConfigFile and systemConfig.network are both set and may conflict",
    "image-templates/ubuntu24/cloud-raw.yml:34:18: warning: systemConfig.users[0].hash_algo md5 is insecure; avoid it in production",
    "image-templates/ubuntu24/depth/layer2.yml:2:10: warning: extends chain depth 5 exceeds recommended maximum of 4",
    "image-templates/ubuntu24/keys-without-server-raw.yml: warning: a user has SSH keys but systemConfig.packages has no openssh-server: key-based login needs it",
];

#[test]
fn every_corpus_template_is_read_and_validates_in_full() {
    let root = corpus().join("image-templates");
    let mut files = Vec::new();
    yaml_files(&root, true, &mut files);
    assert_eq!(files.len(), 38, "the corpus holds 38 image templates");
    let (mut full, mut overlay, mut alone) = (0, 0, 0);
    let mut unexpected = Vec::new();
    let mut warnings = Vec::new();
    for file in &files {
        let o = check(file, &Variables::new());
        if !o.errors.is_empty() {
            unexpected.push(format!("{}: {:?}", rel(file, &root), o.errors));
        }
        match o.view {
            Some(View::WithDefaults) => full += 1,
            Some(View::Overlay) => overlay += 1,
            Some(View::NoDefaults) => alone += 1,
            None => {}
        }
        warnings.extend(o.warnings);
    }
    println!(
        "ict-corpus: {} templates, full view with OS defaults {full}, overlay {overlay}, no OS defaults in the corpus {alone}",
        files.len()
    );
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
    assert_eq!((full, overlay, alone), (30, 4, 4));
    warnings.sort();
    assert_eq!(warnings, EXPECTED_WARNINGS);
}

#[test]
fn every_os_default_parses_and_validates() {
    let mut files = Vec::new();
    yaml_files(&osv(), true, &mut files);
    assert_eq!(files.len(), 14, "the corpus holds 14 OS default files");
    for file in &files {
        let text = read(file);
        let t = parse(file, &text, &Variables::new()).unwrap();
        assert!(t.extends.is_none(), "{}", file.display());
        // Each sits where defaults_path looks for its own target.
        assert_eq!(&defaults_path(&osv(), &t.target), file);
        let problems: Vec<String> = validate_user_located(file, &text, &t)
            .iter()
            .map(shown)
            .collect();
        assert!(problems.is_empty(), "{problems:?}");
        let problems: Vec<String> = validate_merged(file, &t).iter().map(shown).collect();
        assert!(problems.is_empty(), "{problems:?}");
    }
}

#[test]
fn every_enumeration_value_is_used() {
    let mut files = Vec::new();
    yaml_files(&corpus().join("image-templates"), true, &mut files);
    yaml_files(&osv(), true, &mut files);
    let mut seen: std::collections::BTreeSet<String> = Default::default();
    for file in &files {
        let t = parse(file, &read(file), &Variables::new()).unwrap();
        let tg = &t.target;
        seen.extend([
            format!("os={}", tg.os),
            format!("arch={}", tg.arch),
            format!("imageType={}", tg.image_type),
        ]);
        if let Some(b) = &t.baseline {
            seen.insert(format!("mode={}", b.mode));
            if let Some(s) = &b.source {
                seen.insert(format!("format={}", s.format));
            }
        }
        if let Some(p) = &t.overlay_policy {
            seen.insert(format!("packageOperation={}", p.package_operation));
            seen.insert(format!("conflictPolicy={}", p.conflict_policy));
        }
        if let Some(d) = &t.disk {
            seen.insert(format!("partitionTableType={}", d.partition_table_type));
            for a in &d.artifacts {
                seen.insert(format!("artifact={}", a.kind));
                seen.insert(format!("compression={}", a.compression));
            }
            for p in &d.partitions {
                seen.insert(format!("fsType={}", p.fs_type));
            }
        }
        let Some(sc) = &t.system_config else { continue };
        if let Some(b) = &sc.bootloader {
            seen.insert(format!("bootType={}", b.boot_type));
            seen.insert(format!("provider={}", b.provider));
            seen.insert(format!("bootEntryPolicy={}", b.boot_entry_policy));
        }
        if let Some(n) = &sc.network {
            seen.insert(format!("backend={}", n.backend));
        }
        if let Some(f) = &sc.fde {
            seen.insert(format!("unlock={}", f.unlock));
        }
        for u in &sc.users {
            seen.insert(format!("hash_algo={}", u.hash_algo));
        }
        for a in &sc.additional_files {
            seen.insert(format!("fileStage={}", a.stage));
        }
        if let Some(p) = &sc.provisioning {
            for s in &p.scripts {
                seen.insert(format!("scriptStage={}", s.stage));
            }
        }
        if let Some(x) = &sc.proxy {
            for u in [&x.http_proxy, &x.https_proxy, &x.ftp_proxy] {
                if let Some((scheme, _)) = u.split_once("://") {
                    seen.insert(format!("proxy={scheme}"));
                }
            }
        }
    }
    let want = [
        "os=azure-linux",
        "os=debian",
        "os=edge-microvisor-toolkit",
        "os=redhat-compatible-distro",
        "os=ubuntu",
        "os=wind-river-elxr",
        "arch=x86_64",
        "arch=aarch64",
        "arch=armv7hl",
        "imageType=raw",
        "imageType=iso",
        "imageType=img",
        "imageType=wsl2",
        "mode=create",
        "mode=overlay",
        "format=raw",
        "format=qcow2",
        "format=vhd",
        "format=vhdx",
        "packageOperation=additive-only",
        "packageOperation=additive-and-upgrade",
        "conflictPolicy=fail",
        "conflictPolicy=allow-explicit",
        "partitionTableType=gpt",
        "partitionTableType=mbr",
        "artifact=raw",
        "artifact=qcow2",
        "artifact=vhd",
        "artifact=vhdx",
        "artifact=vmdk",
        "artifact=vdi",
        "artifact=tar",
        "compression=gz",
        "compression=gzip",
        "compression=xz",
        "compression=zstd",
        "compression=bz2",
        "fsType=fat32",
        "fsType=vfat",
        "fsType=ext2",
        "fsType=ext3",
        "fsType=ext4",
        "fsType=xfs",
        "fsType=btrfs",
        "fsType=linux-swap",
        "bootType=efi",
        "bootType=legacy",
        "provider=grub",
        "provider=grub2",
        "provider=systemd-boot",
        "bootEntryPolicy=preserve",
        "bootEntryPolicy=exclusive",
        "backend=systemd-networkd",
        "backend=netplan",
        "unlock=auto",
        "unlock=manual",
        "hash_algo=bcrypt",
        "hash_algo=sha512",
        "hash_algo=sha256",
        "hash_algo=md5",
        "fileStage=pre-initramfs",
        "scriptStage=first-boot",
        "scriptStage=every-boot",
        "proxy=http",
        "proxy=https",
        "proxy=socks5h",
    ];
    let missing: Vec<&&str> = want.iter().filter(|w| !seen.contains(**w)).collect();
    assert!(missing.is_empty(), "never used: {missing:?}");
}

#[test]
fn chains_at_every_depth_up_to_the_warning_and_one_past_it() {
    for n in 1..=5 {
        let leaf = template(&format!("ubuntu24/depth/layer{n}.yml"));
        let chain = chain_of(&leaf);
        assert_eq!(chain.layers.len(), n);
        let names: Vec<String> = (1..=n).map(|i| format!("layer{i}.yml")).collect();
        assert_eq!(
            chain.describe(),
            format!("Extends chain: {}", names.join(" -> "))
        );
        let warnings: Vec<String> = chain.warnings.iter().map(shown).collect();
        if n <= csis_template::RECOMMENDED_MAX_DEPTH {
            assert!(warnings.is_empty(), "{warnings:?}");
        } else {
            assert_eq!(
                warnings,
                [
                    "image-templates/ubuntu24/depth/layer2.yml:2:10: warning: extends chain depth 5 exceeds recommended maximum of 4"
                ]
            );
        }
        let folded = chain.fold();
        let sc = folded.system_config.unwrap();
        let all = ["curl", "rsync", "htop", "iotop", "ncdu"];
        assert_eq!(sc.packages, all[..n]);
        let cmds: Vec<String> = sc.configurations.iter().map(|c| c.cmd.clone()).collect();
        let want: Vec<String> = (1..=n)
            .map(|i| format!("echo layer-{i} >> /etc/corpus-layers"))
            .collect();
        assert_eq!(cmds, want, "configurations concatenate root first");
        assert_eq!(folded.image.name, format!("corpus-depth-{n}"));
    }
}

#[test]
fn the_full_view_puts_the_os_defaults_under_the_chain() {
    let chain = chain_of(&template("ubuntu24/secure-raw.yml"));
    assert_eq!(chain.layers.len(), 2);
    let folded = chain.fold();
    let defaults = defaults_for(&folded).unwrap();
    let full = resolve_full(&chain, Some(&defaults));
    let sc = full.system_config.as_ref().unwrap();
    assert_eq!(
        sc.packages,
        [
            "ubuntu-minimal",
            "systemd-resolved",
            "ca-certificates",
            "sudo",
            "corpus-agent",
            "chrony",
            "jq",
            "openssh-server",
            "tpm2-tools"
        ]
    );
    // The chain's disk replaces the defaults' whole; the kernel is the
    // defaults' (no layer sets one); files merge by destination.
    let disk = full.disk.as_ref().unwrap();
    assert_eq!(disk.name, "Corpus_U24_Base");
    assert_eq!(disk.partitions.len(), 4);
    assert_eq!(disk.partitions[2].start, "-24GiB");
    let kernel = sc.kernel.as_ref().unwrap();
    assert_eq!(kernel.cmdline, "console=tty0 console=ttyS0,115200n8");
    let finals: Vec<&str> = sc
        .additional_files
        .iter()
        .map(|f| f.final_path.as_str())
        .collect();
    assert_eq!(
        finals,
        [
            "/etc/apt/sources.list.d/harbor-mirror.list",
            "/etc/motd",
            "/etc/chrony/conf.d/lab.conf"
        ]
    );
    // Users merge by name, field by field: base's groups, secure's password.
    let admin = &sc.users[0];
    assert_eq!(admin.name, "corpus-admin");
    assert_eq!(admin.groups, ["sudo"]);
    assert_eq!(admin.hash_algo, "bcrypt");
    assert_eq!(sc.users[1].password_max_age, Some(0));
    assert_eq!(full.image.version, "2.1.0-rc1");

    // A repository of the same codename replaces the defaults' in place.
    let chain = chain_of(&template("debian13/debian13-x86_64-router-raw.yml"));
    let full = resolve_full(&chain, defaults_for(&chain.fold()).as_ref());
    let repos: Vec<(&str, &str)> = full
        .package_repositories
        .iter()
        .map(|r| (r.codename.as_str(), r.url.as_str()))
        .collect();
    assert_eq!(
        repos,
        [
            ("trixie-local", "https://mirror-eu.corpus.invalid/debian"),
            ("corpus-router", "https://router-apt.corpus.invalid/debian"),
            ("corpus-scratch", "http://scratch.corpus.invalid/debian"),
            ("corpus-localdeb", ""),
        ]
    );
    assert_eq!(full.package_repositories[1].pkeys.len(), 2);
    assert_eq!(full.package_repositories[3].packages.len(), 2);

    // imageType img reads the initrd defaults.
    let chain = chain_of(&template("ubuntu24/rescue-img.yml"));
    let d = defaults_for(&chain.fold()).unwrap();
    assert_eq!(d.image.name, "corpus-ubuntu24-initrd");
    // A wsl2 template takes its disk from the wsl2 defaults.
    let chain = chain_of(&template("el10/el10-x86_64-dev-wsl2.yml"));
    let full = resolve_full(&chain, defaults_for(&chain.fold()).as_ref());
    assert_eq!(full.disk.unwrap().artifacts[0].kind, "tar");
}

#[test]
fn an_overlay_keeps_its_own_packages_and_no_os_defaults() {
    let chain = chain_of(&template("overlay/overlay-upgrade.yml"));
    assert_eq!(chain.layers.len(), 2);
    let folded = chain.fold();
    assert!(folded.is_overlay());
    let defaults = parse(
        &defaults_path(&osv(), &folded.target),
        &read(&defaults_path(&osv(), &folded.target)),
        &Variables::new(),
    )
    .unwrap();
    let full = resolve_full(&chain, Some(&defaults));
    assert_eq!(full, folded, "the OS defaults do not apply to an overlay");
    let sc = full.system_config.unwrap();
    assert_eq!(sc.packages, ["intel-gpu-tools"]);
    // What the overlay leaf does not set comes from its overlay parent.
    assert_eq!(sc.users[0].name, "overlay-op");
    let b = full.baseline.unwrap();
    assert_eq!(b.source.unwrap().format, "qcow2");
    let p = full.overlay_policy.unwrap();
    assert_eq!(p.allow_disk_resize, Some(true));
    assert_eq!(
        p.replace_kernel.unwrap().package,
        "linux-image-6.11.0-*-generic"
    );
    assert_eq!(full.disk.unwrap().max_size, "24GiB");
}

#[test]
fn secrets_are_redacted_in_the_resolved_view() {
    for (leaf, secrets) in [
        (
            "ubuntu24/secure-raw.yml",
            &[
                "example-only-admin-password",
                "example-only-auditor-password",
                "bcrypt",
                "/srv/corpus-keys/db.key",
                "/srv/corpus-keys/db.crt",
                "/srv/corpus-keys/db.cer",
                "/srv/corpus-keys/mok.key",
                "/srv/corpus-keys/mok.crt",
                "/var/lib/shim-signed/mok/corpus.key",
                "/var/lib/shim-signed/mok/corpus.der",
            ][..],
        ),
        (
            "emt3/emt3-x86_64-rt-lab-raw.yml",
            &[
                "example-only-inline-passphrase",
                "example-only-bench-password",
            ][..],
        ),
    ] {
        let chain = chain_of(&template(leaf));
        let full = resolve_full(&chain, defaults_for(&chain.fold()).as_ref());
        let plain = to_yaml(&full, false);
        let redacted = to_yaml(&full, true);
        for s in secrets {
            assert!(plain.contains(s), "{leaf}: {s} is in the plain view");
            assert!(!redacted.contains(s), "{leaf}: {s} is redacted");
        }
        assert!(redacted.contains(REDACTED));
        assert!(!redacted.contains("extends"));
        // The passphrase file's path is not a secret (its content is).
        if leaf.starts_with("ubuntu24") {
            assert!(redacted.contains("passphrase.example.txt"));
        }
    }
}

#[test]
fn variables_come_from_a_file_and_from_pairs() {
    let dir = corpus().join("variables");
    let vf = dir.join("site-lab.yml");
    let mut vars = Variables::from_yaml(&vf, &read(&vf)).unwrap();
    let file = dir.join("templated-raw.yml");
    let o = check(&file, &vars);
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    assert_eq!(o.view, Some(View::WithDefaults));
    let t = parse(&file, &read(&file), &vars).unwrap();
    assert_eq!(t.image.version, "4.2.0");
    let sc = t.system_config.unwrap();
    assert_eq!(sc.name, "corpus-templated-lab-node-07");
    assert_eq!(sc.hostname, "lab-node-07");
    assert_eq!(sc.kernel.unwrap().cmdline, "console=ttyS1,115200");
    assert_eq!(
        sc.users[0].sudo,
        Some(true),
        "a plain ${{x}} is typed after substitution"
    );
    assert_eq!(
        sc.configurations[0].cmd,
        "echo ${SHELL_ONLY:-x} > /etc/corpus-shell-default"
    );
    // A pair given later wins over the file.
    vars.set("site_hostname", "lab-node-99");
    let t = parse(&file, &read(&file), &vars).unwrap();
    assert_eq!(t.system_config.unwrap().hostname, "lab-node-99");
    // Without the values the template is refused, at every unknown.
    let o = check(&file, &Variables::new());
    assert_eq!(
        o.errors,
        [
            "variables/templated-raw.yml:5:12: unknown variable '${release}': give it with --var release=VALUE or in a variables file",
            "variables/templated-raw.yml:12:9: unknown variable '${site_hostname}': give it with --var site_hostname=VALUE or in a variables file",
            "variables/templated-raw.yml:13:13: unknown variable '${site_hostname}': give it with --var site_hostname=VALUE or in a variables file",
            "variables/templated-raw.yml:17:14: unknown variable '${console}': give it with --var console=VALUE or in a variables file",
            "variables/templated-raw.yml:20:13: unknown variable '${admin_sudo}': give it with --var admin_sudo=VALUE or in a variables file",
        ]
    );
}

/// Each refused case and every message it gets, exactly.
const REFUSED: &[(&str, &[&str])] = &[
    (
        "allow-both-spellings.yml",
        &[
            "refused/allow-both-spellings.yml:15:5: packageRepositories[0]: set allowPackages or its alias AllowPackages, not both",
        ],
    ),
    (
        "apt-policy-same-host.yml",
        &[
            "refused/apt-policy-same-host.yml:19:27: systemConfig.aptPolicy: repositories 'corpus-stable' (may upgrade) and 'corpus-frozen' (may not) are both on apt.corpus.invalid, and APT pins by host: list both, or neither",
        ],
    ),
    (
        "bad-image-and-dist.yml",
        &[
            "refused/bad-image-and-dist.yml:3:9: image.name 'corpus refused' must be letters and digits with inner hyphens and underscores",
            "refused/bad-image-and-dist.yml:7:9: target.dist 'ubuntu22' is not a dist of ubuntu: ubuntu24, ubuntu26",
        ],
    ),
    (
        "cycle-a.yml",
        &[
            "refused/cycle-b.yml:2:10: circular extends detected: refused/cycle-a.yml -> refused/cycle-b.yml -> refused/cycle-a.yml",
        ],
    ),
    (
        "cycle-b.yml",
        &[
            "refused/cycle-a.yml:2:10: circular extends detected: refused/cycle-b.yml -> refused/cycle-a.yml -> refused/cycle-b.yml",
        ],
    ),
    (
        "dhcp-with-address.yml",
        &[
            "refused/dhcp-with-address.yml:16:9: systemConfig.network.interfaces[0]: static addresses must not be set together with DHCP",
        ],
    ),
    (
        "dkms-secure-boot-off.yml",
        &[
            "refused/dkms-secure-boot-off.yml:14:16: systemConfig.dkms.secureBoot.enabled requires systemConfig.dkms.enabled: true",
        ],
    ),
    (
        "extends-escape.yml",
        &[
            "refused/extends-escape.yml:2:10: extends path escapes child template's directory: ../image-templates/ubuntu24/base-raw.yml",
        ],
    ),
    (
        "extends-list.yml",
        &[
            "refused/extends-list.yml:2:10: extends names a single parent template (one path), not a list",
        ],
    ),
    (
        "extends-missing.yml",
        &[
            "refused/extends-missing.yml:2:10: cannot read extends parent refused/parents/missing.yml: No such file or directory (os error 2)",
        ],
    ),
    (
        "extends-not-yaml.yml",
        &[
            "refused/extends-not-yaml.yml:2:10: extends must name a .yml or .yaml file: parents/plain.txt",
        ],
    ),
    (
        "extends-target-mismatch.yml",
        &[
            "refused/extends-target-mismatch.yml:2:10: extends target mismatch at level 1: child targets ubuntu/ubuntu24/x86_64/raw but parent targets ubuntu/ubuntu24/aarch64/raw",
        ],
    ),
    (
        "fde-without-passphrase.yml",
        &[
            "refused/fde-without-passphrase.yml:11:3: systemConfig.fde.passphraseFile is required when fde.enabled is true",
        ],
    ),
    (
        "glob-only-package.yml",
        &[
            "refused/glob-only-package.yml:12:7: systemConfig.packages: '*' is not a valid package name or glob",
            "refused/glob-only-package.yml:14:7: systemConfig.packages: package 'jq' is listed twice",
        ],
    ),
    (
        "oep-root-user.yml",
        &[
            "refused/oep-root-user.yml:12:10: systemConfig.oepInstaller.url: 'https://github.com/corpus-example/installer/blob/main/install.sh' is a GitHub page URL; use the file's raw.githubusercontent.com URL",
            "refused/oep-root-user.yml:17:11: systemConfig.oepInstaller.user must not be root",
        ],
    ),
    (
        "oep-user-not-defined.yml",
        &[
            "refused/oep-user-not-defined.yml: systemConfig.oepInstaller.user 'builder' is not a systemConfig.users entry",
        ],
    ),
    (
        "overlay-with-kernel.yml",
        &[
            "refused/overlay-with-kernel.yml:15:13: overlay mode cannot apply systemConfig sections: hostname, kernel (configure them in the baseline image)",
        ],
    ),
    (
        "overlay-without-source.yml",
        &[
            "refused/overlay-without-source.yml:11:9: baseline.source is required when baseline.mode is overlay",
        ],
    ),
    (
        "partial-secure-boot.yml",
        &[
            "refused/partial-secure-boot.yml:11:3: systemConfig.immutability: a secure-boot field is set, so secureBootDBKey, secureBootDBCrt and secureBootDBCer must all be set and enabled must be true",
        ],
    ),
    (
        "partition-offsets.yml",
        &[
            "refused/partition-offsets.yml:15:12: disk.partitions[0].end: only the final partition may use end \"0\"",
            "refused/partition-offsets.yml:17:14: disk.partitions[1].start '4096' is not an offset: a non-zero whole number, optionally negative, with one of KiB MiB GiB K M G KB MB GB",
        ],
    ),
    (
        "policy-without-overlay.yml",
        &[
            "refused/policy-without-overlay.yml:10:1: overlayPolicy may only be set when baseline.mode is overlay",
        ],
    ),
    (
        "proxy-with-credentials.yml",
        &[
            "refused/proxy-with-credentials.yml:12:16: systemConfig.proxy.httpProxy: a proxy URL must not contain credentials (they would land in world-readable files)",
        ],
    ),
    (
        "reboot-not-last.yml",
        &[
            "refused/reboot-not-last.yml:18:22: systemConfig.provisioning.scripts[0].rebootAfter is only allowed on the last script to run (the reboot would cut later scripts off)",
        ],
    ),
    (
        "repo-without-key.yml",
        &[
            "refused/repo-without-key.yml:11:5: packageRepositories[0].pkey is required",
            "refused/repo-without-key.yml:12:10: packageRepositories[0].url 'apt.corpus.invalid/debian' is not a URI",
        ],
    ),
    (
        "tar-outside-wsl2.yml",
        &[
            "refused/tar-outside-wsl2.yml:13:13: disk.artifacts[0].type: tar is only for target.imageType wsl2",
        ],
    ),
    (
        "unknown-key.yml",
        &[
            "refused/unknown-key.yml:11:3: unknown key 'pakages' in systemConfig; expected one of: name, description, hostname, packages, kernel, bootloader, network, immutability, fde, dkms, users, initramfs, additionalFiles, configurations, proxy, provisioning, cloudInit, aptPolicy, oepInstaller, installerPayload",
        ],
    ),
    (
        "unknown-variable.yml",
        &[
            "refused/unknown-variable.yml:11:13: unknown variable '${site_hostname}': give it with --var site_hostname=VALUE or in a variables file",
        ],
    ),
    (
        "wrong-type.yml",
        &[
            "refused/wrong-type.yml:11:13: systemConfig.packages must be a list of strings, not a scalar",
        ],
    ),
    (
        "wsl2-partitions-kernel.yml",
        &[
            "refused/wsl2-partitions-kernel.yml:12:23: disk.partitionTableType is not used for wsl2 templates",
            "refused/wsl2-partitions-kernel.yml:16:3: disk.partitions are not used for wsl2 templates",
            "refused/wsl2-partitions-kernel.yml:21:3: systemConfig.kernel is not allowed for wsl2 templates",
        ],
    ),
];

#[test]
fn the_refused_cases_give_their_exact_messages() {
    let dir = corpus().join("refused");
    let mut files = Vec::new();
    yaml_files(&dir, false, &mut files);
    let mut got = Vec::new();
    for file in &files {
        let o = check(file, &Variables::new());
        got.push((rel(file, &dir), o.errors));
    }
    let mut report = String::new();
    for (f, e) in &got {
        report.push_str(&format!("    (\"{f}\", &[\n"));
        for m in e {
            report.push_str(&format!("        {m:?},\n"));
        }
        report.push_str("    ]),\n");
    }
    let want: Vec<(String, Vec<String>)> = REFUSED
        .iter()
        .map(|(f, e)| (f.to_string(), e.iter().map(|m| m.to_string()).collect()))
        .collect();
    assert_eq!(got, want, "got:\n{report}");
    assert!(
        got.iter().all(|(_, e)| !e.is_empty()),
        "every case is refused"
    );
}

/// The corpus's input quirks are really there (so the tests above read them).
#[test]
fn the_input_quirks_are_present() {
    let t = |p: &str| read(&template(p));
    let rescue = t("ubuntu24/rescue-img.yml");
    assert!(!rescue.ends_with('\n'), "no final newline");
    assert!(
        rescue
            .lines()
            .any(|l| l.ends_with(' ') || l.ends_with('\t'))
    );
    assert!(t("ubuntu26/ubuntu26-x86_64-appliance-raw.yml").starts_with("---\n"));
    let board = t("ubuntu24-aarch64-board-raw.yml");
    assert!(board.contains("    -\n      type: raw"));
    assert!(board.contains("flags: []"));
    assert!(t("ubuntu24/keys-without-server-raw.yml").contains("packages: []"));
    let base = t("ubuntu24/base-raw.yml");
    for s in [
        "30720MiB",
        "545MB",
        "\"-24GiB\"",
        "\"-6GiB\"",
        "libcorpus[0-9]",
        "C12A7328-",
    ] {
        assert!(base.contains(s), "{s}");
    }
    assert!(t("ubuntu24/desktop-raw.yml").contains("- xwayland*"));
    let router = t("debian13/debian13-x86_64-router-raw.yml");
    assert!(router.contains("pkeys:") && router.contains("pkey: \"[trusted=yes]\""));
    // additionalFiles paths written three ways.
    assert!(t("ubuntu24-x86_64-minimal-raw.yml").contains("local: additionalfiles/"));
    assert!(base.contains("local: ../additionalfiles/"));
    assert!(t("ubuntu24/kiosk/kiosk-raw.yml").contains("local: ../../additionalfiles/"));
}

/// Every small file a template or default names (relative to the file that
/// names it) is in the corpus.
#[test]
fn every_referenced_file_is_in_the_corpus() {
    let mut files = Vec::new();
    yaml_files(&corpus().join("image-templates"), true, &mut files);
    yaml_files(&osv(), true, &mut files);
    let mut checked = 0;
    for file in &files {
        let t = parse(file, &read(file), &Variables::new()).unwrap();
        let Some(sc) = &t.system_config else { continue };
        let mut named: Vec<&str> = sc
            .additional_files
            .iter()
            .map(|f| f.local.as_str())
            .collect();
        for u in &sc.users {
            named.extend(u.ssh_authorized_keys_files.iter().map(String::as_str));
        }
        if let Some(c) = &sc.cloud_init {
            named.extend(
                [&c.user_data_file, &c.meta_data_file, &c.network_config_file].map(String::as_str),
            );
            named.extend(c.config_files.iter().map(String::as_str));
        }
        if let Some(f) = &sc.fde {
            named.push(&f.passphrase_file);
        }
        if let Some(p) = &sc.provisioning {
            named.extend(p.scripts.iter().map(|s| s.local.as_str()));
        }
        let dir = file.parent().unwrap();
        for n in named.into_iter().filter(|n| !n.is_empty()) {
            assert!(dir.join(n).is_file(), "{}: {n}", file.display());
            checked += 1;
        }
    }
    assert_eq!(checked, 25);
}
