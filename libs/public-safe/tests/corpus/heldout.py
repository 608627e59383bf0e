#!/usr/bin/env python3
"""The held-out set (heldout.tsv beside this file): samples written for
csis after the scanner was tuned on corpus.tsv, measured and never tuned
against.

Every sample is written here. Secrets are realistic placements (a curl
command, a Kubernetes Secret, a config line) around values drawn at random
from a fixed seed, so no real credential is in the file; harmless samples
are the look-alikes such places also hold (placeholders, variable
references, templated values, encrypted blobs, tildes in URLs). The
`source` column says what each sample is.

`python3 heldout.py > heldout.tsv`; columns as corpus.tsv.
"""
import base64
import random
import string
import uuid

R = random.Random(3131)
AN = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def rnd(a, n):
    return "".join(R.choice(a) for _ in range(n))


def pw():
    return rnd(AN, R.randint(11, 15)) + R.choice("!#%@^") + rnd(AN, R.randint(3, 5))


def uid():
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def b64(s):
    return base64.b64encode(s.encode()).decode()


rows = []


def add(label, kind, path, source, text):
    rows.append((label, kind, path, source, text.replace("\n", "\\n").replace("\t", "\\t")))


# curl with a user and a real-looking password
for t in [
    "curl -u backup-bot:{p} https://nas.internal.example:5001/api/snapshots",
    "curl --user 'metrics:{p}' -X POST https://influx.example.net/write?db=plant --data-binary @points.txt",
    'curl -fsS -u "deploy@example.org:{p}" https://artifacts.example.org/upload/app-2.4.tgz -T app-2.4.tgz',
    "curl -k -u admin:{p} https://10.20.0.5:8443/api/v1/nodes",
    "  curl --silent \\\n    --user ci:{p} \\\n    https://registry.example.io/v2/_catalog",
    "curl -X DELETE --user 'ops-team:{p}' https://es.example.com:9200/logs-2024.01.*",
    "curl ftp://files.example.com/drop/ --user uploader:{p} -T report.csv",
    "RUN curl -u builder:{p} -o /tmp/sdk.tar.gz https://downloads.example.dev/sdk/latest.tar.gz",
    "curl --basic --user \"svc_reports:{p}\" https://bi.example.com/rest/export?format=csv",
]:
    add("secret", "curl-basic-auth", "scripts/call.sh", "curl command passing user:password (random password)", t.format(p=pw()))

# curl with a token in a header
for t in [
    'curl -H "Authorization: Bearer {a}" https://api.example.com/v3/projects',
    "curl -s -H 'X-API-Key: {u}' https://status.example.net/api/incidents",
    'curl --header "PRIVATE-TOKEN: {g}" https://git.example.org/api/v4/projects/42/jobs',
    'curl -H "Authorization: Token {h}" -X POST https://hooks.example.io/trigger/nightly',
    'curl -sS \\\n  -H "Authorization: Basic {b}" \\\n  https://jira.example.com/rest/api/2/myself',
    "curl -H 'x-auth-token: {h}' https://monitor.example.com/api/hosts?limit=50",
    'curl -X PUT -H "Content-Type: application/json" -H "Api-Key: {u}" -d @rule.json https://alerts.example.net/v1/rules/7',
    'curl "https://maps.example.com/api/geocode?q=Main+St" -H "Authorization: Bearer {a}"',
    "# refresh the cache\ncurl -fsSL -H \"X-Access-Token: {h}\" https://cdn-admin.example.com/purge/all",
]:
    add("secret", "curl-auth-header", "scripts/call.sh", "curl command with a token in a header (random token)",
        t.format(a=rnd(AN + "-_.", 48), u=uid(), g="glpat-" + rnd(AN + "-_", 20), h=rnd(HEX, 40),
                 b=b64("svc-jira:" + pw())))

# curl that only names where credentials would go
for t in [
    "curl -u user:password https://api.example.com/health",
    'curl -u "$API_USER:$API_PASS" https://api.example.com/v1/items',
    "curl --user ${DEPLOY_USER}:${DEPLOY_PASSWORD} https://deploy.example.com/hooks/run",
    'curl -u "$(cat /run/secrets/user):$(cat /run/secrets/pass)" https://vault.example.com/ping',
    "curl -u <username>:<password> https://example.com/api",
    "curl --user 'alice:changeme' http://localhost:8080/login   # local dev only",
    "curl -u : --negotiate https://intranet.example.com/",
    'curl -u "{{ .Values.auth.user }}:{{ .Values.auth.password }}" http://svc:8080/ready',
    "curl -u \"${{ secrets.REG_USER }}:${{ secrets.REG_TOKEN }}\" https://registry.example.io/v2/",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/me',
    'curl -H "Authorization: Bearer ${ACCESS_TOKEN}" https://api.example.com/me',
    "curl -H 'Authorization: Bearer <your-token-here>' https://api.example.com/me",
    'curl -H "Authorization: Bearer $(gh auth token)" https://api.example.com/user',
    'curl -H "X-API-Key: YOUR_API_KEY" "https://weather.example.com/v1/forecast?city=Oslo"',
    "curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' http://localhost:9000   # user:password",
    'curl -H "Authorization: Token xxxxxxxxxxxxxxxxxxxxxxxx" https://example.com/api',
    'curl --fail --user "$1:$2" --output "$out" "$url"',
    'curl -u "%USERNAME%:%PASSWORD%" https://share.example.com/file.zip',
    "curl --netrc-file ~/.netrc https://downloads.example.com/private/tool.tgz",
    "curl -u guest:guest http://rabbitmq:15672/api/overview",
    'curl -u "test:test" https://httpbin.example.org/basic-auth/test/test',
    "curl --digest -u demo:demo http://localhost:8081/digest-area",
    'curl -H "Authorization: Bearer ..." https://api.example.com/items',
    'curl -H "Authorization: Bearer $(az account get-access-token --query accessToken -o tsv)" https://management.example.net/jobs/3f2a1c7e-0b9d-4e8a-9c51-7d2e6b4f0a13/status',
]:
    add("harmless", "curl-placeholder", "scripts/call.sh", "curl command with placeholders or variable references", t)

# Kubernetes Secrets holding base64 of random passwords
for name, t in [
    ("db-secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: orders-db\ntype: Opaque\ndata:\n  username: {u}\n  password: {p}\n"),
    ("quoted.yaml", 'apiVersion: "v1"\nkind: "Secret"\nmetadata:\n  name: "smtp-relay"\ndata:\n  password: "{p}"\n'),
    ("tabs.yml", "apiVersion: v1\nkind: Secret\nmetadata:\n\tname: cache-auth\ndata:\n\tredis-password: {p}\n"),
    ("commented.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-keys\n  namespace: payments\ndata:\n  # printf %s \"$KEY\" | base64\n  api-key: {p}\n"),
    ("docker-literal.yaml", "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\nmetadata:\n  name: pull-secret\ndata:\n  .dockerconfigjson: |\n    {d}\n"),
    ("docker-folded.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: pull-secret-b\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: >\n    {d}"),
    ("data-first.yml", "apiVersion: v1\ndata:\n  token: {p}\nkind: Secret\nmetadata:\n  name: webhook-token\ntype: Opaque"),
]:
    d = b64('{"auths":{"registry.example.io":{"auth":"%s"}}}' % b64("robot:" + pw()))
    add("secret", "kubernetes-secret", "k8s/" + name, "Kubernetes Secret with base64 data (random values)",
        t.format(u=b64("svc_" + rnd(string.ascii_lowercase, 6)), p=b64(pw()), d=d))

# Kubernetes objects that look like Secrets but hold nothing
for name, t in [
    ("empty.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: filled-later\ntype: Opaque\ndata:\n  password: \"\"\n"),
    ("helm.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ include \"app.fullname\" . }}\ndata:\n  password: {{ .Values.db.password | b64enc | quote }}\n"),
    ("external.yaml", "apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nmetadata:\n  name: db-creds\nspec:\n  refreshInterval: 1h\n  secretStoreRef:\n    name: vault-backend\n    kind: ClusterSecretStore\n  data:\n    - secretKey: password\n      remoteRef:\n        key: prod/db\n        property: password\n"),
    ("configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-settings\ndata:\n  LOG_LEVEL: info\n  PASSWORD_MIN_LENGTH: \"12\"\n  TOKEN_TTL: 15m\n"),
    ("short.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: feature-flag\ndata:\n  enabled: dHJ1ZQ==\n"),
    ("kustomize.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nsecretGenerator:\n  - name: app-env\n    envs:\n      - secrets.env\n"),
    ("sops.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sops-managed\ndata:\n  password: ENC[AES256_GCM,data:{e1},iv:{iv},tag:{tag},type:str]\nsops:\n  age:\n    - recipient: age1{age}\n  lastmodified: \"2025-03-02T09:14:00Z\"\n"),
    ("sealed.yaml", "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: sealed-db\nspec:\n  encryptedData:\n    password: AgB{sealed}\n"),
    ("string-ref.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: worker\nspec:\n  containers:\n    - name: app\n      env:\n        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              name: orders-db\n              key: password\n"),
]:
    t = t.format(e1=b64(rnd(AN, 12)), iv=b64(rnd(AN, 24)), tag=b64(rnd(AN, 12)),
                 age=rnd("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58), sealed=rnd(AN + "+/", 180)) if "{e1}" in t or "{sealed}" in t else t
    add("harmless", "kubernetes-non-secret", "k8s/" + name, "Kubernetes object with no secret value (empty, templated, referenced or encrypted)", t)


def az():
    return rnd(AN + "_~.", 3) + R.choice(string.digits) + "Q~" + rnd(AN + "_~.-", R.randint(31, 34))


# Azure AD application client secrets
for t in [
    "AZURE_CLIENT_SECRET={s}",
    "azure_client_secret: \"{s}\"",
    '  "ClientSecret": "{s}",',
    'client_secret = "{s}"',
    "$clientSecret = '{s}'",
    "spring.cloud.azure.credential.client-secret={s}",
    "export ARM_CLIENT_SECRET='{s}'",
    "<add key=\"ida:ClientSecret\" value=\"{s}\" />",
    "secret: {s}  # app registration 'billing-sync'",
    "az login --service-principal -u 0a1b2c3d-aaaa-bbbb-cccc-1234567890ab -p '{s}' --tenant contoso.example",
]:
    add("secret", "azure-ad-client-secret", "cfg/azure.txt", "Azure AD application client secret in a config line (random)", t.format(s=az()))

# tildes and Q~ where no secret is
for t in [
    "See ~/projects/app/README.md and ~alice/notes before you start.",
    "~~Deprecated:~~ use the v2 endpoint instead.",
    ".menu > li ~ li { border-left: 1px solid #ddd }",
    "requests~=2.31",
    "\"version\": \"~4.17.21\"",
    "https://example.edu/~jsmith/papers/2019~draft~final.pdf",
    "AZURE_CLIENT_SECRET=<client-secret-from-portal>",
    "client_secret: xxxQ~xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "===~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~===",
]:
    add("harmless", "azure-look-alike", "cfg/azure.txt", "text with tildes or a client-secret placeholder", t)

# assignments to secret-named keys, random values
for t, path in [
    ('dbPassword := "{v}"', "main.go"),
    ("password: {v}", "config/app.yml"),
    ('"api_secret": "{v}"', "config/app.json"),
    ("SMTP_PASSWORD={v}", ".env"),
    ("self.secret_key = '{v}'", "settings.py"),
    ("const authToken = \"{v}\";", "client.js"),
    ("    passwd = {v}", "setup.cfg"),
    ("$db_pass = '{v}';", "config.php"),
    ("private static final String API_KEY = \"{v}\";", "Client.java"),
    ("secret_token = \"{v}\"", "config/secrets.toml"),
    ("<password>{v}</password>", "settings.xml"),
    ("ADMIN_PASS=\"{v}\" ./bootstrap.sh", "run.sh"),
    ("config.access_key = '{v}'", "initializer.rb"),
    ("  apiKey: '{v}',", "firebase.ts"),
    ("set -x MAIL_PASSWORD {v}", "config.fish"),
]:
    add("secret", "keyword-layout", path, "a secret-named key assigned a random value", t.format(v=pw()))

# secret-named keys with no secret in them
for t, path in [
    ('password = ""', "app.py"),
    ("password: ''", "config/app.yml"),
    ('api_key = os.environ["API_KEY"]', "app.py"),
    ("password: ${DB_PASSWORD}", "config/app.yml"),
    ("secret_key = get_secret('django')", "settings.py"),
    ("token := r.Header.Get(\"X-Token\")", "server.go"),
    ("const password = process.env.PASSWORD;", "db.js"),
    ("password = None", "models.py"),
    ("if password == confirm_password:", "forms.py"),
    ("def check_password(self, password):", "auth.py"),
    ("password_field = forms.CharField(widget=forms.PasswordInput)", "forms.py"),
    ('"password": "<PASSWORD>"', "docs/example.json"),
    ("api_key: YOUR_API_KEY_HERE", "README.md"),
    ('secret = "changeme"', "config.example.toml"),
    ("token: !vault |", "group_vars/all.yml"),
    ("$password = $_POST['password'];", "login.php"),
    ("passwordMinLength: 12", "policy.yml"),
    ("api_key = settings.API_KEY", "client.py"),
    ("user.password = hash(password)", "service.py"),
    ("PASSWORD_HASHERS = [", "settings.py"),
    ("private_key_path: /etc/ssl/private/site.key", "nginx.yml"),
    ("auth_token = None  # filled in by login()", "session.py"),
    ("secret: true", "schema.yml"),
    ('let token = "";', "app.swift"),
]:
    add("harmless", "keyword-negative", path, "a secret-named key with an empty, referenced or placeholder value", t)

# unlabelled high-entropy strings
add("secret", "hex-high-entropy", "cfg/x.txt", "a random 32-digit hex string on its own", '  - "%s"' % rnd(HEX, 32))
add("secret", "base64-high-entropy", "cfg/x.txt", "a random base64url string on its own", '"%s="' % rnd(AN + "-_", 79))
add("secret", "base64-high-entropy", "cfg/x.txt", "a random base64 string on its own", rnd(AN + "+/", 64))
for t, what in [
    ("'bbbbbbbbbbbb'", "a repeated letter"),
    ('"%s"' % b64("nothing to see in this sentence"), "base64 of a plain sentence"),
    ("'K7x-2mQp'", "a short mixed identifier"),
    (b64("the quick brown fox jumps over the lazy dog again and again"), "base64 of a longer English sentence"),
]:
    add("harmless", "entropy-negative", "cfg/x.txt", what, t)

print("# label\tkind\tpath\tsource\tsample (\\n = newline, \\t = tab). Held out: generated by heldout.py (seed 3131); measured, not tuned against.")
for r in rows:
    assert "\t" not in r[4], r
    print("\t".join(r))
