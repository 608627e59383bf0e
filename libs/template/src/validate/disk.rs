//! disk: its path and sizes, the artifacts it is written as (a wsl2
//! image's tar) and its partitions' offsets.

use super::findings::{Findings, one_of, required, root};
use super::patterns::{offset_re, size_re};
use crate::types::*;

pub(super) fn disk(f: &mut Findings, d: &Disk, tg: &Target) {
    let p = root().key("disk");
    let wsl = tg.image_type == "wsl2";
    required(f, p.key("name"), &d.name, "");
    if !d.path.is_empty()
        && (!d.path.starts_with("/dev/")
            || d.path.split('/').any(|c| c == ".." || c == ".")
            || d.path.contains("//")
            || d.path.ends_with('/'))
    {
        f.err(
            p.key("path"),
            format!("disk.path '{}' must be a clean /dev/... path", d.path),
        );
    }
    for (k, v) in [("size", &d.size), ("maxSize", &d.max_size)] {
        if !v.is_empty() && !size_re().is_match(v) {
            f.err(
                p.key(k),
                format!(
                    "disk.{k} '{v}' is not a size (a whole number with a unit, e.g. 4GiB or 8GB)"
                ),
            );
        }
    }
    if !d.max_size.is_empty() && d.size.is_empty() {
        f.err(
            p.key("maxSize"),
            "disk.maxSize requires disk.size to be set",
        );
    }
    one_of(
        f,
        p.key("partitionTableType"),
        &d.partition_table_type,
        &["gpt", "mbr"],
    );
    for (i, a) in d.artifacts.iter().enumerate() {
        let ap = p.key("artifacts").index(i);
        required(f, ap.key("type"), &a.kind, "");
        one_of(
            f,
            ap.key("type"),
            &a.kind,
            &["raw", "qcow2", "vhd", "vhdx", "vmdk", "vdi", "tar"],
        );
        one_of(
            f,
            ap.key("compression"),
            &a.compression,
            &["gz", "gzip", "xz", "zstd", "bz2"],
        );
        if wsl && (a.kind != "tar" || a.compression != "gz") {
            f.err(
                ap.clone(),
                format!("{ap}: a wsl2 image's artifacts must be type tar with compression gz"),
            );
        }
        if !wsl && a.kind == "tar" {
            f.err(
                ap.key("type"),
                format!("{ap}.type: tar is only for target.imageType wsl2"),
            );
        }
    }
    if wsl {
        if !d.partition_table_type.is_empty() {
            f.err(
                p.key("partitionTableType"),
                "disk.partitionTableType is not used for wsl2 templates",
            );
        }
        if !d.partitions.is_empty() {
            f.err(
                p.key("partitions"),
                "disk.partitions are not used for wsl2 templates",
            );
        }
    }
    let last = d.partitions.len().saturating_sub(1);
    for (i, part) in d.partitions.iter().enumerate() {
        let pp = p.key("partitions").index(i);
        for (k, v) in [("start", &part.start), ("end", &part.end)] {
            if v.is_empty() {
                continue;
            }
            if k == "end" && v == "0" {
                if i != last {
                    f.err(
                        pp.key("end"),
                        format!("{pp}.end: only the final partition may use end \"0\""),
                    );
                }
                continue;
            }
            if !offset_re().is_match(v) {
                f.err(
                    pp.key(k),
                    format!(
                        "{pp}.{k} '{v}' is not an offset: a non-zero whole number, optionally negative, with one of KiB MiB GiB K M G KB MB GB"
                    ),
                );
            }
        }
    }
}
