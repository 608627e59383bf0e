//! The rules as data: every pattern rule with its id, description, layer,
//! the check applied to what it matched, and its own positive and negative
//! examples (each tested). The table is compiled once into a `RegexSet`
//! (one pass tells which rules can match a file) and one `Regex` per rule
//! (run only for the rules the set reported).
//!
//! Vendor formats follow each vendor's published token shape (prefix,
//! alphabet, length); where gitleaks (`cmd/generate/config/rules/*.go`) or
//! detect-secrets (`detect_secrets/plugins/*.py`) publish a rule for the same
//! format, the shape agrees with theirs. Every example token is random in
//! the vendor's alphabet, none a real key.

use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

use crate::value;

/// Where a rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// Everywhere, and on every meta-state write.
    Hard,
    /// Not in docs and Python tests (the spec's soft-rule skips), not on
    /// meta-state writes.
    Soft,
}

/// What is checked on a match before it becomes a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Placeholder markers (EXAMPLE, xxxx, `<...>`, ...) and runs of one
    /// character suppress a match.
    Placeholder,
    /// Only runs of one character suppress: the spec pins AWS's documented
    /// example key as a finding.
    Runs,
    /// Nothing suppresses a match.
    Always,
    /// The rule's group is a value that must be a literal: not a
    /// reference (`${...}`, `{{ ... }}`, `$VAR`), not a placeholder.
    Literal,
    /// A secret-sounding key assigned a literal with enough entropy for
    /// its length.
    Assignment,
    /// A JWT; one segment decoding to a JSON document naming no secret
    /// (a lone header, base64 of a config) is not a token.
    Jwt,
    /// A PEM private-key header; a block whose body is empty or a
    /// placeholder is not a key.
    PemBody,
    /// Base64 of a PEM block: a finding only when it holds a private key.
    Base64PrivateKey,
}

pub struct Rule {
    pub id: &'static str,
    pub description: &'static str,
    pub regex: &'static str,
    pub layer: Layer,
    /// The capture group holding the value (0: the whole match).
    pub group: usize,
    pub check: Check,
    /// Empty: the pattern has a literal prefix and joins the `RegexSet`.
    /// Otherwise the rule runs alone, and only on a text containing one of
    /// these (case-sensitive; `""` always): a pattern with no literal
    /// prefix would make the set's automaton slow for every rule.
    pub needles: &'static [&'static str],
    pub positives: &'static [&'static str],
    pub negatives: &'static [&'static str],
}

use Check::*;
use Layer::*;

/// The table. The spec's eight hard rules come first, under their ids.
pub static RULES: &[Rule] = &[
    // ---- the spec's hard rules
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
        description: "A Slack token: xox[baprs]-... (spec).",
        regex: r"\bxox[baprs]-[A-Za-z0-9-]{10,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &["xoxb-123456789012-abcdefghij"],
        negatives: &["xoxb-xxxxxxxxxxxx-xxxxxxxxxxxxx", "xoxb-123"],
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
    // ---- vendor token formats (hard: a distinctive prefix or shape)
    Rule {
        id: "aws-session-token",
        description: "An AWS STS session token (base64 starting IQoJb3JpZ2lu, FwoGZXIvYXdz or FQoGZXIvYXdz).",
        regex: r"\b(?:IQoJb3JpZ2lu|FwoGZXIvYXdz|FQoGZXIvYXdz)[A-Za-z0-9/+=]{100,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "aws_session_token = IQoJb3JpZ2luX2VjNnTr2Zvy6KRzMID+rrTkJu3uCbo6MCjT1P6u7f0laSO7475+eZjXolA91p+GA1rC0X7W4816byeU0Nfq6EnJQJQYX1zy+VirUVGv0f5A/OjU3P+cGiE4pKw1",
        ],
        negatives: &["IQoJb3JpZ2luX2Vj"],
    },
    Rule {
        id: "github-fine-grained-token",
        description: "A GitHub fine-grained personal access token: github_pat_, 22 alphanumerics, _, 59 alphanumerics.",
        regex: r"\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "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",
        ],
        negatives: &[
            "github_pat_xxxxxxxxxxxxxxxxxxxxxx_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "github_pat_123",
        ],
    },
    Rule {
        id: "gitlab-token",
        description: "A GitLab token: glpat- (personal), gldt- (deploy), glrt- (runner), glptt- (pipeline trigger), glft-, glimt-, gloas-, glcbt-, glsoat-, glffct-, glagent- and 20 or more token characters.",
        regex: r"\bgl(?:pat|dt|rt|ptt|ft|imt|oas|cbt|soat|ffct|agent)-[A-Za-z0-9_-]{20,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "CI_TOKEN=glpat-Cszx9IEbS6NP3zTufiti",
            "glptt-d158cd75340e0099c72ce8c4a851db418c4d5cc0",
        ],
        negatives: &["glpat-xxxxxxxxxxxxxxxxxxxx", "glpat-short"],
    },
    Rule {
        id: "slack-app-token",
        description: "A Slack app-level token: xapp-<n>-<app id>-<digits>-<hex>.",
        regex: r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "xapp-1-ASF17SG0GJF-8070343976719-e9f005fee811233a7c7ec8b08c65e495a895f9c5a868c8b01e579e5854ea339e",
        ],
        negatives: &["xapp-1-AXXXXXXXXXX-0000000000000-xxxxxxxxxxxxxxxx"],
    },
    Rule {
        id: "slack-config-token",
        description: "A Slack configuration token or its refresh token: xoxe.xoxp-, xoxe-, xoxo-.",
        regex: r"\bxox[eo](?:\.xox[bp])?-[A-Za-z0-9-]{10,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "xoxe.xoxp-1-yisBHywfdEGmjVHVrILBThFEnTeGs6FlAnUuQgSTjHc4hgzVNdnDinypLtdZ",
            "xoxo-8UO93XXUOuLruvGuGTNDzeTkLig6bibP2vfYrR4H",
        ],
        negatives: &["xoxe-xxxxxxxxxxxx"],
    },
    Rule {
        id: "slack-webhook",
        description: "A Slack incoming webhook or workflow URL: hooks.slack.com/services/... (the URL is the credential).",
        regex: r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "url: https://hooks.slack.com/services/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",
        ],
        negatives: &[
            "https://hooks.slack.com/services/TXXXXXXXX/BXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX",
            "https://api.slack.com/messaging/webhooks",
        ],
    },
    Rule {
        id: "stripe-secret-key",
        description: "A Stripe secret or restricted key: sk_live_, sk_test_, rk_live_, rk_test_ (publishable pk_ keys are public).",
        regex: r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{20,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "sk_live_9AA7S9LATaTrEFbjLVnQcjZMnD3k7HplfPyl0I4B",
            "rk_live_jfSUPjEnWTnHC392F8Ej1zoKjFxioE39hRcs7LoR",
        ],
        negatives: &[
            "pk_live_9AA7S9LATaTrEFbjLVnQcjZMnD3k7HplfPyl0I4B",
            "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
        ],
    },
    Rule {
        id: "gcp-api-key",
        description: "A Google API key: AIza and 35 characters of [A-Za-z0-9_-].",
        regex: r"\b(AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)",
        layer: Hard,
        group: 1,
        check: Placeholder,
        needles: &[],
        positives: &["maps_key: AIzaOKf8gQ-Nj5HYuH3soT8qLD5FIpUadxGUPk7"],
        negatives: &[
            "AIzaXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "AIzaOKf8gQ-Nj5HYuH3soT8qLD5FIpUadxGUPk7x",
        ],
    },
    Rule {
        id: "google-oauth-client-secret",
        description: "A Google OAuth client secret: GOCSPX- and 28 characters.",
        regex: r"\bGOCSPX-[A-Za-z0-9_-]{28}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &["client_secret: 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"],
        negatives: &["GOCSPX-xxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
    },
    Rule {
        id: "azure-ad-client-secret",
        description: "An Azure AD (Entra) client secret: three characters, a digit, Q~ and 31 to 34 of [A-Za-z0-9_~.-].",
        regex: r"(?m)(?:^|[\\'\x22\x60\s>=:(,)])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?:$|[\\'\x22\x60\s<),])",
        layer: Hard,
        group: 1,
        check: Placeholder,
        needles: &["Q~"],
        positives: &[
            "client_secret=eNj8Q~5sa-Gpg63aENfTCO24FVsdZvLB9jmGApN",
            "value: \"eNj8Q~5sa-Gpg63aENfTCO24FVsdZvLB9jmGApN\"",
        ],
        negatives: &[
            "client_secret=bP88Q~xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        ],
    },
    Rule {
        id: "azure-storage-key",
        description: "An Azure storage account key in a connection string: AccountKey= and 86 base64 characters and ==.",
        regex: r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)",
        layer: Hard,
        group: 1,
        check: Placeholder,
        needles: &[],
        positives: &[
            "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=nAbJx9eIgrs6nxzVx1WGsDvi21c0ldEESx7evnZ8C6bfg6jjs6KY6mB0sdtxG2VqUGncjsoNCKwV1gIitzxKuA==;EndpointSuffix=core.windows.net",
        ],
        negatives: &["AccountKey=<key>"],
    },
    Rule {
        id: "azure-sas-token",
        description: "An Azure shared access signature: a URL query with sv=<date> and sig=<signature>.",
        regex: r"\bsv=\d{4}-\d\d-\d\d&[^\s\x22'<>]*?\bsig=[A-Za-z0-9%+/=]{30,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "https://a.blob.core.windows.net/c?sv=2022-11-02&ss=b&sp=r&se=2027-01-01T00:00:00Z&sig=wX9uxOdmXvmihKobwXeFQEIt7Hplf9AA7S9LAT%3D",
        ],
        negatives: &["?sv=2022-11-02&sig=<signature>"],
    },
    Rule {
        id: "huggingface-token",
        description: "A Hugging Face access token: hf_ and 34 letters (also api_org_ organisation tokens).",
        regex: r"\b(?:hf_[A-Za-z]{34}|api_org_[A-Za-z]{34})\b",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &["HUGGINGFACE_TOKEN=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"],
        negatives: &[
            "hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "hf_hub_download_with_progress_bar",
        ],
    },
    Rule {
        id: "openai-api-key",
        description: "An OpenAI API key: sk-, sk-proj-, sk-svcacct- or sk-admin- with the T3BlbkFJ marker.",
        regex: r"\bsk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "sk-proj-1LaYpoMjOcIZjdY5Bty0ojjGqzTZYU97daENu81AT3BlbkFJF9d90vxfEaW7sDiB6JZac2pjjvKYWEu4Hh9VVnCq",
        ],
        negatives: &["sk-learn-classifier-model"],
    },
    Rule {
        id: "anthropic-api-key",
        description: "An Anthropic API or admin key: sk-ant-api03- / sk-ant-admin01- and 80 or more characters.",
        regex: r"\bsk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "sk-ant-api03-nHyR4Th69Uip0gmNCdvBfuWzJVOo0emzF0_7_-UZqxQwX8DrDZPIuX76s-OG0CueCu1rgUrSVv3cdwhiU20c1tBQMKXpmAA",
        ],
        negatives: &["sk-ant-api03-xxxx"],
    },
    Rule {
        id: "ai-vendor-key",
        description: "An AI vendor key: Groq gsk_ and 52 alphanumerics, Replicate r8_ and 37.",
        regex: r"\b(?:gsk_[A-Za-z0-9]{52}|r8_[A-Za-z0-9]{37})\b",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "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",
            "r8_FU7jWqhn873r47wqLChlyoC7rLTEm9ZgTPLL2",
        ],
        negatives: &["gsk_short"],
    },
    Rule {
        id: "npm-token",
        description: "An npm access token: npm_ and 36 alphanumerics.",
        regex: r"\bnpm_[A-Za-z0-9]{36}\b",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &["npm_1QQQ9nAS5UHoInrSQsBEbA8TiiL5Ez0cN1wE"],
        negatives: &["npm_config_registry_url_for_the_mirror"],
    },
    Rule {
        id: "npmrc-auth",
        description: "A registry credential in .npmrc: _authToken= or _auth= or _password= with a literal.",
        regex: r"(?m)(?:^|:)_(?:authToken|auth|password)\s*=\s*([^\s$][^\s]*)",
        layer: Hard,
        group: 1,
        check: Literal,
        needles: &["_auth", "_password"],
        positives: &["//registry.npmjs.org/:_authToken=8f3d4a2c-1b9e-4c7d-a6f5-0e2b9c8d7a61"],
        negatives: &["//registry.npmjs.org/:_authToken=${NPM_TOKEN}"],
    },
    Rule {
        id: "pypi-token",
        description: "A PyPI upload token: pypi-AgEIcHlwaS5vcmc and 50 or more characters.",
        regex: r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "password = pypi-AgEIcHlwaS5vcmcjgT8sbJzZ_nffY6ucKKv-Q3ZVOwb3mTh8hbfbJQkuTDR7vA2x_88i_9Ey_V8",
        ],
        negatives: &["pypi-AgEIcHlwaS5vcmc"],
    },
    Rule {
        id: "package-registry-key",
        description: "A package registry key: RubyGems rubygems_ and 48 hex, NuGet oy2 and 43, Docker Hub dckr_pat_, JFrog AKCp and 69.",
        regex: r"\b(?:rubygems_[a-f0-9]{48}|oy2[a-z0-9]{43}|dckr_pat_[A-Za-z0-9_-]{27,}|AKCp[A-Za-z0-9]{69})\b",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "rubygems_f6bf4bfaf339d1f39dd18d7896e10201dda61d8d58f9e95a",
            "oy2orqu2ss60icxn0ftskkz92qs1gwhso7uli7ghi6bx67",
            "dckr_pat_IOIcInhqMGyTTEpL7NXD_Z6OnVx",
            "AKCpBvfmYDH6KDhJdlMCTyQ3k3ZoDfxIXl6pOQQH5RQjlgNudr8voMs6cmfij8UwYteaMksmH",
        ],
        negatives: &["dckr_pat_xxxxxxxxxxxxxxxxxxxxxxxxxxx"],
    },
    Rule {
        id: "vault-token",
        description: "A HashiCorp Vault token: hvs. (service), hvb. (batch), hvr. (recovery) and 24 or more characters.",
        regex: r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "VAULT_TOKEN=hvs.NI0LbxQ9xa9ZXequFe2LfIjjn0904WFcVhfjFDYPguxvjNiFEgpgfedbClE6RM5g2F7UtaVFzWtbImVp_PQ1s1P-LF",
        ],
        negatives: &["hvs.xxxxxxxxxxxxxxxxxxxxxxxx", "hvs.short"],
    },
    Rule {
        id: "terraform-cloud-token",
        description: "A Terraform Cloud / Enterprise token: 14 characters, .atlasv1. and 60 to 70 more.",
        regex: r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[".atlasv1."],
        positives: &[
            "Mw6cWkcQziPZ0r.atlasv1.t4Wzjlsf7FsBqFEIko_jQ0XPe_ez0LbYN3ypRnt4lwWjiTh6aCo3YTqqQgE7PyVPuHh",
        ],
        negatives: &[
            "xxxxxxxxxxxxxx.atlasv1.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ],
    },
    Rule {
        id: "messaging-key",
        description: "A messaging or email API key: Twilio SK and 32 hex, SendGrid SG.<22>.<43>, Mailgun key- and 32 hex, Mailchimp <32 hex>-us<n>.",
        regex: r"\b(?:SK[0-9a-fA-F]{32}\b|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|key-[0-9a-f]{32}\b|[0-9a-f]{32}-us\d{1,2}\b)",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &["SK", "SG.", "key-", "-us"],
        positives: &[
            "SKbfd95e78d5c59da7e4a667c6d823c648",
            "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",
            "api_key: key-0cd7175e804108385b9c37fa3cb4efab",
            "e9d984840feb9ac3578a737f04edec5c-us14",
        ],
        negatives: &[
            "key-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "pubkey-0cd7175e804108385b9c37fa3cb4efab",
            "key-value-store",
        ],
    },
    Rule {
        id: "telegram-bot-token",
        description: "A Telegram bot token: the bot's 8 to 10 digit id, :AA and 33 characters.",
        regex: r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[":AA"],
        positives: &["bot_token: 535638054:AAhsAVz9ixhPBbaNn_aPwwlmC63FXrCqRdw"],
        negatives: &[
            "time: 20261203:AA",
            "123456789:AAxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ],
    },
    Rule {
        id: "discord-token",
        description: "A Discord bot token (<id base64>.<6>.<27-38>) or webhook URL (discord.com/api/webhooks/<id>/<token>).",
        regex: r"\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}\b|discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &["."],
        positives: &[
            "MgnFSdgVcFTp9bnfKRiZiP1wSm.3afAHe.14Z6IpJmP74FGLG5dockZQUjahxLFIwAJt_oLb",
            "https://discord.com/api/webhooks/467207962872062971/aW4njp9Tg3NeJRezAdfHj-A2QaSkFGZz_qSimQhPTy7h_t5cJxJ3sAM8DB2829c1cf83",
        ],
        negatives: &["https://discord.com/developers/docs/resources/webhook"],
    },
    Rule {
        id: "platform-token",
        description: "A platform API token: Databricks dapi and 32 hex, Heroku HRKU-AA and 58, DigitalOcean do[opr]_v1_ and 64 hex, Shopify shp(at|ca|pa|ss)_ and 32 hex, Linear lin_api_, Doppler dp.<kind>., Pulumi pul-, Grafana glc_/glsa_, Postman PMAK-, Atlassian ATATT3, Bitbucket ATBB, New Relic NRAK-, Sentry sntrys_/sntryu_, PlanetScale pscale_, Supabase sbp_, Fly.io fo1_, SonarQube sq[upa]_.",
        regex: r"\b(?:dapi[a-f0-9]{32}(?:-\d)?\b|HRKU-AA[A-Za-z0-9_-]{58}|do[opr]_v1_[a-f0-9]{64}\b|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b|lin_api_[A-Za-z0-9]{40}\b|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}\b|pul-[a-f0-9]{40}\b|glc_[A-Za-z0-9+/]{32,}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|PMAK-[a-f0-9]{24}-[a-f0-9]{34}\b|ATATT3[A-Za-z0-9_=-]{180,}|ATBB[A-Za-z0-9_=.-]{28,40}\b|NRAK-[A-Z0-9]{27}\b|sntry[su]_[A-Za-z0-9+/=_]{40,}|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,64}|sbp_[a-f0-9]{40}\b|fo1_[A-Za-z0-9_-]{43}|sq[upa]_[a-f0-9]{40}\b)",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "DATABRICKS_TOKEN=dapidbe06531ec674358a31a21e349f48d8e",
            "databricks_token: dapidbe06531ec674358a31a21e349f48d8e",
            "HRKU-AACGcZ8pErmImktoCK1fFKd8lypYlWGvoU6TDL_hZQS_RtAAXcgmU7pHwXWj",
            "dop_v1_018c146f280d10b80da246a5d058d31b10dff8b588de71a0d301fe98211f19d9",
            "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",
            "lin_api_lyVKBNSQsrdEpf7y5QggmPAVOuVOzwjCk518YB2q",
            "dp.pt.2StiUj0xzX0xGtmGgtxS4rRHXBJRnAWi1ePbqTYWsGH",
            "pul-871804f0cc3971e49793f662658d16a74ca31ea9",
            "glc_ky5QEKJnu8qY5fHA7a9GOCek314VuriX",
            "glsa_slK93IDdV5wS46MriOFlKKfI5Q2PRv6p_c304386c",
            "PMAK-b427c471949c9b3895a0efb0-b593188f0814e7db9223b6b9a458c1faf2",
            "ATBBSGA9HAint5PqlgpuWHZeBmucn8Zm1D288565",
            "NRAK-HKMBBXNWB0FRDYY4BYHRN64Z1OL",
            "pscale_tkn_ia4SAHWJbzCXDBjwpL124vW01YakbE1igfydVUOmtcR",
            "sbp_25e754d9c680f26d6bdfa0143f86091457097f4a",
            "fo1_lru4r2oyjqiKRk6SUf9dPKKPJ3ta2BWJe9OyrG0Vs1W",
            "squ_a1fc819d53ec1b9e4e665fd22b64a21c0cde6f46",
        ],
        negatives: &[
            "dapi_version: 2",
            "shpat_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "dop_v1_0000000000000000000000000000000000000000000000000000000000000000",
        ],
    },
    Rule {
        id: "payment-token",
        description: "A payment or commerce token: Square EAAA/sq0atp-/sq0csp-, Braintree access_token$production$, Shippo shippo_live_, EasyPost EZAK/EZTK, Plaid access-<env>-<uuid>.",
        regex: r"\b(?:(?:EAAA|sq0atp-|sq0csp-)[A-Za-z0-9_-]{22,60}\b|access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}|shippo_(?:live|test)_[a-f0-9]{40}\b|EZ[AT]K[A-Za-z0-9]{54}\b|access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "sq0atp-wUt20DFUswTN2pgKYCr5sB",
            "EAAAXPWorMLb3aTaEp331qRkD05JDUxnOMtwJsUT8yvDkWll9Tdoxx6CtpbXt8ZI",
            "access_token$production$zcirpgazohnwb9yp$936bdff0b46e061d01f093282c440bdd",
            "shippo_live_efc447fb42918a36cdffe0810c2e88081528937a",
            "EZAKIbbsWEB81a659NqJzw648zDTQMgDpv7l79tVP6DhWgWClY2uVdfX9X",
            "access-production-5c18e311-abce-6c63-d0cc-d0eb60ff0db0",
        ],
        negatives: &["access-token-lifetime", "EAAA"],
    },
    Rule {
        id: "cloud-vendor-key",
        description: "Other cloud keys: Alibaba LTAI and 20, Facebook EAA[CM] and 100 or more, Twitter bearer A{20,} and 60 or more, Dropbox sl. and 130 or more, Cloudflare origin CA v1.0-, LangSmith lsv2_, Notion ntn_/secret_.",
        regex: r"\b(?:LTAI[A-Za-z0-9]{20}\b|EAA[CM][A-Za-z0-9]{100,}|A{20,}[A-Za-z0-9%]{60,}|sl\.[A-Za-z0-9_-]{130,}|v1\.0-[a-f0-9]{24}-[a-f0-9]{146}\b|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b|ntn_[A-Za-z0-9]{40,50}\b|secret_[A-Za-z0-9]{43}\b)",
        layer: Hard,
        group: 0,
        check: Placeholder,
        needles: &[],
        positives: &[
            "LTAIwXulqN5LwQmWUjFMC4Qt",
            "EAAC1DtWqwdhfZfjBfAjHkXIpQPRy8dgj9dpksBXDV2QRTUz5dpkIKZ1lfLJRmrSCvcha8NKi6wYvP1UURzjjCQhqi5GU8K44vYJOhyDCyI1ajXV8R",
            "sl.GIrQ2hNkzDlv1fSmSMKXbKzyNJaDBdB9uAhxQO6sE79vqsVKbrzRip1Vv5tiV-pLUouHD662oERxNTV98-DqJtMbXQ5QNS_L1ebJ8TVjLIuZ1rTW75TJpuxplN8tlUA5QzyM3Ri",
            "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",
            "ntn_z00bCXJJCz6uH0DAji7dUSYPqTXvWLtEUaxVQFNLUMXhQi",
            "secret_jiZ1ar4KqPqg0bu07zPDYozsVR0BAUyHppUovO8Rm5s",
        ],
        negatives: &["LTAI", "secret_key_base", "sl.no"],
    },
    Rule {
        id: "pgp-private-key",
        description: "An armoured PGP private key block.",
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
    // ---- generic credentials (soft)
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

/// Rules that are code, not one pattern: listed for `--explain`.
pub static CODE_RULES: &[(&str, Layer, &str)] = &[
    (
        "refused-name",
        Hard,
        "A file whose name is refused at any depth whatever it holds: tfplan, *.tfplan, *.tfstate, *.tfstate.*, *.tfvars, *.tfvars.json, .envrc, *.pem, .private_key.*, .public_key.json (spec), and the key stores *.p12, *.pfx, *.jks, *.keystore.",
    ),
    (
        "kubernetes-secret",
        Soft,
        "A Kubernetes Secret manifest (kind: Secret) whose data: holds a value, or whose stringData: holds a literal.",
    ),
    (
        "email",
        Soft,
        "An e-mail address whose domain is not example.com, example.org, example.net, .invalid, .test or localhost (spec).",
    ),
    (
        "high-entropy",
        Soft,
        "A value (the text split on quotes, =, :, whitespace and the like) of 32 or more base64 characters mixing lower case, upper case and digits whose Shannon entropy is high for its length; hex, UUIDs, URLs, paths, alphabets, base64 of plain text and values behind public/checksum/digest keys are not secrets by themselves.",
    ),
    (
        "archive-bound",
        Hard,
        "An archive that expands past the scanner's bounds (total uncompressed bytes, members, nesting depth): refused rather than expanded.",
    ),
];

pub struct Compiled {
    /// The rules with a literal prefix, in one automaton.
    pub set: RegexSet,
    /// For each entry of `set`, its index in [`RULES`].
    pub in_set: Vec<usize>,
    /// Every rule's own pattern, by index in [`RULES`].
    pub each: Vec<Regex>,
}

pub static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let in_set: Vec<usize> = (0..RULES.len())
        .filter(|&i| RULES[i].needles.is_empty())
        .collect();
    Compiled {
        set: RegexSet::new(in_set.iter().map(|&i| RULES[i].regex))
            .unwrap_or_else(|e| panic!("built-in rule table: {e}")),
        in_set,
        each: RULES
            .iter()
            .map(|r| {
                Regex::new(r.regex).unwrap_or_else(|e| panic!("built-in pattern {}: {e}", r.regex))
            })
            .collect(),
    }
});

/// The rules that may match a text, by index in [`RULES`]: one pass of
/// the set, and the needles of the rules that run alone.
pub fn candidates(text: &str) -> Vec<usize> {
    let c = &*COMPILED;
    let mut out: Vec<usize> = c
        .set
        .matches(text)
        .iter()
        .filter_map(|k| c.in_set.get(k).copied())
        .collect();
    out.extend(
        RULES
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.needles.is_empty() && r.needles.iter().any(|n| text.contains(n)))
            .map(|(i, _)| i),
    );
    out.sort_unstable();
    out
}

pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Whether a match stands: the rule's check on what it captured. `path`
/// tells code (where an unquoted value is an expression) from data.
pub fn stands(rule: &Rule, caps: &Captures<'_>, path: &str) -> bool {
    let whole = caps.get(0).map_or("", |m| m.as_str());
    let value = caps.get(rule.group).map(|m| m.as_str());
    match rule.check {
        Always => true,
        Runs => !value::one_char_run(value.unwrap_or(whole)),
        Placeholder => !value::placeholder(value.unwrap_or(whole)),
        Literal => value.is_some_and(|v| value::literal(v.trim_matches(['"', '\'']))),
        Jwt => !value::not_a_jwt(whole),
        PemBody => value.is_none_or(|body| !value::placeholder_body(body)),
        Base64PrivateKey => value::base64_private_key(whole),
        Assignment => {
            let key = caps.get(1).map_or("", |m| m.as_str());
            let (v, quoted) = match (caps.get(2), caps.get(3), caps.get(4)) {
                (Some(m), _, _) | (_, Some(m), _) => (m.as_str(), true),
                (_, _, Some(m)) => (m.as_str(), false),
                _ => return false,
            };
            value::secret_assignment(key, v, quoted, path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(rule: &Rule, i: usize, text: &str) -> bool {
        COMPILED.each[i]
            .captures_iter(text)
            .any(|c| stands(rule, &c, "x.yml"))
    }

    #[test]
    fn every_rule_catches_its_positives_and_passes_its_negatives() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        ids.extend(CODE_RULES.iter().map(|c| c.0));
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "rule ids are unique");
        for (i, rule) in RULES.iter().enumerate() {
            assert!(!rule.positives.is_empty(), "{}", rule.id);
            assert!(!rule.negatives.is_empty(), "{}", rule.id);
            assert!(!rule.description.is_empty(), "{}", rule.id);
            for p in rule.positives {
                assert!(
                    candidates(p).contains(&i),
                    "{}: the set or needles miss {p}",
                    rule.id
                );
                assert!(hits(rule, i, p), "{}: misses {p}", rule.id);
            }
            for n in rule.negatives {
                assert!(!hits(rule, i, n), "{}: catches {n}", rule.id);
            }
        }
    }
}
