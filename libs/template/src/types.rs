//! The typed template: every section and field of the reference, in the
//! reference's order (the serialized order). No positions here: two texts
//! that differ only in comments, key order or whitespace give equal values.
//!
//! Strings are `""` when absent (the reference's "non-empty overrides");
//! `Option` where the reference tells "set" from "absent".

use indexmap::IndexMap;
use serde::Serialize;

/// A value of a field ICT reads that the reference does not describe
/// (`disk.selectionPolicy`, `systemConfig.installerPayload`): carried as
/// written, not checked, emitted by resolve.
pub type Carried = csis_model::Value;

fn empty(s: &str) -> bool {
    s.is_empty()
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    /// The parent path as written; never serialized (stripped from output).
    #[serde(skip)]
    pub extends: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(skip_serializing_if = "Image::is_empty")]
    pub image: Image,
    #[serde(skip_serializing_if = "Target::is_empty")]
    pub target: Target,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlay_policy: Option<OverlayPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<Disk>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub package_repositories: Vec<PackageRepository>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_config: Option<SystemConfig>,
}

impl Template {
    /// `baseline.mode: overlay`.
    pub fn is_overlay(&self) -> bool {
        self.baseline.as_ref().is_some_and(|b| b.mode == "overlay")
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Metadata {
    #[serde(skip_serializing_if = "empty")]
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub use_cases: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Image {
    #[serde(skip_serializing_if = "empty")]
    pub name: String,
    #[serde(skip_serializing_if = "empty")]
    pub version: String,
}

impl Image {
    pub fn is_empty(&self) -> bool {
        self.name.is_empty() && self.version.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    #[serde(skip_serializing_if = "empty")]
    pub os: String,
    #[serde(skip_serializing_if = "empty")]
    pub dist: String,
    #[serde(skip_serializing_if = "empty")]
    pub arch: String,
    #[serde(skip_serializing_if = "empty")]
    pub image_type: String,
}

impl Target {
    pub fn is_empty(&self) -> bool {
        self.os.is_empty()
            && self.dist.is_empty()
            && self.arch.is_empty()
            && self.image_type.is_empty()
    }
}

impl std::fmt::Display for Target {
    /// `os/dist/arch/imageType`, as the extends mismatch message writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.os, self.dist, self.arch, self.image_type
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Baseline {
    #[serde(skip_serializing_if = "empty")]
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<BaselineSource>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BaselineSource {
    #[serde(skip_serializing_if = "empty")]
    pub path: String,
    #[serde(skip_serializing_if = "empty")]
    pub url: String,
    #[serde(skip_serializing_if = "empty")]
    pub format: String,
    #[serde(skip_serializing_if = "empty")]
    pub sbom_path: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OverlayPolicy {
    #[serde(skip_serializing_if = "empty")]
    pub package_operation: String,
    #[serde(skip_serializing_if = "empty")]
    pub conflict_policy: String,
    #[serde(skip_serializing_if = "empty")]
    pub kernel_cmdline: String,
    #[serde(skip_serializing_if = "empty")]
    pub grub_default: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_package_removal: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_kernel: Option<ReplaceKernel>,
    /// ICT's, not the reference's: read and carried, not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_disk_resize: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaceKernel {
    #[serde(skip_serializing_if = "empty")]
    pub package: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub additional_packages: Vec<String>,
    #[serde(skip_serializing_if = "empty")]
    pub enable_extra_modules: String,
    #[serde(skip_serializing_if = "empty")]
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Disk {
    #[serde(skip_serializing_if = "empty")]
    pub name: String,
    #[serde(skip_serializing_if = "empty")]
    pub path: String,
    #[serde(skip_serializing_if = "empty")]
    pub size: String,
    #[serde(skip_serializing_if = "empty")]
    pub max_size: String,
    #[serde(skip_serializing_if = "empty")]
    pub partition_table_type: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<Partition>,
    /// ICT's, not the reference's: read and carried, not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection_policy: Option<Carried>,
    /// ICT's, not the reference's: read and carried, not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extend_last_partition_to_fill_disk: Option<bool>,
}

impl Disk {
    pub fn is_empty(&self) -> bool {
        *self == Disk::default()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Artifact {
    #[serde(rename = "type", skip_serializing_if = "empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "empty")]
    pub compression: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Partition {
    #[serde(skip_serializing_if = "empty")]
    pub id: String,
    #[serde(skip_serializing_if = "empty")]
    pub name: String,
    #[serde(rename = "type", skip_serializing_if = "empty")]
    pub kind: String,
    #[serde(rename = "typeUUID", skip_serializing_if = "empty")]
    pub type_uuid: String,
    #[serde(skip_serializing_if = "empty")]
    pub fs_type: String,
    #[serde(skip_serializing_if = "empty")]
    pub fs_label: String,
    #[serde(skip_serializing_if = "empty")]
    pub start: String,
    #[serde(skip_serializing_if = "empty")]
    pub end: String,
    #[serde(skip_serializing_if = "empty")]
    pub mount_point: String,
    #[serde(skip_serializing_if = "empty")]
    pub mount_options: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRepository {
    #[serde(skip_serializing_if = "empty")]
    pub codename: String,
    #[serde(skip_serializing_if = "empty")]
    pub url: String,
    #[serde(skip_serializing_if = "empty")]
    pub pkey: String,
    #[serde(skip_serializing_if = "empty")]
    pub component: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Read from `allowPackages` (or its alias `AllowPackages`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_packages: Vec<String>,
    /// ICT's, not the reference's (several keys): read and carried.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pkeys: Vec<String>,
    /// ICT's, not the reference's (package files by URL): read and carried.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    /// ICT's, not the reference's: read and carried, not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemConfig {
    #[serde(skip_serializing_if = "empty")]
    pub name: String,
    #[serde(skip_serializing_if = "empty")]
    pub description: String,
    #[serde(skip_serializing_if = "empty")]
    pub hostname: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<Kernel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootloader: Option<Bootloader>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immutability: Option<Immutability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fde: Option<Fde>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dkms: Option<Dkms>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<User>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initramfs: Option<Initramfs>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub additional_files: Vec<AdditionalFile>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configurations: Vec<Configuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning: Option<Provisioning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloud_init: Option<CloudInit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apt_policy: Option<AptPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oep_installer: Option<OepInstaller>,
    /// ICT's, not the reference's: read and carried, not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installer_payload: Option<Carried>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kernel {
    #[serde(skip_serializing_if = "empty")]
    pub version: String,
    #[serde(skip_serializing_if = "empty")]
    pub cmdline: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    #[serde(skip_serializing_if = "empty")]
    pub enable_extra_modules: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uki: Option<bool>,
    /// ICT's, not the reference's: read and carried, not checked.
    #[serde(skip_serializing_if = "empty")]
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bootloader {
    #[serde(skip_serializing_if = "empty")]
    pub boot_type: String,
    #[serde(skip_serializing_if = "empty")]
    pub provider: String,
    #[serde(skip_serializing_if = "empty")]
    pub boot_entry_policy: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Network {
    #[serde(skip_serializing_if = "empty")]
    pub backend: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Interface {
    #[serde(skip_serializing_if = "empty")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dhcp4: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dhcp6: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Route {
    #[serde(skip_serializing_if = "empty")]
    pub to: String,
    #[serde(skip_serializing_if = "empty")]
    pub via: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Immutability {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(rename = "secureBootDBKey", skip_serializing_if = "empty")]
    pub secure_boot_db_key: String,
    #[serde(rename = "secureBootDBCrt", skip_serializing_if = "empty")]
    pub secure_boot_db_crt: String,
    #[serde(rename = "secureBootDBCer", skip_serializing_if = "empty")]
    pub secure_boot_db_cer: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fde {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "empty")]
    pub passphrase_file: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<String>,
    #[serde(skip_serializing_if = "empty")]
    pub unlock: String,
    /// ICT's, not the reference's: the passphrase inline. A secret:
    /// redacted by resolve. Read and carried, not checked.
    #[serde(skip_serializing_if = "empty")]
    pub passphrase: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dkms {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secure_boot: Option<DkmsSecureBoot>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DkmsSecureBoot {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "empty")]
    pub signing_key_path: String,
    #[serde(skip_serializing_if = "empty")]
    pub signing_cert_path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retain_signing_identity: Option<bool>,
    #[serde(skip_serializing_if = "empty")]
    pub target_key_path: String,
    #[serde(skip_serializing_if = "empty")]
    pub target_cert_path: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    #[serde(skip_serializing_if = "empty")]
    pub name: String,
    #[serde(skip_serializing_if = "empty")]
    pub password: String,
    #[serde(rename = "hash_algo", skip_serializing_if = "empty")]
    pub hash_algo: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_max_age: Option<i64>,
    #[serde(skip_serializing_if = "empty")]
    pub startup_script: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sudo: Option<bool>,
    #[serde(skip_serializing_if = "empty")]
    pub home: String,
    #[serde(skip_serializing_if = "empty")]
    pub shell: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ssh_authorized_keys: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ssh_authorized_keys_files: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Initramfs {
    #[serde(skip_serializing_if = "empty")]
    pub template: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct AdditionalFile {
    #[serde(skip_serializing_if = "empty")]
    pub local: String,
    #[serde(rename = "final", skip_serializing_if = "empty")]
    pub final_path: String,
    #[serde(skip_serializing_if = "empty")]
    pub stage: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Configuration {
    pub cmd: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    #[serde(skip_serializing_if = "empty")]
    pub http_proxy: String,
    #[serde(skip_serializing_if = "empty")]
    pub https_proxy: String,
    #[serde(skip_serializing_if = "empty")]
    pub ftp_proxy: String,
    #[serde(skip_serializing_if = "empty")]
    pub no_proxy: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Provisioning {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_login: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<Script>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Script {
    #[serde(skip_serializing_if = "empty")]
    pub name: String,
    #[serde(skip_serializing_if = "empty")]
    pub local: String,
    #[serde(rename = "final", skip_serializing_if = "empty")]
    pub final_path: String,
    #[serde(skip_serializing_if = "empty")]
    pub stage: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_sec: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reboot_after: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CloudInit {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "empty")]
    pub user_data_file: String,
    #[serde(skip_serializing_if = "empty")]
    pub meta_data_file: String,
    #[serde(skip_serializing_if = "empty")]
    pub network_config_file: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_files: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AptPolicy {
    /// `Some(vec![])` is the explicit `[]`: all repositories may upgrade,
    /// and an inherited list is reset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_allowed_repos: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OepInstaller {
    #[serde(skip_serializing_if = "empty")]
    pub url: String,
    #[serde(skip_serializing_if = "empty")]
    pub sha256: String,
    #[serde(skip_serializing_if = "empty")]
    pub sbom_url: String,
    #[serde(skip_serializing_if = "empty")]
    pub sbom_sha256: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
    #[serde(skip_serializing_if = "empty")]
    pub user: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}
