//! The `ict` OS builder over fixtures/templates: base images composed from
//! image templates, built by image-composer-tool (the test double of
//! tests/e2e/doubles/image-composer-tool, first on PATH), fingerprinted by
//! their merged template. An edit to a template re-bakes exactly the bases
//! whose chain holds it (and their follow-chains), through `csis plan` and
//! through `csis watch`; a comment or key-order edit re-bakes nothing.

use crate::support::{edit, ok};
use csis_test_support::tree;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const T0: i64 = 1_796_226_804;
const B0: &str = "2026_12_02T15_53_24";

/// bin/ with the stand-in image-composer-tool; calls.log its calls.
fn double() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/e2e/doubles/image-composer-tool");
    std::fs::copy(src, bin.join("image-composer-tool")).unwrap();
    // The root file system its builds leave beside their disk images.
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    csis_test_support::lay_userland(&[root]);
    d
}

fn csis(root: &Path, double: &Path, now: i64, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csis"))
        .current_dir(root)
        .arg("--root-dir")
        .arg(root)
        .args(args)
        .env("CSIS_NOW", now.to_string())
        .env_remove("CSIS_RUN_ID")
        .env_remove("ICT_DOUBLE_FAIL")
        .env("ICT_DOUBLE_LOG", double.join("calls.log"))
        .env("ICT_DOUBLE_ROOT", double.join("root"))
        .env("PATH", path_with(double))
        .output()
        .unwrap()
}

fn path_with(double: &Path) -> String {
    format!(
        "{}:{}",
        double.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A copy of fixtures/templates after a real run recorded every build.
fn built() -> (tempfile::TempDir, tempfile::TempDir) {
    let t = tree("templates");
    let d = double();
    ok(csis(
        t.path(),
        d.path(),
        T0,
        &["run", "all", "--no-dry-run"],
    ));
    (t, d)
}

/// `csis plan`'s decisions: `series@runtime` -> reason.
fn plan(root: &Path, double: &Path) -> BTreeMap<String, String> {
    ok(csis(root, double, T0 + 60, &["plan"]))
        .lines()
        .filter_map(|l| l.split_once(": "))
        .filter(|(k, _)| k.ends_with("@here"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The series a plan bakes.
fn baking(p: &BTreeMap<String, String>) -> Vec<&str> {
    let mut out: Vec<&str> = p
        .iter()
        .filter(|(_, r)| r.starts_with("bake:"))
        .map(|(k, _)| k.trim_end_matches("@here"))
        .collect();
    out.sort();
    out
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn a_real_run_builds_each_template_base_with_image_composer_tool_and_bakes_its_artifact() {
    let (t, d) = built();
    let r = t.path();
    let calls = read(d.path().join("calls.log"));
    let real = r.canonicalize().unwrap();
    let calls: Vec<String> = calls
        .lines()
        .map(|l| {
            l.replace(&format!("{}/", real.display()), "")
                .replace(&format!("{}/", r.display()), "")
        })
        .collect();
    assert_eq!(
        calls,
        [
            "image-composer-tool build --work-dir _private/ict/edge-here/work _private/ict/edge-here/template.yml",
            "image-composer-tool build --work-dir _private/ict/lean-here/work _private/ict/lean-here/template.yml",
            "image-composer-tool build --work-dir _private/ict/solo-here/work _private/ict/solo-here/template.yml",
        ]
    );
    // The store entry of a base is ICT's artifact; images on top keep it.
    let edge = r.join(format!("store/images/edge-here-{B0}/root/edge.raw.gz"));
    let built_from = read(edge);
    assert!(built_from.contains("- my-custom-app"), "{built_from}");
    assert!(
        r.join(format!("store/images/app-top-here-{B0}/root/edge.raw.gz"))
            .is_file()
    );
    // Unredacted only under _private/; generated/ holds the redacted one.
    let private = read(r.join("_private/ict/edge-here/template.yml"));
    assert!(
        private.contains("password: example-only-not-a-secret"),
        "{private}"
    );
    let public =
        read(r.join("generated/base-image/edge/image-generation/edge-image-generation-here.yml"));
    assert!(public.contains("password: \"<redacted>\""), "{public}");
    assert!(!public.contains("example-only-not-a-secret"));
    // The merged template: OS defaults, then the chain root to leaf.
    assert!(
        public.contains(
            "  packages:\n    - openssh-server\n    - docker-cli\n    - containerd\n    - prometheus-node-exporter\n    - grafana-agent\n    - my-custom-app\n"
        ),
        "{public}"
    );
    assert!(
        public.contains("  hostname: edge-01\n"),
        "variables substituted: {public}"
    );
    assert!(baking(&plan(r, d.path())).is_empty());
}

#[test]
fn a_package_added_to_the_root_template_rebakes_every_base_on_it_and_their_chains_only() {
    let (t, d) = built();
    let r = t.path();
    edit(
        r,
        "templates/root.yml",
        "    - containerd\n",
        "    - containerd\n    - jq\n",
    );
    let p = plan(r, d.path());
    assert_eq!(
        baking(&p),
        ["app", "app-top", "edge", "lean", "tool"],
        "{p:#?}"
    );
    assert_eq!(p["solo@here"], "skip: current");
    assert!(p["edge@here"].starts_with("bake: inputs changed"), "{p:#?}");
    assert_eq!(
        p["app@here"],
        "bake: parent edge re-bakes this run (parent_policy: follow)"
    );
    // --explain names the field that moved and the template's files.
    let e = ok(csis(r, d.path(), T0 + 60, &["plan", "--explain"]));
    let lines: Vec<&str> = e.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("edge@here: bake: inputs changed"))
        .unwrap();
    assert_eq!(
        lines[at + 1],
        format!(
            "    template.systemConfig.packages changed since edge-here-{B0} at cfg/builders.yml:23:5"
        )
    );
    assert_eq!(
        lines[at + 2],
        "      image template: extends chain templates/root.yml -> templates/middle.yml -> templates/leaf.yml over OS defaults ict/config/osv/ubuntu/ubuntu24/imageconfigs/defaultconfigs/default-raw-x86_64.yml"
    );
    assert!(
        lines[at + 3].starts_with("      systemConfig.packages is set at ict/config/osv/")
            && lines[at + 3].contains("templates/root.yml:14:3"),
        "{e}"
    );
}

#[test]
fn an_edit_to_a_template_one_base_uses_rebakes_that_base_and_its_follow_chain() {
    let (t, d) = built();
    let r = t.path();
    edit(
        r,
        "templates/lean.yml",
        "    - htop\n",
        "    - htop\n    - strace\n",
    );
    assert_eq!(baking(&plan(r, d.path())), ["lean", "tool"]);
    edit(r, "templates/lean.yml", "    - strace\n", "");
    assert!(baking(&plan(r, d.path())).is_empty());
    edit(
        r,
        "templates/middle.yml",
        "    - grafana-agent\n",
        "    - grafana-agent\n    - node-problem-detector\n",
    );
    assert_eq!(baking(&plan(r, d.path())), ["app", "app-top", "edge"]);
}

#[test]
fn a_comment_or_key_order_edit_to_a_template_rebakes_nothing() {
    let (t, d) = built();
    let r = t.path();
    edit(
        r,
        "templates/root.yml",
        "# The root of the chain",
        "# Edited: the root of the chain",
    );
    edit(
        r,
        "templates/root.yml",
        "image:\n  name: edge-root\n  version: \"1.0.0\"\n",
        "image:\n  version: \"1.0.0\"   # reordered\n  name: edge-root\n",
    );
    edit(
        r,
        "templates/leaf.yml",
        "extends: middle.yml",
        "extends: ./middle.yml  # same file",
    );
    let p = plan(r, d.path());
    assert!(baking(&p).is_empty(), "{p:#?}");
}

#[test]
fn a_chain_refusal_names_the_template_file_line_and_column() {
    let t = tree("templates");
    let r = t.path();
    edit(
        r,
        "templates/middle.yml",
        "extends: root.yml",
        "extends: leaf.yml",
    );
    let out = crate::support::validate_refuses(r);
    assert!(
        out.contains(
            "cfg/builders.yml:25:19: OS builder edge runtimes[0] template templates/leaf.yml: templates/middle.yml:2:10: circular extends detected: templates/leaf.yml -> templates/middle.yml -> templates/leaf.yml"
        ),
        "{out}"
    );
    edit(
        r,
        "templates/middle.yml",
        "extends: leaf.yml",
        "extends: ../cfg/builders.yml",
    );
    let out = crate::support::validate_refuses(r);
    assert!(
        out.contains("templates/middle.yml:2:10: extends path escapes child template's directory: ../cfg/builders.yml"),
        "{out}"
    );
}

#[test]
fn a_template_key_on_an_os_builder_that_does_not_compose_from_templates_is_refused() {
    let t = tree("templates");
    let r = t.path();
    edit(
        r,
        "cfg/builders.yml",
        "  - name: solo\n    type: ict",
        "  - name: solo\n    type: local",
    );
    let out = crate::support::validate_refuses(r);
    assert!(
        out.contains(
            "OS builder solo runtimes[0]: `template:` is read only by an OS builder type that composes base images from image templates; type 'local' does not"
        ),
        "{out}"
    );
}

#[test]
fn watch_replans_template_edits_and_follows_a_changed_extends() {
    let (t, d) = built();
    let r = t.path();
    let (mut child, rx) = crate::support::watch(
        Command::new(env!("CARGO_BIN_EXE_csis"))
            .arg("--root-dir")
            .arg(r)
            .args(["watch", "all"])
            .env("PATH", path_with(d.path()))
            .env("CSIS_NOW", (T0 + 60).to_string()),
    );
    let start = crate::support::until(&rx, "Watching for changes");
    assert!(
        start.last().unwrap().contains("0 bake(s) planned"),
        "{start:#?}"
    );

    // A package in the root: every base on it and their chains, not solo.
    edit(
        r,
        "templates/root.yml",
        "    - containerd\n",
        "    - containerd\n    - jq\n",
    );
    let mut block = crate::support::until(&rx, "templates/root.yml changed; re-planned in");
    block.extend(crate::support::until(
        &rx,
        "app-top@here: skip: current -> bake:",
    ));
    std::thread::sleep(Duration::from_millis(500));
    block.extend(rx.try_iter());
    let printed = block.join("\n");
    for s in ["edge", "lean", "tool", "app", "app-top"] {
        assert!(
            printed.contains(&format!("  {s}@here: skip: current -> bake: ")),
            "{s}: {printed}"
        );
    }
    assert!(!printed.contains("solo@here"), "{printed}");
    assert!(
        printed.contains("      template.systemConfig.packages changed since edge-here-"),
        "{printed}"
    );
    edit(r, "templates/root.yml", "    - jq\n", "");
    crate::support::until(&rx, "tool@here: bake: parent lean re-bakes this run");
    std::thread::sleep(Duration::from_millis(500));
    let _: Vec<String> = rx.try_iter().collect();

    // A comment only: re-planned, no decision moves.
    edit(
        r,
        "templates/root.yml",
        "# The root of the chain",
        "# Edited: the root",
    );
    let block = crate::support::until(&rx, "templates/root.yml changed; re-planned in");
    std::thread::sleep(Duration::from_millis(500));
    let later: Vec<String> = rx.try_iter().collect();
    assert!(
        !later.iter().any(|l| l.contains("@here:")),
        "{block:#?} {later:#?}"
    );

    // lean.yml now extends a file no chain read: the chain is re-discovered.
    edit(
        r,
        "templates/lean.yml",
        "extends: root.yml",
        "extends: extra.yml",
    );
    let mut block = crate::support::until(&rx, "tool@here: skip: current -> bake:");
    std::thread::sleep(Duration::from_millis(500));
    block.extend(rx.try_iter());
    let printed = block.join("\n");
    assert!(
        printed.contains("templates/lean.yml changed; re-planned in"),
        "{printed}"
    );
    assert!(printed.contains("(tree reloaded)"), "{printed}");
    assert!(
        printed.contains("  lean@here: skip: current -> bake: inputs changed"),
        "{printed}"
    );
    assert!(!printed.contains("error"), "{printed}");

    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_chain_deeper_than_four_levels_warns_and_validates() {
    let t = tree("templates");
    let r = t.path();
    let root = read(r.join("templates/root.yml"));
    let with_parent = root.replacen("# The root of the chain", "extends: root.yml\n#", 1);
    std::fs::write(r.join("templates/r3.yml"), &with_parent).unwrap();
    std::fs::write(
        r.join("templates/r2.yml"),
        with_parent.replace("extends: root.yml", "extends: r3.yml"),
    )
    .unwrap();
    edit(
        r,
        "templates/middle.yml",
        "extends: root.yml",
        "extends: r2.yml",
    );
    let (code, stderr) = crate::support::brief_validate(r);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "cfg/builders.yml:25:19: warning: OS builder edge runtimes[0] template templates/leaf.yml: templates/r3.yml:1:10: extends chain depth 5 exceeds recommended maximum of 4"
        ),
        "{stderr}"
    );
}

#[test]
fn a_symlinked_parent_and_an_escape_through_a_directory_symlink_are_refused() {
    let t = tree("templates");
    let r = t.path();
    std::os::unix::fs::symlink("root.yml", r.join("templates/linked.yml")).unwrap();
    edit(
        r,
        "templates/middle.yml",
        "extends: root.yml",
        "extends: linked.yml",
    );
    let out = crate::support::validate_refuses(r);
    assert!(
        out.contains(
            "templates/middle.yml:2:10: extends parent is a symbolic link: templates/linked.yml"
        ),
        "{out}"
    );
    // templates/elsewhere -> ../ict: lexically inside, really outside.
    std::os::unix::fs::symlink("../ict", r.join("templates/elsewhere")).unwrap();
    std::fs::write(r.join("ict/other.yml"), read(r.join("templates/root.yml"))).unwrap();
    edit(
        r,
        "templates/middle.yml",
        "extends: linked.yml",
        "extends: elsewhere/other.yml",
    );
    let out = crate::support::validate_refuses(r);
    assert!(
        out.contains(
            "templates/middle.yml:2:10: extends path escapes child template's directory: elsewhere/other.yml"
        ),
        "{out}"
    );
}
