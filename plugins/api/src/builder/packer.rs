//! Packer bakes as the image builder `packer` hands them to a runtime's
//! packer hooks: the bake ([`PackerBake`]), where it starts from
//! ([`PackerParent`]), its tag values and the Packer plugin a runtime's
//! source needs.

/// A Packer plugin: `name = { source = ..., version = ... }` in
/// `required_plugins`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackerPlugin {
    pub name: &'static str,
    pub source: &'static str,
    pub version: &'static str,
}

/// Where a bake starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackerParent {
    /// A base image: the vendor image the OS builder entry names, by id
    /// (`image_id`) or by query (`query`, `owners`).
    Vendor {
        image_id: Option<String>,
        /// The merged query (OS builder then entry), values as strings.
        query: std::collections::BTreeMap<String, String>,
        /// OS builder owners, then the runtime's default_owners, then the
        /// entry's.
        owners: Vec<String>,
    },
    /// An instance image pinned to a recorded parent build.
    Build(String),
    /// An instance image whose parent is the parent series' newest build
    /// at bake time (found by its `csis_series` tag or image family).
    Series(String),
}

/// One bake as the packer image builder hands it to the runtime's
/// [`Builder::packer_source`](super::Builder::packer_source).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackerBake {
    pub series: String,
    /// The tree's id: a parent found by series is found in this tree.
    pub tree: String,
    /// The source block's label: the series as an identifier.
    pub source_name: String,
    pub parent: PackerParent,
    /// The OS family of the chain's root (the vendor image's family).
    pub family: String,
    pub machine_type: String,
    /// GiB: the fingerprint's bake_disk_size.
    pub disk_size: Option<i64>,
    pub ssh_username: String,
    /// The lineage tags and the image's own tags, sorted. A value may be a
    /// Packer template (`${var.csis_run}`); keys and values are as csis
    /// names them: a runtime with label rules adapts both.
    pub tags: Vec<(String, PackerValue)>,
}

/// A tag value: literal text, or a Packer template kept as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackerValue {
    Literal(String),
    /// The run id (`var.csis_run`) the build runs under.
    Run,
}
