//! The spec's eight hard rules, under the spec's ids: they come first in
//! [`super::RULES`].

use super::Check::*;
use super::Layer::*;
use super::Rule;

pub(super) const SPEC: &[Rule] = &[
    Rule {
        id: "jwt",
        description: "A JSON Web Token: eyJ and 20 or more token characters (spec). One segment that decodes to a JSON document naming no secret (a lone header {\"alg\": ...}, base64 of a config) is not a token.",
        regex: r"\beyJ[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]*){0,2}[A-Za-z0-9+/]*={0,2}",
        layer: Hard,
        group: 0,
        check: Jwt,
        needles: &[],
        positives: &[
            "token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc",
            "eyJhbGciOiJIUzI1NiJ9wZXJ0aWVzIjp7fX0x",
        ],
        negatives: &[
            "header: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
            "eyJhbGci",
            "config: eyJsb2dfbGV2ZWwiOiAiaW5mbyIsICJyZWdpb24iOiAiZXUtd2VzdC0xIn0=",
        ],
    },
    Rule {
        id: "pem-private-key",
        description: "A PEM private key: -----BEGIN ... PRIVATE KEY----- (spec). A block whose body is empty, `...` or words is a placeholder.",
        regex: r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:\s*([^-]{0,64}?)\s*-----END [A-Z0-9 ]*PRIVATE KEY-----)?",
        layer: Hard,
        group: 1,
        check: PemBody,
        needles: &[],
        positives: &[
            "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
        ],
        negatives: &[
            "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----",
            "-----BEGIN EC PRIVATE KEY-----\nanything\n-----END EC PRIVATE KEY-----",
            "-----BEGIN PUBLIC KEY-----",
        ],
    },
    Rule {
        id: "aws-access-key",
        description: "An AWS access key id: AKIA, ASIA, ABIA, ACCA or A3T? and 16 upper-case alphanumerics (spec; every documented key-id prefix).",
        regex: r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        layer: Hard,
        group: 0,
        check: Runs,
        needles: &[],
        positives: &[
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
            "ABIAMJFFBLUWXHCKJRGR",
            "key: ACCAI2JFGBLS6HTCQO3R",
            "AKIAKVMJOJGWY6V24VCD",
        ],
        negatives: &[
            "AKIAXXXXXXXXXXXXXXXX",
            "AKIAKVMJOJGWY6V24VC",
            "xAKIAKVMJOJGWY6V24VCD",
        ],
    },
    Rule {
        id: "gcp-service-account",
        description: "A Google service-account key file: a \"private_key_id\" with a value (spec; also \"type\": \"service_account\" beside \"private_key\").",
        regex: r#""private_key_id"\s*:\s*"[^"\s]+""#,
        layer: Hard,
        group: 0,
        check: Always,
        needles: &[],
        positives: &[r#"{"type": "service_account", "private_key_id": "1234abcd"}"#],
        negatives: &[r#"{"private_key_id": ""}"#],
    },
    Rule {
        id: "slack-token",
        description: "A Slack token: xox[baprs]-... (spec): one to three numeric segments (workspace, user or bot ids) and a secret part of ten or more alphanumerics with a letter in it, as Slack's bot, user, app and legacy tokens have (api.slack.com/authentication/token-types); a truncated token or one of ids only is not one.",
        regex: r"\bxox[baprs]-(?:[0-9]+-){1,3}[0-9]*[A-Za-z][A-Za-z0-9]{8,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &["xoxb-123456789012-abcdefghij"],
        negatives: &[
            "xoxb-xxxxxxxxxxxx-xxxxxxxxxxxxx",
            "xoxb-123",
            "xoxb-880239894439-7280878638408",
            "token xoxb-444971491724-…(truncated)",
        ],
    },
    Rule {
        id: "github-token",
        description: "A GitHub classic token: gh[pousr]_ and 20 or more alphanumerics (spec; GitHub issues 36: 30 random and a CRC32 checksum in base62).",
        regex: r"\bgh[pousr]_[A-Za-z0-9]{20,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &["GH=ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"],
        negatives: &[
            "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            r"ghp_[0-9a-zA-Z]{36}",
        ],
    },
    Rule {
        id: "age-identity",
        description: "An age identity: AGE-SECRET-KEY-1 and 58 bech32 characters (spec).",
        regex: r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
        layer: Hard,
        group: 0,
        check: Always,
        needles: &[],
        positives: &["AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"],
        negatives: &[
            "AGE-SECRET-KEY-1QQQQ",
            "age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq",
        ],
    },
    Rule {
        id: "tfvar-assignment",
        description: "TF_VAR_<name>=<literal> (spec; an assignment from $VAR passes).",
        regex: r#"\bTF_VAR_[A-Za-z0-9_]+=("[^"$\s][^"]*"|'[^'$\s][^']*'|[^\s"'$][^\s]*)"#,
        layer: Hard,
        group: 1,
        check: Literal,
        needles: &[],
        positives: &[
            "export TF_VAR_db_password=hunter2hunter2",
            "TF_VAR_token=\"literal-value\"",
        ],
        negatives: &[
            "export TF_VAR_region=$REGION",
            "TF_VAR_x=\"${X}\"",
            "TF_VAR_x=<your-token>",
        ],
    },
];
