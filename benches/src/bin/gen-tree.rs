//! Write a synthetic configuration tree:
//! `gen-tree OUT [--reference | --small] [--images N] [--instances N]
//! [--users N] [--groups N] [--storages N] [--chain-depth N] [--mods N]
//! [--seed N] [--script-files]`.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::process::ExitCode;

use csis_benches::{TreeSize, generate};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut out: Option<PathBuf> = None;
    let mut size = TreeSize::reference();
    while let Some(a) = args.next() {
        let mut num = |field: &mut usize| match args.next().and_then(|v| v.parse().ok()) {
            Some(v) => {
                *field = v;
                true
            }
            None => false,
        };
        let ok = match a.as_str() {
            "--reference" => {
                size = TreeSize::reference();
                true
            }
            "--small" => {
                size = TreeSize::small();
                true
            }
            "--images" => num(&mut size.images),
            "--instances" => num(&mut size.instances),
            "--users" => num(&mut size.users),
            "--groups" => num(&mut size.groups),
            "--storages" => num(&mut size.storages),
            "--chain-depth" => num(&mut size.chain_depth),
            "--mods" => num(&mut size.mods_per_image),
            "--script-files" => {
                size.script_files = true;
                true
            }
            "--seed" => {
                let mut s = 0usize;
                let ok = num(&mut s);
                size.seed = s as u64;
                ok
            }
            other if !other.starts_with("--") && out.is_none() => {
                out = Some(PathBuf::from(other));
                true
            }
            _ => false,
        };
        if !ok {
            eprintln!("gen-tree: bad argument {a}");
            return ExitCode::from(2);
        }
    }
    let Some(out) = out else {
        eprintln!("usage: gen-tree OUT [--reference|--small] [--images N] ...");
        return ExitCode::from(2);
    };
    for (path, text) in generate(&size) {
        let p = out.join(path);
        if let Some(dir) = p.parent()
            && let Err(e) = std::fs::create_dir_all(dir)
        {
            eprintln!("gen-tree: {}: {e}", dir.display());
            return ExitCode::from(1);
        }
        if let Err(e) = std::fs::write(&p, text) {
            eprintln!("gen-tree: {}: {e}", p.display());
            return ExitCode::from(1);
        }
    }
    eprintln!("gen-tree: wrote {}", out.display());
    ExitCode::SUCCESS
}
