//! Base roots from a distribution's archive (docs/local-runtime.md, "Base
//! images"): an OS builder entry's `distribution:` is checked where it is
//! written, enters the base's fingerprint, and on a real run becomes a
//! Debian root built by mmdebstrap once and cached outside the tree, into
//! which a child image installs a package from the archive.

use std::path::Path;

use crate::support::{csis_text, edit, read, validate_refuses};
use csis_test_support::tree;

const NOW: i64 = 1796226804;
const RUN: &str = "2026_12_02T15_53_24";

/// The local-run fixture's `tiny` base starting from `distribution`
/// instead of its vendor directory.
fn from_distribution(root: &Path, distribution: &str) {
    edit(
        root,
        "cfg/builders.yml",
        "        image_id: vendor/tiny-os",
        &format!("        distribution: {distribution}"),
    );
}

fn csis(root: &Path, args: &[&str]) -> (Option<i32>, String) {
    csis_text(root, NOW, args)
}

#[test]
fn a_distribution_spec_is_checked_at_each_key() {
    let t = tree("local-run");
    let r = t.path();
    from_distribution(
        r,
        "{variant: tiny, packages: [hello, \"-x\"], mirror: \"ftp://x\"}",
    );
    let out = validate_refuses(r);
    for line in [
        "cfg/builders.yml:25:23: OS builder tiny distribution: `suite:` is required: the Debian suite or codename to build the root from (for example `suite: bookworm`)",
        "cfg/builders.yml:25:33: OS builder tiny distribution: variant 'tiny' is not one of mmdebstrap's: extract, custom, essential, apt, required, minbase, buildd, important, debootstrap, standard",
        "cfg/builders.yml:25:49: OS builder tiny distribution: package '-x' is not a package name (letters, digits and `.+-:=~_`, not starting with `-`)",
        "cfg/builders.yml:25:72: OS builder tiny distribution: mirror 'ftp://x' is not an archive URL (http://, https:// or file:/, for example http://deb.debian.org/debian)",
    ] {
        assert!(out.contains(line), "{line}\n---\n{out}");
    }
}

#[test]
fn a_distribution_beside_an_image_id_or_on_a_type_that_builds_no_root_is_refused() {
    let t = tree("local-run");
    let r = t.path();
    edit(
        r,
        "cfg/builders.yml",
        "        image_id: vendor/tiny-os",
        "        image_id: vendor/tiny-os\n        distribution: {suite: bookworm}",
    );
    let out = validate_refuses(r);
    assert!(
        out.contains("cfg/builders.yml:26:9: OS builder tiny runtimes[0]: `distribution:` and `image_id:` both name the base's starting root: keep one (`image_id:` a directory of the tree, `distribution:` a root mmdebstrap builds)"),
        "{out}"
    );
    let t = tree("templates");
    let r = t.path();
    edit(
        r,
        "cfg/builders.yml",
        "        template: templates/solo.yml",
        "        template: templates/solo.yml\n        distribution: {suite: noble}",
    );
    let out = validate_refuses(r);
    assert!(
        out.contains("`distribution:` is read only by an OS builder type that builds base roots from a distribution's archive (type local); type 'ict' does not: name its vendor image with `image_id:` or `query:`"),
        "{out}"
    );
}

/// The whole path on a real Debian root, with the archive reachable (the
/// runtime's `network: true`): mmdebstrap builds bookworm once (cached
/// outside the tree, so a second run of the suite reuses it), a child
/// installs `hello` with apt inside its own layer, its child shares the
/// package's files, the instance boots from a copy that has it, and
/// nothing lands on the host. Then the spec is an input of the base: a
/// package added re-bakes it, where the recorded chain was current.
#[test]
fn a_chain_on_a_debian_root_installs_a_package_from_the_archive_in_its_own_layer() {
    let t = tree("local-run");
    let r = t.path();
    from_distribution(r, "{suite: bookworm, variant: apt}");
    edit(
        r,
        "cfg/builders.yml",
        "store: store}",
        "store: store, network: true}",
    );
    edit(
        r,
        "images/chain.yml",
        "script: echo mid > \"$CSIS_IMAGE_ROOT/etc/layer-mid\"",
        "script: 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hello && echo mid > /etc/layer-mid'",
    );
    let host_had_hello = Path::new("/usr/bin/hello").exists();
    let (code, out) = csis(r, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "baked tiny-here-{RUN} from vendor (bookworm (apt) root built by mmdebstrap)"
        )) || out.contains(&format!(
            "baked tiny-here-{RUN} from vendor (bookworm (apt) root from the cache)"
        )),
        "{out}"
    );
    let build = |series: &str| r.join(format!("store/images/{series}-here-{RUN}/root"));
    assert!(read(&build("tiny").join("etc/debian_version")).starts_with("12."));
    let status = |series: &str| read(&build(series).join("var/lib/dpkg/status"));
    assert!(!status("base").contains("Package: hello\n"));
    assert!(status("mid").contains("Package: hello\nStatus: install ok installed\n"));
    // The top layer shares the package's files with its parent build.
    use std::os::unix::fs::MetadataExt;
    let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
    assert_eq!(
        inode(&build("top").join("usr/bin/hello")),
        inode(&build("mid").join("usr/bin/hello"))
    );
    assert!(r.join("store/instances/box/root/usr/bin/hello").is_file());
    assert_eq!(Path::new("/usr/bin/hello").exists(), host_had_hello);

    let (code, out) = csis(r, &["plan"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Plan: 0 to bake, 4 current"), "{out}");
    from_distribution_packages(r);
    let (code, out) = csis(r, &["plan", "--explain"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("tiny@here: bake: inputs changed"), "{out}");
    assert!(out.contains("distribution.packages"), "{out}");
}

fn from_distribution_packages(root: &Path) {
    edit(
        root,
        "cfg/builders.yml",
        "distribution: {suite: bookworm, variant: apt}",
        "distribution: {suite: bookworm, variant: apt, packages: [hello]}",
    );
}

/// A vendor image given as a root tarball: the base bake unpacks it (links
/// and modes kept), and its fingerprint holds the tarball's digest, so new
/// bytes re-bake the base where the same bytes leave it current.
#[test]
fn a_vendor_root_tarball_is_unpacked_and_fingerprinted_by_its_content() {
    let t = tree("local-run");
    let r = t.path();
    let pack = |extra: Option<&str>| {
        if let Some(name) = extra {
            std::fs::write(r.join("vendor/tiny-os/etc").join(name), "new\n").unwrap();
        }
        let status = std::process::Command::new("tar")
            .arg("-C")
            .arg(r.join("vendor/tiny-os"))
            .arg("-cf")
            .arg(r.join("vendor/tiny-os.tar"))
            .arg(".")
            .status()
            .unwrap();
        assert!(status.success());
    };
    pack(None);
    edit(
        r,
        "cfg/builders.yml",
        "image_id: vendor/tiny-os",
        "image_id: vendor/tiny-os.tar",
    );
    let (code, out) = csis(r, &["run", "all", "--no-dry-run"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!("baked tiny-here-{RUN} from vendor\n")),
        "{out}"
    );
    let root = r.join(format!("store/images/tiny-here-{RUN}/root"));
    assert!(root.join("bin/busybox").is_file());
    assert_eq!(
        std::fs::read_link(root.join("bin/sh")).unwrap(),
        std::fs::read_link(r.join("vendor/tiny-os/bin/sh")).unwrap()
    );
    let (_, out) = csis(r, &["plan"]);
    assert!(out.contains("Plan: 0 to bake, 4 current"), "{out}");
    // The same bytes again: still current.
    pack(None);
    let (_, out) = csis(r, &["plan"]);
    assert!(out.contains("Plan: 0 to bake, 4 current"), "{out}");
    pack(Some("added"));
    let (_, out) = csis(r, &["plan", "--explain"]);
    assert!(out.contains("tiny@here: bake: inputs changed"), "{out}");
    assert!(out.contains("vendor.image_digest"), "{out}");
}
