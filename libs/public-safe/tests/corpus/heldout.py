#!/usr/bin/env python3
"""A held-out set (heldout.tsv beside this file), written after the scanner
was tuned on corpus.tsv and measured once, not tuned against.

Harmless samples are copied verbatim from published false-positive tests;
secrets keep the published true-positive layouts with fresh random values
(never a copied key). Sources:

  gitleaks:curl.go, gitleaks:kubernetes.go, gitleaks:azure.go
      gitleaks/gitleaks cmd/generate/config/rules/<file> (TPs and FPs)
  detect-secrets:keyword_test.py, detect-secrets:high_entropy_strings_test.py
      Yelp/detect-secrets tests/plugins/<file>

`python3 heldout.py > heldout.tsv`; columns as corpus.tsv.
"""
import random
import string
import uuid

R = random.Random(1818)
AN = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def rnd(a, n):
    return "".join(R.choice(a) for _ in range(n))


def pw():
    return rnd(AN, R.randint(10, 16)) + R.choice("!#%@") + rnd(AN, 3)


def uid():
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


rows = []


def add(label, kind, path, source, text):
    rows.append((label, kind, path, source, text.replace("\n", "\\n").replace("\t", "\\t")))


C = "gitleaks:curl.go"
for t in [
    "curl --cacert ca.crt -u elastic:{p} https://localhost:9200",
    "sh-5.0$ curl -k -X POST https://infinispan:11222/rest/v2/caches/default/hello \\\n  -H 'Content-type: text/plain' \\\n  -d 'world' \\\n  -u developer:{p}",
    'curl -u ":{p}" https://localhost:9200',
    "curl -sw '%{{http_code}}' -X POST --user  'johns:{p}' $GItHUB_API_URL/$GIT_COMMIT --data",
    "curl --user roger23@gmail.com:{p} https://www.dropbox.com/cli_link?host_id=abcdefg -v",
    "curl -s --user 'api:{p}' \\\n    https://api.mailgun.net/v2/sandbox91d3515882ecfaa1c65be642.mailgun.org/messages",
    'curl -s -v --user "j.smith:{p}" "https://api.contoso.org/user/me"',
    "curl --user kevin:'{p}' -iX PATCH -H \"Content-Type: application/json\" -d",
    "$ curl https://api.dropbox.com/oauth2/token \\\n  --user c28wlsosanujy2z:{p} --data grant_type=authorization_code",
]:
    add("secret", "curl-basic-auth", "scripts/call.sh", C + " (TP layout, value regenerated)", t.format(p=pw()))
for t in [
    "curl --header  'Authorization:  {u}'",
    "curl -H 'Authorization: Basic {b}' \\",
    '# curl -X GET "http://localhost:3000/api/cron/status" -H "Authorization: Bearer {h}"',
    'curl -H "Authorization: Api-Token {h}" --request PUT https://appsecclass.report/api/use/635',
    'curl -H "Authorization: Token {h}" --request PUT https://appsecclass.report/api/use/635',
    'curl -X GET \\\n     -H "apikey: {u}" \\\n     -H "Accept: application/json" \\',
    'curl -XPOST http://localhost:8080/api/tasks -H "Token: {s}" -d "content=hello-curl"',
    'curl -X GET https://octopus.corp.net/\n     -H "X-Octopus-ApiKey: {u}" \\',
    'curl -X GET "https://api.cloudflare.com/client/v4/user/tokens/verify" \\\n     -H "Authorization: Bearer {c}" \\\n     -H "Content-Type:application/json"',
]:
    add("secret", "curl-auth-header", "scripts/call.sh", C + " (TP layout, value regenerated)",
        t.format(u=uid(), b=rnd(AN, 40), h=rnd(HEX, 40), s=rnd(HEX, 16), c=rnd(AN + "_", 40)))
for t in [
    "curl -i -u 'test:test'",
    '   curl -sL --user "$1:$2" "$3" > "$4"',
    "curl -u <user:password> https://test.com/endpoint",
    "curl --user neo4j:[PASSWORD] http://[IP]:7474/db/data/",
    'curl -u "myusername" http://localhost:15130/api/check_user/',
    "curl -u username:token",
    'curl -u "${_username}:${_password}"',
    'curl -u "${username}":"${password}"',
    'curl -k -X POST -I -u "SRVC_JENKINS:${APPID}"',
    'curl -u ":" https://localhost:9200',
    "curl -sw '%{http_code}' -X POST --user '$USERNAME:$PASSWORD' $GItHUB_API_URL/$GIT_COMMIT --data",
    'curl --user "xxx:yyy"',
    'curl --silent --fail {{- if and $.Values.username $.Values.password }} --user "{{ $.Values.username }}:{{ $.Values.password }}"',
    'curl -XGET -i -u "${{ env.ELK_ID }}:${{ build.env.ELK_PASS }}"',
    'curl -X POST --user "$(cat ./login.txt):$(cat ./password.txt)"',
    "curl http://127.0.0.1:5000/file --user user:pass --digest        # digest auth",
    '   curl -X GET --insecure --user "username:password" \\',
    "curl --silent --insecure --user ${f5user}:${f5pass} \\",
    'curl https://example.com/micropub -d h=entry -d "content=Hello World" -H "Authorization: Bearer XXXXXXXXXXXX"',
    'curl -X POST https://accounts.spotify.com/api/token -d grant_type=client_credentials --header "Authorization: Basic ..."',
    'curl \\\n  -H "Authorization: Bearer <Openverse API token>" \\\n  "https://api.openverse.org/v1/audio/?q=test"',
    'curl -XPOST http://localhost:8080/api/token -H "Authorization: basic {base64(email:password[\\n])}" => token',
    'curl -X GET \\\n     -H "apikey: $API_KEY" \\\n     -H "Accept: $FORMAT" \\\n"$API_URL/rest/v1/stats_derniere_labellisation"',
    'curl -X GET -H "Content-Type: application/json" -H "Authorization: Bearer $(gcloud auth print-access-token)" https://workflowexecutions.googleapis.com/v1/projects/244283331594/locations/us-central1/workflows/sample-workflow/executions/43c925aa-514a-44c1-a0a4-a9f8f26fd2cb/callbacks/1705791f-d446-4e92-a6d0-a13622422e80_31864a51-8c13-4b03-ad4d-945cdc8d0631',
]:
    add("harmless", "curl-placeholder", "scripts/call.sh", C + " (FP, verbatim)", t)

K = "gitleaks:kubernetes.go"
for name, t in [
    ("comment.yaml", 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: heketi-secret\n  namespace: default\ndata:\n  # base64 encoded password. E.g.: echo -n "mypassword" | base64\n  key: bXlwYXNzd29yZA=='),
    ("before-kubernetes.yml", "apiVersion: v1\ndata:\n\tpassword: UyFCXCpkJHpEc2I9\n\tusername: YWRtaW4=\nkind: Secret\nmetadata:\n\tname: db-user-pass\ntype: Opaque"),
    ("before-quoted-1.yaml", "apiVersion: 'v1'\ndata:\n\textra: 'YWRtaW46cGFzc3dvcmQ='\nkind: 'Secret'\nmetadata:\n\tname: 'secret-sa-sample'"),
    ("before-multiline-literal.yaml", "apiVersion: v1\ndata:\n  .dockercfg: |\n    eyJhdXRocyI6eyJodHRwczovL2V4YW1wbGUvdjEvIjp7ImF1dGgiOiJvcGVuc2VzYW1lIn19fQo=\nmetadata:\n  name: secret-dockercfg\ntype: kubernetes.io/dockercfg\nkind: Secret\n"),
    ("after-kubernetes.yaml", "apiVersion: v1\nkind: secret\ndata:\n\textra: YWRtaW46cGFzc3dvcmQ=\nmetadata:\n\tname: secret-sa-sample"),
    ("after-quoted-2.yaml", 'apiVersion: "v1"\nkind: "Secret"\ndata:\n\tpassword: "UyFCXCpkJHpEc2I9"\n\tusername: "YWRtaW4="\nmetadata:\n\tname: "db-user-pass"'),
    ("after-multiline-folded.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-dockercfg\ntype: kubernetes.io/dockercfg\ndata:\n  .dockercfg: >\n    eyJhdXRocyI6eyJodHRwczovL2V4YW1wbGUvdjEvIjp7ImF1dGgiOiJvcGVuc2VzYW1lIn19fQo="),
]:
    add("secret", "kubernetes-secret", "k8s/" + name, K + " (TP, verbatim: test values)", t)
for name, t in [
    ("empty-quotes1.yml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: registry-auth-data\ntype: Opaque\ndata:\n  htpasswd: ''\n"),
    ("overly-permissive1.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: registry-auth-data\ntype: Opaque\ndata:\n  htpasswd: {{ htpasswd }}\n---\napiVersion: v1\n                          kind: ReplicationController"),
    ("sopssecret.yaml", "apiVersion: isindir.github.com/v1alpha3\nkind: SopsSecret\nmetadata:\n    name: app1-sopssecret\nspec:\n    secretTemplates:\n    -   name: ENC[AES256_GCM,data:W3PiZ6lD6bpfAdI=,iv:2qF98ZkchgfWF4tZo8fok6zY0ZLNRV3wFpl8n2iyC7I=,tag:FzoL+CZHkLEqfWKniRApBA==,type:str]\n        stringData:\n            db-password: ENC[AES256_GCM,data:O+5l4g==,iv:c/dS4BCBMbnKsXYuzBuCuVQt8RV9bOv5HgdpL+iwmns=,tag:KkQfh6OymvCt4uC13p318g==,type:str]\nsops:\n    kms: []\n    lastmodified: '2021-10-21T10:56:37Z'\n    mac: ENC[AES256_GCM,data:Tl1V1PuI5tZ0Hu3qxxzpDNeKQkuW0g/x/Mlp1yM6HaBqDr+r2FukLdYSYqjjJ3A8g+YkpvMib50M7j0V7zoX9sgCvMKEg86pRsWtThv8n/L+bsjClVTqnhJ9nfYlaPOMlvggbiMOE5hXPIuVz8WXYoVYJ2cVNCd/GfwOraUmj7I=,iv:n7HVI13okfbW3FS/ZsJ2GNmibudxc/TlkLa3umQQ+vc=,tag:R4ikep1wlxlDWlODJqFHHw==,type:str]\n        fp: 73019E949C1D3C3D1BE8B718C7CD51A565AB592C"),
    ("before-min-length.yaml", "apiVersion: v1\ndata:\n\textra: YmFyCg==\nkind: secret\nmetadata:\n\tname: secret-sa-sample"),
    ("before-template.yaml", "apiVersion: v1\n data:\n \tpassword: {{ .Values.Password }}\n kind: secret\n metadata:\n \tname: secret-sa-sample"),
    ("after-externalsecret1.yml", "apiVersion: 'kubernetes-client.io/v1'\nkind: ExternalSecret\nmetadata:\n  name: actions-exporter\nspec:\n  backendType: secretsManager\n  data:\n    - key: MySecretManagerKey\n      name: github_token\n      property: github_token"),
    ("after-externalsecret2.yml", "apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nmetadata:\n  name: api-key\nspec:\n  secretStoreRef:\n    kind: ClusterSecretStore\n    name: aws-secretsmanager\n  data:\n    - secretKey: api-key\n      remoteRef:\n        key: my-secrets-manager-secret"),
    ("after-sopssecret.yml", "apiVersion: isindir.github.com/v1alpha3\nkind: SopsSecret\nmetadata:\n  name: sopssecret-sample\nspec:\n  secretTemplates:\n    - name: my-secret-name-0\n      stringData:\n        data-name0: data-value0\n      data:\n        data-name1: ZGF0YS12YWx1ZTE="),
    ("after-empty-data.yaml", 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: kubernetes-dashboard-csrf\ntype: Opaque\ndata:\n  csrf: ""\n'),
]:
    add("harmless", "kubernetes-non-secret", "k8s/" + name, K + " (FP, verbatim)", t)

A = "gitleaks:azure.go"


def az():
    return rnd(AN + "_~.", 3) + R.choice(string.digits) + "Q~" + rnd(AN + "_~.-", R.randint(31, 34))


for t in [
    "client_secret={s}", "client_secret: {s}", "AUTH_CLIENTSECRET = {s}", '<value xsi:type="xsd:string">{s}</value>',
    '"CLIENT_SECRET": "{s}"', "Set-PSUAuthenticationMethod -Type 'OpenIDConnect' -ClientId 'fake' -ClientSecret '{s}'",
    'client-secret: "{s}"', '"cas.authn.azure-active-directory.client-secret={s}",', "(use the client secret: {s})", "({s})",
]:
    add("secret", "azure-ad-client-secret", "cfg/azure.txt", A + " (TP layout, value regenerated)", t.format(s=az()))
for t in [
    "![图源：《深入拆解Tomcat & Jetty》](https://p3-juejin.byteimg.com/tos-cn-i-k3u1fbpfcp/6a9e704af49b4380bb686f0c96d33b81~tplv-k3u1fbpfcp-watermark.image)",
    "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
    ".ui.visible.right.sidebar~.ui.visible.left.sidebar~.pusher{transform:translate3d(0,0,0)}",
    'buf.WriteString("~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\\n\\n::\\n\\n")',
    "'url': 'http://www.2doc.nl/speel~VARA_101375237~mh17-het-verdriet-van-nederland~.html',",
    '@ar = split("~", "965f1453~47~09414c93e4cef985416f472549220827da3ba6fed8ad28e29ef6ad170ad53a69051e9b06f439ef6da5df8670181f7eb2481650");',
    "'#!/registries/5/portainer.demo~2Fportainerregistrytesting~2Falpine',",
    '+ "<Trust Comment=\\"\\" Identity=\\"USK@u2vn3Lh6Kte2-TgBSNKorbsKkuAt34ckoLmgx0ndXO0,4~q8Q~3wIHjX9DT0yCNfQmr9oxmYrDZoQVLOdNg~yk0,AQACAAE/WebOfTrustRC2/2\\" Value=\\"100\\"/>"',
    "client_secret=bP88Q~xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
]:
    add("harmless", "azure-look-alike", "cfg/azure.txt", A + " (FP, verbatim)", t)

D = "detect-secrets:keyword_test.py"
for t, path in [
    ('apikey := "{v}"', "main.go"), ("apikey:= {v}", "main.go"), ("'theapikey': '{v}'", "cfg/x.yml"), ('"theapikey": "{v}"', "cfg/x.json"),
    ("apikey: {v}", "cfg/x.yml"), ("theapikey:{v}", "cfg/x.txt"), ('some_dict["secret"] = "{v}"', "app.py"), ('the_password= "{v}"', "app.py"),
    ("some_dict['secret'] = {v}", "x.foo"), ("my_password={v}", "x.foo"), ('apikey = @"{v}"', "x.m"), ('apikey[]= "{v}"', "x.m"),
    ('apikey "{v}";', "x.foo"), ("private_key '{v}';", "x.foo"), ('fooapikeyfoo "{v}";', "x.foo"),
]:
    add("secret", "keyword-layout", path, D + " (positive layout, value regenerated)", t.format(v=pw()))
for t, path in [
    ('theapikey := ""', "x.foo"), ('theapikey := "somefakekey"', "x.foo"), ("theapikeyforfoo := hopenobodyfindsthisone", "x.foo"),
    ('theapikey: ""', "x.foo"), ('theapikey: "somefakekey"', "x.foo"), ("theapikeyforfoo:hopenobodyfindsthisone", "x.foo"),
    ("password: ${link}", "x.foo"), ('theapikey[] = ""', "x.foo"), ('theapikey = @"somefakekey"', "x.foo"), ('some_key = "real_secret"', "x.foo"),
    ('my_password = ""', "x.foo"), ("my_password = ''", "x.foo"), ('my_password = "fakesecret"', "x.foo"), ('open(self, password = ""):', "x.foo"),
    ("my_password = foo(hey)you", "x.foo"), ("my_password = request.json_body['hey']", "x.foo"), ("my_password = True", "x.foo"),
    ("login(username=username, password=password)", "x.foo"), ('private_key "";', "x.foo"), ("private_key '\"no spaces';", "x.foo"),
    ('private_key "fake";', "x.foo"), ("apiKey: this.apiKey,", "x.js"), ("apiKey: fs.readFileSync('foo',", "x.js"), ("$password = $input;", "x.php"),
]:
    add("harmless", "keyword-negative", path, D + " (negative, verbatim)", t)

H = "detect-secrets:high_entropy_strings_test.py"
add("secret", "hex-high-entropy", "cfg/x.txt", H + " (shape, value regenerated)", '"%s"' % rnd(HEX, 32))
add("secret", "base64-high-entropy", "cfg/x.txt", H + " (shape, value regenerated)", '"%s="' % rnd(AN + "-_", 83))
add("secret", "base64-high-entropy", "cfg/x.txt", H + " (shape, value regenerated)", rnd(AN + "+/", 60))
for t in ["'aaaaaa'", '"c3VwZXIgc2VjcmV0IHZhbHVl"', "'Zrm-ySTAq7D2sHk='"]:
    add("harmless", "entropy-negative", "cfg/x.txt", H + " (non-secret, verbatim)", t)
add("harmless", "entropy-negative", "cfg/x.txt", H + " (labelled a secret there: base64 of an English sentence)", "c3VwZXIgbG9uZyBzdHJpbmcgc2hvdWxkIGNhdXNlIGVub3VnaCBlbnRyb3B5")

print("# label\tkind\tpath\tsource\tsample (\\n = newline, \\t = tab). Held out: generated by heldout.py (seed 1818); measured, not tuned against.")
for r in rows:
    assert "\t" not in r[4], r
    print("\t".join(r))
