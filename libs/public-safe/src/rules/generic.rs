//! Generic credentials (soft): a literal given to a command-line flag, a
//! header, a .netrc entry, an XML element or a secret-sounding key. They
//! come last in [`super::RULES`].

use super::Check::*;
use super::Layer::*;
use super::Rule;

pub(super) const GENERIC: &[Rule] = &[
    Rule {
        id: "curl-credentials",
        description: "curl -u/--user user:password with a literal password (on the curl line or a continuation line; the user may be empty, the password quoted).",
        regex: r"\bcurl\b(?:[^\n]|\\\n)*?\s(?:-u|--user)[ \t=]+[\x22']?[^\s:\x22']*:[\x22']?([^\s\x22']+)",
        layer: Soft,
        group: 1,
        check: Literal,
        needles: &["curl"],
        positives: &[
            "curl -u deploy:Velvet#281maple https://api.internal.test/v1/items",
            "curl -k https://x \\\n  -u developer:Velvet#281maple",
            "curl --user kevin:'Velvet#281maple' -X PATCH",
            "curl -u \":Velvet#281maple\" https://x",
        ],
        negatives: &[
            "curl -u deploy:$PASSWORD https://x",
            "curl -u \"$USER:$PASS\" https://x",
        ],
    },
    Rule {
        id: "authorization-header",
        description: "An Authorization header with a literal credential (Bearer, Basic, Token, Api-Token or no scheme).",
        regex: r"(?i)\bauthorization[\x22']?\s*[:=]\s*[\x22']?(?:(?:bearer|basic|token|api-token)\s+)?([A-Za-z0-9._~+/=-]{8,})",
        layer: Soft,
        group: 1,
        check: Literal,
        needles: &["uthorization", "UTHORIZATION"],
        positives: &[
            "curl -H \"Authorization: Bearer 9AA7S9LATaTrEFbjLVnQcjZMnD3k7Hpl\" https://x",
            "Authorization: Basic c3ZjOk9yY2hpZCE0MnJpdmVy",
        ],
        negatives: &[
            "Authorization: Bearer $TOKEN",
            "Authorization: Bearer <token>",
            "Authorization: Bearer ${{ secrets.X }}",
        ],
    },
    Rule {
        id: "netrc-password",
        description: "A .netrc entry: machine <host> login <user> password <literal>.",
        regex: r"(?m)^\s*machine\s+\S+\s+login\s+\S+\s+password\s+(\S+)",
        layer: Soft,
        group: 1,
        check: Literal,
        needles: &["machine"],
        positives: &["machine api.internal.test login deploy password Quartz%91harbor"],
        negatives: &["machine api.internal.test login deploy password $NETRC_PASSWORD"],
    },
    Rule {
        id: "cli-secret-flag",
        description: "A command-line flag naming a secret (--password, --token, --api-key, --client-secret, ...) given a literal.",
        regex: r"(?i)\s--(?:password|passwd|token|api-key|api-token|auth-token|access-token|secret|client-secret)(?:=|\s+)[\x22']?([^\s\x22']+)",
        layer: Soft,
        group: 1,
        check: Literal,
        needles: &["--"],
        positives: &[
            "mysql -u root --password=Nimbus&772cobalt app",
            "app --api-token 9AA7S9LATaTrEFbjLVnQcjZMnD3k7Hpl --verbose",
        ],
        negatives: &[
            "app --token $TOKEN",
            "app --password-file /run/secrets/x",
            "app --token",
        ],
    },
    Rule {
        id: "xml-secret",
        description: "An XML element naming a secret (<password>, <secret>, <token>, <apiKey>) with a literal.",
        regex: r"(?i)<([a-z_.-]*(?:password|passwd|secret|token|apikey|api_key)[a-z_.-]*)>([^<\s]+)</",
        layer: Soft,
        group: 2,
        check: Literal,
        needles: &["</"],
        positives: &["<server><id>nexus</id><password>Tango&12velvet</password></server>"],
        negatives: &[
            "<password>${env.NEXUS_PASSWORD}</password>",
            "<password></password>",
        ],
    },
    Rule {
        id: "secret-assignment",
        description: "A secret-sounding key (password, passwd, secret, token, api_key, client_secret, private_key, credentials, ...) assigned a literal in YAML, JSON, INI, .env, HCL, shell or code: not a ${...}/{{ ... }}/$VAR reference, not ENC[age:...], not a placeholder, and with enough entropy for its length.",
        regex: r#"(?i)([a-z0-9_.-]*(?:pass|pwd|secret|token|key|cred|auth)[a-z0-9_.-]*)["']?(?:\[\])?\]?[ \t]*(?::=|=>|:|=)[ \t]*(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"'][^\s]*))"#,
        layer: Soft,
        group: 0,
        check: Assignment,
        needles: &[""],
        positives: &[
            "password: Orchid!42river",
            "DB_PASSWORD=Falcon_06falcon$",
            "{\"client_secret\": \"q8Zr2kLmW3xP9vBn4TyQ7sEa\"}",
            "auth_token = \"f6bf4bfaf339d1f39dd18d7896e10201dda61d8d\"",
            "secretKey: 'vKYWEu4Hh9VVnCqF9d90vxfE'",
        ],
        negatives: &[
            "password: ${DB_PASSWORD}",
            "password: {{ vault_db_password }}",
            "token: $GITHUB_TOKEN",
            "password: changeme",
            "password_file: /run/secrets/db",
            "max_tokens: 4096",
            "public_key: Yh7YYUvmIo2qI6jaG0ey5Mhp8KND2e9pZCLiC8UfCdA=",
            "version: f6bf4bfaf339d1f39dd18d7896e10201dda61d8d",
            "password: \"ENC[age:YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgy]\"",
            "token: true",
        ],
    },
];
