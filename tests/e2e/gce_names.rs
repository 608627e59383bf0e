//! Names that collide on GCE (issue 32, defect 8): Compute Engine names
//! are lowercase letters, digits and dashes of at most 63 characters, so
//! the gce runtime derives them (`gce_data` and `gce-data` are both disk
//! `gce-data`, `web` and `Web.` both family `web`, two long names are one
//! past the limit). Two declarations that become one resource name would
//! overwrite or adopt each other's resource; validate refuses the second,
//! naming the first and where it is declared.

use csis_test_support::tree;

use crate::support::{brief_validate, validate_refuses};

/// 63 characters, GCE's longest name: `-one` and `-two` after it are cut.
const LONG: &str = "gce-disk-with-a-name-long-enough-to-reach-the-compute-engine-li";

fn append(root: &std::path::Path, file: &str, text: &str) {
    let p = root.join(file);
    let mut s = std::fs::read_to_string(&p).unwrap();
    s.push_str(text);
    std::fs::write(&p, s).unwrap();
}

#[test]
fn two_declarations_that_become_one_gce_name_are_refused_naming_both() {
    let t = tree("clouds");
    let r = t.path();
    // The worked tree itself derives no name twice.
    assert_eq!(brief_validate(r), (Some(0), "validate: ok\n".to_string()));

    append(
        r,
        "storages/volumes.yml",
        "  - {name: gce-data, type: pd, groups: [ops], availability_zone: europe-west1-b, config: {size: 30}}\n",
    );
    append(
        r,
        "images/chain.yml",
        "  - {name: Web., source_image: app, group: ops, runtimes: [{image_builder: pk-gce}]}\n\
         # Equal in their first 40 characters: one image name prefix.\n\
         \x20 - {name: site-image-with-a-long-name-for-the-bakes-one, source_image: app, group: ops, runtimes: [{image_builder: pk-gce}]}\n\
         \x20 - {name: site-image-with-a-long-name-for-the-bakes-two, source_image: app, group: ops, runtimes: [{image_builder: pk-gce}]}\n\
         # Only on AWS: no GCE name.\n\
         \x20 - {name: web_, source_image: app, group: ops, runtimes: [{image_builder: pk-aws}]}\n",
    );
    append(
        r,
        "storages/volumes.yml",
        &format!(
            "  - {{name: {LONG}-one, type: pd, groups: [ops], availability_zone: europe-west1-b, config: {{size: 1}}}}\n  - {{name: {LONG}-two, type: pd, groups: [ops], availability_zone: europe-west1-b, config: {{size: 1}}}}\n"
        ),
    );
    let stderr = validate_refuses(r);
    assert!(stderr.ends_with("validate: 4 error(s)\n"), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("two resources cannot share a name"))
        .collect();
    assert_eq!(
        lines,
        vec![
            // An image family is `<tree id>-<series>`: the tree's part is
            // the same for every image, so the series' part (its first 42
            // characters) is what two images may share.
            "images/chain.yml:40:6: image 'web.' becomes GCE image family '<tree>-web', as image 'web' (images/chain.yml:30:5) does; two resources cannot share a name: rename one".to_string(),
            "images/chain.yml:43:6: image 'site-image-with-a-long-name-for-the-bakes-two' becomes GCE image family '<tree>-site-image-with-a-long-name-for-the-bakes', as image 'site-image-with-a-long-name-for-the-bakes-one' (images/chain.yml:42:6) does; two resources cannot share a name: rename one".to_string(),
            "storages/volumes.yml:6:6: storage 'gce-data' becomes GCE disk name 'gce-data', as storage 'gce_data' (storages/volumes.yml:5:6) does; two resources cannot share a name: rename one".to_string(),
            format!("storages/volumes.yml:8:6: storage '{LONG}-two' becomes GCE disk name '{LONG}', as storage '{LONG}-one' (storages/volumes.yml:7:6) does; two resources cannot share a name: rename one"),
        ],
        "{stderr}"
    );
}
