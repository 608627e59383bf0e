//! Load benchmarks on a synthetic tree: cold load and validation, then warm
//! re-validations after edits, each reported with its ratio to the cold
//! figure measured in the same run. `CSIS_BENCH_SIZE=small` for a quick run.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use csis_benches::{TreeSize, generate};
use csis_engine::registry::Registry;
use csis_engine::system::MemorySystem;
use csis_engine::workspace::{LoadOptions, Workspace};

fn registry() -> Arc<Registry> {
    Arc::new(
        Registry::build(&[
            &csis_plugin_dummy::DummyPlugin,
            &csis_plugin_local::LocalPlugin,
        ])
        .unwrap(),
    )
}

fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> Duration {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    let size = match std::env::var("CSIS_BENCH_SIZE").as_deref() {
        Ok("small") => TreeSize::small(),
        _ => TreeSize::reference(),
    };
    let root = Path::new("/bench");
    let sys = MemorySystem::new();
    let files = generate(&size);
    for (p, t) in &files {
        sys.write(&root.join(p), t);
    }
    let reg = registry();
    println!(
        "tree: {} files, {} images (chains of {}), {} instances, {} storages, {} users, {} groups",
        files.len(),
        size.images,
        size.chain_depth,
        size.instances,
        size.storages,
        size.users,
        size.groups
    );

    let cold = best_of(3, || {
        let ws = Workspace::load(&sys, reg.clone(), root, &LoadOptions::default()).unwrap();
        let d = ws.load_diagnostics();
        assert!(
            d.iter().all(|d| !d.is_error()),
            "{:?}",
            &d[..d.len().min(3)]
        );
        d.len()
    });
    let mut ws = Workspace::load(&sys, reg.clone(), root, &LoadOptions::default()).unwrap();
    ws.load_diagnostics();

    let noop = best_of(5, || ws.load_diagnostics().len());

    let image = "images/chain-0001/img-00005.yml";
    let base = sys.read(&root.join(image));
    let mut n = 0;
    let image_edit = best_of(5, || {
        n += 1;
        ws.set_file_text(image, &format!("{base}    description: edit {n}\n"));
        ws.load_diagnostics().len()
    });

    let users = "groups/users-003.yml";
    let base_users = sys.read(&root.join(users));
    let user_edit = best_of(5, || {
        n += 1;
        let text =
            base_users.replacen("last_name: Last600}", &format!("last_name: Edited{n}}}"), 1);
        ws.set_file_text(users, &text);
        ws.load_diagnostics().len()
    });

    let comment = best_of(5, || {
        n += 1;
        ws.set_file_text(image, &format!("# edit {n}\n{base}"));
        ws.load_diagnostics().len()
    });

    let cfg = "cfg/_config.yml";
    let base_cfg = sys.read(&root.join(cfg));
    let cfg_edit = best_of(3, || {
        n += 1;
        ws.set_file_text(cfg, &format!("{base_cfg}  edit: \"{n}\"\n"));
        ws.load_diagnostics().len()
    });

    let row = |name: &str, d: Duration| {
        println!(
            "{name:<34} {:>10.3} ms   {:>8.4} x cold",
            d.as_secs_f64() * 1e3,
            d.as_secs_f64() / cold.as_secs_f64()
        );
    };
    row("cold load + validate", cold);
    row("warm no-op re-validate", noop);
    row("warm one-image edit", image_edit);
    row("warm one-user edit", user_edit);
    row("warm comment-only edit", comment);
    row("warm cfg/ edit (reaches all)", cfg_edit);
}
