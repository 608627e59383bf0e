#!/usr/bin/env python3
"""Generate the labelled public-safe corpus (corpus.tsv beside this file).

Every sample is written here. Every secret is random, drawn in its
vendor's documented alphabet and length (never a real key); every harmless
sample is a look-alike of the kinds issue 18 names (placeholders,
references, public material, hashes and ids, prose). The `source` column
says what a sample is or which rule it stands for:

  vendor:<what>             the vendor's documented token format
  issue-18                  a case listed in issue 18
  spec:<rule>               a rule of the public-safe spec
  otherwise                 a description of the sample

Deterministic (fixed seed): `python3 generate.py > corpus.tsv`.
Columns: label (secret|harmless), kind, path, source, sample (\\n = newline).
"""
import base64
import random
import string
import zlib

R = random.Random(18)

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
AN = UP + LO + DG
B64 = AN + "+/"
B64U = AN + "-_"
HEXL = "0123456789abcdef"


def rnd(alpha, n):
    return "".join(R.choice(alpha) for _ in range(n))


def base62(n, width):
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = (DG + UP + LO)[r] + out
    return out.rjust(width, "0")


def gh(prefix):
    body = rnd(AN, 30)
    return prefix + body + base62(zlib.crc32(body.encode()) & 0xFFFFFFFF, 6)


def b64of(raw):
    return base64.b64encode(raw).decode()


def password():
    # a human-made password: words, digits, a symbol
    words = ["Orchid", "tango", "Velvet", "maple", "Quartz", "harbor", "Falcon", "cobalt", "Nimbus", "river"]
    return R.choice(words) + R.choice(["!", "#", "%", "&", "@", "_"]) + rnd(DG, R.randint(2, 4)) + R.choice(words).lower() + R.choice(["$", "*", "?", ""])


def jwt():
    h = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    p = base64.urlsafe_b64encode(('{"sub":"%s","iat":%d}' % (rnd(DG, 10), R.randint(1600000000, 1800000000))).encode()).decode().rstrip("=")
    return f"{h}.{p}.{rnd(B64U, 43)}"


def pem_body(lines=4):
    return "\\n".join(rnd(B64, 64) for _ in range(lines))


LAYOUT = {
    "yaml": ("cfg/app.yml", "{k}: {v}"),
    "yamlq": ("cfg/app.yml", '{k}: "{v}"'),
    "env": ("deploy/app.env", "{K}={v}"),
    "json": ("cfg/app.json", '{{"{k}": "{v}"}}'),
    "hcl": ("infra/main.tf", '{k} = "{v}"'),
    "sh": ("scripts/run.sh", 'export {K}="{v}"'),
    "py": ("app/settings.py", "{k} = '{v}'"),
    "ini": ("cfg/app.ini", "[default]\\n{k} = {v}"),
    "bare": ("notes.txt", "use {v} for the deploy"),
    "md": ("README.md", "Set the token: `{v}`"),
    "value": ("cfg/values.yml", "value: {v}"),
}

rows = []


def secret(kind, source, gen, keys, layouts, n=4):
    for i in range(n):
        lay = layouts[i % len(layouts)]
        k = keys[i % len(keys)]
        path, tpl = LAYOUT[lay]
        rows.append(("secret", kind, path, source, tpl.format(k=k, K=k.upper(), v=gen())))


def raw_secret(kind, source, path, samples):
    for s in samples:
        rows.append(("secret", kind, path, source, s))


def harmless(kind, source, path, samples):
    for s in samples:
        rows.append(("harmless", kind, path, source, s))


V = ["bare", "yaml", "env", "json", "hcl", "value"]  # prefixed vendor tokens: any layout
K = ["yaml", "env", "json", "hcl", "sh", "py"]      # context-dependent: an assignment

# ---- AWS
secret("aws-access-key-id", "vendor:AWS unique id prefixes",
       lambda: R.choice(["AKIA", "ASIA", "ABIA", "ACCA"]) + rnd(UP + "234567", 16),
       ["aws_access_key_id"], V, 8)
secret("aws-secret-access-key", "vendor token format (random value)",
       lambda: rnd(B64, 40), ["aws_secret_access_key", "secret_access_key", "AWS_SECRET_KEY"], K, 6)
secret("aws-session-token", "vendor:AWS STS session token",
       lambda: "IQoJb3JpZ2luX2Vj" + rnd(B64, 300), ["aws_session_token"], ["yaml", "env", "ini"], 3)
# ---- GitHub
for p, kind in [("ghp_", "github-pat"), ("gho_", "github-oauth"), ("ghu_", "github-app-user"), ("ghs_", "github-app-server"), ("ghr_", "github-refresh")]:
    secret(kind, "vendor:GitHub token format (prefix, 30 base62, CRC32 base62 suffix)", lambda p=p: gh(p), ["github_token", "GH_TOKEN"], V, 3)
secret("github-fine-grained-pat", "vendor:github_pat_ 22_59",
       lambda: "github_pat_" + rnd(AN, 22) + "_" + rnd(AN, 59), ["github_token"], V, 5)
# ---- GitLab
secret("gitlab-pat", "vendor token format (random value)",
       lambda: "glpat-" + rnd(AN + "-_", 20), ["gitlab_token", "CI_TOKEN"], V, 6)
secret("gitlab-pipeline-trigger", "vendor token format (random value)", lambda: "glptt-" + rnd(HEXL, 40), ["trigger_token"], V, 3)
secret("gitlab-runner-token", "vendor token format (random value)", lambda: "glrt-" + rnd(AN + "-_", 20), ["runner_token"], V, 3)
secret("gitlab-deploy-token", "vendor token format (random value)", lambda: "gldt-" + rnd(AN + "-_", 20), ["deploy_token"], V, 3)
# ---- Slack
secret("slack-bot-token", "vendor token format (random value)",
       lambda: f"xoxb-{rnd(DG, 12)}-{rnd(DG, 13)}-{rnd(AN, 24)}", ["slack_token"], V, 4)
secret("slack-user-token", "vendor token format (random value)", lambda: f"xoxp-{rnd(DG, 12)}-{rnd(DG, 12)}-{rnd(DG, 13)}-{rnd(HEXL, 32)}", ["slack_token"], V, 3)
secret("slack-config-token", "vendor:Slack configuration token (xoxe/xoxo)", lambda: R.choice(["xoxe.xoxp-1-", "xoxe-1-", "xoxo-"]) + rnd(AN, 140), ["slack_config_token"], V, 4)
secret("slack-app-token", "vendor token format (random value)", lambda: f"xapp-1-A{rnd(UP + DG, 10)}-{rnd(DG, 13)}-{rnd(HEXL, 64)}", ["slack_app_token"], V, 3)
secret("slack-webhook", "vendor token format (random value)",
       lambda: f"https://hooks.slack.com/services/T{rnd(UP + DG, 10)}/B{rnd(UP + DG, 10)}/{rnd(AN, 24)}", ["webhook_url", "url"], V, 4)
# ---- Stripe
secret("stripe-secret-key", "vendor token format (random value)", lambda: R.choice(["sk_live_", "sk_test_"]) + rnd(AN, 99), ["stripe_key"], V, 4)
secret("stripe-restricted-key", "vendor token format (random value)", lambda: "rk_live_" + rnd(AN, 99), ["stripe_key"], V, 3)
# ---- Google
secret("gcp-api-key", "vendor:Google API key (AIza + 35)", lambda: "AIza" + rnd(AN + "-_", 35), ["api_key", "GOOGLE_API_KEY", "maps_key"], V, 5)
secret("google-oauth-client-secret", "vendor:Google OAuth client secret (GOCSPX-)", lambda: "GOCSPX-" + rnd(AN + "-_", 28), ["client_secret"], V, 3)
raw_secret("gcp-service-account", "vendor:service account key file", "keys/sa.json", [
    '{\\n  "type": "service_account",\\n  "project_id": "proj-%s",\\n  "private_key_id": "%s",\\n  "private_key": "-----BEGIN PRIVATE KEY-----\\\\n%s\\\\n-----END PRIVATE KEY-----\\\\n"\\n}' % (rnd(LO, 6), rnd(HEXL, 40), rnd(B64, 64))
    for _ in range(3)])
# ---- Azure
secret("azure-ad-client-secret", "vendor token format (random value)", lambda: rnd(AN + "_~.", 3) + R.choice(DG) + "Q~" + rnd(AN + "_~.-", R.randint(31, 34)),
       ["client_secret", "AZURE_CLIENT_SECRET", "value"], V, 8)
secret("azure-storage-key", "vendor:Azure storage connection string", lambda: f"DefaultEndpointsProtocol=https;AccountName=st{rnd(LO + DG, 10)};AccountKey={b64of(bytes(R.getrandbits(8) for _ in range(64)))};EndpointSuffix=core.windows.net",
       ["connection_string", "AZURE_STORAGE_CONNECTION_STRING"], ["yamlq", "env", "json"], 4)
secret("azure-sas-token", "vendor:Azure SAS (sig=)", lambda: f"https://acct{rnd(LO, 5)}.blob.core.windows.net/c?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01T00:00:00Z&sig={rnd(B64, 43)}%3D",
       ["sas_url"], ["yamlq", "env"], 3)
# ---- AI vendors
secret("huggingface-token", "vendor token format (random value)", lambda: "hf_" + rnd(UP + LO, 34), ["hf_token", "HUGGINGFACE_TOKEN"], V, 5)
secret("openai-api-key", "vendor token format (random value)", lambda: R.choice(["sk-proj-", "sk-svcacct-"]) + rnd(AN + "-_", 74) + "T3BlbkFJ" + rnd(AN + "-_", 74), ["openai_api_key"], V, 4)
secret("openai-legacy-key", "vendor:OpenAI legacy key (sk- ... T3BlbkFJ ...)", lambda: "sk-" + rnd(AN, 20) + "T3BlbkFJ" + rnd(AN, 20), ["openai_api_key"], V, 3)
secret("anthropic-api-key", "vendor token format (random value)", lambda: "sk-ant-api03-" + rnd(AN + "-_", 93) + "AA", ["anthropic_api_key"], V, 4)
secret("anthropic-admin-key", "vendor token format (random value)", lambda: "sk-ant-admin01-" + rnd(AN + "-_", 93) + "AA", ["anthropic_admin_key"], V, 2)
secret("groq-api-key", "vendor token format (random value)", lambda: "gsk_" + rnd(AN, 52), ["groq_api_key"], V, 3)
secret("replicate-token", "vendor:Replicate r8_", lambda: "r8_" + rnd(AN, 37), ["replicate_api_token"], V, 3)
# ---- package registries
secret("npm-token", "vendor token format (random value)", lambda: "npm_" + rnd(AN, 36), ["npm_token"], V, 4)
raw_secret("npmrc-auth-token", "vendor:.npmrc auth token line", ".npmrc", [f"//registry.npmjs.org/:_authToken={rnd(HEXL, 8)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 12)}" for _ in range(3)])
secret("pypi-token", "vendor token format (random value)", lambda: "pypi-AgEIcHlwaS5vcmc" + rnd(B64U, 70), ["pypi_token", "password"], V, 4)
secret("rubygems-key", "vendor token format (random value)", lambda: "rubygems_" + rnd(HEXL, 48), ["gem_host_api_key"], V, 3)
secret("nuget-key", "vendor token format (random value)", lambda: "oy2" + rnd(LO + DG, 43), ["nuget_api_key"], ["yaml", "env", "json"], 3)
secret("dockerhub-pat", "vendor:Docker Hub dckr_pat_", lambda: "dckr_pat_" + rnd(AN + "-_", 27), ["docker_token"], V, 3)
secret("jfrog-api-key", "vendor token format (random value)", lambda: "AKCp" + rnd(AN, 69), ["artifactory_key"], V, 3)
# ---- HashiCorp
secret("vault-service-token", "vendor token format (random value)", lambda: "hvs." + rnd(AN + "_-", 90), ["vault_token", "VAULT_TOKEN"], V, 4)
secret("vault-legacy-token", "vendor token format (random value)", lambda: "s." + rnd(AN, 24), ["vault_token", "VAULT_TOKEN"], K, 4)
secret("vault-batch-token", "vendor token format (random value)", lambda: "hvb." + rnd(AN + "_-", 138), ["vault_token"], V, 2)
secret("terraform-cloud-token", "vendor token format (random value)", lambda: rnd(AN, 14) + ".atlasv1." + rnd(AN + "-_=", 67), ["tfe_token", "token"], V, 3)
# ---- messaging / email
secret("twilio-api-key", "vendor token format (random value)", lambda: "SK" + rnd(HEXL, 32), ["twilio_api_key"], V, 3)
secret("sendgrid-api-key", "vendor token format (random value)", lambda: "SG." + rnd(AN + "-_", 22) + "." + rnd(AN + "-_", 43), ["sendgrid_api_key"], V, 4)
secret("mailgun-api-key", "vendor token format (random value)", lambda: "key-" + rnd(HEXL, 32), ["mailgun_api_key", "api_key"], V, 4)
secret("mailchimp-api-key", "vendor token format (random value)", lambda: rnd(HEXL, 32) + "-us" + str(R.randint(1, 21)), ["mailchimp_api_key"], K, 3)
secret("telegram-bot-token", "vendor token format (random value)", lambda: rnd(DG, R.randint(8, 10)) + ":AA" + rnd(AN + "_-", 33), ["telegram_bot_token", "bot_token"], V, 5)
secret("discord-bot-token", "vendor token format (random value)", lambda: R.choice("MNO") + rnd(AN, 25) + "." + rnd(AN + "-_", 6) + "." + rnd(AN + "-_", 38), ["discord_token"], V, 3)
secret("discord-webhook", "vendor token format (random value)", lambda: f"https://discord.com/api/webhooks/{rnd(DG, 18)}/{rnd(AN + '-_', 68)}", ["webhook"], V, 3)
# ---- platforms
secret("databricks-token", "vendor token format (random value)", lambda: "dapi" + rnd(HEXL, 32) + R.choice(["", "-2", "-3"]), ["databricks_token", "DATABRICKS_TOKEN"], V, 5)
secret("heroku-api-key-v2", "vendor token format (random value)", lambda: "HRKU-AA" + rnd(AN + "-_", 58), ["heroku_api_key"], V, 3)
secret("heroku-api-key", "vendor token format (random value)", lambda: f"{rnd(HEXL, 8)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 12)}", ["heroku_api_key", "HEROKU_API_KEY"], K, 3)
secret("digitalocean-token", "vendor token format (random value)", lambda: R.choice(["dop_v1_", "doo_v1_", "dor_v1_"]) + rnd(HEXL, 64), ["do_token", "DIGITALOCEAN_TOKEN"], V, 4)
secret("shopify-token", "vendor token format (random value)", lambda: R.choice(["shpat_", "shpca_", "shppa_", "shpss_"]) + rnd("0123456789abcdefABCDEF", 32), ["shopify_token"], V, 4)
secret("linear-api-key", "vendor token format (random value)", lambda: "lin_api_" + rnd(AN, 40), ["linear_api_key"], V, 3)
secret("doppler-token", "vendor token format (random value)", lambda: "dp.pt." + rnd(AN, 43), ["doppler_token"], V, 3)
secret("pulumi-token", "vendor token format (random value)", lambda: "pul-" + rnd(HEXL, 40), ["pulumi_access_token"], V, 3)
secret("grafana-token", "vendor token format (random value)", lambda: R.choice(["glc_", "glsa_"]) + rnd(AN, 32) + ("_" + rnd(HEXL, 8)), ["grafana_token"], V, 3)
secret("postman-api-key", "vendor token format (random value)", lambda: "PMAK-" + rnd(HEXL, 24) + "-" + rnd(HEXL, 34), ["postman_api_key"], V, 3)
secret("atlassian-api-token", "vendor token format (random value)", lambda: "ATATT3xFfGF0" + rnd(AN + "-_=", 170) + rnd("0123456789ABCDEF", 8), ["jira_api_token"], V, 3)
secret("bitbucket-app-password", "vendor token format (random value)", lambda: "ATBB" + rnd(AN, 28) + rnd("0123456789ABCDEF", 8), ["bitbucket_app_password"], V, 3)
secret("newrelic-user-key", "vendor token format (random value)", lambda: "NRAK-" + rnd(UP + DG, 27), ["new_relic_api_key"], V, 3)
secret("sentry-auth-token", "vendor token format (random value)", lambda: "sntrys_" + rnd(B64, 140), ["sentry_auth_token"], V, 2)
secret("sentry-user-token", "vendor token format (random value)", lambda: "sntryu_" + rnd(HEXL, 64), ["sentry_auth_token"], V, 2)
secret("planetscale-token", "vendor token format (random value)", lambda: R.choice(["pscale_tkn_", "pscale_pw_", "pscale_oauth_"]) + rnd(AN + "_-.", 43), ["planetscale_token"], V, 3)
secret("supabase-token", "vendor:Supabase sbp_", lambda: "sbp_" + rnd(HEXL, 40), ["supabase_access_token"], V, 3)
secret("flyio-token", "vendor token format (random value)", lambda: "fo1_" + rnd(AN + "_-", 43), ["fly_api_token"], V, 2)
secret("sonarqube-token", "vendor token format (random value)", lambda: R.choice(["squ_", "sqp_", "sqa_"]) + rnd(HEXL, 40), ["sonar_token"], V, 3)
secret("square-token", "vendor token format (random value)", lambda: R.choice(["EAAA", "sq0atp-", "sq0csp-"]) + rnd(AN + "-_", 60 if R.random() < 0.5 else 43), ["square_access_token"], V, 3)
secret("braintree-token", "vendor token format (random value)", lambda: f"access_token$production${rnd(LO + DG, 16)}${rnd(HEXL, 32)}", ["braintree_token"], V, 2)
secret("alibaba-access-key", "vendor token format (random value)", lambda: "LTAI" + rnd(AN, 20), ["alibaba_access_key_id"], V, 3)
secret("facebook-access-token", "vendor token format (random value)", lambda: "EAAC" + rnd(AN, 120), ["fb_access_token"], V, 2)
secret("twitter-bearer-token", "vendor token format (random value)", lambda: "AAAAAAAAAAAAAAAAAAAAA" + rnd(AN + "%", 80), ["twitter_bearer_token"], K, 2)
secret("dropbox-token", "vendor token format (random value)", lambda: "sl." + rnd(AN + "-_", 135), ["dropbox_token"], V, 2)
secret("okta-token", "vendor token format (random value)", lambda: "00" + rnd(AN + "-_", 40), ["okta_api_token", "OKTA_TOKEN"], K, 3)
secret("datadog-api-key", "vendor token format (random value)", lambda: rnd(HEXL, 32), ["dd_api_key", "DATADOG_API_KEY", "datadog_app_key"], K, 4)
secret("cloudflare-api-token", "vendor token format (random value)", lambda: rnd(AN + "_-", 40), ["cloudflare_api_token", "CF_API_TOKEN"], K, 3)
secret("cloudflare-origin-ca-key", "vendor token format (random value)", lambda: "v1.0-" + rnd(HEXL, 24) + "-" + rnd(HEXL, 146), ["origin_ca_key"], V, 2)
secret("langsmith-key", "vendor token format (random value)", lambda: R.choice(["lsv2_pt_", "lsv2_sk_"]) + rnd(HEXL, 32) + "_" + rnd(HEXL, 10), ["langchain_api_key"], V, 2)
secret("notion-token", "vendor:Notion ntn_/secret_", lambda: R.choice(["ntn_", "secret_"]) + rnd(AN, 43 if R.random() < 0.5 else 46), ["notion_token"], V, 3)
secret("shippo-token", "vendor token format (random value)", lambda: R.choice(["shippo_live_", "shippo_test_"]) + rnd(HEXL, 40), ["shippo_token"], V, 2)
secret("easypost-key", "vendor token format (random value)", lambda: "EZAK" + rnd(AN, 54), ["easypost_api_key"], V, 2)
secret("plaid-access-token", "vendor token format (random value)", lambda: f"access-production-{rnd(HEXL, 8)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 12)}", ["plaid_access_token"], V, 2)
secret("django-secret-key", "vendor token format (random value)", lambda: rnd(LO + DG + "!@#$%^&*(-_=+)", 50), ["SECRET_KEY"], ["py", "env"], 3)
secret("jwt", "vendor token format (random value)", jwt, ["id_token", "jwt", "value"], V, 4)
secret("age-identity", "vendor:age identity (AGE-SECRET-KEY-1 + 58 bech32)", lambda: "AGE-SECRET-KEY-1" + rnd("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), ["identity"], V, 2)
secret("wireguard-private-key", "vendor:WireGuard key (32 bytes base64)", lambda: b64of(bytes(R.getrandbits(8) for _ in range(32))), ["PrivateKey"], ["ini", "yaml"], 3)
# ---- keys
raw_secret("pem-private-key", "PEM private key block (random body)", "certs/server.key", [
    f"-----BEGIN {t}PRIVATE KEY-----\\n{pem_body()}\\n-----END {t}PRIVATE KEY-----" for t in ["RSA ", "EC ", "", "OPENSSH ", "ENCRYPTED ", "DSA "]])
raw_secret("pgp-private-key", "PGP private key block (random body)", "keys/signing.asc", [
    f"-----BEGIN PGP PRIVATE KEY BLOCK-----\\n\\n{pem_body(6)}\\n-----END PGP PRIVATE KEY BLOCK-----" for _ in range(3)])
raw_secret("putty-private-key", "PuTTY private key file (random body)", "keys/id.ppk", [
    f"PuTTY-User-Key-File-3: ssh-ed25519\\nEncryption: none\\nComment: key\\nPublic-Lines: 2\\n{rnd(B64, 64)}\\nPrivate-Lines: 1\\n{rnd(B64, 44)}" for _ in range(2)])
raw_secret("kubeconfig-client-key", "vendor:kubeconfig client-key-data", "kube/config", [
    f"users:\\n- name: admin\\n  user:\\n    client-key-data: {b64of(('-----BEGIN RSA PRIVATE KEY-----' + chr(10) + rnd(B64, 64)).encode())}" for _ in range(2)] + [
    f"users:\\n- name: ci\\n  user:\\n    token: {rnd(LO + DG, 6)}.{rnd(LO + DG, 16)}" for _ in range(2)])
# ---- generic credentials (issue point 3)
for lay in ["yaml", "yamlq", "env", "json", "hcl", "sh", "py", "ini"]:
    path, tpl = LAYOUT[lay]
    for k in ["password", "DB_PASSWORD", "admin_passwd"][: 2 if lay != "yaml" else 3]:
        rows.append(("secret", "generic-password", path, "issue-18", tpl.format(k=k, K=k.upper(), v=password())))
for lay in ["yaml", "env", "json", "hcl", "py"]:
    path, tpl = LAYOUT[lay]
    for k in ["api_key", "client_secret", "auth_token", "secretKey"]:
        v = rnd(AN, R.choice([24, 32, 40])) if k != "auth_token" else rnd(HEXL, 40)
        rows.append(("secret", "generic-api-key", path, "a secret-named key with a random value", tpl.format(k=k, K=k.upper(), v=v)))
raw_secret("connection-string", "connection URL with a password (random)", "cfg/db.yml", [
    f"database_url: {s}://{u}:{password()}@db{R.randint(1, 9)}.internal:{p}/app" for s, u, p in [("postgres", "app", 5432), ("postgresql", "svc", 5432), ("mysql", "root", 3306), ("mongodb+srv", "admin", 27017), ("redis", "default", 6379), ("amqp", "rabbit", 5672)]])
raw_secret("curl-basic-auth", "curl command with user:password (random)", "scripts/call.sh", [
    f"curl -u deploy:{password()} https://api.internal.test/v1/items", f"curl --user 'ci:{password()}' -X POST https://ci.internal.test/job", f"curl -s -u admin:{rnd(AN, 16)} $URL"])
raw_secret("authorization-header", "Authorization header with a token (random)", "scripts/call.sh", [
    f'curl -H "Authorization: Bearer {rnd(AN + "-_", 32)}" https://api.internal.test', f"Authorization: Basic {b64of(('svc:' + password()).encode())}",
    f'headers = {{"Authorization": "Bearer {rnd(B64U, 40)}"}}', f"-H 'Authorization: token {rnd(HEXL, 40)}'"])
raw_secret("kubernetes-secret", "Kubernetes Secret with base64 data (random values)", "k8s/secret.yml", [
    f"apiVersion: v1\\nkind: Secret\\nmetadata:\\n  name: db\\ntype: Opaque\\ndata:\\n  username: {b64of(b'app')}\\n  password: {b64of(password().encode())}" for _ in range(3)] + [
    f"kind: Secret\\napiVersion: v1\\nmetadata:\\n  name: api\\ndata:\\n  token: {b64of(rnd(AN, 12).encode())}"])
raw_secret("docker-config-auth", "vendor:docker config.json", "docker/config.json", [
    '{"auths": {"registry.internal.test": {"auth": "%s"}}}' % b64of(("ci:" + password()).encode()) for _ in range(2)])
raw_secret("netrc-password", "vendor:.netrc", ".netrc", [f"machine api.internal.test login deploy password {password()}" for _ in range(2)])
raw_secret("cli-password-flag", "a password or token given on a command line (random)", "scripts/db.sh", [f"mysql -u root --password={password()} app", f"psql --host db --password '{password()}'", f"app --api-token {rnd(AN, 32)} --verbose"])
raw_secret("tfvar-assignment", "spec:tfvar-assignment", "scripts/plan.sh", [f"export TF_VAR_db_password={password()}", f'TF_VAR_api_token="{rnd(AN, 20)}" tofu plan'])
raw_secret("xml-password", "password element in an XML settings file (random)", "cfg/settings.xml", [f"<server><id>nexus</id><username>ci</username><password>{password()}</password></server>" for _ in range(2)])

# ================= harmless look-alikes =================
harmless("placeholder", "issue-18", "cfg/app.yml", [
    "slack_token: xoxb-xxxxxxxxxxxx-xxxxxxxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxx",
    "github_token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "aws_access_key_id: AKIAXXXXXXXXXXXXXXXX",
    "api_key: YOUR_API_KEY_HERE",
    "password: <your-password>",
    "password: changeme",
    "client_secret: '********'",
    "token: your_token_here",
    "api_key: EXAMPLE_API_KEY_1234567890abcdefEXAMPLE",
    "secret: dummy-secret-value",
    "password: fake_password_for_tests",
    "token: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "api_key: 0000000000000000000000000000000000000000",
    "AZURE_CLIENT_SECRET=kT29Q~xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "glpat-xxxxxxxxxxxxxxxxxxxx",
    "hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "sk_live_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "password: REPLACE_ME",
    "DB_PASSWORD=<set in vault>",
    "api_key: sample-key-do-not-use",
    "token: '...'",
    "password: password",
    "password: secret",
    "key-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
])
harmless("documented-example", "issue-18; AWS documentation's example key (the spec's tests pin it as a finding)", "cfg/app.yml", [
    "aws_access_key_id: AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
])
harmless("pem-placeholder", "issue-18", "docs-src/keys.txt", [
    "-----BEGIN RSA PRIVATE KEY-----\\n...\\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\\n-----END PRIVATE KEY-----",
    "-----BEGIN EC PRIVATE KEY-----\\nanything\\n-----END EC PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----\\n<your key here>\\n-----END OPENSSH PRIVATE KEY-----",
])
harmless("reference", "issue-18 (point 3)", "cfg/app.yml", [
    "password: ${DB_PASSWORD}", "password: {{ vault_db_password }}", "token: $GITHUB_TOKEN", "api_key: ${{ secrets.API_KEY }}",
    'password = var.db_password', 'client_secret = data.vault_generic_secret.app.data["client_secret"]',
    "password: !vault |", "DB_PASSWORD=$(cat /run/secrets/db)", "export TOKEN=\"$CI_JOB_TOKEN\"",
    "password = os.environ['DB_PASSWORD']", "token = get_token()", "secret: '%(secret)s'",
    'password: "ENC[age:YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBBYkNk]"', "api_key: process.env.API_KEY", "token: self.token",
    "password_file: /run/secrets/db_password", "secret_name: prod-db-credentials", "token_url: https://auth.example.com/oauth/token",
    "max_tokens: 4096", "password_min_length: 12", "tokenizer: bert-base-uncased", "secret_ref: db-creds", "api_key_header: X-API-Key",
    "aws_access_key_id_env: AWS_ACCESS_KEY_ID", "password: null", 'password: ""', "token: true", "token_ttl: 3600",
    "client_secret_arn: arn:aws:secretsmanager:eu-west-1:123456789012:secret:app-AbCdEf",
    "auth_method: oauth2", "secret_store: vault", "passwordless: true",
])
harmless("public-material", "issue-18 (point 5)", "cfg/keys.yml", [
    "public_key: " + b64of(bytes(R.getrandbits(8) for _ in range(32))),
    "publicKey: " + rnd(B64, 44),
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\\n\\n" + pem_body(5) + "\\n-----END PGP PUBLIC KEY BLOCK-----",
    "-----BEGIN PUBLIC KEY-----\\n" + pem_body(3) + "\\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\\n" + pem_body(5) + "\\n-----END CERTIFICATE-----",
    "stripe_publishable_key: pk_live_" + rnd(AN, 99),
    "STRIPE_PUBLISHABLE_KEY=pk_test_" + rnd(AN, 99),
    "authorized_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rnd(B64, 43) + " ops@host",
    "ssh_key: ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + rnd(B64, 300) + " deploy",
    "recipient: age1" + rnd("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
    "mailgun_public_key: pubkey-" + rnd(HEXL, 32),
    "google_client_id: " + rnd(DG, 12) + "-" + rnd(LO + DG, 32) + ".apps.googleusercontent.com",
    "sentry_dsn: https://" + rnd(HEXL, 32) + "@o" + rnd(DG, 6) + ".ingest.sentry.io/" + rnd(DG, 7),
    "firebase_app_id: 1:" + rnd(DG, 12) + ":web:" + rnd(HEXL, 22),
    "twilio_account_sid: AC" + rnd(HEXL, 32),
    "azure_tenant_id: " + f"{rnd(HEXL, 8)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 12)}",
    "aws_account_id: '" + rnd(DG, 12) + "'",
    "role_arn: arn:aws:iam::" + rnd(DG, 12) + ":role/deploy",
])
harmless("url-or-path", "issue-18 (point 5)", "cfg/links.yml", [
    "doc: https://docs.google.com/document/d/1" + rnd(AN + "-_", 43) + "/edit",
    "sheet: https://docs.google.com/spreadsheets/d/1" + rnd(AN + "-_", 43) + "/edit#gid=0",
    "endpoint: /api/v2/organizations/" + rnd(AN, 24) + "/projects/" + rnd(AN, 24),
    "image: registry.internal.test/team/app@sha256:" + rnd(HEXL, 64),
    "url: https://github.com/org/repo/commit/" + rnd(HEXL, 40),
    "video: https://www.youtube.com/watch?v=" + rnd(AN + "-_", 11),
    "link: https://drive.google.com/file/d/1" + rnd(AN + "-_", 32) + "/view?usp=sharing",
    "src: ./src/components/" + rnd(UP, 1) + rnd(LO, 8) + "/" + rnd(UP, 1) + rnd(LO, 10) + "View.tsx",
    "path: /var/lib/app/cache/" + rnd(HEXL, 2) + "/" + rnd(HEXL, 38),
    "bucket: s3://company-artifacts-prod/builds/" + rnd(DG, 8) + "/app.tar.gz",
    "repo: https://gitlab.internal.test/platform/infrastructure-modules.git",
    "figma: https://www.figma.com/file/" + rnd(AN, 22) + "/Design-System",
    "grafana: https://grafana.internal.test/d/" + rnd(AN, 9) + "/overview?orgId=1",
    "api: https://api.internal.test/v1/users/" + rnd(AN, 28) + "/sessions",
])
harmless("code-constant", "issue-18 (point 5)", "src/util.py", [
    'ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"',
    'BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"',
    'logo = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk' + rnd(B64, 40) + '"',
    '<img src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7">',
    'font = "data:font/woff2;base64,d09GMgABAAAAA' + rnd(B64, 80) + '"',
    "class AbstractSingletonProxyFactoryBeanConfigurationV2Impl:",
    "def test_handles_refresh_token_rotation_when_expired_2024():",
    "CHARSET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'",
    "const kMaxRetryBackoffMillisecondsForUploadRequests2 = 30000;",
    'HEX = "0123456789abcdef0123456789ABCDEF"',
    "token_type = 'Bearer'",
    "password_regex = r'^(?=.*[A-Z])(?=.*\\d).{12,}$'",
    "secret_header_name = 'X-Hub-Signature-256'",
    "TOKEN_PATTERN = r'ghp_[0-9a-zA-Z]{36}'",
    "SEPARATOR = '=============================================='",
    "border: '----------------------------------------------------------'",
])
harmless("hash-or-id", "issue-18 (point 4)", "cfg/versions.yml", [
    "version: " + rnd(HEXL, 40), "commit: " + rnd(HEXL, 40), "rev: " + rnd(HEXL, 40), "sha: " + rnd(HEXL, 7),
    "checksum: sha256:" + rnd(HEXL, 64), "sha256: " + rnd(HEXL, 64), "md5: " + rnd(HEXL, 32),
    "request_id: " + f"{rnd(HEXL, 8)}-{rnd(HEXL, 4)}-4{rnd(HEXL, 3)}-a{rnd(HEXL, 3)}-{rnd(HEXL, 12)}",
    "id: " + f"{rnd(HEXL, 8)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 12)}",
    "integrity: sha512-" + b64of(bytes(R.getrandbits(8) for _ in range(64))),
    'integrity="sha384-' + b64of(bytes(R.getrandbits(8) for _ in range(48))) + '"',
    "ami: ami-0" + rnd(HEXL, 16), "subnet_id: subnet-0" + rnd(HEXL, 16), "instance_id: i-0" + rnd(HEXL, 16),
    "etag: \"" + rnd(HEXL, 32) + "\"", "build: " + rnd(DG, 14), "image_digest: sha256:" + rnd(HEXL, 64),
    "git_sha: " + rnd(HEXL, 40), "parent: " + rnd(HEXL, 40), "object_id: " + rnd(HEXL, 24),
    "fingerprint: " + ":".join(rnd(HEXL, 2) for _ in range(16)),
    "ssh_fingerprint: SHA256:" + rnd(B64, 43),
    "lock: h1:" + rnd(B64, 43) + "=",
    "kms_key_id: " + f"{rnd(HEXL, 8)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 4)}-{rnd(HEXL, 12)}",
    "trace_id: " + rnd(HEXL, 32), "span: " + rnd(HEXL, 16), "nonce: " + rnd(DG, 10),
])
harmless("jwt-header", "issue-18", "cfg/auth.yml", [
    "header: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", "jwt_header: eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9", "alg: eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9"])
harmless("prose", "prose that names secrets", "cfg/notes.yml", [
    "description: the password is stored in vault and rotated weekly",
    "comment: set the token in your environment before running",
    "help: The API key can be created under Settings > Developer",
    "note: secret rotation happens every 90 days",
    "summary: tokens expire after one hour; refresh them with the CLI",
    "# password: see the runbook",
    "message: Invalid password, please try again",
    "title: How to reset your password",
    "label: Client secret (leave empty to generate)",
    "reason: token expired",
])
harmless("docs-example", "spec: soft rules skip docs", "docs/setup.md", [
    "Set `password: hunter2` in your local file only.",
    "Write to ops@corp-mail.test or jordan@example.com.",
    "export API_KEY=your-api-key",
    "The secret looks like `Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8Qw0Aa`.",
])
harmless("k8s-non-secret", "Kubernetes objects with no secret value", "k8s/configmap.yml", [
    "apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: app\\ndata:\\n  LOG_LEVEL: debug\\n  FEATURE_FLAGS: " + b64of(b"a,b,c"),
    "apiVersion: v1\\nkind: Secret\\nmetadata:\\n  name: db\\ntype: Opaque\\ndata: {}",
    "apiVersion: v1\\nkind: Secret\\nmetadata:\\n  name: db\\nstringData:\\n  password: ${DB_PASSWORD}",
    "kind: ServiceAccount\\nmetadata:\\n  name: deploy\\nsecrets:\\n  - name: deploy-token",
    "env:\\n  - name: DB_PASSWORD\\n    valueFrom:\\n      secretKeyRef:\\n        name: db\\n        key: password",
])
harmless("base64-data", "base64 of ordinary data", "cfg/data.yml", [
    "cert: MIIDATCCAemgAwIBAgICEJIwDQYJKoZIhvcNAQELBQAwGTEX",  # the start of a self-signed certificate made for this corpus
    "ca_bundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t" + rnd(B64, 20),
    "user_data: " + b64of(b"#!/bin/bash\nset -euo pipefail\napt-get update\napt-get install -y nginx\n"),
    "motd: " + b64of(b"Welcome to the build host. Authorised use only, please."),
    "config: " + b64of(b'{"log_level": "info", "region": "eu-west-1", "replicas": 3}'),
])
harmless("email-public", "spec:email", "cfg/team.yml", [
    "owner: avery.alpha@example.com", "contact: someone@example.invalid", "noreply: ci@build.test", "author: dev@localhost",
])
harmless("identifier", "names and identifiers that look random", "src/app.ts", [
    "import { UserAccountPreferencesSynchronizationService } from './services';",
    "export const DEFAULT_TOKEN_REFRESH_INTERVAL_MS = 300000;",
    "const secretManagerClient = new SecretManagerServiceClient();",
    "password_reset_email_template_id: welcome-reset-v2",
    "tokenBucketCapacityPerSecondForBurstTraffic1 = 10",
    "getAccessTokenForServiceAccountWithImpersonation2()",
    "apiKeyRotationScheduleCronExpression: '0 0 * * 0'",
    "terraform_state_bucket: acme-prod-terraform-state-eu-west-1",
    "dns_name: ip-10-0-12-34.eu-west-1.compute.internal",
    "timestamp: 2026-12-03T18:23:14.123456789Z",
    "range: 10.0.0.0/16,10.1.0.0/16,10.2.0.0/16,192.168.0.0/24",
    "user_agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36",
])

print("# label\tkind\tpath\tsource\tsample (\\n = newline). Generated by generate.py (seed 18); secrets are random in the vendor's alphabet.")
for r in rows:
    assert "\t" not in r[4] and "\n" not in r[4], r
    print("\t".join(r))
