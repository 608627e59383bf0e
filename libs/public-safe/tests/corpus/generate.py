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

# ================= extension: issue-39 growth (seed 3940) =================
# Everything above draws from R (seed 18) and stays byte-identical; the
# samples below draw from their own generator S, so adding or changing them
# never shifts an earlier line. Kinds used here: password-assignment,
# generic-secret, k8s-secret, vendor-longtail, private-key-file (secrets);
# near-miss, placeholder, benign-entropy (harmless). Samples are written with
# real newlines and escaped on the way out (a literal backslash-n inside a
# file, as in JSON, is kept as a backslash before the newline, as above).
import re
import uuid

S = random.Random(3940)
HEXU = "0123456789ABCDEF"
B32L = "abcdefghijklmnopqrstuvwxyz234567"
BECH = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
CROCK = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def s(alpha, n):
    return "".join(S.choice(alpha) for _ in range(n))


def sbytes(n):
    return bytes(S.getrandbits(8) for _ in range(n))


def sb64(n):
    return base64.b64encode(sbytes(n)).decode()


def sb64u(n):
    return base64.urlsafe_b64encode(sbytes(n)).decode().rstrip("=")


def suuid():
    return str(uuid.UUID(int=S.getrandbits(128), version=4))


def b64s(text):
    return base64.b64encode(text.encode()).decode()


def b64us(text):
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


WORDS = ["Marigold", "harbor", "Juniper", "copper", "Saffron", "glacier", "Tundra", "willow", "Basalt", "meadow",
         "Cinder", "lantern", "Orbit", "thistle", "Pioneer", "walnut", "Sparrow", "canyon", "Ember", "Hazel"]


def pw_human():
    return S.choice(WORDS).capitalize() + s(DG, S.randint(2, 4)) + S.choice("!%*?_.") + S.choice(WORDS).lower() + S.choice(["", "!", "9", "*"])


def pw_phrase():
    return "-".join(S.choice(WORDS).capitalize() for _ in range(3)) + "-" + s(DG, 2)


def pw_gen():
    return S.choice(UP + LO) + s(AN + "!%*-_=+.~^", S.randint(15, 21))


def pw_url():
    return S.choice(UP + LO) + s(AN + "-._~", S.randint(13, 21))


def pw_alnum():
    return S.choice(UP + LO) + s(AN, S.randint(11, 17))


def fill_one(name):
    fixed = {"H": pw_human, "F": pw_phrase, "G": pw_gen, "U": pw_url, "A": pw_alnum, "uuid": suuid,
             "fernet": lambda: base64.urlsafe_b64encode(sbytes(32)).decode()}
    if name in fixed:
        return fixed[name]()
    m = re.fullmatch(r"(hex|HEX|b62|b64|b64u|up|lo|dg|lodg|updg)(\d+)", name)
    assert m, name
    kind, n = m.group(1), int(m.group(2))
    return {"hex": lambda: s(HEXL, n), "HEX": lambda: s(HEXU, n), "b62": lambda: s(AN, n),
            "b64": lambda: sb64(n), "b64u": lambda: s(B64U, n), "up": lambda: s(UP, n), "lo": lambda: s(LO, n),
            "dg": lambda: s(DG, n), "lodg": lambda: s(LO + DG, n), "updg": lambda: s(UP + DG, n)}[kind]()


def fill(t):
    # <<H>> human password, <<F>> passphrase, <<G>> generated, <<U>> url-safe, <<A>> alnum,
    # <<hexN>>, <<b62N>>, <<b64N>> (base64 of N bytes), <<b64uN>> (N chars), <<uuid>>, <<fernet>> ...
    return re.sub(r"<<(\w+)>>", lambda m: fill_one(m.group(1)), t)


def add(label, kind, path, source, text):
    assert "\\t" not in text, text  # the corpus reader would turn a literal backslash-t into a tab
    t = text.replace("\\n", "\\\\n").replace("\n", "\\n").replace("\t", "\\t")
    rows.append((label, kind, path, source, t))


def pem(label, lead, chars, width=64):
    body = lead + s(B64, chars - len(lead))
    lines = [body[i:i + width] for i in range(0, len(body), width)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


def openssh_key(kind="ed25519"):
    lead = {"ed25519": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACA",
            "rsa": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcnNhAAAAAwEAAQAAAYEA",
            "aes": "b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABD"}[kind]
    return pem("OPENSSH PRIVATE KEY", lead, {"ed25519": 399, "rsa": 2590, "aes": 464}[kind], 70)


RSA1 = "MIIEpAIBAAKCAQEA"          # PKCS#1 RSA 2048
PK8 = "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ"  # PKCS#8 RSA 2048
EC1 = "MHcCAQEEI"                 # SEC1 P-256
EC8 = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg"  # PKCS#8 P-256
ENC8 = "MIIFLTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQI"  # PKCS#8 encrypted (PBES2)

# ---------------- password-assignment (secret) ----------------
PW = [
    ("config/database.yml", "Rails database.yml, production password",
     "production:\n  adapter: postgresql\n  host: db-prod.internal\n  username: orders\n  password: \"<<H>>\"\n  database: orders_production\n  pool: 10"),
    ("src/main/resources/application.yml", "Spring application.yml datasource password",
     "spring:\n  datasource:\n    url: jdbc:postgresql://pg.internal:5432/billing\n    username: billing\n    password: <<A>>\n  jpa:\n    open-in-view: false"),
    ("src/main/resources/application-prod.yml", "Spring application.yml RabbitMQ password",
     "spring:\n  rabbitmq:\n    host: mq.internal\n    port: 5672\n    username: orders-svc\n    password: '<<G>>'"),
    ("group_vars/dbservers/vars.yml", "Ansible group vars, MySQL root password",
     "mysql_root_password: \"<<H>>\"\nmysql_databases:\n  - name: shop"),
    ("roles/app/defaults/main.yml", "Ansible role defaults, admin password",
     "app_admin_user: admin\napp_admin_password: <<A>>\napp_port: 8080"),
    ("docker-compose.yml", "docker-compose environment map, Postgres password",
     "services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: <<A>>\n      POSTGRES_DB: app"),
    ("docker-compose.yml", "docker-compose environment list, MySQL root password",
     "  mysql:\n    image: mysql:8.4\n    environment:\n      - MYSQL_ROOT_PASSWORD=<<H>>\n      - MYSQL_DATABASE=wordpress"),
    ("docker-compose.prod.yml", "docker-compose command with redis-server --requirepass",
     "  redis:\n    image: redis:7-alpine\n    command: redis-server --appendonly yes --requirepass <<A>>"),
    ("docker-compose.yml", "docker-compose pgAdmin default password",
     "  pgadmin:\n    image: dpage/pgadmin4\n    environment:\n      PGADMIN_DEFAULT_EMAIL: ops@corp-mail.test\n      PGADMIN_DEFAULT_PASSWORD: \"<<F>>\""),
    (".gitlab-ci.yml", "GitLab CI variables block with a literal password",
     "variables:\n  POSTGRES_DB: app_test\n  POSTGRES_USER: runner\n  DB_PASSWORD: \"<<G>>\""),
    ("config/mail.yml", "SMTP password in YAML",
     "smtp:\n  address: smtp.corp-mail.test\n  port: 587\n  user_name: alerts@corp-mail.test\n  password: \"<<H>>\"\n  authentication: login"),
    ("provisioning/datasources/postgres.yaml", "Grafana datasource provisioning secureJsonData password",
     "datasources:\n  - name: Warehouse\n    type: postgres\n    url: warehouse.internal:5432\n    user: grafana_ro\n    secureJsonData:\n      password: <<A>>"),
    ("host_vars/web01.yml", "Ansible host vars become password",
     "ansible_user: deploy\nansible_become_pass: \"<<H>>\""),
    ("inventory/hosts.ini", "Ansible INI inventory with ansible_password",
     "[web]\n10.0.1.15 ansible_user=admin ansible_password=<<A>>\n10.0.1.16 ansible_user=admin"),
    ("appsettings.Production.json", "SQL Server connection string Password= in appsettings.json",
     "{\n  \"ConnectionStrings\": {\n    \"Default\": \"Server=sql01.corp.internal;Database=Crm;User Id=crm_app;Password=<<G>>;TrustServerCertificate=True\"\n  }\n}"),
    ("config/production.json", "JSON config db password",
     "{\n  \"db\": {\n    \"host\": \"pg-main.internal\",\n    \"user\": \"api\",\n    \"password\": \"<<H>>\"\n  }\n}"),
    (".vscode/sftp.json", "VS Code SFTP extension password",
     "{\n  \"name\": \"staging\",\n  \"host\": \"10.0.7.20\",\n  \"protocol\": \"sftp\",\n  \"username\": \"deploy\",\n  \"password\": \"<<G>>\",\n  \"remotePath\": \"/var/www/app\"\n}"),
    ("ormconfig.json", "TypeORM config password",
     "{\n  \"type\": \"mysql\",\n  \"host\": \"mysql.internal\",\n  \"username\": \"orm\",\n  \"password\": \"<<A>>\",\n  \"database\": \"catalog\"\n}"),
    ("package.json", "npm script with PGPASSWORD inline",
     "  \"scripts\": {\n    \"db:seed\": \"PGPASSWORD=<<A>> psql -h pg.internal -U app -f seed.sql\"\n  },"),
    (".env.production", ".env DB_PASSWORD",
     "APP_ENV=production\nDB_HOST=db.internal\nDB_USERNAME=laravel\nDB_PASSWORD=<<H>>"),
    (".env", ".env DATABASE_URL postgres:// with password",
     "DATABASE_URL=postgres://app:<<U>>@db.internal:5432/app?sslmode=require"),
    (".env", ".env mail password quoted",
     "MAIL_MAILER=smtp\nMAIL_USERNAME=noreply@corp-mail.test\nMAIL_PASSWORD=\"<<G>>\""),
    (".env.local", ".env REDIS_URL redis://:password@host",
     "REDIS_URL=redis://:<<U>>@cache.internal:6379/0"),
    (".env", ".env RabbitMQ default pass",
     "RABBITMQ_DEFAULT_USER=orders\nRABBITMQ_DEFAULT_PASS=<<A>>"),
    ("config/app.ini", "INI [database] password",
     "[database]\nhost = db.internal\nport = 5432\nuser = app\npassword = <<H>>"),
    ("deploy/my.cnf", "MySQL option file [client] password",
     "[client]\nuser=backup\npassword=\"<<G>>\"\nhost=mysql-primary.internal"),
    ("etc/odbc.ini", "ODBC DSN with PWD=",
     "[ReportsDSN]\nDriver=ODBC Driver 18 for SQL Server\nServer=sql02.corp.internal\nDatabase=Reports\nUID=report\nPWD=<<A>>"),
    ("alembic.ini", "alembic.ini sqlalchemy.url with password",
     "[alembic]\nscript_location = migrations\nsqlalchemy.url = postgresql://alembic:<<U>>@pg.internal/app"),
    ("deploy/pgpass", ".pgpass line host:port:db:user:password",
     "pg.internal:5432:app:app_rw:<<G>>"),
    ("etc/supervisord.conf", "supervisord inet_http_server password",
     "[inet_http_server]\nport=127.0.0.1:9001\nusername=admin\npassword=<<A>>"),
    ("etc/pip.conf", "pip.conf index-url with user:password",
     "[global]\nindex-url = https://ci:<<U>>@pypi.corp.internal/simple\ntimeout = 60"),
    ("terraform.tfvars", "Terraform tfvars db_password",
     "region      = \"eu-west-1\"\ndb_username = \"admin\"\ndb_password = \"<<H>>\""),
    ("infra/rds.tf", "Terraform aws_db_instance password literal",
     "resource \"aws_db_instance\" \"main\" {\n  identifier     = \"orders-prod\"\n  engine         = \"postgres\"\n  instance_class = \"db.t4g.medium\"\n  username       = \"orders\"\n  password       = \"<<G>>\"\n}"),
    ("env/prod.auto.tfvars", "Terraform auto.tfvars admin_password",
     "admin_password = \"<<F>>\""),
    ("infra/vm.tf", "Terraform azurerm VM admin_password",
     "resource \"azurerm_windows_virtual_machine\" \"jump\" {\n  name           = \"jump01\"\n  admin_username = \"azadmin\"\n  admin_password = \"<<H>>\"\n  size           = \"Standard_B2s\"\n}"),
    ("Web.config", "XML connectionString attribute with Password=",
     "<connectionStrings>\n  <add name=\"Default\" connectionString=\"Data Source=sql02;Initial Catalog=Shop;User ID=shop;Password=<<A>>\" providerName=\"System.Data.SqlClient\" />\n</connectionStrings>"),
    ("conf/tomcat-users.xml", "XML attribute password (Tomcat users)",
     "<tomcat-users>\n  <user username=\"admin\" password=\"<<H>>\" roles=\"manager-gui,admin-gui\"/>\n</tomcat-users>"),
    ("src/main/webapp/META-INF/context.xml", "XML Resource password attribute (JNDI datasource)",
     "<Context>\n  <Resource name=\"jdbc/app\" auth=\"Container\" type=\"javax.sql.DataSource\" username=\"app\" password=\"<<G>>\" url=\"jdbc:mysql://db:3306/app\"/>\n</Context>"),
    ("src/main/resources/hibernate.cfg.xml", "XML element connection.password (Hibernate)",
     "<property name=\"hibernate.connection.username\">inventory</property>\n<property name=\"hibernate.connection.password\"><<A>></property>"),
    ("NuGet.Config", "NuGet ClearTextPassword",
     "<packageSourceCredentials>\n  <corpfeed>\n    <add key=\"Username\" value=\"build\" />\n    <add key=\"ClearTextPassword\" value=\"<<G>>\" />\n  </corpfeed>\n</packageSourceCredentials>"),
    ("sitemanager.xml", "XML element <Pass> (FTP site manager)",
     "<Server>\n  <Host>ftp.partner.internal</Host>\n  <Port>21</Port>\n  <User>upload</User>\n  <Pass><<A>></Pass>\n</Server>"),
    ("src/main/resources/application.properties", "Java .properties spring.datasource.password",
     "spring.datasource.url=jdbc:mysql://mysql.internal:3306/store\nspring.datasource.username=store\nspring.datasource.password=<<H>>"),
    ("gradle.properties", "gradle.properties repository password",
     "nexusUsername=ci-publisher\nnexusPassword=<<G>>"),
    ("config/kafka-client.properties", "Kafka SASL JAAS config with password",
     "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"svc-orders\" password=\"<<A>>\";"),
    ("config/db.properties", "JDBC URL with ;password= (SQL Server)",
     "jdbc.url=jdbc:sqlserver://sql03:1433;databaseName=Hr;user=hr_app;password=<<A>>;encrypt=true"),
    ("liquibase.properties", "liquibase.properties password",
     "url: jdbc:postgresql://pg.internal:5432/ledger\nusername: liquibase\npassword: <<H>>"),
    ("wp-config.php", "PHP define() DB_PASSWORD",
     "define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp_prod' );\ndefine( 'DB_PASSWORD', '<<G>>' );\ndefine( 'DB_HOST', 'mysql.internal' );"),
    ("config/config.php", "PHP array dbpassword",
     "$CONFIG = array (\n  'dbtype' => 'mysql',\n  'dbuser' => 'nextcloud',\n  'dbpassword' => '<<H>>',\n);"),
    ("src/Db.php", "PHP PDO constructor with password literal",
     "$pdo = new PDO('mysql:host=db.internal;dbname=shop', 'shop', '<<A>>');"),
    ("app/settings.py", "Python dj-database-url default with password",
     "DATABASES = {'default': dj_database_url.config(default='postgresql://django:<<U>>@pg-main.internal:5432/site')}"),
    ("src/db.js", "mongodb+srv:// URI with password",
     "await mongoose.connect(\"mongodb+srv://app:<<U>>@cluster0.ab1cd.mongodb.net/prod?retryWrites=true&w=majority\");"),
    ("celeryconfig.py", "amqp:// broker URL with password",
     "broker_url = 'amqp://orders:<<U>>@mq.internal:5672/%2F'"),
    ("config/cable.yml", "redis://:password@host in YAML",
     "production:\n  adapter: redis\n  url: redis://:<<U>>@redis-master.internal:6379/1"),
    ("internal/store/db.go", "Go MySQL DSN user:password@tcp(host)",
     "dsn := \"shop:<<U>>@tcp(mysql.internal:3306)/shop?parseTime=true\""),
    ("scripts/report.py", "ODBC connection string Pwd=",
     "conn = pyodbc.connect(\"Driver={ODBC Driver 18 for SQL Server};Server=tcp:sql.corp.internal,1433;Database=Fin;Uid=fin_ro;Pwd=<<A>>;Encrypt=yes;\")"),
    ("src/main/java/com/acme/Ledger.java", "JDBC URL with password= query parameter",
     "Connection c = DriverManager.getConnection(\"jdbc:postgresql://pg:5432/ledger?user=ledger&password=<<U>>\");"),
    ("Data/ShopContext.cs", "ADO.NET connection string in C#",
     "optionsBuilder.UseSqlServer(\"Server=sql01;Database=Shop;User Id=sa;Password=<<G>>;\");"),
    ("etc/ldap.conf", "LDAP bind password (bindpw)",
     "uri ldaps://ldap.corp.internal\nbinddn cn=svc-portal,ou=services,dc=corp,dc=internal\nbindpw <<A>>"),
    ("scripts/backup.sh", "mysqldump -pSECRET (password glued to -p)",
     "mysqldump -u backup -p<<A>> --all-databases | gzip > /backup/all-$(date +%F).sql.gz"),
    ("scripts/restore.sh", "PGPASSWORD=... psql",
     "PGPASSWORD='<<H>>' psql -h pg.internal -U restore -d app < dump.sql"),
    ("scripts/deploy.sh", "sshpass -p with a literal password",
     "sshpass -p '<<G>>' ssh -o StrictHostKeyChecking=no deploy@10.0.3.21 'sudo systemctl restart app'"),
    ("Makefile", "docker login --password '...' in a Makefile",
     "push:\n\tdocker login registry.corp.internal -u ci --password '<<G>>'\n\tdocker push registry.corp.internal/app:$(TAG)"),
    ("Jenkinsfile", "mongodump --uri with password in a Jenkinsfile",
     "stage('Backup') {\n  steps {\n    sh \"mongodump --uri mongodb://backup:<<U>>@mongo.internal:27017 --out /backups\"\n  }\n}"),
    ("scripts/sync.sh", "lftp -u user,password",
     "lftp -u deploy,<<A>> sftp://files.partner.internal -e 'mirror -R dist /upload; bye'"),
    ("scripts/init-db.sh", "mysql --password= flag",
     "mysql -u root --password=<<H>> -e \"CREATE DATABASE IF NOT EXISTS app\""),
    ("scripts/setup.ps1", "PowerShell ConvertTo-SecureString with a plain password",
     "$secure = ConvertTo-SecureString '<<G>>' -AsPlainText -Force\n$cred = New-Object System.Management.Automation.PSCredential('CORP\\svc-deploy', $secure)"),
    ("scripts/provision.sh", "rabbitmqctl add_user with password",
     "rabbitmqctl add_user orders '<<H>>'\nrabbitmqctl set_permissions -p / orders '.*' '.*' '.*'"),
    ("migrations/001_roles.sql", "SQL CREATE USER ... WITH PASSWORD",
     "CREATE USER app_rw WITH PASSWORD '<<G>>';\nGRANT CONNECT ON DATABASE app TO app_rw;"),
    ("migrations/002_report_user.sql", "SQL IDENTIFIED BY (MySQL)",
     "CREATE USER 'report'@'%' IDENTIFIED BY '<<H>>';"),
    ("Dockerfile", "Dockerfile ENV with a password",
     "FROM grafana/grafana:11.1.0\nENV GF_SECURITY_ADMIN_USER=admin\nENV GF_SECURITY_ADMIN_PASSWORD=<<A>>"),
    ("etc/wpa_supplicant.conf", "Wi-Fi PSK in wpa_supplicant.conf",
     "network={\n    ssid=\"Office-5G\"\n    psk=\"<<F>>\"\n    key_mgmt=WPA-PSK\n}"),
    ("etc/redis.conf", "redis.conf requirepass",
     "bind 0.0.0.0\nprotected-mode yes\nrequirepass <<A>>"),
    ("scripts/mirror.sh", "git push https://user:password@host",
     "git push --mirror https://mirror-bot:<<U>>@git.corp.internal/platform/app.git"),
    ("etc/fstab", "CIFS mount options with password=",
     "//nas01/share /mnt/share cifs username=svc-backup,password=<<A>>,uid=1000 0 0"),
    ("app/mailer.py", "smtplib login with a literal password",
     "with smtplib.SMTP_SSL('smtp.corp-mail.test', 465) as smtp:\n    smtp.login('alerts@corp-mail.test', '<<H>>')"),
    ("config/settings.toml", "TOML [database] password",
     "[database]\nurl = \"postgres://pg.internal:5432/app\"\nuser = \"app\"\npassword = \"<<G>>\""),
    ("helm/install.sh", "psql connection URI with password in a script",
     "psql \"postgresql://migrator:<<U>>@pg.internal:5432/app?sslmode=verify-full\" -f schema.sql"),
    ("scripts/vpn.sh", "openconnect --passwd-on-stdin fed from echo",
     "echo '<<H>>' | openconnect --user=jdoe --passwd-on-stdin vpn.corp.internal"),
]
for path, src, t in PW:
    add("secret", "password-assignment", path, src, fill(t))

# ---------------- generic-secret (secret) ----------------
GS = [
    (".env", "JWT_SECRET, 64 hex", "NODE_ENV=production\nJWT_SECRET=<<hex64>>\nJWT_EXPIRES_IN=15m"),
    (".env", "SESSION_SECRET, random base62", "SESSION_SECRET=<<b6248>>"),
    (".env.production", "NEXTAUTH_SECRET, base64 of 32 bytes", "NEXTAUTH_URL=https://app.corp.internal\nNEXTAUTH_SECRET=<<b6432>>"),
    (".env", "Laravel APP_KEY base64:", "APP_NAME=Shop\nAPP_KEY=base64:<<b6432>>\nAPP_DEBUG=false"),
    ("config/secrets.yml", "Rails secret_key_base, 128 hex", "production:\n  secret_key_base: <<hex128>>"),
    ("app/__init__.py", "Flask SECRET_KEY literal", "app.config['SECRET_KEY'] = '<<hex32>>'"),
    ("src/main/resources/application.yml", "JWT signing secret in Spring YAML", "security:\n  jwt:\n    secret: <<b6464>>\n    expiration: 3600"),
    ("src/main/resources/application.properties", "JWT signing key in .properties", "app.jwt.signing-key=<<b6432>>\napp.jwt.issuer=orders"),
    ("appsettings.json", "JWT Key in appsettings.json", "\"Jwt\": {\n  \"Key\": \"<<b6448>>\",\n  \"Issuer\": \"https://id.corp.internal\"\n}"),
    ("config/default.json", "apiKey in JSON", "{\n  \"analytics\": {\n    \"endpoint\": \"https://ingest.partner.internal\",\n    \"apiKey\": \"<<b6232>>\"\n  }\n}"),
    ("src/config.ts", "exported API_KEY constant (TypeScript)", "export const API_KEY = \"<<b6240>>\";"),
    ("src/client.js", "apiKey option in a client constructor", "const client = new PaymentsClient({ baseUrl: 'https://pay.partner.internal', apiKey: '<<hex40>>' });"),
    ("cmd/hooks/main.go", "webhook secret constant (Go)", "const webhookSecret = \"<<hex40>>\""),
    ("src/main/java/com/acme/OAuthConfig.java", "client secret constant (Java)", "private static final String CLIENT_SECRET = \"<<b6240>>\";"),
    ("Services/Signer.cs", "HMAC key constant (C#, base64)", "private const string HmacKey = \"<<b6432>>\";"),
    ("config/initializers/partner.rb", "api_secret in a Ruby initializer", "Partner.configure do |config|\n  config.api_key = 'acme-prod'\n  config.api_secret = '<<hex64>>'\nend"),
    ("config/services.php", "api_token in a PHP config array", "'fulfilment' => [\n    'url' => 'https://ship.partner.internal',\n    'api_token' => '<<b6260>>',\n],"),
    ("infra/variables.tf", "Terraform variable default holding an api key", "variable \"api_key\" {\n  type    = string\n  default = \"<<b6232>>\"\n}"),
    ("infra/prod.tfvars", "auth_token in tfvars", "auth_token = \"<<hex64>>\""),
    ("config/oauth.ini", "client_secret in INI", "[oauth]\nclient_id = svc-billing\nclient_secret = <<b6240>>\ntoken_url = https://sso.corp.internal/token"),
    ("config/oauth.properties", "oauth client secret in .properties (base64url)", "oauth.client.id=inventory\noauth.client.secret=<<b64u43>>"),
    ("docker-compose.yml", "WEBHOOK_SECRET in docker-compose environment", "  hooks:\n    image: corp/hooks:2.3\n    environment:\n      WEBHOOK_SECRET: <<hex40>>"),
    (".github/workflows/deploy.yml", "literal API token in a workflow env block", "env:\n  REGISTRY: registry.corp.internal\n  API_TOKEN: <<b6240>>"),
    ("config/storage.yml", "encryption_key, base64 of 32 bytes", "storage:\n  backend: s3\n  encryption_key: <<b6432>>"),
    ("config/signing.yml", "hmac_key, 64 hex", "signing:\n  algorithm: HS256\n  hmac_key: <<hex64>>"),
    ("config/gitlab.json", "private_token in JSON", "{\"url\": \"https://git.corp.internal\", \"private_token\": \"<<b6220>>\"}"),
    (".env", "ACCESS_TOKEN, base64url", "ACCESS_TOKEN=<<b64u64>>"),
    (".env", "REFRESH_TOKEN, base64url", "CLIENT_ID=desktop-app\nREFRESH_TOKEN=<<b64u86>>"),
    ("scripts/fetch.py", "X-Api-Key header literal (Python)", "resp = requests.get(url, headers={\"X-Api-Key\": \"<<hex32>>\"}, timeout=10)"),
    ("src/api.js", "Bearer token literal in fetch headers", "const res = await fetch(`${BASE}/v1/orders`, { headers: { Authorization: 'Bearer <<b6248>>' } });"),
    ("scripts/purge.sh", "X-Auth-Token header in curl", "curl -X POST -H \"X-Auth-Token: <<hex64>>\" https://cdn-admin.corp.internal/purge"),
    ("App/Config.swift", "apiSecret constant (Swift)", "let apiSecret = \"<<b6232>>\""),
    ("app/src/main/java/com/acme/Keys.kt", "SIGNING_KEY constant (Kotlin)", "const val SIGNING_KEY = \"<<hex64>>\""),
    ("src/config.rs", "API_TOKEN constant (Rust)", "pub const API_TOKEN: &str = \"<<b6240>>\";"),
    ("config/services.yaml", "Symfony app.secret parameter", "parameters:\n    app.secret: <<hex32>>"),
    (".env", "Symfony APP_SECRET", "APP_ENV=prod\nAPP_SECRET=<<hex32>>"),
    (".env", "Strapi APP_KEYS and ADMIN_JWT_SECRET", "APP_KEYS=<<b6416>>,<<b6416>>\nADMIN_JWT_SECRET=<<b6416>>"),
    ("config/initializers/devise.rb", "Devise secret_key", "Devise.setup do |config|\n  config.secret_key = '<<hex128>>'\nend"),
    ("src/crypto.js", "encryption key as hex in Buffer.from", "const encryptionKey = Buffer.from('<<hex64>>', 'hex');"),
    ("app/crypto.py", "Fernet key literal", "FERNET_KEY = b'<<fernet>>'"),
    ("airflow.cfg", "Airflow fernet_key", "[core]\nexecutor = CeleryExecutor\nfernet_key = <<fernet>>"),
    ("oauth2-proxy.cfg", "oauth2-proxy client_secret and cookie_secret", "provider = \"oidc\"\nclient_id = \"oauth2-proxy\"\nclient_secret = \"<<b6232>>\"\ncookie_secret = \"<<b64u32>>\""),
    ("config.toml", "secret_key in TOML", "[server]\nbind = \"0.0.0.0:8000\"\nsecret_key = \"<<b6264>>\""),
    ("grafana.ini", "Grafana [security] secret_key", "[security]\nadmin_user = admin\nsecret_key = <<b6232>>"),
    ("config/hooks.json", "webhook_secret in JSON", "{\"events\": [\"push\"], \"webhook_secret\": \"<<b6424>>\"}"),
    ("app/integrations.py", "client_secret in a Python dict", "PROVIDER = {\n    \"client_id\": \"reporting\",\n    \"client_secret\": \"<<b64u43>>\",\n}"),
    ("infra/keycloak.tf", "client_secret in a Terraform provider block", "provider \"keycloak\" {\n  client_id     = \"terraform\"\n  client_secret = \"<<b6232>>\"\n  url           = \"https://sso.corp.internal\"\n}"),
    ("config/crypto.properties", "encryption key in .properties", "security.encryption.key=<<b6432>>"),
    ("App.config", "XML appSettings ApiSecret", "<appSettings>\n  <add key=\"ApiBaseUrl\" value=\"https://api.partner.internal\" />\n  <add key=\"ApiSecret\" value=\"<<b6240>>\" />\n</appSettings>"),
    ("deploy/app.service", "systemd Environment=API_KEY", "[Service]\nEnvironment=API_KEY=<<b6232>>\nExecStart=/opt/app/bin/server"),
    ("Dockerfile", "Dockerfile ENV SECRET_KEY_BASE", "FROM ruby:3.3-slim\nENV RAILS_ENV=production\nENV SECRET_KEY_BASE=<<hex128>>"),
    ("config/minio.yml", "object-store secret key", "minio:\n  endpoint: minio.internal:9000\n  accessKey: <<updg20>>\n  secretKey: <<b6240>>"),
    ("settings/base.py", "Django SECRET_KEY (50 random characters)", "SECRET_KEY = '<<lodg50>>'"),
    ("config/auth.yaml", "auth_token 40 hex in YAML", "notifier:\n  url: https://notify.corp.internal/api\n  auth_token: <<hex40>>"),
    ("src/settings.ts", "encryption key base64 in TypeScript", "export const settings = {\n  cookieName: 'sid',\n  encryptionKey: '<<b6432>>',\n};"),
    ("config/jwt.json", "RS/HS shared secret in JSON (hex)", "{\"alg\": \"HS512\", \"secret\": \"<<hex128>>\"}"),
]
for path, src, t in GS:
    add("secret", "generic-secret", path, "a secret-named key with a random value: " + src, fill(t))

# ---------------- k8s-secret (secret) ----------------
def k8s_b64(v):
    return b64s(v)


K8S = []
for name in ["orders-db", "billing-db", "ledger-db"]:
    K8S.append(("k8s/%s-secret.yaml" % name, "Secret with base64 data: username and password",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: prod\ntype: Opaque\ndata:\n  username: %s\n  password: %s" % (name, k8s_b64("svc_" + s(LO, 5)), k8s_b64(pw_human()))))
K8S += [
    ("k8s/api-keys.yaml", "Secret with base64 data: several API keys",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-keys\ntype: Opaque\ndata:\n  STRIPE_SECRET_KEY: %s\n  SENDGRID_API_KEY: %s\n  JWT_SECRET: %s" % (k8s_b64("sk_live_" + s(AN, 99)), k8s_b64("SG." + s(B64U, 22) + "." + s(B64U, 43)), k8s_b64(s(HEXL, 64)))),
    ("k8s/ingress-tls.yaml", "kubernetes.io/tls Secret with a base64 private key",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: shop-tls\ntype: kubernetes.io/tls\ndata:\n  tls.crt: %s\n  tls.key: %s" % (b64s(pem("CERTIFICATE", "MIIDdzCCAl+gAwIBAgIU", 900)), b64s(pem("PRIVATE KEY", PK8, 1620)))),
    ("k8s/app-secret.yaml", "Secret with stringData literal password",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-secret\ntype: Opaque\nstringData:\n  DB_PASSWORD: \"%s\"\n  DB_USER: app" % pw_gen()),
    ("k8s/webhook-token.yaml", "Secret with stringData literal API token",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: webhook-token\nstringData:\n  token: %s" % s(AN, 40)),
    ("k8s/database-url.yaml", "Secret with stringData connection URL",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: database-url\nstringData:\n  DATABASE_URL: postgres://app:%s@pg.prod.svc:5432/app" % pw_url()),
    ("k8s/deploy.yaml", "multi-document YAML: Deployment then a Secret with data",
     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n        - name: worker\n          image: corp/worker:1.8.2\n          envFrom:\n            - secretRef:\n                name: worker-env\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: worker-env\ntype: Opaque\ndata:\n  QUEUE_PASSWORD: %s" % k8s_b64(pw_alnum())),
    ("k8s/bundle.yaml", "multi-document YAML: ConfigMap then a Secret with stringData",
     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mailer\ndata:\n  SMTP_HOST: smtp.corp-mail.test\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: mailer\nstringData:\n  SMTP_PASSWORD: '%s'" % pw_human()),
    ("k8s/regcred.yaml", "kubernetes.io/dockerconfigjson Secret",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: %s" % b64s('{"auths":{"registry.corp.internal":{"username":"ci","password":"%s","auth":"%s"}}}' % (pw_alnum(), b64s("ci:" + pw_alnum())))),
    ("charts/app/values-prod.yaml", "Helm values with literal Postgres passwords",
     "postgresql:\n  enabled: true\n  auth:\n    username: app\n    postgresPassword: %s\n    password: %s\n    database: app" % (pw_alnum(), pw_alnum())),
    ("charts/app/values.yaml", "Helm values with a literal Redis password",
     "redis:\n  architecture: replication\n  auth:\n    enabled: true\n    password: \"%s\"" % pw_gen()),
    ("monitoring/values.yaml", "Helm values with a literal Grafana admin password",
     "grafana:\n  adminUser: admin\n  adminPassword: %s\n  persistence:\n    enabled: true" % pw_human()),
    ("charts/api/values-prod.yaml", "Helm values externalDatabase password",
     "externalDatabase:\n  host: pg.prod.internal\n  user: api\n  password: %s\n  database: api" % pw_alnum()),
    ("rabbitmq/values.yaml", "Helm values RabbitMQ password and Erlang cookie",
     "auth:\n  username: orders\n  password: %s\n  erlangCookie: %s" % (pw_alnum(), s(UP, 32))),
    ("k8s/basic-auth.yaml", "kubernetes.io/basic-auth Secret with stringData",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: registry-basic\ntype: kubernetes.io/basic-auth\nstringData:\n  username: robot$ci\n  password: %s" % s(AN, 32)),
    ("k8s/aws-creds.yaml", "Secret holding AWS keys in base64 data",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: aws-creds\ndata:\n  AWS_ACCESS_KEY_ID: %s\n  AWS_SECRET_ACCESS_KEY: %s" % (k8s_b64("AKIA" + s(UP + "234567", 16)), k8s_b64(s(B64, 40)))),
    ("backup/secret-export.json", "Secret as kubectl -o json output",
     "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Secret\",\n  \"metadata\": {\"name\": \"smtp\", \"namespace\": \"mail\"},\n  \"type\": \"Opaque\",\n  \"data\": {\"password\": \"%s\"}\n}" % k8s_b64(pw_human())),
    ("k8s/kustomization.yaml", "kustomize secretGenerator literals",
     "secretGenerator:\n  - name: app-credentials\n    literals:\n      - DB_PASSWORD=%s\n      - API_TOKEN=%s" % (pw_alnum(), s(AN, 32))),
    ("k8s/git-ssh.yaml", "kubernetes.io/ssh-auth Secret with a base64 private key",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-ssh\ntype: kubernetes.io/ssh-auth\ndata:\n  ssh-privatekey: %s" % b64s(openssh_key("ed25519"))),
    ("argocd/repo-secret.yaml", "Argo CD repository Secret with stringData password",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: private-repo\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  url: https://git.corp.internal/platform/deploy.git\n  username: argocd\n  password: %s" % ("glpat-" + s(AN + "-_", 20))),
    ("charts/app/templates/secret.yaml", "Helm template Secret with a literal base64 value",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ include \"app.fullname\" . }}\ntype: Opaque\ndata:\n  api-key: %s" % k8s_b64(s(AN, 40))),
    ("k8s/sa-token.yaml", "service-account-token Secret with a token in data",
     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ci-deployer-token\n  annotations:\n    kubernetes.io/service-account.name: ci-deployer\ntype: kubernetes.io/service-account-token\ndata:\n  token: %s" % k8s_b64(b64us('{"alg":"RS256","kid":"%s"}' % s(B64U, 43)) + "." + b64us('{"iss":"kubernetes/serviceaccount","sub":"system:serviceaccount:ci:ci-deployer"}') + "." + s(B64U, 342))),
    ("scripts/bootstrap.sh", "kubectl create secret --from-literal with a password",
     "kubectl -n prod create secret generic db-credentials \\\n  --from-literal=username=app \\\n  --from-literal=password='%s'" % pw_gen()),
    ("scripts/helm-install.sh", "helm install --set with a literal password",
     "helm upgrade --install keycloak bitnami/keycloak -n auth \\\n  --set auth.adminUser=admin \\\n  --set auth.adminPassword=%s" % pw_alnum()),
    ("k8s/quoted-secret.yml", "Secret with quoted base64 data values",
     "apiVersion: \"v1\"\nkind: \"Secret\"\nmetadata:\n  name: \"ldap-bind\"\ndata:\n  \"bind-password\": \"%s\"" % k8s_b64(pw_human())),
]
for path, src, t in K8S:
    add("secret", "k8s-secret", path, src, t)

# ---------------- vendor-longtail (secret) ----------------
def v(vendor_format, path, text):
    add("secret", "vendor-longtail", path, "vendor:" + vendor_format, text)


def sentry_org_token():
    claims = '{"iat":%d.%06d,"url":"https://sentry.io","region_url":"https://us.sentry.io","org":"%s"}' % (
        S.randint(1700000000, 1790000000), S.randint(0, 999999), S.choice(["acme", "northwind", "globex"]))
    return "sntrys_" + b64s(claims) + "_" + s(AN + "+/", 43)


def grafana_cloud_token():
    claims = '{"o":"%s","n":"stack-%s-hm-write-%s","k":"%s","m":{"r":"prod-eu-west-2"}}' % (
        s(DG, 6), s(DG, 6), s(LO, 6), s(AN, 24))
    return "glc_" + b64s(claims)


def mapbox_token(kind):
    claims = '{"u":"%s","a":"cl%s"}' % (S.choice(["acme-maps", "fleetview", "geo-team"]), s(LO + DG, 23))
    return kind + "." + b64us(claims) + "." + s(B64U, 22)


def onepassword_sa_token():
    claims = ('{"signInAddress":"acme.1password.com","userAuth":{"method":"SRPg-4096","alg":"PBES2g-HS256",'
              '"iterations":650000,"salt":"%s"},"email":"%s@1passwordserviceaccounts.com","srpX":"%s",'
              '"muk":{"alg":"A256GCM","ext":false,"k":"%s","key_ops":["decrypt","encrypt"],"kty":"oct","kid":"mp"},'
              '"secretKey":"A3-%s-%s-%s-%s-%s-%s","throttleSecret":{"seed":"%s","deviceUuid":"%s"},"deviceUuid":"%s"}') % (
        s(B64U, 22), s(LO + DG, 13), s(HEXL, 64), s(B64U, 43), s(UP + DG, 6), s(UP + DG, 6), s(UP + DG, 5), s(UP + DG, 5),
        s(UP + DG, 5), s(UP + DG, 5), s(HEXL, 64), s(LO + DG, 26), s(LO + DG, 26))
    return "ops_" + b64s(claims).rstrip("=")


def supa_jwt(role):
    h = b64us('{"alg":"HS256","typ":"JWT"}')
    p = b64us('{"iss":"supabase","ref":"%s","role":"%s","iat":%d,"exp":%d}' % (s(LO, 20), role, 1730000000 + S.randint(0, 9999999), 2045000000 + S.randint(0, 9999999)))
    return h + "." + p + "." + s(B64U, 43)


def discord_bot():
    return b64s(s("123456789", 1) + s(DG, S.choice([17, 18]))).rstrip("=") + "." + s(B64U, 6) + "." + s(B64U, 38)


# Stripe
v("Stripe webhook signing secret (whsec_ + 32 base62)", ".env", "STRIPE_WEBHOOK_SECRET=whsec_" + s(AN, 32))
v("Stripe webhook signing secret (whsec_ + 32 base62)", "src/webhooks/stripe.ts", "const endpointSecret = 'whsec_%s';\nconst event = stripe.webhooks.constructEvent(body, sig, endpointSecret);" % s(AN, 32))
v("Stripe live secret key (sk_live_) on a CLI", "scripts/refund.sh", "stripe refunds create --charge ch_%s --api-key sk_live_51%s" % (s(AN, 24), s(AN, 97)))
# Twilio
v("Twilio auth token (32 hex) beside the Account SID", "config/twilio.yml", "twilio:\n  account_sid: AC%s\n  auth_token: %s\n  from: '+15005550006'" % (s(HEXL, 32), s(HEXL, 32)))
v("Twilio API key secret (32 base62) beside its SK sid", ".env", "TWILIO_API_KEY=SK%s\nTWILIO_API_SECRET=%s" % (s(HEXL, 32), s(AN, 32)))
# SendGrid
v("SendGrid API key (SG.22.43)", "app/email.py", "sg = SendGridAPIClient('SG.%s.%s')" % (s(B64U, 22), s(B64U, 43)))
v("SendGrid API key (SG.22.43)", "config/mail.json", '{"provider": "sendgrid", "apiKey": "SG.%s.%s"}' % (s(B64U, 22), s(B64U, 43)))
# Mailgun
v("Mailgun private API key (key- + 32 hex)", "config/mailgun.php", "'mailgun' => [\n    'domain' => 'mg.corp-mail.test',\n    'secret' => 'key-%s',\n]," % s(HEXL, 32))
v("Mailgun private API key (32 hex-8 hex-8 hex)", ".env", "MAILGUN_DOMAIN=mg.corp-mail.test\nMAILGUN_API_KEY=%s-%s-%s" % (s(HEXL, 32), s(HEXL, 8), s(HEXL, 8)))
# Mailchimp
v("Mailchimp API key (32 hex + -usNN datacenter)", "newsletter/config.py", "MAILCHIMP_API_KEY = '%s-us%d'" % (s(HEXL, 32), S.randint(2, 21)))
v("Mailchimp API key (32 hex + -usNN datacenter)", ".env", "MAILCHIMP_KEY=%s-us%d\nMAILCHIMP_LIST_ID=%s" % (s(HEXL, 32), S.randint(2, 21), s(HEXL, 10)))
# Shopify
v("Shopify Admin API access token (shpat_ + 32 hex)", "shopify.app.toml", "[access]\nadmin_token = \"shpat_%s\"" % s(HEXL, 32))
v("Shopify app shared secret (shpss_ + 32 hex)", ".env", "SHOPIFY_API_KEY=%s\nSHOPIFY_API_SECRET=shpss_%s" % (s(HEXL, 32), s(HEXL, 32)))
# Atlassian
v("Atlassian API token (ATATT3 + 186, CRC suffix)", "scripts/jira-sync.sh", "curl -u ops@corp-mail.test:ATATT3xFfGF0%s=%s https://acme.atlassian.net/rest/api/3/myself" % (s(B64U, 171), s(HEXU, 8)))
v("Atlassian API token (ATATT3 + 186, CRC suffix)", "config/confluence.yml", "confluence:\n  url: https://acme.atlassian.net/wiki\n  user: docs-bot@corp-mail.test\n  token: ATATT3xFfGF0%s=%s" % (s(B64U, 171), s(HEXU, 8)))
# Databricks
v("Databricks PAT (dapi + 32 hex)", ".databrickscfg", "[DEFAULT]\nhost  = https://adb-%s.%d.azuredatabricks.net\ntoken = dapi%s" % (s(DG, 16), S.randint(1, 19), s(HEXL, 32)))
v("Databricks PAT (dapi + 32 hex, -N suffix)", "jobs/run.py", "w = WorkspaceClient(host=HOST, token=\"dapi%s-3\")" % s(HEXL, 32))
# HashiCorp Vault / Terraform Cloud
v("HashiCorp Vault service token (hvs.CAESI...)", "scripts/vault-login.sh", "export VAULT_ADDR=https://vault.corp.internal:8200\nexport VAULT_TOKEN=hvs.CAESI%s" % s(B64U, 88))
v("HashiCorp Vault service token (hvs.CAESI...)", "config/vault.hcl", "vault {\n  address = \"https://vault.corp.internal:8200\"\n  token   = \"hvs.CAESI%s\"\n}" % s(B64U, 88))
v("Terraform Cloud user token (14.atlasv1.67)", ".terraformrc", "credentials \"app.terraform.io\" {\n  token = \"%s.atlasv1.%s\"\n}" % (s(AN, 14), s(AN + "-_", 67)))
v("Terraform Cloud user token (14.atlasv1.67)", "credentials.tfrc.json", '{"credentials": {"app.terraform.io": {"token": "%s.atlasv1.%s"}}}' % (s(AN, 14), s(AN + "-_", 67)))
# Doppler
v("Doppler personal token (dp.pt. + 43)", "scripts/secrets.sh", "doppler configure set token dp.pt.%s --scope /" % s(AN, 43))
v("Doppler service token (dp.st.<config>. + 40)", ".env", "DOPPLER_TOKEN=dp.st.prd.%s" % s(AN, 40))
# Linear
v("Linear API key (lin_api_ + 40)", "tools/triage.ts", "const linear = new LinearClient({ apiKey: 'lin_api_%s' });" % s(AN, 40))
v("Linear OAuth access token (lin_oauth_ + 64 hex)", ".env", "LINEAR_ACCESS_TOKEN=lin_oauth_%s" % s(HEXL, 64))
# Discord / Telegram
v("Discord bot token (base64 user id . 6 . 38)", "bot/config.json", '{"prefix": "!", "token": "%s"}' % discord_bot())
v("Discord bot token (base64 user id . 6 . 38)", "bot/main.py", "client.run('%s')" % discord_bot())
v("Telegram bot token (id:AA + 33)", "bot/settings.py", "TELEGRAM_BOT_TOKEN = '%s:AA%s'" % (s("1234567", 1) + s(DG, 9), s(B64U, 33)))
v("Telegram bot token (id:AA + 33) in an API URL", "scripts/notify.sh", "curl -s \"https://api.telegram.org/bot%s:AA%s/sendMessage\" -d chat_id=-100%s -d text=\"deploy done\"" % (s("123456789", 1) + s(DG, 8), s(B64U, 33), s(DG, 10)))
# Heroku
v("Heroku API key v2 (HRKU-AA + 58)", ".env", "HEROKU_API_KEY=HRKU-AA%s" % s(AN + "-_", 58))
v("Heroku legacy API key (UUID) in .netrc", ".netrc", "machine api.heroku.com\n  login ops@corp-mail.test\n  password %s" % suuid())
# DigitalOcean
v("DigitalOcean PAT (dop_v1_ + 64 hex)", ".config/doctl/config.yaml", "access-token: dop_v1_%s\ncontext: default" % s(HEXL, 64))
v("DigitalOcean OAuth token (doo_v1_ + 64 hex)", "infra/provider.tf", "provider \"digitalocean\" {\n  token = \"doo_v1_%s\"\n}" % s(HEXL, 64))
# npm / PyPI
v("npm access token (npm_ + 36) in .npmrc", ".npmrc", "@acme:registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=npm_%s" % s(AN, 36))
v("npm access token (npm_ + 36)", ".github/workflows/publish.yml", "      - run: npm publish --access public\n        env:\n          NODE_AUTH_TOKEN: npm_%s" % s(AN, 36))
v("PyPI API token (pypi-AgEIcHlwaS5vcmc...) in .pypirc", ".pypirc", "[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc%s" % s(B64U, 160))
v("PyPI API token (pypi-AgEIcHlwaS5vcmc...)", "scripts/release.sh", "TWINE_USERNAME=__token__ TWINE_PASSWORD=pypi-AgEIcHlwaS5vcmc%s twine upload dist/*" % s(B64U, 150))
# GitLab
v("GitLab PAT (glpat- + 20)", "scripts/mr.sh", "curl --header \"PRIVATE-TOKEN: glpat-%s\" https://gitlab.corp.internal/api/v4/merge_requests" % s(AN + "-_", 20))
v("GitLab routable PAT (glpat- + body . 2 + 7)", ".env", "GITLAB_TOKEN=glpat-%s.01.%s" % (s(AN + "-_", 36), s(LO + DG, 9)))
v("GitLab OAuth application secret (gloas- + 64)", "config/omniauth.yml", "gitlab:\n  app_id: %s\n  app_secret: gloas-%s" % (s(HEXL, 64), s(HEXL, 64)))
v("GitLab runner registration token (GR1348941 + 20)", "config.toml", "[[runners]]\n  name = \"docker-01\"\n  url = \"https://gitlab.corp.internal\"\n  token = \"GR1348941%s\"" % s(AN + "-_", 20))
# Grafana / New Relic / Sentry / Datadog / Dynatrace / PagerDuty
v("Grafana service account token (glsa_ + 32 + _ + 8 hex)", "provisioning/alerts.env", "GRAFANA_URL=https://grafana.corp.internal\nGRAFANA_TOKEN=glsa_%s_%s" % (s(AN, 32), s(HEXL, 8)))
v("Grafana Cloud access policy token (glc_ + base64 JSON)", "agent/config.river", "prometheus.remote_write \"cloud\" {\n  endpoint {\n    url = \"https://prometheus-prod-24-prod-eu-west-2.grafana.net/api/prom/push\"\n    basic_auth {\n      username = \"%s\"\n      password = \"%s\"\n    }\n  }\n}" % (s(DG, 7), grafana_cloud_token()))
v("New Relic user API key (NRAK- + 27)", "newrelic/terraform.tfvars", "newrelic_account_id = \"%s\"\nnewrelic_api_key    = \"NRAK-%s\"" % (s(DG, 7), s(UP + DG, 27)))
v("New Relic ingest license key (36 hex + NRAL)", "newrelic.yml", "common: &default_settings\n  license_key: '%sNRAL'\n  app_name: Orders API" % s(HEXL, 36))
v("Sentry organization auth token (sntrys_ + base64 JSON + _ + 43)", ".sentryclirc", "[auth]\ntoken=%s" % sentry_org_token())
v("Sentry user auth token (sntryu_ + 64 hex)", "scripts/upload-sourcemaps.sh", "SENTRY_AUTH_TOKEN=sntryu_%s sentry-cli sourcemaps upload ./dist" % s(HEXL, 64))
v("Datadog API key (32 hex) and application key (40 hex)", "datadog.yaml", "api_key: %s\napp_key: %s\nsite: datadoghq.eu" % (s(HEXL, 32), s(HEXL, 40)))
v("Datadog API key (32 hex) in an agent run command", "scripts/install-agent.sh", "DD_API_KEY=%s DD_SITE=\"datadoghq.com\" bash -c \"$(curl -L https://install.datadoghq.com/scripts/install_script_agent7.sh)\"" % s(HEXL, 32))
v("Dynatrace API token (dt0c01.24.64)", ".env", "DT_API_TOKEN=dt0c01.%s.%s" % (s(UP + DG, 24), s(UP + DG, 64)))
v("PagerDuty REST API user token (u+ + 18) in context", "ops/pd.py", "session = APISession('u+%s')" % s(AN + "-_", 18))
v("PagerDuty Events v2 routing key (32 hex) in context", "alertmanager.yml", "receivers:\n  - name: pagerduty\n    pagerduty_configs:\n      - routing_key: %s" % s(HEXL, 32))
# Square / Braintree / PayPal / other payments
v("Square production access token (EAAA + 60)", "config/square.yml", "square:\n  environment: production\n  access_token: EAAA%s" % s(AN + "-_", 60))
v("Square OAuth application secret (sq0csp- + 43)", ".env", "SQUARE_APP_ID=sq0idp-%s\nSQUARE_APP_SECRET=sq0csp-%s" % (s(B64U, 22), s(B64U, 43)))
v("Braintree access token (access_token$production$...)", "config/payments.rb", "Braintree::Gateway.new(access_token: 'access_token$production$%s$%s')" % (s(LO + DG, 16), s(HEXL, 32)))
v("PayPal REST client secret (80 base64url) in context", ".env", "PAYPAL_CLIENT_ID=A%s\nPAYPAL_CLIENT_SECRET=E%s" % (s(B64U, 79), s(B64U, 79)))
v("Flutterwave live secret key (FLWSECK- + 32 hex + -X)", ".env", "FLW_SECRET_KEY=FLWSECK-%s-X" % s(HEXL, 32))
v("GoCardless live access token (live_ + 40)", "config/gocardless.yml", "gocardless:\n  environment: live\n  access_token: live_%s" % s(AN + "-_", 40))
v("Lob live API key (live_ + 35 hex)", "services/mail.js", "const lob = require('lob')('live_%s');" % s(HEXL, 35))
v("Plaid secret (30) beside client_id (24)", ".env", "PLAID_CLIENT_ID=%s\nPLAID_SECRET=%s\nPLAID_ENV=production" % (s(HEXL, 24), s(HEXL, 30)))
v("Duffel live token (duffel_live_ + 43)", ".env", "DUFFEL_ACCESS_TOKEN=duffel_live_%s" % s(AN + "-_", 43))
# Identity / SaaS
v("Okta API token (00 + 40) in an SSWS header", "scripts/okta-users.sh", "curl -H \"Authorization: SSWS 00%s\" https://acme.okta.com/api/v1/users?limit=200" % s(AN + "-_", 40))
v("Okta API token (00 + 40) in context", "okta.yaml", "okta:\n  client:\n    orgUrl: https://acme.okta.com\n    token: 00%s" % s(AN + "-_", 40))
v("Postman API key (PMAK- + 24 hex - 34 hex)", ".github/workflows/api-tests.yml", "      - run: postman login --with-api-key PMAK-%s-%s" % (s(HEXL, 24), s(HEXL, 34)))
v("Postman API key (PMAK- + 24 hex - 34 hex)", "postman/env.json", '{"key": "postmanApiKey", "value": "PMAK-%s-%s", "type": "secret"}' % (s(HEXL, 24), s(HEXL, 34)))
v("Pulumi access token (pul- + 40 hex)", ".env", "PULUMI_ACCESS_TOKEN=pul-%s" % s(HEXL, 40))
v("Pulumi access token (pul- + 40 hex)", "Pulumi.ci.yaml", "# set by bootstrap\nenvironment:\n  PULUMI_ACCESS_TOKEN: pul-%s" % s(HEXL, 40))
v("Fly.io deploy token (fo1_ + 43)", ".github/workflows/fly.yml", "      - run: flyctl deploy --remote-only\n        env:\n          FLY_API_TOKEN: fo1_%s" % s(AN + "_-", 43))
v("Fly.io macaroon token (FlyV1 fm2_ + base64)", "scripts/fly.sh", "export FLY_API_TOKEN=\"FlyV1 fm2_%s\"" % (s(AN + "+/", 148) + "=="))
v("Vercel access token (vcp_ prefix)", ".env", "VERCEL_TOKEN=vcp_%s\nVERCEL_ORG_ID=team_%s" % (s(AN, 24), s(AN, 24)))
v("Vercel legacy access token (24 base62) in context", "scripts/deploy-preview.sh", "vercel deploy --prebuilt --token=%s" % s(AN, 24))
v("Supabase access token (sbp_ + 40 hex)", "scripts/db-push.sh", "SUPABASE_ACCESS_TOKEN=sbp_%s supabase db push --linked" % s(HEXL, 40))
v("Supabase secret API key (sb_secret_ + 22 + _ + 8)", ".env.local", "SUPABASE_URL=https://%s.supabase.co\nSUPABASE_SECRET_KEY=sb_secret_%s_%s" % (s(LO, 20), s(B64U, 22), s(AN, 8)))
v("Supabase service_role JWT", "supabase/functions/.env", "SUPABASE_SERVICE_ROLE_KEY=%s" % supa_jwt("service_role"))
# AI vendors
v("OpenAI admin key (sk-admin- + 58 + T3BlbkFJ + 58)", "scripts/usage-report.py", "client = OpenAI(api_key=\"sk-admin-%sT3BlbkFJ%s\")" % (s(AN + "-_", 58), s(AN + "-_", 58)))
v("Anthropic API key (sk-ant-api03- + 93 + AA)", "notebooks/eval.py", "client = anthropic.Anthropic(api_key=\"sk-ant-api03-%sAA\")" % s(AN + "-_", 93))
v("Hugging Face user access token (hf_ + 34 letters)", "train.py", "login(token=\"hf_%s\")" % s(UP + LO, 34))
v("Hugging Face organisation token (api_org_ + 34 letters)", ".env", "HF_ORG_TOKEN=api_org_%s" % s(UP + LO, 34))
v("Perplexity API key (pplx- + 48)", ".env", "PERPLEXITY_API_KEY=pplx-%s" % s(AN, 48))
v("Cohere API key (40 base62) in context", "app/rerank.py", "co = cohere.Client(\"%s\")  # CO_API_KEY" % s(AN, 40))
v("xAI API key (xai- + 80)", ".env", "XAI_API_KEY=xai-%s" % s(AN, 80))
v("Mistral API key (32 base62) in context", ".env", "MISTRAL_API_KEY=%s" % s(AN, 32))
# Cloud platforms
v("Cloudflare API token (40 [A-Za-z0-9_-]) in context", "wrangler.sh", "export CLOUDFLARE_API_TOKEN=%s\nnpx wrangler deploy" % s(AN + "_-", 40))
v("Cloudflare Global API key (37 hex) with X-Auth-Key", "scripts/dns.sh", "curl -H \"X-Auth-Email: ops@corp-mail.test\" -H \"X-Auth-Key: %s\" https://api.cloudflare.com/client/v4/zones" % s(HEXL, 37))
v("Azure DevOps PAT (52 base32 lowercase) in context", "azure-pipelines/setup.sh", "echo %s | az devops login --organization https://dev.azure.com/acme" % s(B32L, 52))
v("Azure Cosmos DB connection string (AccountKey 88 base64)", "local.settings.json", '{\n  "Values": {\n    "CosmosDb": "AccountEndpoint=https://acme-orders.documents.azure.com:443/;AccountKey=%s;"\n  }\n}' % sb64(64))
v("Azure Service Bus connection string (SharedAccessKey 44 base64)", "appsettings.json", '"ServiceBus": "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=%s"' % sb64(32))
v("Azure OpenAI api-key (32 hex) in context", ".env", "AZURE_OPENAI_ENDPOINT=https://acme-oai.openai.azure.com/\nAZURE_OPENAI_API_KEY=%s" % s(HEXL, 32))
v("Alibaba Cloud AccessKey secret (30) beside LTAI id", "config/oss.yml", "oss:\n  endpoint: oss-cn-hangzhou.aliyuncs.com\n  access_key_id: LTAI%s\n  access_key_secret: %s" % (s(AN, 20), s(AN, 30)))
v("Yandex Cloud API key (AQVN + 36)", ".env", "YC_API_KEY=AQVN%s" % s(AN + "_-", 36))
v("Firebase Cloud Messaging legacy server key (AAAA...:APA91b...)", "functions/push.js", "const FCM_SERVER_KEY = 'AAAA%s:APA91b%s';" % (s(B64U, 7), s(B64U, 134)))
v("OpenShift user token (sha256~ + 43)", "scripts/oc-login.sh", "oc login --token=sha256~%s --server=https://api.ocp.corp.internal:6443" % s(B64U, 43))
v("ClickHouse Cloud API secret (4b1d + 38)", ".env", "CLICKHOUSE_KEY_ID=%s\nCLICKHOUSE_KEY_SECRET=4b1d%s" % (s(AN, 20), s(AN, 38)))
v("Scalingo API token (tk-us- + 48)", ".env", "SCALINGO_API_TOKEN=tk-us-%s" % s(AN + "-_", 48))
# Storage / productivity SaaS
v("Dropbox short-lived access token (sl. + 135)", "sync/config.json", '{"dropbox_token": "sl.%s"}' % s(AN + "-_", 135))
v("Dropbox app secret (15 lowercase alnum) beside the app key", ".env", "DROPBOX_APP_KEY=%s\nDROPBOX_APP_SECRET=%s" % (s(LO + DG, 15), s(LO + DG, 15)))
v("Zendesk API token (40 base62) as email/token", "scripts/tickets.sh", "curl https://acme.zendesk.com/api/v2/tickets.json -u agent@corp-mail.test/token:%s" % s(AN, 40))
v("Zendesk API token (40 base62) in context", "config/zendesk.yml", "zendesk:\n  subdomain: acme\n  email: agent@corp-mail.test\n  api_token: %s" % s(AN, 40))
v("Asana PAT (2/<user gid>/<app gid>:32 hex)", ".env", "ASANA_PAT=2/%s/%s:%s" % (s(DG, 16), s(DG, 16), s(HEXL, 32)))
v("Asana legacy PAT (1/<gid>:32 hex)", "scripts/asana.py", "client = asana.Client.access_token('1/%s:%s')" % (s(DG, 16), s(HEXL, 32)))
v("Airtable PAT (pat + 14 . 64 hex)", ".env", "AIRTABLE_TOKEN=pat%s.%s" % (s(AN, 14), s(HEXL, 64)))
v("Airtable PAT (pat + 14 . 64 hex)", "scripts/import.js", "const base = new Airtable({ apiKey: 'pat%s.%s' }).base('app%s');" % (s(AN, 14), s(HEXL, 64), s(AN, 14)))
v("Algolia admin API key (32 hex) in context", "scripts/reindex.js", "const client = algoliasearch('%s', '%s'); // admin key, used to push records" % (s(UP + DG, 10), s(HEXL, 32)))
v("Algolia admin API key (32 hex) in context", ".env", "ALGOLIA_APP_ID=%s\nALGOLIA_ADMIN_API_KEY=%s" % (s(UP + DG, 10), s(HEXL, 32)))
v("Contentful management token (CFPAT- + 43)", ".contentfulrc.json", '{"managementToken": "CFPAT-%s", "activeSpaceId": "%s"}' % (s(B64U, 43), s(LO + DG, 12)))
v("Contentful management token (CFPAT- + 43)", "migrations/run.sh", "contentful space migration --space-id %s --management-token CFPAT-%s 01-add-author.js" % (s(LO + DG, 12), s(B64U, 43)))
v("Netlify personal access token (nfp_ + 36)", ".env", "NETLIFY_AUTH_TOKEN=nfp_%s" % s(AN, 36))
v("Netlify legacy access token (43 base64url) in context", "netlify-deploy.sh", "netlify deploy --prod --auth %s --site %s" % (s(B64U, 43), suuid()))
v("Render API key (rnd_ + 28)", "scripts/render-deploy.py", "HEADERS = {\"Authorization\": \"Bearer rnd_%s\"}" % s(AN, 28))
v("Render API key (rnd_ + 28)", ".env", "RENDER_API_KEY=rnd_%s" % s(AN, 28))
v("Railway project token (UUID) in context", ".github/workflows/railway.yml", "      - run: railway up --service api\n        env:\n          RAILWAY_TOKEN: %s" % suuid())
v("Snyk API token (UUID) in context", "scripts/snyk.sh", "snyk auth %s\nsnyk test --all-projects" % suuid())
v("Codecov upload token (UUID) in context", "codecov.yml", "codecov:\n  token: %s" % suuid())
v("SonarQube user token (squ_ + 40 hex)", "sonar-project.properties", "sonar.projectKey=orders\nsonar.host.url=https://sonar.corp.internal\nsonar.token=squ_%s" % s(HEXL, 40))
v("SonarQube project analysis token (sqp_ + 40 hex)", "Jenkinsfile", "sh 'sonar-scanner -Dsonar.login=sqp_%s'" % s(HEXL, 40))
v("JFrog Artifactory API key (AKCp + 69)", "gradle.properties", "artifactory_user=ci\nartifactory_password=AKCp%s" % s(AN, 69))
v("JFrog reference token (cmVmdGtuOjAxOj + 50)", ".jfrog/jfrog-cli.conf.v6", '{"servers": [{"url": "https://acme.jfrog.io/", "accessToken": "cmVmdGtuOjAxOj%s", "serverId": "acme"}]}' % s(AN, 50))
v("Docker Hub PAT (dckr_pat_ + 27)", "scripts/push.sh", "echo dckr_pat_%s | docker login -u acmebuild --password-stdin" % s(AN + "-_", 27))
v("Docker Hub PAT (dckr_pat_ + 27)", ".github/workflows/docker.yml", "      - uses: docker/login-action@v3\n        with:\n          username: acmebuild\n          password: dckr_pat_%s" % s(AN + "-_", 27))
v("CircleCI personal API token (CCIPAT_ + 22 + _ + 40 hex)", ".circleci/cli.yml", "host: https://circleci.com\ntoken: CCIPAT_%s_%s" % (s(AN, 22), s(HEXL, 40)))
v("CircleCI personal API token (CCIPAT_ + 22 + _ + 40 hex)", "scripts/trigger.sh", "curl -X POST -H \"Circle-Token: CCIPAT_%s_%s\" https://circleci.com/api/v2/project/gh/acme/app/pipeline" % (s(AN, 22), s(HEXL, 40)))
v("Travis CI API token (22) in context", ".travis/deploy.sh", "travis login --pro --api-token %s" % s(AN, 22))
v("Buildkite API access token (bkua_ + 40 hex)", "scripts/bk.sh", "curl -H \"Authorization: Bearer bkua_%s\" https://api.buildkite.com/v2/organizations/acme/pipelines" % s(HEXL, 40))
v("Buildkite API access token (bkua_ + 40 hex)", ".env", "BUILDKITE_API_TOKEN=bkua_%s" % s(HEXL, 40))
v("Octopus Deploy API key (API- + 26 uppercase)", "deploy/octo.ps1", "octo create-release --project Shop --server https://octopus.corp.internal --apiKey API-%s" % s(UP + DG, 26))
v("Harness PAT (pat.<account>.<id>.<secret>)", ".env", "HARNESS_PLATFORM_API_KEY=pat.%s.%s.%s" % (s(B64U, 22), s(AN, 24), s(AN, 20)))
v("Prefect Cloud API key (pnu_ + 36)", "prefect.toml", "[cloud]\napi_key = \"pnu_%s\"" % s(AN, 36))
v("Infracost API key (ico- + 32)", ".github/workflows/infracost.yml", "      - run: infracost configure set api_key ico-%s" % s(AN, 32))
v("Clojars deploy token (CLOJARS_ + 60)", ".lein/profiles.clj", "{:auth {:repository-auth {#\"clojars\" {:username \"acme\" :password \"CLOJARS_%s\"}}}}" % s(LO + DG, 60))
# Maps / social / media
v("Mapbox secret token (sk. + base64 JSON . 22)", "scripts/upload-tiles.sh", "MAPBOX_ACCESS_TOKEN=%s tilesets upload-source acme roads roads.geojson" % mapbox_token("sk"))
v("Mapbox secret token (sk. + base64 JSON . 22)", "android/gradle.properties", "MAPBOX_DOWNLOADS_TOKEN=%s" % mapbox_token("sk"))
v("Twitch client secret (30 lowercase alnum) in context", ".env", "TWITCH_CLIENT_ID=%s\nTWITCH_CLIENT_SECRET=%s" % (s(LO + DG, 30), s(LO + DG, 30)))
v("Twitch chat OAuth token (oauth: + 30)", "bot/config.ini", "[twitch]\nnick = acme_bot\npass = oauth:%s" % s(LO + DG, 30))
v("Meta/Facebook page access token (EAA + long base62)", "social/post.py", "PAGE_ACCESS_TOKEN = \"EAAM%s\"" % s(AN, 180))
v("Meta/Facebook app secret (32 hex) in context", "config/facebook.yml", "facebook:\n  app_id: '%s'\n  app_secret: %s" % (s(DG, 16), s(HEXL, 32)))
v("Meta/Facebook app access token (app id | secret)", "scripts/debug-token.sh", "curl \"https://graph.facebook.com/debug_token?input_token=$T&access_token=%s|%s\"" % (s(DG, 16), s(B64U, 27)))
v("Twitter/X bearer token (AAAA... + url-encoded)", ".env", "TWITTER_BEARER_TOKEN=%s%s%%2B%s%%3D%s" % ("A" * 22, s(AN, 20), s(AN, 20), s(AN, 50)))
v("Twitter/X API key secret (50 base62) in context", "config/twitter.json", '{"consumer_key": "%s", "consumer_secret": "%s"}' % (s(AN, 25), s(AN, 50)))
v("LinkedIn client secret (WPL_AP1.16.8)", "config/oauth.js", "linkedin: {\n  clientID: '%s',\n  clientSecret: 'WPL_AP1.%s.%s==',\n}," % (s(LO + DG, 14), s(AN, 16), s(AN + "+/", 6)))
v("LinkedIn client secret (WPL_AP1.16.8)", ".env", "LINKEDIN_CLIENT_SECRET=WPL_AP1.%s.%s==" % (s(AN, 16), s(AN + "+/", 6)))
v("Adobe client secret (p8e- + 32)", ".env", "ADOBE_CLIENT_ID=%s\nADOBE_CLIENT_SECRET=p8e-%s" % (s(HEXL, 32), s(AN, 32)))
v("Adobe client secret (p8e- + 32)", "config/pdf-services.json", '{"client_credentials": {"client_id": "%s", "client_secret": "p8e-%s"}}' % (s(HEXL, 32), s(AN, 32)))
v("Frame.io developer token (fio-u- + 64)", ".env", "FRAMEIO_TOKEN=fio-u-%s" % s(AN + "-_", 64))
v("Typeform personal token (tfp_ + 59)", "scripts/responses.py", "HEADERS = {'Authorization': 'Bearer tfp_%s'}" % s(AN + "_", 59))
v("Figma personal access token (figd_ prefix)", ".env", "FIGMA_TOKEN=figd_%s" % s(AN + "-_", 40))
v("ReadMe API key (rdme_ + 70)", ".github/workflows/docs.yml", "      - run: rdme openapi openapi.yaml --key=rdme_%s" % s(LO + DG, 70))
v("Brevo (Sendinblue) API key (xkeysib- + 64 hex - 16)", "config/brevo.php", "'api_key' => 'xkeysib-%s-%s'," % (s(HEXL, 64), s(AN, 16)))
v("Postmark server token (UUID) in the X-Postmark-Server-Token header", "scripts/send.sh", "curl https://api.postmarkapp.com/email -H \"X-Postmark-Server-Token: %s\" -d @mail.json" % suuid())
v("Resend API key (re_ + 8 + _ + 24)", ".env", "RESEND_API_KEY=re_%s_%s" % (s(AN, 8), s(AN, 24)))
v("PostHog personal API key (phx_ prefix)", "scripts/export-events.py", "POSTHOG_PERSONAL_API_KEY = \"phx_%s\"" % s(AN, 43))
v("LaunchDarkly server-side SDK key (sdk- + UUID)", "config/flags.yml", "launchdarkly:\n  sdk_key: sdk-%s" % suuid())
v("RapidAPI key (hex msh hex p hex jsn hex)", "src/weather.js", "headers: { 'X-RapidAPI-Key': '%smsh%sp%sjsn%s' }," % (s(HEXL, 10), s(HEXL, 15), s(HEXL, 6), s(HEXL, 12)))
v("MaxMind license key (6 _ 29 _mmk)", "GeoIP.conf", "AccountID %s\nLicenseKey %s_%s_mmk\nEditionIDs GeoLite2-City" % (s(DG, 6), s(AN, 6), s(AN, 29)))
v("Sumo Logic access id (su + 12) and key (64)", ".env", "SUMO_ACCESS_ID=su%s\nSUMO_ACCESS_KEY=%s" % (s(AN, 12), s(AN, 64)))
v("Cloudinary URL with API key and secret", ".env", "CLOUDINARY_URL=cloudinary://%s:%s@acme-media" % (s(DG, 15), s(B64U, 27)))
v("Sidekiq Enterprise credentials (8 hex:8 hex)", ".bundle/config", "---\nBUNDLE_ENTERPRISE__CONTRIBSYS__COM: \"%s:%s\"" % (s(HEXL, 8), s(HEXL, 8)))
v("Microsoft Teams incoming webhook URL", "config/alerts.yml", "teams_webhook: https://acme.webhook.office.com/webhookb2/%s@%s/IncomingWebhook/%s/%s" % (suuid(), suuid(), s(HEXL, 32), suuid()))
v("age secret key (AGE-SECRET-KEY-1 + 58 bech32)", "keys/age.txt", "# created: 2026-02-11T09:12:44Z\n# public key: age1%s\nAGE-SECRET-KEY-1%s" % (s(BECH.lower(), 58), s(BECH, 58)))
v("age secret key (AGE-SECRET-KEY-1 + 58 bech32) for sops", ".env", "SOPS_AGE_KEY=AGE-SECRET-KEY-1%s" % s(BECH, 58))
v("1Password service account token (ops_eyJ + base64 JSON)", ".env", "OP_SERVICE_ACCOUNT_TOKEN=%s" % onepassword_sa_token())
v("1Password account Secret Key (A3-...)", "notes/onboarding.txt", "Emergency kit for ops@corp-mail.test\nSecret Key: A3-%s-%s-%s-%s-%s-%s" % (s(UP + DG, 6), s(UP + DG, 6), s(UP + DG, 5), s(UP + DG, 5), s(UP + DG, 5), s(UP + DG, 5)))
v("Tailscale auth key (tskey-auth-<id>CNTRL-<secret>)", "cloud-init.yaml", "runcmd:\n  - tailscale up --authkey=tskey-auth-k%sCNTRL-%s --ssh" % (s(AN, 9), s(AN, 33)))
v("Tailscale API access token (tskey-api-<id>CNTRL-<secret>)", ".env", "TAILSCALE_API_KEY=tskey-api-k%sCNTRL-%s" % (s(AN, 9), s(AN, 33)))

# ---------------- private-key-file (secret) ----------------
def pk(path, src, text):
    add("secret", "private-key-file", path, src, text)


def indent(block, n):
    return "\n".join(" " * n + line for line in block.split("\n"))


def json_pem(label, lead, chars):
    # a PEM block as it sits inside a JSON string: literal backslash-n escapes
    return pem(label, lead, chars).replace("\n", "\\n") + "\\n"


pk("keys/id_ed25519", "OpenSSH ed25519 private key file", openssh_key("ed25519"))
pk("deploy/id_rsa", "OpenSSH RSA private key file", openssh_key("rsa"))
pk("deploy/id_ed25519_ci", "OpenSSH private key, passphrase-protected (aes256-ctr, still a private key)", openssh_key("aes"))
pk("config/tls.yml", "EC private key in a YAML block scalar (key.pem inlined)",
   "tls:\n  cert_file: /etc/app/tls.crt\n  key: |\n" + indent(pem("EC PRIVATE KEY", EC1, 164), 4))
pk("credentials/ci-deployer.json", "service-account JSON key file with private_key",
   '{\n  "type": "service_account",\n  "project_id": "acme-prod-%s",\n  "private_key_id": "%s",\n  "private_key": "%s",\n  "client_email": "ci-deployer@acme-prod-%s.iam.gserviceaccount.com",\n  "client_id": "%s",\n  "token_uri": "https://oauth2.googleapis.com/token"\n}'
   % (s(DG, 4), s(HEXL, 40), json_pem("PRIVATE KEY", PK8, 1620), s(DG, 4), s(DG, 21)))
pk("keys/deploy.ppk", "PuTTY private key file v2 (RSA)",
   "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key-20250114\nPublic-Lines: 6\n" + "\n".join(s(B64, 64) for _ in range(5)) + "\n" + s(B64, 12)
   + "\nPrivate-Lines: 14\n" + "\n".join(s(B64, 64) for _ in range(13)) + "\n" + s(B64, 44) + "\nPrivate-MAC: " + s(HEXL, 40))
pk("keys/backup.ppk", "PuTTY private key file v3 (ed25519)",
   "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: backup@nas\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI" + s(B64, 39) + "\n" + s(B64, 4)
   + "\nPrivate-Lines: 1\nAAAAI" + s(B64, 39) + "\nPrivate-MAC: " + s(HEXL, 64))
pk("certs/client.key", "PKCS#8 ENCRYPTED PRIVATE KEY block (encrypted, still a private key)", pem("ENCRYPTED PRIVATE KEY", ENC8, 1750))
pk("certs/legacy.key", "PKCS#1 RSA key with Proc-Type: 4,ENCRYPTED headers",
   "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,%s\n\n%s\n-----END RSA PRIVATE KEY-----"
   % (s(HEXU, 32), "\n".join(s(B64, 64) for _ in range(25)) + "\n" + s(B64, 24)))
pk("keys/release-signing.asc", "PGP private key block (armored)",
   "-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: release signing key\n\nlQVYBG" + s(B64, 58) + "\n" + "\n".join(s(B64, 64) for _ in range(14)) + "\n=" + s(B64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----")
pk("terraform.tfstate", "tls_private_key in Terraform state (private_key_pem)",
   '{\n  "type": "tls_private_key",\n  "name": "bastion",\n  "instances": [{\n    "attributes": {\n      "algorithm": "RSA",\n      "private_key_pem": "%s",\n      "rsa_bits": 2048\n    }\n  }]\n}' % json_pem("RSA PRIVATE KEY", RSA1, 1676))
pk(".env", "GitHub App private key in a .env value (escaped newlines)",
   'GITHUB_APP_ID=%s\nGITHUB_APP_PRIVATE_KEY="%s"' % (s(DG, 6), pem("RSA PRIVATE KEY", RSA1, 1676).replace("\n", "\\n")))
pk("certs/server.pem", "combined PEM: certificate followed by its private key",
   pem("CERTIFICATE", "MIIDazCCAlOgAwIBAgIU", 1180) + "\n" + pem("PRIVATE KEY", PK8, 1620))
pk("group_vars/all/deploy.yml", "OpenSSH private key in Ansible vars (block scalar)",
   "deploy_user: deploy\ndeploy_ssh_key: |\n" + indent(openssh_key("ed25519"), 2))
_apns = EC8 + s(B64, 184 - len(EC8))
pk("src/main/java/com/acme/push/ApnsKeys.java", "PKCS#8 EC key embedded as a Java string constant",
   'static final String APNS_KEY =\n    "-----BEGIN PRIVATE KEY-----\\n" +\n'
   + "".join('    "%s\\n" +\n' % _apns[i:i + 64] for i in range(0, len(_apns), 64)) + '    "-----END PRIVATE KEY-----";')
pk("keys/AuthKey_%s.p8" % s(UP + DG, 10), "Apple .p8 auth key (PKCS#8 P-256)", pem("PRIVATE KEY", EC8, 184))
pk("keys/id_dsa", "DSA private key file", pem("DSA PRIVATE KEY", "MIIBuwIBAAKBgQ", 888))
pk("packer/build.pkr.hcl", "RSA private key in an HCL heredoc",
   "source \"amazon-ebs\" \"base\" {\n  ssh_username         = \"ubuntu\"\n  ssh_private_key_file = \"\"\n  user_data = <<-EOT\n" + indent(pem("RSA PRIVATE KEY", RSA1, 1676), 4) + "\n  EOT\n}")
pk("vpn/client.ovpn", "OpenVPN profile with an inline <key> block",
   "client\ndev tun\nremote vpn.corp.internal 1194\n<key>\n" + pem("PRIVATE KEY", PK8, 1620) + "\n</key>")
pk("cloud-init/user-data.yaml", "SSH host private key in cloud-init ssh_keys",
   "#cloud-config\nssh_keys:\n  ed25519_private: |\n" + indent(openssh_key("ed25519"), 4) + "\n  ed25519_public: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + s(B64, 43) + " root@bastion")
pk(".gitlab-ci.yml", "SSH private key pasted into a CI variable block",
   "variables:\n  SSH_PRIVATE_KEY: |\n" + indent(openssh_key("ed25519"), 4) + "\ndeploy:\n  script:\n    - ./deploy.sh")

# ---------------- near-miss (harmless) ----------------
def nm(path, src, text):
    add("harmless", "near-miss", path, src, text)


def firebase_config():
    pid = "acme-web-" + s(LO + DG, 5)
    return ("const firebaseConfig = {\n  apiKey: \"AIza%s\",\n  authDomain: \"%s.firebaseapp.com\",\n  projectId: \"%s\",\n"
            "  storageBucket: \"%s.appspot.com\",\n  messagingSenderId: \"%s\",\n  appId: \"1:%s:web:%s\"\n};") % (
        "Sy" + s(AN + "-_", 33), pid, pid, pid, s(DG, 12), s(DG, 12), s(HEXL, 22))


# public by the vendor's documentation
nm("src/checkout.js", "vendor:Stripe publishable key (pk_live_), documented as safe to publish", "const stripe = Stripe('pk_live_51%s');" % s(AN, 97))
nm(".env.production", "vendor:Stripe publishable key (pk_live_) in a NEXT_PUBLIC_ variable", "NEXT_PUBLIC_STRIPE_PUBLISHABLE_KEY=pk_live_51%s" % s(AN, 97))
nm("src/search.js", "vendor:Algolia search-only API key, documented as public", "// search-only key: safe in the browser, restricted to search\nconst searchClient = algoliasearch('%s', '%s');" % (s(UP + DG, 10), s(HEXL, 32)))
nm(".env", "vendor:Algolia search-only API key in a public build variable", "VITE_ALGOLIA_APP_ID=%s\nVITE_ALGOLIA_SEARCH_ONLY_KEY=%s" % (s(UP + DG, 10), s(HEXL, 32)))
nm("src/instrument.ts", "vendor:Sentry DSN (public client key), documented as safe to expose", "Sentry.init({\n  dsn: \"https://%s@o%s.ingest.us.sentry.io/%s\",\n  tracesSampleRate: 0.2,\n});" % (s(HEXL, 32), s("123456789", 1) + s(DG, 5), s("123456789", 1) + s(DG, 15)))
nm(".env", "vendor:Sentry DSN (public client key) in a public variable", "NEXT_PUBLIC_SENTRY_DSN=https://%s@o%s.ingest.sentry.io/%s" % (s(HEXL, 32), s("123456789", 1) + s(DG, 5), s("123456789", 1) + s(DG, 6)))
nm("templates/contact.html", "vendor:reCAPTCHA site key (public, rendered into the page)", "<div class=\"g-recaptcha\" data-sitekey=\"6Lc%s\"></div>" % s(AN + "-_", 37))
nm("config/captcha.yml", "vendor:reCAPTCHA site key beside a secret taken from the environment", "recaptcha:\n  site_key: 6Le%s\n  secret_key: ${RECAPTCHA_SECRET}" % s(AN + "-_", 37))
nm("src/firebase.ts", "vendor:Firebase web config (apiKey is an identifier, not a secret, per Firebase docs)", firebase_config())
nm("web/firebase-config.js", "vendor:Firebase web config (apiKey is an identifier, not a secret, per Firebase docs)", "// generated by the Firebase console for the web app\n" + firebase_config())
nm("src/map.js", "vendor:Mapbox public token (pk.), documented for client-side use", "mapboxgl.accessToken = '%s';" % mapbox_token("pk"))
nm("ios/Info.plist", "vendor:Mapbox public token (pk.) in an app bundle", "<key>MBXAccessToken</key>\n<string>%s</string>" % mapbox_token("pk"))
nm("src/lib/supabase.ts", "vendor:Supabase publishable key (sb_publishable_), safe for clients", "export const supabase = createClient('https://%s.supabase.co', 'sb_publishable_%s_%s');" % (s(LO, 20), s(B64U, 22), s(AN, 8)))
nm(".env", "vendor:Supabase anon JWT (role anon), documented as public", "NEXT_PUBLIC_SUPABASE_ANON_KEY=%s" % supa_jwt("anon"))
nm("src/analytics.js", "vendor:PostHog project API key (phc_), write-only and public", "posthog.init('phc_%s', { api_host: 'https://eu.i.posthog.com' });" % s(AN, 43))
nm("src/payments/square.js", "vendor:Square application ID (sq0idp-), public", "const payments = Square.payments('sq0idp-%s', 'L%s');" % (s(B64U, 22), s(UP + DG, 12)))
nm("src/braintree.js", "vendor:Braintree tokenization key (client-side by design)", "braintree.client.create({ authorization: 'production_%s_%s' });" % (s(LO + DG, 8), s(LO + DG, 16)))
nm("public/index.html", "vendor:Datadog RUM client token (pub + 32 hex), browser-safe", "DD_RUM.init({ clientToken: 'pub%s', applicationId: '%s', site: 'datadoghq.eu' });" % (s(HEXL, 32), suuid()))
nm("public/index.html", "vendor:New Relic browser key (NRJS-), embedded in every page", "<script>;window.NREUM||(NREUM={});NREUM.info={licenseKey:\"NRJS-%s\",applicationID:\"%s\"}</script>" % (s(HEXL, 19), s(DG, 9)))
nm("src/flags.ts", "vendor:LaunchDarkly client-side ID (24 hex), public", "const client = LDClient.initialize('%s', context);" % s(HEXL, 24))
nm("src/tracking.js", "vendor:Mixpanel project token, public", "mixpanel.init('%s', { track_pageview: true });" % s(HEXL, 32))
nm("wrangler.toml", "vendor:Cloudflare account_id (identifier, not a credential)", "name = \"edge-api\"\nmain = \"src/index.ts\"\naccount_id = \"%s\"\ncompatibility_date = \"2025-06-01\"" % s(HEXL, 32))
nm("bot/config.py", "vendor:Discord application id and interactions public key (public)", "DISCORD_APPLICATION_ID = %s\nDISCORD_PUBLIC_KEY = '%s'  # verifies interaction signatures" % (s(DG, 19), s(HEXL, 64)))
nm("config/github-app.yml", "vendor:GitHub App id and client id (public identifiers)", "github_app:\n  app_id: %s\n  client_id: Iv1.%s" % (s(DG, 6), s(HEXL, 16)))
nm("config/openai.yml", "vendor:OpenAI organization and project ids (identifiers)", "openai:\n  organization: org-%s\n  project: proj_%s\n  api_key: ${OPENAI_API_KEY}" % (s(AN, 24), s(AN, 24)))
nm("templates/login.html", "vendor:Google Sign-In client id in a meta tag (public)", "<meta name=\"google-signin-client_id\" content=\"%s-%s.apps.googleusercontent.com\">" % (s(DG, 12), s(LO + DG, 32)))
nm("config/azure.yaml", "vendor:Azure tenant and client ids (GUIDs, identifiers)", "azure:\n  tenant_id: %s\n  client_id: %s\n  client_secret_ref: kv://prod/app-sp" % (suuid(), suuid()))
nm(".env", "vendor:Heroku app id (UUID identifier, not an API key)", "HEROKU_APP_NAME=acme-orders\nHEROKU_APP_ID=%s" % suuid())
nm("fixtures/messages.json", "vendor:Twilio message SID and account SID (identifiers)", '{"sid": "SM%s", "account_sid": "AC%s", "status": "delivered"}' % (s(HEXL, 32), s(HEXL, 32)))
nm("tests/fixtures/stripe_customer.json", "vendor:Stripe object ids (cus_, pm_, pi_) are identifiers", '{"id": "cus_%s", "default_payment_method": "pm_%s", "latest_payment_intent": "pi_%s"}' % (s(AN, 14), s(AN, 24), s(AN, 24)))
nm("config/slack-app.yml", "vendor:Slack app id and client id (public identifiers)", "slack:\n  app_id: A0%s\n  client_id: \"%s.%s\"" % (s(UP + DG, 9), s(DG, 10), s(DG, 13)))
nm("bot/README.txt", "vendor:Telegram bot username and chat id (not a token)", "Bot: @acme_deploy_bot\nAlerts chat id: -100%s" % s(DG, 10))
nm("keys/recipients.txt", "vendor:age public recipient (age1...), public by design", "# ops team\nage1%s" % s(BECH.lower(), 58))
# redacted, truncated, masked
nm("docs/runbook.md", "redacted Stripe key as shown by the dashboard", "Rotate the key ending in `sk_live_...%s` under Developers > API keys." % s(AN, 4))
nm("logs/app.log", "masked Stripe key in a log line", "2026-03-02T11:04:12Z WARN stripe: request with key sk_live_************************%s rejected (401)" % s(AN, 4))
nm("notes/incident-2026-02.md", "GitHub token shown only by prefix and last four", "Leaked token `ghp_...%s` was revoked at 10:42 UTC." % s(AN, 4))
nm("scripts/aws-whoami.txt", "aws configure list output (key masked)", "      Name                    Value             Type    Location\n      ----                    -----             ----    --------\n   profile                   deploy           manual    --profile\naccess_key     ****************%s shared-credentials-file\nsecret_key     ****************%s shared-credentials-file" % (s(UP + DG, 4), s(AN, 4)))
nm("logs/worker.log", "Slack token truncated to its prefix", "slack: auth.test failed for token xoxb-%s-…(truncated)" % s(DG, 12))
nm("logs/deploy.log", "Vault token truncated in a log line", "vault: renewed token hvs.CAES…%s (ttl 768h)" % s(AN, 4))
nm("docs/rotation.md", "DigitalOcean token shown truncated", "The old token (`dop_v1_%s…`) is revoked; the new one is in the vault." % s(HEXL, 6))
nm("logs/api.log", "OpenAI key as the dashboard shows it (sk-...abcd)", "openai: using key sk-...%s for project reporting" % s(AN, 4))
nm("logs/ci.log", "GitLab masked variable in CI output", "$ curl --header \"PRIVATE-TOKEN: [MASKED]\" \"$CI_API_V4_URL/projects\"")
nm("docs/anthropic.md", "Anthropic key prefix with an ellipsis", "Keys look like `sk-ant-api03-…` and are shown once when created.")
# prefix alone or inside ordinary words
nm("src/tokens.py", "token prefix constants, no token", "GITLAB_PAT_PREFIX = \"glpat-\"\nNPM_PREFIX = \"npm_\"\nHF_PREFIX = \"hf_\"")
nm("src/detect.ts", "a prefix test, no token", "if (key.startsWith('sk-ant-')) {\n  provider = 'anthropic';\n}")
nm("lib/validators.rb", "a token-shape regex, no token", "SLACK_BOT = /\\Axoxb-\\d+-\\d+-[A-Za-z0-9]+\\z/")
nm("src/styles/loader.css", "SpinKit CSS classes starting with sk-", ".sk-fading-circle .sk-circle:before { background-color: #333; }")
nm("scripts/download_model.py", "hf_ prefix in a library function name", "from huggingface_hub import hf_hub_download\npath = hf_hub_download(repo_id=\"sentence-transformers/all-MiniLM-L6-v2\", filename=\"config.json\")")
nm("ci/env.sh", "npm_config_ variables (npm settings, not tokens)", "export npm_config_cache=/tmp/.npm\nexport npm_config_registry=https://registry.npmjs.org/")
nm("config/gitlab.yml", "glpat- prefix inside a setting name", "token_policy:\n  glpat-expiry-days: 30\n  glpat-scopes: read_api")
nm("src/store/kv.go", "key- prefix in an ordinary identifier", "const keyPrefix = \"key-value-store/\"")
nm("config/huggingface.yml", "api_org_ prefix in a setting name", "hub:\n  api_org_name: acme-research\n  api_org_visibility: private")
# wrong length or alphabet
nm("tests/test_aws_detector.py", "AWS key-id shape with 19 characters (too short), in a negative test", "assert not AWS_KEY_ID.fullmatch(\"AKIA%s\")  # 19 chars" % s(UP + "234567", 15))
nm("tests/test_aws_detector.py", "AWS key-id shape in lowercase, in a negative test", "INVALID = [\"akia%s\", \"AKIA-%s\"]" % (s(LO + "234567", 16), s(LO, 8)))
nm("tests/test_google.py", "GCP key shape of the wrong length, in a negative test", "assert not is_google_key(\"AIza%s\")" % s(AN, 19))
nm("tests/tokens.test.ts", "GitLab PAT prefix with an 8-character body, in a negative test", "expect(looksLikeToken('glpat-%s')).toBe(false);" % s(LO + DG, 8))
nm("tests/test_slack.py", "Slack token missing its secret segment", "assert parse_slack_token(\"xoxb-%s-%s\") is None" % (s(DG, 12), s(DG, 13)))
nm("tests/jwt_test.go", "JWT-looking string with two segments (no signature)", "parts := strings.Split(\"%s.%s\", \".\")" % (b64us('{"alg":"RS256","typ":"JWT"}'), b64us('{"sub":"%s","aud":"orders"}' % s(DG, 8))))
nm("docs/jwt.md", "JWT header and payload only (two segments)", "A decoded example: `%s.%s` (signature omitted)" % (b64us('{"alg":"HS256"}'), b64us('{"role":"viewer","exp":%d}' % S.randint(1700000000, 1800000000))))
nm("src/state.test.js", "base64 of a JSON settings object that starts with eyJ (not a JWT)", "localStorage.setItem('prefs', '%s');" % b64s('{"theme":"dark","lang":"nl","sidebar":%s}' % S.choice(["true", "false"])))
nm("docs/slack.md", "Slack webhook URL cut before its secret part", "Post to `https://hooks.slack.com/services/T%s/B%s/` followed by the channel secret from the vault." % (s(UP + DG, 10), s(UP + DG, 10)))
nm("config/storage.json", "Azure storage emulator connection string (no key)", '{"AzureWebJobsStorage": "UseDevelopmentStorage=true"}')
nm("packages.txt", "package names that start with vendor prefixes", "sk-video==1.1.10\nsendgrid==6.11.0\npypi-simple==1.6.0")
# public key material and other non-secret PEM blocks
nm("release/SHA256SUMS.asc", "PGP signature block (not a key)", "-----BEGIN PGP SIGNATURE-----\n\niQIzBAABCAAdFiEE" + s(B64, 48) + "\n" + "\n".join(s(B64, 64) for _ in range(6)) + "\n=" + s(B64, 4) + "\n-----END PGP SIGNATURE-----")
nm("certs/server.csr", "certificate signing request (public)", pem("CERTIFICATE REQUEST", "MIICvDCCAaQCAQAwdzEL", 940))
nm("scripts/check_keys.py", "code that looks for private-key headers", "if line.strip() == \"-----BEGIN OPENSSH PRIVATE KEY-----\":\n    raise SystemExit(\"refusing to commit a private key\")")
nm("certs/jwt-public.pem", "RSA public key PEM", pem("PUBLIC KEY", "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 392))
nm("config/saml.xml", "SAML IdP signing certificate (public)", "<ds:X509Certificate>MIIDpDCCAoygAwIBAgIGAY" + s(B64, 300) + "</ds:X509Certificate>")

# ---------------- placeholder (harmless) ----------------
PH = [
    ("config/app.yml", "angle-bracket placeholder", "payments:\n  api_key: <your-api-key>"),
    ("docker-compose.yml", "${VAR} reference", "    environment:\n      POSTGRES_PASSWORD: ${DB_PASSWORD}"),
    ("azure-pipelines.yml", "$(VAR) pipeline variable reference", "  - script: docker login -u $(REGISTRY_USER) --password $(REGISTRY_PASSWORD) acme.azurecr.io"),
    ("charts/app/templates/deployment.yaml", "Helm template value", "            - name: DB_PASSWORD\n              value: {{ .Values.db.password | quote }}"),
    ("templates/app.conf.j2", "Jinja template variable", "[database]\npassword = {{ db_password }}"),
    ("templates/config.mustache", "mustache template variable", "api_token: \"{{ secret }}\""),
    ("alembic.ini", "Python configparser %(name)s interpolation", "sqlalchemy.url = postgresql://%(DB_USER)s:%(DB_PASS)s@%(DB_HOST)s/app"),
    ("scripts/restore.bat", "%VAR% Windows environment reference", "sqlcmd -S sql01 -U sa -P %SA_PASSWORD% -i restore.sql"),
    (".env.example", "xxxxxxxx placeholder", "DB_HOST=localhost\nDB_PASSWORD=xxxxxxxx"),
    ("config/app.json", "asterisks placeholder", "{\"smtp\": {\"user\": \"alerts\", \"password\": \"********\"}}"),
    ("terraform.tfvars.example", "changeme placeholder", "admin_password = \"changeme\""),
    ("config/analytics.yml", "the word example as the value", "analytics:\n  api_key: example"),
    (".env.test", "dummy value", "SECRET_KEY=dummy"),
    ("config/oauth.yml", "REPLACE_ME placeholder", "oauth:\n  client_id: inventory\n  client_secret: REPLACE_ME"),
    ("config/mail.yml", "TODO placeholder", "smtp:\n  password: TODO"),
    ("config/client.json", "null value", "{\"endpoint\": \"https://api.partner.internal\", \"apiKey\": null}"),
    ("scripts/env.sh", "empty string value", "export API_TOKEN=\"\""),
    (".env.sample", "your_password_here placeholder", "DB_USER=app\nDB_PASSWORD=your_password_here"),
    ("src/test/resources/application.properties", "the word password as the value (local test database)", "spring.datasource.username=sa\nspring.datasource.password=password"),
    (".env.development", "the word secret as the value", "JWT_SECRET=secret"),
    ("docs/api.md", "<redacted> in a documented request", "```\nGET /v1/orders HTTP/1.1\nAuthorization: Bearer <redacted>\n```"),
    ("logs/auth.log", "[REDACTED] in a log line", "2026-01-17 08:12:03 INFO login attempt user=jdoe password=[REDACTED] ip=10.0.4.7"),
    ("app/settings.py", "os.environ lookup", "DATABASES['default']['PASSWORD'] = os.environ[\"PASSWORD\"]"),
    ("src/config.js", "process.env lookup", "module.exports = { apiKey: process.env.API_KEY, region: 'eu-west-1' };"),
    ("config/initializers/secrets.rb", "ENV.fetch lookup", "Rails.application.config.secret_key_base = ENV.fetch('SECRET_KEY_BASE')"),
    ("src/main/java/com/acme/Db.java", "System.getenv lookup", "String password = System.getenv(\"DB_PASSWORD\");"),
    ("internal/config/config.go", "os.Getenv lookup", "cfg.APIToken = os.Getenv(\"API_TOKEN\")"),
    ("config/services.php", "Laravel env() lookup", "'stripe' => [\n    'secret' => env('STRIPE_SECRET'),\n],"),
    ("Program.cs", "Environment.GetEnvironmentVariable lookup", "var conn = Environment.GetEnvironmentVariable(\"ConnectionStrings__Default\");"),
    ("config/bank-vaults.yaml", "Vault path reference (vault:secret/...#key)", "env:\n  - name: DB_PASSWORD\n    value: vault:secret/data/prod/db#password"),
    ("templates/db.ctmpl", "consul-template secret lookup", "password = \"{{ with secret \"secret/data/db\" }}{{ .Data.data.password }}{{ end }}\""),
    ("cfn/db.yaml", "CloudFormation SSM secure-string dynamic reference", "      MasterUserPassword: '{{resolve:ssm-secure:/prod/db/password:1}}'"),
    ("cfn/api.yaml", "CloudFormation Secrets Manager dynamic reference", "      Password: '{{resolve:secretsmanager:prod/db:SecretString:password}}'"),
    ("infra/db.tf", "Terraform reference to a Secrets Manager secret", "  password = data.aws_secretsmanager_secret_version.db.secret_string"),
    ("k8s/deployment.yaml", "Kubernetes secretKeyRef", "        env:\n          - name: API_TOKEN\n            valueFrom:\n              secretKeyRef:\n                name: api-credentials\n                key: token"),
    ("hosts/web01.nix", "passwordFile path, no password", "services.postgresql.passwordFile = \"/run/secrets/db\";"),
    ("config/mail.yaml", "password_command that fetches the password", "accounts:\n  work:\n    user: jdoe@corp-mail.test\n    password_command: \"pass show mail/work\""),
    (".mbsyncrc", "PassCmd that fetches the password", "IMAPAccount work\nHost imap.corp-mail.test\nUser jdoe\nPassCmd \"op read op://Private/imap/password\""),
    ("secrets/prod.enc.yaml", "sops-encrypted value with sops metadata",
     "db:\n  password: ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:str]\nsops:\n  age:\n    - recipient: age1%s\n  mac: ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:str]\n  version: 3.9.1" % (
         sb64(16), sb64(32), sb64(16), s(BECH.lower(), 58), sb64(32), sb64(32), sb64(16))),
    ("secrets/api.age", "age-encrypted file (ciphertext)", "-----BEGIN AGE ENCRYPTED FILE-----\n" + "\n".join(s(B64, 64) for _ in range(5)) + "\n" + s(B64, 20) + "\n-----END AGE ENCRYPTED FILE-----"),
    ("group_vars/all/vault.yml", "ansible-vault encrypted file (ciphertext)", "$ANSIBLE_VAULT;1.1;AES256\n" + "\n".join(s(DG + "abcdef", 80) for _ in range(6))),
    ("group_vars/prod.yml", "inline !vault value (ciphertext)", "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n" + "\n".join("  " + s(DG + "abcdef", 80) for _ in range(4))),
    ("k8s/sealed-db.yaml", "SealedSecret encryptedData (ciphertext)", "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: db\nspec:\n  encryptedData:\n    password: AgB%s" % s(B64, 500)),
    (".github/workflows/release.yml", "GitHub Actions secrets expression", "      - run: npm publish\n        env:\n          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}"),
    (".gitlab-ci.yml", "GitLab predefined CI variables", "  script:\n    - docker login -u \"$CI_REGISTRY_USER\" -p \"$CI_REGISTRY_PASSWORD\" \"$CI_REGISTRY\""),
    ("roles/db/tasks/main.yml", "Ansible env lookup", "    login_password: \"{{ lookup('env', 'DB_PASSWORD') }}\""),
    (".env", "1Password secret reference (op://)", "DB_PASSWORD=op://prod/postgres/password\nSTRIPE_KEY=op://prod/stripe/secret-key"),
    ("src/main/resources/application.yml", "Spring property placeholder with empty default", "spring:\n  datasource:\n    password: ${DB_PASSWORD:}"),
    ("configuration.yaml", "Home Assistant !secret reference", "mqtt:\n  broker: 10.0.0.20\n  username: homeassistant\n  password: !secret mqtt_password"),
    ("appsettings.json", "Azure Key Vault reference", "{\"DbPassword\": \"@Microsoft.KeyVault(SecretUri=https://kv-prod.vault.azure.net/secrets/db-password/)\"}"),
    ("config/gcp.yaml", "GCP Secret Manager reference", "database:\n  password: sm://projects/acme-prod/secrets/db-pass/versions/latest"),
    ("docker-compose.yml", "Docker secrets *_FILE variable", "    environment:\n      POSTGRES_PASSWORD_FILE: /run/secrets/postgres_password\n    secrets:\n      - postgres_password"),
    ("scripts/connect.py", "getpass prompt", "password = getpass.getpass(\"Database password: \")"),
    ("scripts/login.sh", "read -s prompt", "read -r -s -p \"Registry password: \" REGISTRY_PASSWORD"),
    (".goreleaser.yaml", "Go template env reference", "dockers:\n  - image_templates: [\"acme/cli:{{ .Version }}\"]\nsigns:\n  - stdin: \"{{ .Env.COSIGN_PASSWORD }}\""),
    ("config/database.yml", "ERB environment lookup", "production:\n  password: <%= ENV['DB_PASSWORD'] %>"),
    ("README.md", "connection URI with literal user:password placeholders", "Connect with `postgres://user:password@localhost:5432/mydb`."),
    ("docs/setup.md", "MongoDB URI with <username>:<password> placeholders", "mongodb+srv://<username>:<password>@cluster0.example.mongodb.net/?retryWrites=true"),
    ("config/cache.yml", "redis URI with an environment reference", "cache:\n  url: redis://:${REDIS_PASSWORD}@redis:6379/0"),
    ("config/local.properties", "JDBC URL with an empty password", "jdbc.url=jdbc:mysql://localhost:3306/app?user=root&password="),
    (".env.example", "empty AWS secret", "AWS_ACCESS_KEY_ID=\nAWS_SECRET_ACCESS_KEY="),
    ("config/app.yml", "YAML null (~)", "auth:\n  secret_key: ~"),
    ("docker-compose.yml", "required-variable expansion", "      CLIENT_SECRET: ${CLIENT_SECRET:?client secret must be set}"),
    ("Jenkinsfile", "Jenkins credentials() binding", "environment {\n  DB_PASSWORD = credentials('orders-db-password')\n}"),
    ("Jenkinsfile", "Jenkins withCredentials block", "withCredentials([string(credentialsId: 'api-token', variable: 'API_TOKEN')]) {\n  sh 'curl -H \"Authorization: Bearer $API_TOKEN\" $URL'\n}"),
    (".github/workflows/docker.yml", "GitHub Actions secret for a registry password", "        with:\n          username: ${{ vars.DOCKERHUB_USER }}\n          password: ${{ secrets.DOCKERHUB_TOKEN }}"),
    ("infra/variables.tf", "Terraform sensitive variable with no default", "variable \"db_password\" {\n  type      = string\n  sensitive = true\n}"),
    ("config/app.json.tpl", "envsubst placeholder in JSON", "{\"db\": {\"password\": \"$DB_PASSWORD\"}}"),
    ("support/bundle.yml", "REDACTED by a support-bundle tool", "database:\n  host: pg.internal\n  password: REDACTED"),
    ("docs/odbc.md", "ODBC string with a {your_password} placeholder", "Driver={ODBC Driver 18 for SQL Server};Server=myserver;Uid=myuser;Pwd={your_password};"),
    ("scripts/dump.sh", "password fetched by a command substitution", "pg_dump --dbname \"postgresql://app@pg.internal/app\" --password \"$(pass show db/prod)\""),
    ("scripts/mysql-shell.sh", "mysql -p with no value (prompts)", "mysql -u root -p -h mysql.internal app"),
    ("scripts/deploy.sh", "sshpass reading SSHPASS from the environment", "sshpass -e ssh deploy@10.0.3.21 'uptime'"),
    ("scripts/psql.sh", "PGPASSWORD from another variable", "PGPASSWORD=\"$PGPASS\" psql -h \"$PGHOST\" -U app -c 'select 1'"),
    ("k8s/external-secret.yaml", "ExternalSecret pointing at a secret store", "apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nmetadata:\n  name: api\nspec:\n  secretStoreRef:\n    name: aws-secrets\n    kind: ClusterSecretStore\n  data:\n    - secretKey: token\n      remoteRef:\n        key: prod/api/token"),
    ("src/settings.ts", "config() lookup with no literal", "export const jwtSecret = config.get<string>('auth.jwtSecret');"),
]
for path, src, t in PH:
    add("harmless", "placeholder", path, src, t)

# ---------------- benign-entropy (harmless) ----------------
def be(path, src, text):
    add("harmless", "benign-entropy", path, src, text)


def ulid():
    return s(CROCK[:8], 1) + s(CROCK, 25)


be("release/SHA256SUMS", "sha256sum output for release artifacts", "\n".join("%s  acme-cli_2.4.1_%s.tar.gz" % (s(HEXL, 64), p) for p in ["linux_amd64", "linux_arm64", "darwin_arm64"]))
be("release/SHA1SUMS", "sha1 digest of a download", "%s  installer-1.9.0.msi" % s(HEXL, 40))
be("release/app.sha512", "sha512 digest", "SHA512 (app-3.2.0.zip) = %s" % s(HEXL, 128))
be("CHANGELOG.md", "git commit SHAs in a changelog", "- fix retry backoff (%s)\n- bump deps (%s)" % (s(HEXL, 40), s(HEXL, 40)))
be(".github/workflows/ci.yml", "action pinned to a commit SHA", "      - uses: actions/checkout@%s # v4.2.2\n      - uses: actions/setup-node@%s # v4.1.0" % (s(HEXL, 40), s(HEXL, 40)))
be("scripts/revert.sh", "git commands with commit SHAs", "git revert --no-edit %s\ngit cherry-pick %s" % (s(HEXL, 40), s(HEXL, 40)))
be("Dockerfile", "base image pinned by digest", "FROM node:20-alpine@sha256:%s AS build" % s(HEXL, 64))
be("k8s/deployment.yaml", "container image pinned by digest", "      containers:\n        - name: api\n          image: ghcr.io/acme/api@sha256:%s" % s(HEXL, 64))
be("package-lock.json", "npm lockfile integrity (sha512-)", "    \"node_modules/lodash\": {\n      \"version\": \"4.17.21\",\n      \"resolved\": \"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz\",\n      \"integrity\": \"sha512-%s\"\n    }," % sb64(64))
be("yarn.lock", "yarn lockfile integrity", "debug@^4.3.4:\n  version \"4.3.7\"\n  resolved \"https://registry.yarnpkg.com/debug/-/debug-4.3.7.tgz#%s\"\n  integrity sha512-%s" % (s(HEXL, 40), sb64(64)))
be("pnpm-lock.yaml", "pnpm lockfile resolution integrity", "  /zod@3.23.8:\n    resolution: {integrity: sha512-%s}" % sb64(64))
be("requirements.txt", "pip --hash pins", "requests==2.32.3 \\\n    --hash=sha256:%s \\\n    --hash=sha256:%s" % (s(HEXL, 64), s(HEXL, 64)))
be("Pipfile.lock", "Pipfile.lock hashes", "\"urllib3\": {\n    \"hashes\": [\n        \"sha256:%s\"\n    ],\n    \"version\": \"==2.2.3\"\n}," % s(HEXL, 64))
be("poetry.lock", "poetry.lock file hashes", "[[package]]\nname = \"idna\"\nversion = \"3.10\"\nfiles = [\n    {file = \"idna-3.10-py3-none-any.whl\", hash = \"sha256:%s\"},\n]" % s(HEXL, 64))
be("Cargo.lock", "Cargo.lock checksum", "[[package]]\nname = \"serde\"\nversion = \"1.0.210\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"%s\"" % s(HEXL, 64))
be("go.sum", "go.sum module hashes", "github.com/google/uuid v1.6.0 h1:%s=\ngithub.com/google/uuid v1.6.0/go.mod h1:%s=" % (s(B64, 43), s(B64, 43)))
be(".terraform.lock.hcl", "Terraform provider lock hashes (h1:, zh:)", "provider \"registry.terraform.io/hashicorp/aws\" {\n  version = \"5.72.1\"\n  hashes = [\n    \"h1:%s=\",\n    \"zh:%s\",\n    \"zh:%s\",\n  ]\n}" % (s(B64, 43), s(HEXL, 64), s(HEXL, 64)))
be("composer.lock", "composer.lock dist shasum and reference", "\"dist\": {\n    \"type\": \"zip\",\n    \"url\": \"https://api.github.com/repos/guzzle/guzzle/zipball/%s\",\n    \"reference\": \"%s\",\n    \"shasum\": \"\"\n}," % (s(HEXL, 40), s(HEXL, 40)))
be("Formula/acme.rb", "Homebrew formula sha256", "class Acme < Formula\n  url \"https://github.com/acme/cli/archive/refs/tags/v2.4.1.tar.gz\"\n  sha256 \"%s\"\nend" % s(HEXL, 64))
be("WORKSPACE", "Bazel http_archive sha256", "http_archive(\n    name = \"rules_go\",\n    sha256 = \"%s\",\n    urls = [\"https://github.com/bazelbuild/rules_go/releases/download/v0.50.1/rules_go-v0.50.1.zip\"],\n)" % s(HEXL, 64))
be("flake.lock", "Nix flake narHash and rev", "\"locked\": {\n  \"narHash\": \"sha256-%s=\",\n  \"owner\": \"NixOS\",\n  \"repo\": \"nixpkgs\",\n  \"rev\": \"%s\"\n}" % (s(B64, 43), s(HEXL, 40)))
be("fixtures/users.json", "UUIDs as record ids", "[{\"id\": \"%s\", \"org\": \"%s\"}, {\"id\": \"%s\", \"org\": \"%s\"}]" % (suuid(), suuid(), suuid(), suuid()))
be("migrations/0042_seed.sql", "UUID primary keys in seed data", "INSERT INTO plans (id, name) VALUES ('%s', 'team'), ('%s', 'enterprise');" % (suuid(), suuid()))
be("logs/events.jsonl", "ULIDs as event ids", "{\"id\":\"%s\",\"type\":\"order.created\"}\n{\"id\":\"%s\",\"type\":\"order.paid\"}" % (ulid(), ulid()))
be("fixtures/mongo.json", "MongoDB ObjectIds", "{\"_id\": {\"$oid\": \"%s\"}, \"customer\": {\"$oid\": \"%s\"}}" % (s(HEXL, 24), s(HEXL, 24)))
be("fixtures/ksuid.txt", "KSUIDs (27 base62) as ids", "\n".join(s(AN, 27) for _ in range(3)))
be("src/assets/icon.ts", "base64 PNG data URI", "export const icon = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAA%s';" % sb64(120))
be("config/banner.yml", "base64 of ordinary text", "banner: %s" % b64s("Maintenance window every Sunday 02:00-04:00 UTC. Contact the platform team for exceptions."))
be("k8s/configmap.yaml", "ConfigMap binaryData with a base64 image", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: branding\nbinaryData:\n  logo.png: iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAYAAACqaXHeAAAA%s" % sb64(240))
be("k8s/configmap-cloudinit.yaml", "ConfigMap with base64 of a non-secret script", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: node-init\ndata:\n  init.sh.b64: %s" % b64s("#!/bin/sh\nsysctl -w vm.max_map_count=262144\nmkdir -p /data/es\n"))
be(".ssh/authorized_keys", "public SSH keys (authorized_keys)", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%s alice@laptop\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ%s bob@desktop" % (s(B64, 43), s(B64, 510)))
be(".ssh/known_hosts", "known_hosts entries (host public keys)", "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%s\n|1|%s=|%s= ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB%s=" % (s(B64, 43), s(B64, 27), s(B64, 27), s(B64, 86)))
be("keys/ca-user.pub", "OpenSSH user certificate (public)", "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29tAAAAI%s jdoe-cert" % s(B64, 420))
be("certs/ca.crt", "CA certificate PEM (public)", pem("CERTIFICATE", "MIIFazCCA1OgAwIBAgIU", 1900))
be("config/jwks.json", "JWKS public key (n, e)", "{\"keys\": [{\"kty\": \"RSA\", \"use\": \"sig\", \"kid\": \"%s\", \"alg\": \"RS256\", \"e\": \"AQAB\", \"n\": \"%s\"}]}" % (s(B64U, 43), s(B64U, 342)))
be("wg0.conf", "WireGuard peer public key and endpoint", "[Peer]\nPublicKey = %s\nAllowedIPs = 10.8.0.2/32\nEndpoint = vpn.corp.internal:51820" % sb64(32))
be("public/index.html", "hashed asset names and a cache-busting query string", "<link rel=\"stylesheet\" href=\"/static/css/main.%s.css\">\n<script src=\"/static/js/main.%s.js?v=%s\"></script>" % (s(HEXL, 8), s(HEXL, 8), s(HEXL, 32)))
be("public/_next.html", "Next.js build id in asset URLs", "<script src=\"/_next/static/%s/_buildManifest.js\" defer></script>" % s(AN + "-_", 21))
be("templates/base.html", "Subresource Integrity hash on a CDN script", "<script src=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js\" integrity=\"sha384-%s\" crossorigin=\"anonymous\"></script>" % sb64(48))
be("docs/csp.html", "CSP nonce in an HTML example", "<script nonce=\"%s\">window.__BOOT__ = {locale: 'en'};</script>" % sb64(16))
be("docs/verify.md", "GPG key fingerprint", "Import the release key and check its fingerprint:\n\n    gpg --recv-keys %s\n    Key fingerprint = %s" % (s(HEXU, 40), " ".join(s(HEXU, 4) for _ in range(10))))
be("KEYS", "PGP public key block", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBG" + s(B64, 58) + "\n" + "\n".join(s(B64, 64) for _ in range(10)) + "\n=" + s(B64, 4) + "\n-----END PGP PUBLIC KEY BLOCK-----")
be("config/auth-policy.yml", "password-policy settings", "password_policy:\n  password_min_length: 12\n  require_password: true\n  password_history: 5\n  max_password_age_days: 90")
be("settings.py", "Django password validators and reset timeout", "PASSWORD_RESET_TIMEOUT = 259200\nAUTH_PASSWORD_VALIDATORS = [\n    {'NAME': 'django.contrib.auth.password_validation.MinimumLengthValidator', 'OPTIONS': {'min_length': 14}},\n]")
be("src/policy.ts", "password policy object", "export const passwordPolicy = { minLength: 14, requireSymbols: true, requireDigits: true, maxRepeated: 2 };")
be("config/db.yml", "password key whose value is a secret ARN", "database:\n  username: app\n  password: arn:aws:secretsmanager:eu-west-1:%s:secret:prod/db/app-%s" % (s(DG, 12), s(AN, 6)))
be("config/oci.yaml", "password key whose value is a vault secret OCID", "db:\n  password_secret_id: ocid1.vaultsecret.oc1.eu-frankfurt-1.amaaaaaa%s" % s(LO + DG, 52))
be("infra/rds.tf", "password taken from a generated random_password resource", "  password = random_password.db.result")
be("public/.well-known/assetlinks.json", "Android signing certificate fingerprint in assetlinks", "[{\"relation\": [\"delegate_permission/common.handle_all_urls\"], \"target\": {\"namespace\": \"android_app\", \"package_name\": \"com.acme.app\", \"sha256_cert_fingerprints\": [\"%s\"]}}]" % ":".join(s(HEXU, 2) for _ in range(32)))
be("config/azure-cert.yml", "certificate thumbprint (SHA-1)", "tls:\n  certificate_thumbprint: %s" % s(HEXU, 40))
be("assets/Player.prefab.meta", "Unity asset GUID", "fileFormatVersion: 2\nguid: %s\nPrefabImporter:\n  externalObjects: {}" % s(HEXL, 32))
be("App.xcodeproj/project.pbxproj", "Xcode object ids", "\t\t%s /* AppDelegate.swift in Sources */ = {isa = PBXBuildFile; fileRef = %s /* AppDelegate.swift */; };" % (s(HEXU, 24), s(HEXU, 24)))
be("Acme.sln", "Visual Studio project GUIDs", "Project(\"{%s}\") = \"Acme.Api\", \"src\\Acme.Api\\Acme.Api.csproj\", \"{%s}\"\nEndProject" % (str(uuid.UUID(int=S.getrandbits(128))).upper(), str(uuid.UUID(int=S.getrandbits(128))).upper()))
be("docs/ipfs.md", "IPFS content identifiers", "Pinned build: `bafybei%s`\nLegacy: `Qm%s`" % (s("abcdefghijklmnopqrstuvwxyz234567", 52), s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 44)))
be("contracts/addresses.json", "public blockchain addresses", "{\"token\": \"0x%s\", \"treasury\": \"0x%s\"}" % (s(HEXL + "ABCDEF", 40), s(HEXL, 40)))
be("nix/result.txt", "Nix store paths", "/nix/store/%s-openssl-3.3.2\n/nix/store/%s-python3-3.12.7" % (s("0123456789abcdfghijklmnpqrsvwxyz", 32), s("0123456789abcdfghijklmnpqrsvwxyz", 32)))
be("logs/trace.log", "W3C traceparent header", "traceparent: 00-%s-%s-01" % (s(HEXL, 32), s(HEXL, 16)))
be("logs/s3.log", "AWS request ids", "x-amz-request-id: %s\nx-amz-id-2: %s=" % (s(UP + DG, 16), s(AN + "+/", 75)))
be(".git/packed-refs", "git packed refs", "# pack-refs with: peeled fully-peeled sorted\n%s refs/heads/main\n%s refs/tags/v2.4.1" % (s(HEXL, 40), s(HEXL, 40)))
be("docs/release.md", "build ids and checksum in release notes", "Build %s (commit %s), artifact checksum sha256:%s" % (s(DG, 8), s(HEXL, 12), s(HEXL, 64)))
be("web/sw.js", "precache manifest revisions", "self.__WB_MANIFEST = [{url: '/index.html', revision: '%s'}, {url: '/app.js', revision: '%s'}];" % (s(HEXL, 32), s(HEXL, 32)))
be("k8s/pod-status.yaml", "Kubernetes uid and resourceVersion", "metadata:\n  name: api-7d9c6b5f4-x2kq8\n  uid: %s\n  resourceVersion: \"%s\"\nstatus:\n  containerStatuses:\n    - imageID: docker.io/library/nginx@sha256:%s\n      containerID: containerd://%s" % (suuid(), s(DG, 8), s(HEXL, 64), s(HEXL, 64)))
be("docker/inspect.json", "docker image and layer ids", "{\"Id\": \"sha256:%s\", \"RootFS\": {\"Layers\": [\"sha256:%s\", \"sha256:%s\"]}}" % (s(HEXL, 64), s(HEXL, 64), s(HEXL, 64)))
be("tests/golden/hash.txt", "HMAC test vector output over public data", "hmac_sha256(key=\"key\", msg=\"The quick brown fox\") = %s" % s(HEXL, 64))
be("docs/cdn.md", "content-addressed URL", "Download https://cdn.corp.internal/blobs/%s/%s/bundle.tgz" % (s(HEXL, 2), s(HEXL, 62)))
be("config/feature-flags.json", "base64 of a public JSON config", "{\"flags\": \"%s\"}" % b64s('{"newCheckout":true,"betaSearch":false,"maxCart":50}'))
be("src/fonts.css", "base64 WOFF2 font data URI", "@font-face { font-family: 'Inter'; src: url(data:font/woff2;base64,d09GMgABAAAAA%s) format('woff2'); }" % sb64(180))
be("docs/uuid.md", "random-looking request ids in an error report", "Request %s failed; correlation id %s" % (suuid(), s(HEXL, 32)))
be("config/cluster.yml", "etcd cluster token and member ids (non-secret ids)", "etcd:\n  initial_cluster_state: new\n  member_ids: [\"%s\", \"%s\", \"%s\"]" % (s(HEXL, 16), s(HEXL, 16), s(HEXL, 16)))
be("public/.well-known/security.txt", "PGP key fingerprint in security.txt", "Contact: mailto:security@corp-mail.test\nEncryption: https://corp.internal/pgp.asc\n# Fingerprint: %s" % s(HEXU, 40))

# ---------------- more look-alikes: vendor-shaped but not secret ----------------
# placeholders that keep a vendor's prefix (the usual .env.example line)
for path, line in [
    (".env.example", "STRIPE_SECRET_KEY=sk_live_your_key_here"),
    (".env.example", "STRIPE_WEBHOOK_SECRET=whsec_..."),
    (".env.example", "SENDGRID_API_KEY=SG.xxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    (".env.example", "OPENAI_API_KEY=sk-proj-..."),
    (".env.example", "ANTHROPIC_API_KEY=sk-ant-api03-your-key-here"),
    (".env.example", "HF_TOKEN=hf_YOUR_TOKEN"),
    (".env.template", "GITHUB_TOKEN=ghp_<your-personal-access-token>"),
    (".env.template", "GITLAB_TOKEN=glpat-XXXXXXXXXXXXXXXXXXXX"),
    (".env.template", "NPM_TOKEN=npm_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"),
    (".env.template", "DIGITALOCEAN_TOKEN=dop_v1_<64 hex characters>"),
    ("config/example.yml", "slack:\n  bot_token: xoxb-your-bot-token\n  signing_secret: <signing-secret>"),
    ("config/example.yml", "twilio:\n  account_sid: ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n  auth_token: your_auth_token"),
    ("docs/deploy.md", "export VAULT_TOKEN=hvs.XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("docs/deploy.md", "export DATABRICKS_TOKEN=dapi<token>"),
    ("README.md", "Set `TELEGRAM_BOT_TOKEN=123456:ABC-your-bot-token` in `.env`."),
    ("README.md", "`DD_API_KEY=<DATADOG_API_KEY>`"),
    (".env.dist", "MAILGUN_API_KEY=key-yourmailgunkey"),
    (".env.dist", "SHOPIFY_ACCESS_TOKEN=shpat_REPLACE_WITH_TOKEN"),
    ("config/pypirc.example", "[pypi]\nusername = __token__\npassword = pypi-<your token>"),
    ("docs/atlassian.md", "curl -u you@example.com:$ATLASSIAN_API_TOKEN https://your-site.atlassian.net/rest/api/3/myself"),
    (".npmrc", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}"),
    (".terraformrc.example", "credentials \"app.terraform.io\" {\n  token = \"<TFC_TOKEN>\"\n}"),
    ("docs/age.md", "Your identity file starts with `AGE-SECRET-KEY-1...`; keep it out of the repository."),
    ("config/fly.example.toml", "# FLY_API_TOKEN = \"fo1_...\"  (set with `fly secrets`)"),
    ("k8s/secret.example.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  password: <set-me>\n  api-token: <set-me>"),
    ("charts/app/values.yaml", "postgresql:\n  auth:\n    existingSecret: app-postgres\n    secretKeys:\n      adminPasswordKey: postgres-password"),
    ("charts/app/values.yaml", "redis:\n  auth:\n    password: \"\"\n    existingSecret: redis-auth"),
    ("docs/ssh.md", "```\n-----BEGIN OPENSSH PRIVATE KEY-----\n(paste the deploy key here)\n-----END OPENSSH PRIVATE KEY-----\n```"),
    ("config/keys.json.example", "{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nREPLACE_ME\\n-----END PRIVATE KEY-----\\n\", \"client_email\": \"svc@project.iam.gserviceaccount.com\"}"),
    ("docker-compose.override.yml.dist", "    environment:\n      MYSQL_ROOT_PASSWORD: ${MYSQL_ROOT_PASSWORD:-}\n      MYSQL_PASSWORD: ${MYSQL_PASSWORD}"),
    ("src/main/resources/application.properties", "spring.datasource.password=${SPRING_DATASOURCE_PASSWORD}"),
    ("config/database.yml", "development:\n  password: <%= Rails.application.credentials.dig(:db, :password) %>"),
    ("wp-config-sample.php", "define( 'DB_PASSWORD', 'password_here' );"),
    ("Web.config", "<add name=\"Default\" connectionString=\"Server=.;Database=Shop;Integrated Security=True\" />"),
    ("appsettings.Development.json", "{\"ConnectionStrings\": {\"Default\": \"Server=localhost;Database=Shop;User Id=sa;Password=$(SA_PASSWORD)\"}}"),
    ("inventory/hosts.ini", "[web]\n10.0.1.15 ansible_user=admin ansible_password=\"{{ vault_admin_password }}\""),
    ("scripts/backup.sh", "mysqldump --defaults-extra-file=/etc/mysql/backup.cnf --all-databases > all.sql"),
    ("scripts/deploy.ps1", "$secure = Read-Host -AsSecureString -Prompt 'Service password'"),
    ("terraform.tfvars", "db_password = var.db_password_from_vault"),
    ("Dockerfile", "ARG NPM_TOKEN\nRUN --mount=type=secret,id=npmrc,target=/root/.npmrc npm ci"),
]:
    add("harmless", "placeholder", path, "a placeholder, reference or empty value where a secret would go", line)

# redacted or truncated vendor tokens, and prefixes followed by the wrong body
for vendor, shown, path, tpl in [
    ("Stripe", lambda: "rk_live_" + "•" * 12 + s(AN, 4), "docs/keys.md", "Restricted key: `{t}` (read-only, charges)"),
    ("SendGrid", lambda: "SG." + s(B64U, 5) + "...", "logs/mail.log", "sendgrid: key {t} lacks mail.send scope"),
    ("npm", lambda: "npm_" + "*" * 32 + s(AN, 4), "logs/publish.log", "npm notice using token {t}"),
    ("PyPI", lambda: "pypi-AgEI...", "docs/release.md", "Tokens look like `{t}`; store them in the repository secrets."),
    ("Databricks", lambda: "dapi" + s(HEXL, 4) + "…", "notes/databricks.md", "Old token {t} expired on 2026-01-31."),
    ("Heroku", lambda: "HRKU-AA" + "*" * 10, "logs/cli.log", "heroku: authenticated with {t}"),
    ("HashiCorp Vault", lambda: "hvs.********", "logs/agent.log", "auth.handler: renewed token {t} ttl=768h"),
    ("Terraform Cloud", lambda: s(AN, 4) + "…atlasv1…", "notes/tfc.md", "Team token {t} rotated by the platform team."),
    ("Doppler", lambda: "dp.st.prd.****", "logs/doppler.log", "doppler: service token {t} has read access to prd"),
    ("Linear", lambda: "lin_api_" + "x" * 8, "tests/linear.test.ts", "expect(isLinearKey('{t}')).toBe(false);"),
    ("Discord", lambda: "MTE" + s(AN, 6) + ".*****.*****", "logs/bot.log", "discord: logged in with token {t}"),
    ("Telegram", lambda: s(DG, 10) + ":AA***", "logs/bot.log", "telegram: webhook set for bot {t}"),
    ("DigitalOcean", lambda: "dop_v1_" + s(HEXL, 8), "tests/test_do.py", "assert not DO_TOKEN.fullmatch(\"{t}\")  # 8 hex, real ones have 64"),
    ("Shopify", lambda: "shpat_" + "0" * 32, "tests/fixtures/shop.json", "{{\"access_token\": \"{t}\", \"shop\": \"test-shop.myshopify.com\"}}"),
    ("Atlassian", lambda: "ATATT3xFfGF0…", "docs/jira.md", "API tokens begin with `{t}`; create one under Account settings > Security."),
    ("Grafana", lambda: "glsa_" + "*" * 32 + "_" + s(HEXL, 4), "logs/grafana.log", "service account token {t} used by provisioning"),
    ("New Relic", lambda: "NRAK-" + "X" * 27, "docs/newrelic.md", "export NEW_RELIC_API_KEY={t}"),
    ("Sentry", lambda: "sntryu_" + s(HEXL, 6) + "…", "logs/ci.log", "sentry-cli: using auth token {t}"),
    ("Square", lambda: "EAAA" + "•" * 8, "docs/square.md", "Production tokens start with `{t}` and are shown once."),
    ("Okta", lambda: "00" + s(AN, 4) + "...", "logs/okta.log", "okta: SSWS token {t} deactivated"),
    ("Postman", lambda: "PMAK-" + s(HEXL, 6) + "-****", "docs/postman.md", "The CI key is {t}; it lives in the vault."),
    ("Pulumi", lambda: "pul-" + s(HEXL, 6), "tests/test_tokens.py", "assert classify(\"{t}\") is None  # too short for a Pulumi token"),
    ("Supabase", lambda: "sbp_" + "•" * 10, "docs/supabase.md", "Access token: {t} (generated 2026-02-03)"),
    ("Hugging Face", lambda: "hf_" + s(LO, 6) + "…", "logs/train.log", "huggingface_hub: token {t} has write access"),
    ("Cloudflare", lambda: s(AN, 4) + "…" + s(AN, 4), "docs/cloudflare.md", "Zone token ending {t} can only purge cache."),
    ("Azure DevOps", lambda: "****" + s(B32L, 4), "logs/pipeline.log", "az devops: PAT {t} expires in 3 days"),
    ("Airtable", lambda: "pat" + s(AN, 4) + "…", "docs/airtable.md", "Personal access tokens look like `{t}` followed by a dot and 64 hex characters."),
    ("CircleCI", lambda: "CCIPAT_" + "*" * 10, "logs/circleci.log", "circleci: token {t} lacks project scope"),
    ("Buildkite", lambda: "bkua_" + s(HEXL, 4) + "…", "logs/bk.log", "buildkite: API token {t} revoked"),
    ("Docker Hub", lambda: "dckr_pat_" + "*" * 6, "logs/docker.log", "Login Succeeded (token {t})"),
    ("SonarQube", lambda: "squ_" + "x" * 40, "sonar-project.properties.example", "sonar.token={t}"),
    ("Mapbox", lambda: "sk.eyJ1Ijoi…", "docs/maps.md", "Secret tokens start with `{t}`; keep them on the server."),
    ("Twitch", lambda: "oauth:" + "*" * 30, "logs/chat.log", "irc: PASS {t}"),
    ("Meta", lambda: "EAAM" + s(AN, 6) + "…", "logs/social.log", "graph: page token {t} expired"),
    ("LinkedIn", lambda: "WPL_AP1.****", "docs/linkedin.md", "Client secrets now begin with `{t}`."),
    ("Adobe", lambda: "p8e-" + "*" * 8, "logs/pdf.log", "adobe: client secret {t} accepted"),
    ("1Password", lambda: "ops_eyJ…", "docs/1password.md", "Service account tokens start with `{t}`; put them in the CI secret store."),
    ("Tailscale", lambda: "tskey-auth-…", "docs/tailscale.md", "Generate an auth key (`{t}`) under Settings > Keys."),
    ("Render", lambda: "rnd_" + s(AN, 4) + "…", "docs/render.md", "The deploy key shown as {t} belongs to the release bot."),
    ("Netlify", lambda: "nfp_" + "*" * 8, "logs/netlify.log", "netlify: deploy authorised with {t}"),
]:
    add("harmless", "near-miss", path, "vendor:%s token redacted, truncated or with a wrong-length body" % vendor, tpl.format(t=shown()))

# more values that look random and are not secrets
for path, src, text in [
    ("Chart.lock", "Helm Chart.lock digest", "dependencies:\n- name: postgresql\n  repository: oci://registry-1.docker.io/bitnamicharts\n  version: 15.5.38\ndigest: sha256:%s\ngenerated: \"2026-02-01T10:12:44Z\"" % s(HEXL, 64)),
    ("gradle/verification-metadata.xml", "Gradle dependency verification sha256", "<component group=\"com.google.guava\" name=\"guava\" version=\"33.3.1-jre\">\n  <artifact name=\"guava-33.3.1-jre.jar\">\n    <sha256 value=\"%s\" origin=\"Generated by Gradle\"/>\n  </artifact>\n</component>" % s(HEXL, 64)),
    ("vcpkg.json.lock", "vcpkg SHA512 of a source archive", "vcpkg_from_github(\n    OUT_SOURCE_PATH SOURCE_PATH\n    REPO fmtlib/fmt\n    REF 11.0.2\n    SHA512 %s\n)" % s(HEXL, 128)),
    ("conda-lock.yml", "conda-lock package hashes", "- name: numpy\n  version: 2.1.2\n  hash:\n    md5: %s\n    sha256: %s" % (s(HEXL, 32), s(HEXL, 64))),
    ("maven/guava-33.3.1-jre.jar.sha1", "Maven artifact .sha1 file", s(HEXL, 40)),
    ("Dockerfile", "download checksum verified in a Dockerfile", "ARG KUBECTL_SHA256=%s\nRUN curl -fsSLo /usr/local/bin/kubectl https://dl.k8s.io/release/v1.31.1/bin/linux/amd64/kubectl \\\n && echo \"${KUBECTL_SHA256}  /usr/local/bin/kubectl\" | sha256sum -c -" % s(HEXL, 64)),
    ("docker-compose.yml", "compose images pinned by digest", "services:\n  proxy:\n    image: traefik:v3.1@sha256:%s\n  cache:\n    image: redis:7.4@sha256:%s" % (s(HEXL, 64), s(HEXL, 64))),
    ("logs/git.log", "git log --oneline output", "\n".join("%s %s" % (s(HEXL, 7), m) for m in ["fix: handle empty cart", "chore: bump eslint", "feat: export csv"])),
    ("logs/s3-put.log", "ETag and version id from an S3 upload", "ETag: \"%s\"\nx-amz-version-id: %s" % (s(HEXL, 32), s(AN + "._", 32))),
    ("logs/http.log", "Content-MD5 and ETag response headers", "Content-MD5: %s\nETag: W/\"%s\"" % (sb64(16), s(HEXL, 40))),
    ("config/kafka.properties", "Kafka cluster id", "cluster.id=%s\nprocess.roles=broker,controller" % s(B64U, 22)),
    ("mysql/auto.cnf", "MySQL server_uuid", "[auto]\nserver-uuid=%s" % str(uuid.UUID(int=S.getrandbits(128), version=1))),
    ("logs/ssh-keygen.txt", "ssh-keygen -l fingerprint output", "256 SHA256:%s deploy@ci (ED25519)" % s(B64, 43)),
    ("certs/info.txt", "certificate serial, SKI and AKI", "Serial Number: %s\nX509v3 Subject Key Identifier: %s\nX509v3 Authority Key Identifier: %s" % (":".join(s(HEXL, 2) for _ in range(16)), ":".join(s(HEXU, 2) for _ in range(20)), ":".join(s(HEXU, 2) for _ in range(20)))),
    ("dns/zone.db", "DNSSEC DS record digest", "corp.example. 3600 IN DS %d 13 2 %s" % (S.randint(1000, 65000), s(HEXU, 64))),
    ("dns/zone.db", "SSHFP records", "bastion IN SSHFP 4 2 %s\nbastion IN SSHFP 1 2 %s" % (s(HEXL, 64), s(HEXL, 64))),
    ("dns/zone.db", "DKIM public key TXT record", "sel1._domainkey IN TXT \"v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA%s\"" % s(B64, 340)),
    ("nginx/hpkp.conf", "public key pins (pin-sha256 of public keys)", "add_header Public-Key-Pins 'pin-sha256=\"%s=\"; pin-sha256=\"%s=\"; max-age=5184000';" % (s(B64, 43), s(B64, 43))),
    ("config/cosign.pub", "cosign public key", pem("PUBLIC KEY", "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE", 124)),
    ("config/sigstore.json", "signature bundle (public signature and certificate)", "{\"base64Signature\": \"%s\", \"cert\": \"%s\"}" % (sb64(72), b64s(pem("CERTIFICATE", "MIICzjCCAlSgAwIBAgIU", 980)))),
    ("public/manifest.json", "asset manifest with content hashes", "{\"main.js\": \"/assets/main-%s.js\", \"vendor.js\": \"/assets/vendor-%s.js\", \"main.css\": \"/assets/main-%s.css\"}" % (s(AN, 8), s(AN, 8), s(AN, 8))),
    ("public/assets/app.css", "Rails/Sprockets digested asset path", "background-image: url(/assets/hero-%s.jpg);" % s(HEXL, 64)),
    ("logs/sentry.log", "Sentry event and release ids", "event_id=%s release=orders@%s" % (s(HEXL, 32), s(HEXL, 40))),
    ("fixtures/orders.csv", "order ids and UUIDs in a CSV fixture", "order_id,customer_id,total\n%s,%s,42.10\n%s,%s,13.99" % (ulid(), suuid(), ulid(), suuid())),
    ("db/schema.sql", "UUID column defaults and a seed row", "INSERT INTO tenants (id, slug) VALUES ('%s', 'acme');" % suuid()),
    ("logs/build.log", "build and cache keys", "restoring cache key: node-modules-linux-%s\nbuild id: %s" % (s(HEXL, 64), s(LO + DG, 20))),
    ("tests/snapshots/api.snap", "snapshot with generated ids", "exports[`create order 1`] = `\n{\n  \"id\": \"%s\",\n  \"etag\": \"%s\"\n}\n`;" % (suuid(), s(HEXL, 32))),
    ("Gopkg.lock", "dep lock digest", "[[projects]]\n  digest = \"1:%s\"\n  name = \"github.com/pkg/errors\"\n  revision = \"%s\"" % (s(HEXL, 64), s(HEXL, 40))),
    ("mix.lock", "Elixir mix.lock hashes", "  \"jason\": {:hex, :jason, \"1.4.4\", \"%s\", [:mix], [], \"hexpm\", \"%s\"}," % (s(HEXL, 64), s(HEXL, 64))),
    ("Package.resolved", "SwiftPM resolved revisions", "{\"identity\": \"swift-log\", \"state\": {\"revision\": \"%s\", \"version\": \"1.6.1\"}}" % s(HEXL, 40)),
    ("pubspec.lock", "Dart pubspec.lock sha256", "  http:\n    dependency: direct main\n    description:\n      name: http\n      sha256: \"%s\"\n    version: \"1.2.2\"" % s(HEXL, 64)),
    ("flake.nix", "fixed-output derivation hash", "src = fetchFromGitHub {\n  owner = \"acme\";\n  repo = \"cli\";\n  rev = \"v2.4.1\";\n  hash = \"sha256-%s=\";\n};" % s(B64, 43)),
    ("config/otel.yaml", "OpenTelemetry ids in a sample span", "span:\n  trace_id: %s\n  span_id: %s\n  parent_span_id: %s" % (s(HEXL, 32), s(HEXL, 16), s(HEXL, 16))),
    ("analytics/ga.html", "analytics measurement and container ids", "<script async src=\"https://www.googletagmanager.com/gtag/js?id=G-%s\"></script>\n<!-- GTM-%s -->" % (s(UP + DG, 10), s(UP + DG, 7))),
    ("config/backup.yml", "restic repository id and snapshot ids", "restic:\n  repository_id: %s\n  last_snapshots: [%s, %s]" % (s(HEXL, 64), s(HEXL, 8), s(HEXL, 8))),
    ("docs/adr/0007-ids.md", "example ids of the formats we use", "We use ULIDs (`%s`) for events and UUIDv4 (`%s`) for tenants." % (ulid(), suuid())),
    ("config/ldap.yml", "password key whose value is a file path", "ldap:\n  bind_dn: cn=svc-portal,ou=services,dc=corp,dc=internal\n  bind_password_file: /etc/portal/ldap.pw"),
    ("config/db.yml", "password key referring to a Vault path", "database:\n  password: vault:kv/data/prod/orders#password\n  password_rotation_days: 30"),
]:
    add("harmless", "benign-entropy", path, src, text)

print("# label\tkind\tpath\tsource\tsample (\\n = newline). Generated by generate.py (seed 18); secrets are random in the vendor's alphabet.")
for r in rows:
    assert "\t" not in r[4] and "\n" not in r[4], r
    print("\t".join(r))
