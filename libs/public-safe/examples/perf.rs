//! Where the scanner's time goes on a text (a development aid): each
//! pattern rule alone, the set, the entropy pass and the whole scan.
//! `cargo run --release -p csis-public-safe --example perf -- FILE`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
#![allow(clippy::disallowed_macros)] // a report for a person: printed as is

use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
    let mb = text.len() as f64 / 1e6;
    let t = |name: &str, f: &dyn Fn() -> usize| {
        let s = Instant::now();
        let n = f();
        let e = s.elapsed().as_secs_f64();
        println!("{name:<28} {:>8.1} MB/s  ({n})", mb / e);
    };
    let c = &*csis_public_safe::rules::COMPILED;
    t("candidates", &|| {
        csis_public_safe::rules::candidates(&text).len()
    });
    for (i, r) in csis_public_safe::RULES.iter().enumerate() {
        t(r.id, &|| c.each[i].find_iter(&text).count());
    }
    t("high-entropy", &|| {
        csis_public_safe::entropy::high_entropy_spans(&text).len()
    });
    t("scan_text", &|| {
        csis_public_safe::scan_text("a.yml", &text, &Default::default(), false).len()
    });
    // The same text as 4 KiB files.
    let chunks: Vec<&str> = text
        .as_bytes()
        .chunks(4096)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    for skip in [
        vec![
            "secret-assignment",
            "messaging-key",
            "azure-ad-client-secret",
            "discord-token",
            "connection-string",
        ],
        vec![
            "secret-assignment",
            "messaging-key",
            "azure-ad-client-secret",
            "discord-token",
            "connection-string",
            "telegram-bot-token",
            "wireguard-private-key",
            "netrc-password",
            "curl-credentials",
            "authorization-header",
            "cli-secret-flag",
            "xml-secret",
            "terraform-cloud-token",
            "npmrc-auth",
        ],
    ] {
        let set = subset(&skip);
        t(&format!("subset-{}", skip.len()), &|| {
            chunks.iter().map(|c| set.matches(c).iter().count()).sum()
        });
    }
    t("candidates, 4 KiB files", &|| {
        chunks
            .iter()
            .map(|c| csis_public_safe::rules::candidates(c).len())
            .sum()
    });
    t("scan_text, 4 KiB files", &|| {
        chunks
            .iter()
            .map(|c| csis_public_safe::scan_text("a.yml", c, &Default::default(), false).len())
            .sum()
    });
    t("high-entropy, 4 KiB files", &|| {
        chunks
            .iter()
            .map(|c| csis_public_safe::entropy::high_entropy_spans(c).len())
            .sum()
    });
    for (i, r) in csis_public_safe::RULES.iter().enumerate() {
        t(&format!("{} 4k", r.id), &|| {
            chunks
                .iter()
                .map(|ch| c.each[i].find_iter(ch).count())
                .sum()
        });
    }
}

#[allow(dead_code)]
fn subset(skip: &[&str]) -> regex::RegexSet {
    regex::RegexSet::new(
        csis_public_safe::RULES
            .iter()
            .filter(|r| !skip.contains(&r.id))
            .map(|r| r.regex),
    )
    .unwrap()
}
