//! Base images composed from image templates, as the contract names them:
//! the merged template a hook reads ([`BaseTemplate`]), where its build
//! works and keeps its unredacted copy, and which files of that build are
//! image artifacts. Paths only: nothing here builds or reads a file.

/// A base image's merged image template, as generation writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseTemplate {
    /// The merged template as YAML, every value as written.
    pub full_yaml: String,
    /// The same with passwords, hash_algo values and secure-boot key and
    /// certificate paths redacted: what may be written under generated/.
    pub redacted_yaml: String,
    /// The chain's files, root first, relative to the configuration root.
    pub chain: Vec<String>,
    /// The OS defaults file folded underneath, when there is one.
    pub defaults: Option<String>,
    /// The `defaults_dir` in force (relative to the root).
    pub defaults_dir: Option<String>,
    /// The runtimes entry's `variables:`.
    pub variables: std::collections::BTreeMap<String, String>,
    /// The template's `disk.artifacts[].type` values, in order.
    pub artifact_types: Vec<String>,
}

/// Where a base image composed from a template is built, relative to the
/// configuration root: the work directory `image-composer-tool build
/// --work-dir` is handed, and where a runtime takes the artifact from.
/// Under `_private/` (kept out of git, ignored by `csis watch`), and
/// without the run id, so generated files do not change between runs.
pub fn template_work_dir(series: &str, runtime: &str) -> String {
    format!("_private/ict/{series}-{runtime}/work")
}

/// Where a base image's unredacted merged template is written before its
/// build, relative to the configuration root (when the template holds a
/// secret; otherwise the build reads the generated one).
pub fn template_private_file(series: &str, runtime: &str) -> String {
    format!("_private/ict/{series}-{runtime}/template.yml")
}

/// The file suffixes of the image artifacts a template build leaves
/// (`disk.artifacts[].type`, and ISO and initrd images), each optionally
/// followed by a compression suffix.
pub const TEMPLATE_ARTIFACT_SUFFIXES: [&str; 9] = [
    "raw", "qcow2", "vhd", "vhdx", "vmdk", "vdi", "tar", "iso", "img",
];
pub const TEMPLATE_COMPRESSION_SUFFIXES: [&str; 5] = ["gz", "gzip", "xz", "zst", "bz2"];

/// Whether a file name is an image artifact of a template build:
/// `<anything>.<artifact>[.<compression>]`.
pub fn is_template_artifact(name: &str) -> bool {
    let mut parts: Vec<&str> = name.rsplitn(3, '.').collect();
    parts.reverse();
    let last = parts.last().copied().unwrap_or_default();
    let ext_ok = |e: &str| TEMPLATE_ARTIFACT_SUFFIXES.contains(&e);
    match parts.len() {
        0 | 1 => false,
        2 => ext_ok(last),
        _ => ext_ok(last) || (TEMPLATE_COMPRESSION_SUFFIXES.contains(&last) && ext_ok(parts[1])),
    }
}
