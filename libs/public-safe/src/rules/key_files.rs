//! Private-key files and blocks (PGP, PuTTY, PEM in base64, WireGuard) and
//! a password in a URL (hard: a distinctive shape).

use super::Check::*;
use super::Layer::*;
use super::Rule;

pub(super) const KEY_FILES: &[Rule] = &[
    Rule {
        id: "pgp-private-key",
        description: "An armoured PGP private key block.",
        source: "RFC 4880 ASCII armor (-----BEGIN PGP PRIVATE KEY BLOCK-----)",
        regex: r"-----BEGIN PGP PRIVATE KEY BLOCK-----",
        layer: Hard,
        group: 0,
        check: Always,
        needles: &[],
        positives: &["-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF..."],
        negatives: &["-----BEGIN PGP PUBLIC KEY BLOCK-----"],
    },
    Rule {
        id: "putty-private-key",
        description: "A PuTTY private key file (PuTTY-User-Key-File-<n>: with its Private-Lines).",
        source: "PuTTY's .ppk format (PuTTY-User-Key-File-2/3, Private-Lines)",
        regex: r"PuTTY-User-Key-File-\d:",
        layer: Hard,
        group: 0,
        check: Always,
        needles: &[],
        positives: &["PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none"],
        negatives: &["PuTTYgen"],
    },
    Rule {
        id: "base64-private-key",
        description: "A PEM private key in base64 (kubeconfig client-key-data, Helm values): LS0tLS1CRUdJTi... decoding to a PRIVATE KEY block.",
        source: "kubeconfig client-key-data and Kubernetes Secret data: base64 of a PEM private key (RFC 7468)",
        regex: r"\bLS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2}",
        layer: Hard,
        group: 0,
        check: Base64PrivateKey,
        needles: &[],
        positives: &[
            "client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQozM2J0TElyeFB1d2RwTi9wNllzS2RpYm5JVENYRnFGbHMxOHMyTmRs",
        ],
        negatives: &["ca: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURkekNDQWwr"],
    },
    Rule {
        id: "wireguard-private-key",
        description: "A WireGuard private key: PrivateKey = and 44 base64 characters.",
        source: "wg-quick(8) configuration ([Interface] PrivateKey, 44 base64 characters)",
        regex: r"(?m)^\s*PrivateKey\s*[=:]\s*([A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=)",
        layer: Hard,
        group: 1,
        check: Placeholder,
        needles: &["PrivateKey"],
        positives: &["[Interface]\nPrivateKey = Yh7YYUvmIo2qI6jaG0ey5Mhp8KND2e9pZCLiC8UfCdA="],
        negatives: &["PublicKey = Yh7YYUvmIo2qI6jaG0ey5Mhp8KND2e9pZCLiC8UfCdA="],
    },
    Rule {
        id: "connection-string",
        description: "A URL carrying a password: scheme://user:password@host with a literal password.",
        source: "RFC 3986 userinfo (scheme://user:password@host), as database and broker URLs carry it",
        regex: r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^:/\s@\x22'<>]+:([^@/\s\x22'<>]+)@[A-Za-z0-9.-]+",
        layer: Hard,
        group: 1,
        check: Literal,
        needles: &["://"],
        positives: &[
            "database_url: postgres://app:Orchid!42river@db1.internal:5432/app",
            "mongodb+srv://admin:q8Zr2kLm@cluster0.internal",
        ],
        negatives: &[
            "postgres://app:${DB_PASSWORD}@db:5432/app",
            "https://user:password@host",
            "redis://:<password>@localhost:6379",
            "git@github.com:org/repo.git",
        ],
    },
];
