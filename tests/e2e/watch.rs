//! `csis watch`: re-plans on edits, survives broken YAML, stops on Ctrl-C.

use csis_test_support::tree;
use std::process::Command;

#[test]
fn watch_replans_edits_recovers_from_broken_yaml_and_stops_on_ctrl_c() {
    let t = tree("local-run");
    let r = t.path();
    // A real run first, so that an edit moves a decision from current.
    crate::support::ok(crate::support::csis_at(
        r,
        1_796_226_804,
        &["run", "all", "--no-dry-run"],
    ));
    let (mut child, rx) = crate::support::watch(
        Command::new(env!("CARGO_BIN_EXE_csis"))
            .arg("--root-dir")
            .arg(r)
            .args(["watch", "all", "--generate"]),
    );
    crate::support::until(&rx, "Watching for changes");
    crate::support::until(&rx, "[instance-image] generated: ");
    assert!(
        r.join("generated/instance-image/run-instance-image.sh")
            .is_file(),
        "--generate writes the tree"
    );

    let chain = r.join("images/chain.yml");
    let text = std::fs::read_to_string(&chain).unwrap();
    std::fs::write(&chain, text.replace("echo mid >", "echo middle >")).unwrap();
    let block = crate::support::until(&rx, "images/chain.yml changed; re-planned in");
    assert!(
        block.last().unwrap().contains("queries executed"),
        "an edit re-plans in place: {block:#?}"
    );
    // The decision that moved, why, and the files --generate rewrote.
    let block = crate::support::until(&rx, "[instance-image] generated: ");
    let printed = block.join("\n");
    assert!(
        printed.contains("  mid@here: skip: current -> bake: inputs changed (fingerprint "),
        "{printed}"
    );
    assert!(
        printed.contains(
            "      modifications[marker].fields.script changed since mid-here-2026_12_02T15_53_24 at images/chain.yml:15:9"
        ),
        "{printed}"
    );
    assert!(
        printed.contains("  rewrote generated/instance-image/bake/image-generation/bake-image-generation-mid.json"),
        "{printed}"
    );

    // A save with broken YAML prints its diagnostic; the watch goes on.
    std::fs::write(&chain, "images: [\n").unwrap();
    let block = crate::support::until(&rx, "error:");
    assert!(
        block.iter().any(|l| l.contains("images/chain.yml")),
        "{block:#?}"
    );
    std::fs::write(&chain, &text).unwrap();
    crate::support::until(&rx, "the tree loads cleanly again");

    // Ctrl-C exits 0.
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
