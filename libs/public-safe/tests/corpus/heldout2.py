#!/usr/bin/env python3
"""The second held-out set (heldout2.tsv beside this file), written for
issue 39 BEFORE any rule change for that issue, blind to the scanner's
rules and to corpus.tsv: it is measured, never tuned against. A miss or
a refusal here is a finding to read, not a sample to edit.

It leans on what the earlier corpus holds little of:
  secrets   generic passwords assigned in config formats (YAML, JSON, .env,
            INI, HCL/tfvars, XML, .properties, docker-compose), passwords
            inside connection URLs and on command lines, generic secrets
            and signing keys, Kubernetes Secrets (data and stringData), the
            long tail of vendor tokens (40-odd vendors, each in the format
            its documentation or public scanner rules describe), and
            private key material in files and inline.
  harmless  the look-alikes: vendor prefixes with the wrong body, redacted
            or truncated tokens, keys their vendor documents as public,
            identifiers and digests, placeholders and templates, references
            to secret stores, encrypted values, lock-file hashes, public
            keys and certificates, and ordinary config that merely looks
            random.

Every random value comes from the seeded generator below (in the right
alphabet and length for its format); no value is copied from any
documentation, test vector or example token. Fixed strings are only
placeholders and structural prefixes (a vendor prefix, a DER or key-format
header).

The format has no escape for a backslash: `\\n` in a sample always means a
newline, so a JSON string holding a PEM with "\\n" escapes reads as a
string with real newlines.

Regenerate: `python3 heldout2.py > heldout2.tsv` (stdlib only, seed 3939,
deterministic); columns as corpus.tsv.
"""
import base64
import json
import random
import string
import uuid
import zlib

R = random.Random(3939)
AN = string.ascii_letters + string.digits
UP = string.ascii_uppercase + string.digits
LOW = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = AN + "+/"
URL = AN + "-_"
B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
WORDS = ["Copper", "Lantern", "Falcon", "Harbor", "Maple", "Orbit", "Velvet", "Tundra", "Quartz",
         "Saffron", "Juniper", "Meridian", "Cobalt", "Pelican", "Thistle", "Nimbus", "Granite", "Willow"]

rows = []


def add(label, kind, path, source, text):
    rows.append((label, kind, path, source, text.replace("\n", "\\n").replace("\t", "\\t")))


def group(title):
    """A '#' line in the output marking a group (the parser skips it)."""
    rows.append(("#", title))


def rnd(a, n):
    return "".join(R.choice(a) for _ in range(n))


def hexs(n):
    return rnd(HEX, n)


def rbytes(n):
    return bytes(R.getrandbits(8) for _ in range(n))


def b64(s):
    return base64.b64encode(s if isinstance(s, bytes) else s.encode()).decode()


def b64url(s):
    return base64.urlsafe_b64encode(s if isinstance(s, bytes) else s.encode()).decode().rstrip("=")


def uid():
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def pw_gen():
    """A password-manager password: mixed classes, 16-22 characters."""
    n = R.randint(16, 22)
    s = [R.choice(string.ascii_lowercase), R.choice(string.ascii_uppercase), R.choice(string.digits),
         R.choice("!#%^*-_=+")] + [R.choice(AN + "!#%^*-_=+") for _ in range(n - 4)]
    R.shuffle(s)
    return "".join(s)


def pw_human():
    """A person's password: two words, a symbol, digits."""
    return R.choice(WORDS) + R.choice("!#%&*-.@") + R.choice(WORDS).lower() + str(R.randint(10, 9999))


def pw():
    return pw_gen() if R.random() < 0.6 else pw_human()


def pw_url():
    """Safe inside a URL's userinfo without escaping."""
    n = R.randint(16, 24)
    s = [R.choice(string.ascii_lowercase), R.choice(string.ascii_uppercase), R.choice(string.digits),
         R.choice("-_.~")] + [R.choice(AN + "-_.~") for _ in range(n - 4)]
    R.shuffle(s)
    return "".join(s)


def b62(n, width):
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = B62[r] + out
    return out.rjust(width, "0")


def checksummed(prefix, n=30):
    """GitHub-style token: n random base62 characters and a base62 CRC32 of them (6)."""
    body = rnd(AN, n)
    return prefix + body + b62(zlib.crc32(body.encode()), 6)


def wrap(s, w=64):
    return "\n".join(s[i:i + w] for i in range(0, len(s), w))


def der_rsa():
    # SEQUENCE, version 0, INTEGER modulus (257 bytes) ... as every PKCS#1 RSA-2048 key begins
    return bytes.fromhex("308204a40201000282010100") + rbytes(1180)


def pem(label, der, w=64):
    return "-----BEGIN %s-----\n%s\n-----END %s-----" % (label, wrap(b64(der), w), label)


def pem_rsa():
    return pem("RSA PRIVATE KEY", der_rsa())


def pem_pkcs8():
    return pem("PRIVATE KEY", bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7") + rbytes(1190))


def pem_ec():
    return pem("EC PRIVATE KEY", bytes.fromhex("30770201010420") + rbytes(32) +
               bytes.fromhex("a00a06082a8648ce3d030107a144034200") + b"\x04" + rbytes(64))


def pem_openssh():
    body = b"openssh-key-v1\x00" + b"\x00\x00\x00\x04none\x00\x00\x00\x04none\x00\x00\x00\x00\x00\x00\x00\x01" + \
        b"\x00\x00\x00\x33\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + rbytes(32) + rbytes(200)
    return pem("OPENSSH PRIVATE KEY", body, 70)


def ssh_ed25519_pub():
    return "ssh-ed25519 " + b64(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + rbytes(32))


def ssh_rsa_pub():
    return "ssh-rsa " + b64(b"\x00\x00\x00\x07ssh-rsa\x00\x00\x00\x03\x01\x00\x01\x00\x00\x01\x01\x00" + rbytes(256))


def jwt(payload, sig_bytes=32):
    h = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")))
    p = b64url(json.dumps(payload, separators=(",", ":")))
    return h + "." + p + "." + b64url(rbytes(sig_bytes))


# ---------------------------------------------------------------- secrets
# passwords assigned in config formats
S, K = "secret", "password-config"
group("secrets: passwords assigned in config formats")
add(S, K, "config/database.yml", "Rails database.yml with a production password (random)",
    f"production:\n  adapter: postgresql\n  database: orders\n  username: orders_app\n  password: {pw()}\n  host: db-prod.internal\n")
add(S, K, "src/main/resources/application.yml", "Spring Boot datasource password in YAML (random)",
    f"spring:\n  datasource:\n    url: jdbc:postgresql://pg.internal:5432/billing\n    username: billing\n    password: '{pw()}'\n")
add(S, K, "config/default.json", "JSON config with a database password (random)",
    '{\n  "db": {\n    "host": "10.1.4.20",\n    "user": "report_ro",\n    "password": "%s",\n    "port": 3306\n  }\n}' % pw())
add(S, K, ".env", "dotenv DB_PASSWORD (random)", f"DB_HOST=db.internal\nDB_USER=shop\nDB_PASSWORD={pw()}\n")
add(S, K, ".env.production", "dotenv POSTGRES_PASSWORD, quoted (random)", f'POSTGRES_USER=analytics\nPOSTGRES_PASSWORD="{pw()}"\n')
add(S, K, "deploy/.env", "dotenv MYSQL_ROOT_PASSWORD (random)", f"MYSQL_ROOT_PASSWORD={pw()}\nMYSQL_DATABASE=wordpress\n")
add(S, K, "etc/mysql/conf.d/backup.cnf", "MySQL option file [client] password (random)",
    f'[client]\nuser=backup\npassword="{pw()}"\nhost=127.0.0.1\n')
add(S, K, "grafana/grafana.ini", "Grafana INI admin_password (random)",
    f"[security]\nadmin_user = admin\nadmin_password = {pw()}\ncookie_secure = true\n")
add(S, K, "home/ops/.pgpass", "PostgreSQL .pgpass line (random password)", f"db-prod.internal:5432:orders:orders_app:{pw()}\n")
add(S, K, "infra/prod.tfvars", "Terraform tfvars db_password (random)", f'region      = "eu-west-1"\ndb_username = "app"\ndb_password = "{pw()}"\n')
add(S, K, "infra/rds.tf", "Terraform aws_db_instance with a literal password (random)",
    f'resource "aws_db_instance" "main" {{\n  engine         = "postgres"\n  instance_class = "db.t3.medium"\n  username       = "master"\n  password       = "{pw()}"\n}}\n')
add(S, K, "infra/sql.tf", "Terraform azurerm administrator_login_password (random)",
    f'resource "azurerm_mssql_server" "sql" {{\n  name                         = "crm-sql"\n  administrator_login          = "sqladmin"\n  administrator_login_password = "{pw()}"\n}}\n')
add(S, K, "conf/tomcat-users.xml", "Tomcat users XML password attribute (random)",
    f'<tomcat-users>\n  <user username="deploy" password="{pw()}" roles="manager-script"/>\n</tomcat-users>\n')
add(S, K, ".m2/settings.xml", "Maven settings.xml server password element (random)",
    f"<settings>\n  <servers>\n    <server>\n      <id>nexus-releases</id>\n      <username>ci</username>\n      <password>{pw()}</password>\n    </server>\n  </servers>\n</settings>\n")
add(S, K, "src/main/resources/hibernate.cfg.xml", "Hibernate XML connection password property (random)",
    f'<property name="hibernate.connection.username">inventory</property>\n<property name="hibernate.connection.password">{pw()}</property>\n')
add(S, K, "NuGet.Config", "NuGet.Config ClearTextPassword (random)",
    f'<packageSourceCredentials>\n  <internal>\n    <add key="Username" value="build" />\n    <add key="ClearTextPassword" value="{pw()}" />\n  </internal>\n</packageSourceCredentials>\n')
add(S, K, "src/main/resources/application.properties", "Java properties datasource password (random)",
    f"spring.datasource.url=jdbc:mysql://mysql.internal:3306/catalog\nspring.datasource.username=catalog\nspring.datasource.password={pw()}\n")
add(S, K, "config/kafka-client.properties", "Kafka SASL JAAS config with a password (random)",
    f'security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="orders-svc" password="{pw()}";\n')
add(S, K, "docker-compose.yml", "docker-compose environment list with a password (random)",
    f"services:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_USER=app\n      - POSTGRES_PASSWORD={pw()}\n")
add(S, K, "docker-compose.prod.yml", "docker-compose environment mapping with a password (random)",
    f'services:\n  mariadb:\n    image: mariadb:11\n    environment:\n      MARIADB_ROOT_PASSWORD: "{pw()}"\n      MARIADB_DATABASE: shop\n')
add(S, K, ".pypirc", "pypirc private index password (random)",
    f"[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.corp.example/simple/\nusername = ci\npassword = {pw()}\n")
add(S, K, ".npmrc", "npmrc _password (base64 of a random password)",
    f"//npm.corp.example/:username=ci-bot\n//npm.corp.example/:_password={b64(pw())}\n//npm.corp.example/:email=ci@corp.example\n")
add(S, K, "inventory/group_vars/db.yml", "Ansible become password in group_vars (random)", f"ansible_user: deploy\nansible_become_password: {pw()}\n")
add(S, K, "charts/app/values-prod.yaml", "Helm values with a literal database password (random)",
    f"postgresql:\n  auth:\n    username: app\n    password: {pw()}\n    database: app\n")
add(S, K, "config/mail.json", "nodemailer SMTP auth in JSON (random)",
    '{"smtp": {"host": "smtp.example.com", "port": 587, "auth": {"user": "noreply@example.com", "pass": "%s"}}}' % pw())
add(S, K, "home/ci/.netrc", "netrc machine login password (random)", f"machine artifacts.example.com\n  login deployer\n  password {pw()}\n")
add(S, K, "wp-config.php", "WordPress DB_PASSWORD define (random)", f"define( 'DB_USER', 'wp_prod' );\ndefine( 'DB_PASSWORD', '{pw()}' );\n")
add(S, K, "mysite/settings.py", "Django DATABASES PASSWORD (random)",
    f"DATABASES = {{\n    'default': {{\n        'ENGINE': 'django.db.backends.postgresql',\n        'USER': 'web',\n        'PASSWORD': '{pw()}',\n        'HOST': 'pg.internal',\n    }}\n}}\n")
add(S, K, "Dockerfile", "Dockerfile ENV with a password (random)", f"FROM node:20-alpine\nENV DB_USER=api\nENV DB_PASSWORD={pw()}\nCMD [\"node\", \"server.js\"]\n")
add(S, K, "etc/redis/redis.conf", "redis.conf requirepass (random)", f"bind 0.0.0.0\nport 6379\nrequirepass {pw_gen()}\n")

# passwords inside connection strings and URLs
group("secrets: passwords inside connection strings and URLs")
K = "password-url"
add(S, K, ".env", "postgres:// URL with user:password (random)", f"DATABASE_URL=postgres://orders:{pw_url()}@db-prod.internal:5432/orders?sslmode=require\n")
add(S, K, "config/mongo.yml", "mongodb+srv URI with user:password (random)",
    f'mongodb:\n  uri: "mongodb+srv://analytics:{pw_url()}@cluster0.q7x2k.mongodb.net/events?retryWrites=true&w=majority"\n')
add(S, K, ".env", "redis:// URL with password only (random)", f"REDIS_URL=redis://:{pw_url()}@cache.internal:6379/0\n")
add(S, K, "config/cache.yml", "rediss:// URL with default user and password (random)", f"cache:\n  url: rediss://default:{pw_url()}@eu1-fleet-31842.upstash.io:6379\n")
add(S, K, "settings/celery.py", "amqps broker URL with password (random)",
    f'CELERY_BROKER_URL = "amqps://worker:{pw_url()}@b-4c1e.mq.eu-west-1.amazonaws.com:5671//"\n')
add(S, K, "config/queue.properties", "amqp URL with password (random)", f"rabbit.uri=amqp://svc_orders:{pw_url()}@rabbit.internal:5672/%2F\n")
add(S, K, "src/main/resources/db.properties", "JDBC MySQL URL with password parameter (random)",
    f"jdbc.url=jdbc:mysql://mysql01:3306/shop?user=shop&password={pw_url()}&useSSL=true\n")
add(S, K, "conf/datasource.xml", "JDBC SQL Server URL with password property (random)",
    f'<Resource name="jdbc/crm" url="jdbc:sqlserver://sql01:1433;databaseName=crm;user=crm_app;password={pw()};encrypt=true" />\n')
add(S, K, "appsettings.Production.json", "ADO.NET connection string with Password= (random)",
    '{\n  "ConnectionStrings": {\n    "Billing": "Server=tcp:billing-sql.database.windows.net,1433;Database=Billing;User ID=billing;Password=%s;Encrypt=True;"\n  }\n}' % pw())
add(S, K, "etl/config.py", "SQLAlchemy URI with user:password (random)",
    f'SQLALCHEMY_DATABASE_URI = "postgresql+psycopg2://etl:{pw_url()}@warehouse.internal:5432/dw"\n')
add(S, K, "config/mailer.yml", "smtp:// URL with credentials (random)", f"mailer:\n  dsn: smtp://mailer%40example.com:{pw_url()}@smtp.example.com:587\n")
add(S, K, "ci/clone.sh", "git clone over https with user:password (random)", f"git clone https://deploy:{pw_url()}@git.example.com/platform/infra.git /srv/infra\n")
add(S, K, "filebeat.yml", "Elasticsearch host URL with elastic:password (random)",
    f'output.elasticsearch:\n  hosts: ["https://elastic:{pw_url()}@es01.internal:9200"]\n')
add(S, K, "app/config/oracle.ini", "Oracle ODP.NET connection string (random)",
    f"[db]\nconnection = User Id=ledger;Password={pw()};Data Source=ora-prod:1521/LEDGER\n")
add(S, K, "docker-compose.yml", "docker-compose env with a mysql:// DSN (random)",
    f"services:\n  api:\n    environment:\n      DATABASE_DSN: mysql://api:{pw_url()}@mysql:3306/api\n")

# passwords on command lines
group("secrets: passwords on command lines")
K = "password-cli"
add(S, K, "scripts/restore.sh", "mysql client -p'password' (random)", f"mysql -u root -p'{pw()}' -h db.internal shop < /backups/shop.sql\n")
add(S, K, "scripts/backup.sh", "mysqldump --password= (random)", f"mysqldump --user=backup --password={pw_url()} --single-transaction --all-databases | gzip > all.sql.gz\n")
add(S, K, "scripts/vacuum.sh", "PGPASSWORD= before psql (random)", f"PGPASSWORD='{pw()}' psql -h db.internal -U postgres -d orders -c 'VACUUM ANALYZE;'\n")
add(S, K, ".github/workflows/release.yml", "docker login -p in a CI step (random)",
    f"      - run: docker login -u ci-bot -p {pw_url()} registry.example.io\n")
add(S, K, "scripts/reboot-switch.sh", "sshpass -p (random)", f"sshpass -p '{pw()}' ssh -o StrictHostKeyChecking=no admin@10.0.4.12 reload\n")
add(S, K, "Makefile", "redis-cli -a (random)", f"flush:\n\tredis-cli -h cache.internal -a '{pw()}' FLUSHDB\n")
add(S, K, "scripts/seed.sh", "mongosh --password (random)", f'mongosh "mongodb://db.internal:27017/admin" --username admin --password \'{pw()}\' --eval "db.stats()"\n')
add(S, K, "scripts/backup.ps1", "sqlcmd -P (random)", f"sqlcmd -S sql01 -U sa -P '{pw()}' -Q \"BACKUP DATABASE [CRM] TO DISK = N'D:\\bak\\crm.bak'\"\n")
add(S, K, "provision/nginx.sh", "htpasswd -b with the password (random)", f"htpasswd -b -c /etc/nginx/.htpasswd admin '{pw()}'\n")
add(S, K, "scripts/ldap-export.sh", "ldapsearch -w (random)", f"ldapsearch -x -H ldaps://ldap.corp.example -D 'cn=admin,dc=corp,dc=example' -w '{pw()}' -b 'ou=people,dc=corp,dc=example'\n")
add(S, K, "scripts/make-p12.sh", "openssl -passout pass: (random)", f"openssl pkcs12 -export -in site.crt -inkey site.key -out site.p12 -passout pass:{pw_url()}\n")
add(S, K, "scripts/mount.bat", "net use /user: with the password (random)", f"net use Z: \\\\fs01\\finance /user:CORP\\svc_backup {pw_gen()} /persistent:no\n")
add(S, K, "deploy/install.sh", "helm --set with a root password (random)", f"helm upgrade --install db bitnami/mysql --set auth.rootPassword={pw_url()} --namespace data\n")
add(S, K, "scripts/keystore.sh", "keytool -storepass (random)", f"keytool -importcert -alias corp-ca -file ca.crt -keystore truststore.jks -storepass {pw_url()} -noprompt\n")
add(S, K, "scripts/vault-login.sh", "vault login userpass password= (random)", f"vault login -method=userpass username=ops password='{pw()}'\n")

# generic secrets, tokens, api keys, signing secrets
group("secrets: generic secrets, api keys and signing keys")
K = "generic-secret"
DJ = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"
add(S, K, "mysite/settings.py", "Django SECRET_KEY (50 random characters from Django's alphabet)", f"SECRET_KEY = '{rnd(DJ, 50)}'\n")
add(S, K, ".env", "Rails SECRET_KEY_BASE (128 random hex)", f"RAILS_ENV=production\nSECRET_KEY_BASE={hexs(128)}\n")
add(S, K, "config/secrets.yml", "Rails secrets.yml secret_key_base (128 random hex)", f"production:\n  secret_key_base: {hexs(128)}\n")
add(S, K, ".env", "JWT_SECRET (random base64)", f"JWT_SECRET={b64(rbytes(48))}\nJWT_EXPIRES_IN=1h\n")
add(S, K, ".env.local", "NEXTAUTH_SECRET (random base64, 32 bytes)", f"NEXTAUTH_URL=https://app.example.com\nNEXTAUTH_SECRET={b64(rbytes(32))}\n")
add(S, K, ".env", "Laravel APP_KEY base64: (random 32 bytes)", f"APP_NAME=Shop\nAPP_KEY=base64:{b64(rbytes(32))}\n")
add(S, K, "app/__init__.py", "Flask SECRET_KEY literal (random hex)", f"app.config['SECRET_KEY'] = '{hexs(48)}'\n")
add(S, K, "config/app.yml", "api_key in YAML (random alphanumeric)", f"payments:\n  endpoint: https://api.payments.example\n  api_key: {rnd(AN, 40)}\n")
add(S, K, "config/oauth.json", "OAuth client_secret in JSON (random)", '{"client_id": "web-portal", "client_secret": "%s", "redirect_uri": "https://portal.example.com/cb"}' % rnd(URL, 43))
add(S, K, "config/session.yml", "session secret in YAML (random)", f'session:\n  name: sid\n  secret: "{rnd(AN, 32)}"\n')
add(S, K, "config/crypto.yml", "encryption key in YAML (random base64)", f"encryption:\n  algorithm: aes-256-gcm\n  key: {b64(rbytes(32))}\n")
add(S, K, "Web.config", "appSettings ApiKey in XML (random)", f'<appSettings>\n  <add key="PartnerApiKey" value="{hexs(32)}" />\n</appSettings>\n')
add(S, K, "conf/integration.properties", "properties api.secret (random)", f"api.client-id=ledger-sync\napi.secret={rnd(AN, 36)}\n")
add(S, K, "clients/hooks.py", "webhook signing secret in code (random hex)", f'WEBHOOK_SIGNING_SECRET = "{hexs(64)}"\n')
add(S, K, "scripts/env.sh", "export AUTH_TOKEN (random)", f"export AUTH_TOKEN={rnd(AN, 48)}\n")
add(S, K, "infra/variables.tf", "Terraform variable default holding an api token (random)",
    f'variable "api_token" {{\n  type      = string\n  sensitive = true\n  default   = "{rnd(AN, 40)}"\n}}\n')
add(S, K, ".env", "HMAC_KEY (random hex, 32 bytes)", f"HMAC_KEY={hexs(64)}\n")
add(S, K, "src/main/resources/application.yml", "Spring JWT signing key in YAML (random base64)", f"security:\n  jwt:\n    signing-key: {b64(rbytes(64))}\n")
add(S, K, "appsettings.json", "ASP.NET ClientSecret in JSON (random)", '{\n  "AzureAd": {\n    "ClientId": "%s",\n    "ClientSecret": "%s"\n  }\n}' % (uid(), rnd(URL, 40)))
add(S, K, "config/initializers/partner.rb", "Ruby ENV.fetch with a literal secret default (random)", f"PARTNER_SECRET = ENV.fetch('PARTNER_SECRET', '{rnd(AN, 40)}')\n")
add(S, K, "config.ini", "INI auth_token (random hex)", f"[upstream]\nurl = https://feeds.example.net\nauth_token = {hexs(40)}\n")
add(S, K, ".github/workflows/sync.yml", "workflow env with a literal API key (random)", f"    env:\n      SYNC_API_KEY: {rnd(AN, 32)}\n    steps:\n      - run: ./sync.sh\n")

# Kubernetes Secrets
group("secrets: Kubernetes Secrets")
K = "k8s-secret"
add(S, K, "k8s/db-secret.yaml", "Kubernetes Secret data: base64 of a random password",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: orders-db\n  namespace: orders\ntype: Opaque\ndata:\n  username: {b64('orders_app')}\n  password: {b64(pw())}\n")
add(S, K, "k8s/api-token.yaml", "Kubernetes Secret data: base64 of a random API token",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: partner-api\ntype: Opaque\ndata:\n  token: {b64(rnd(AN, 40))}\n")
add(S, K, "k8s/stringdata.yaml", "Kubernetes Secret stringData with a plain random password",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp\ntype: Opaque\nstringData:\n  SMTP_USER: noreply@example.com\n  SMTP_PASSWORD: {pw()}\n")
add(S, K, "k8s/stringdata-url.yaml", "Kubernetes Secret stringData holding a DSN with a random password",
    f'apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-env\nstringData:\n  DATABASE_URL: "postgres://app:{pw_url()}@pg.data.svc:5432/app"\n')
add(S, K, "k8s/tls.yaml", "Kubernetes TLS Secret whose tls.key is base64 of a private key (random)",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-tls\ntype: kubernetes.io/tls\ndata:\n  tls.crt: {b64(pem('CERTIFICATE', rbytes(700)))}\n  tls.key: {b64(pem_ec())}\n")
add(S, K, "k8s/regcred.yaml", "Kubernetes dockerconfigjson Secret (random registry password)",
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: %s\n"
    % b64('{"auths":{"registry.example.io":{"username":"robot$ci","password":"%s","auth":"%s"}}}' % ((p := pw_url()), b64("robot$ci:" + p))))
add(S, K, "k8s/basic-auth.yaml", "Kubernetes basic-auth Secret (random password)",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: dashboard-auth\ntype: kubernetes.io/basic-auth\ndata:\n  username: {b64('admin')}\n  password: {b64(pw())}\n")
add(S, K, "k8s/deploy.yaml", "multi-document manifest with a Deployment and a Secret (random password)",
    f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\nspec:\n  replicas: 2\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: worker-secrets\ndata:\n  QUEUE_PASSWORD: {b64(pw())}\n")
add(S, K, "k8s/secret.json", "Kubernetes Secret in JSON (kubectl -o json) with base64 data (random)",
    '{\n  "apiVersion": "v1",\n  "kind": "Secret",\n  "metadata": {"name": "billing-keys"},\n  "type": "Opaque",\n  "data": {"api-key": "%s"}\n}' % b64(rnd(AN, 32)))
add(S, K, "k8s/ssh-auth.yaml", "Kubernetes ssh-auth Secret with base64 of a private key (random)",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-ssh\ntype: kubernetes.io/ssh-auth\ndata:\n  ssh-privatekey: {b64(pem_openssh())}\n")
add(S, K, "argocd/repo.yaml", "Argo CD repository Secret with stringData password (random)",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: infra-repo\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  url: https://git.example.com/platform/infra.git\n  username: argocd\n  password: {pw()}\n")
add(S, K, "scripts/k8s-secrets.sh", "kubectl create secret --from-literal (random)",
    f"kubectl -n payments create secret generic psp-creds --from-literal=username=psp --from-literal=password='{pw()}'\n")
add(S, K, "k8s/quoted.yml", "Kubernetes Secret with quoted base64 values (random token and password)",
    f'apiVersion: "v1"\nkind: "Secret"\nmetadata:\n  name: "search"\ndata:\n  "ELASTIC_PASSWORD": "{b64(pw())}"\n  "API_TOKEN": "{b64(hexs(40))}"\n')

# vendor tokens in their documented formats
group("secrets: vendor tokens in their documented formats")
K = "vendor-token"


def v(vendor, path, what, text):
    add(S, K, path, f"vendor:{vendor} {what}", text)


v("Stripe", ".env", "live secret key format (sk_live_ + base62, random)", f"STRIPE_SECRET_KEY=sk_live_{rnd(AN, 24)}\n")
v("Stripe", "billing/client.py", "restricted key format (rk_live_51 + base62, random)", f'stripe.api_key = "rk_live_51{rnd(AN, 97)}"\n')
v("Twilio", ".env", "account SID and auth token (AC + 32 hex, 32 hex, random)", f"TWILIO_ACCOUNT_SID=AC{hexs(32)}\nTWILIO_AUTH_TOKEN={hexs(32)}\n")
v("Twilio", "config/sms.yml", "API key SID and secret (SK + 32 hex, 32 alphanumeric, random)", f"twilio:\n  api_key: SK{hexs(32)}\n  api_secret: {rnd(AN, 32)}\n")
v("SendGrid", ".env", "API key format (SG. + 22 + . + 43, random)", f"SENDGRID_API_KEY=SG.{rnd(URL, 22)}.{rnd(URL, 43)}\n")
v("Mailgun", ".env", "private API key format (key- + 32 hex, random)", f"MAILGUN_DOMAIN=mg.example.com\nMAILGUN_API_KEY=key-{hexs(32)}\n")
v("Mailchimp", "config/newsletter.json", "API key format (32 hex + -usNN, random)", '{"mailchimp": {"apiKey": "%s-us%d", "listId": "%s"}}' % (hexs(32), R.randint(2, 21), hexs(10)))
v("Shopify", ".env", "Admin API access token format (shpat_ + 32 hex, random)", f"SHOPIFY_STORE=acme-outlet.myshopify.com\nSHOPIFY_ACCESS_TOKEN=shpat_{hexs(32)}\n")
v("Atlassian", ".env", "API token format (ATATT3 + 186 base64url incl. checksum, random)", f"JIRA_USER=ops@example.com\nJIRA_API_TOKEN=ATATT3xFfGF0{rnd(URL, 171)}={rnd('0123456789ABCDEF', 8)}\n")
v("Atlassian", "scripts/jira.sh", "API token in curl basic auth (random)", f"curl -s -u ops@example.com:ATATT3xFfGF0{rnd(URL, 171)}={rnd('0123456789ABCDEF', 8)} https://acme.atlassian.net/rest/api/3/myself\n")
v("Databricks", ".env", "personal access token format (dapi + 32 hex, random)", f"DATABRICKS_HOST=https://adb-{rnd(string.digits, 16)}.7.azuredatabricks.net\nDATABRICKS_TOKEN=dapi{hexs(32)}\n")
v("HashiCorp Vault", ".envrc", "service token format (hvs. + base64url ~91, random)", f"export VAULT_ADDR=https://vault.internal:8200\nexport VAULT_TOKEN=hvs.CAESI{rnd(URL, 86)}\n")
v("HashiCorp Vault", "ci/deploy.sh", "batch token format (hvb. + base64url ~140, random)", f"VAULT_TOKEN=hvb.AAAAAQ{rnd(URL, 150)} vault kv get secret/app\n")
v("Terraform Cloud", "home/ci/.terraformrc", "API token format (14 + .atlasv1. + 67, random)", f'credentials "app.terraform.io" {{\n  token = "{rnd(LOW, 14)}.atlasv1.{rnd(AN, 67)}"\n}}\n')
v("Doppler", ".env", "personal token format (dp.pt. + 43, random)", f"DOPPLER_TOKEN=dp.pt.{rnd(AN, 43)}\n")
v("Linear", ".env", "API key format (lin_api_ + 40, random)", f"LINEAR_API_KEY=lin_api_{rnd(AN, 40)}\n")
def discord():
    return b64url(str(R.randint(10 ** 17, 10 ** 19 - 1))) + "." + rnd(URL, 6) + "." + rnd(URL, R.choice([27, 38]))
v("Discord", ".env", "bot token format (base64 id . 6 . 27/38, random)", f"DISCORD_BOT_TOKEN={discord()}\n")
v("Discord", "bot/main.py", "bot token passed to client.run (random)", f'client.run("{discord()}")\n')
def telegram():
    return f"{R.randint(10 ** 9, 8 * 10 ** 9)}:AA{rnd(URL, 33)}"
v("Telegram", ".env", "bot token format (bot id : 35, random)", f"TELEGRAM_BOT_TOKEN={telegram()}\n")
v("Telegram", "scripts/notify.sh", "bot token inside the Bot API URL (random)", f'curl -s "https://api.telegram.org/bot{telegram()}/sendMessage" -d chat_id=-100{rnd(string.digits, 10)} -d text="deploy done"\n')
v("Heroku", ".env", "legacy API key (UUID) in HEROKU_API_KEY context (random)", f"HEROKU_API_KEY={uid()}\n")
v("Heroku", "home/ci/.netrc", "API key format (HRKU-AA + 58, random) in .netrc", f"machine api.heroku.com\n  login ci@example.com\n  password HRKU-AA{rnd(URL, 58)}\n")
v("DigitalOcean", ".env", "personal access token format (dop_v1_ + 64 hex, random)", f"DIGITALOCEAN_TOKEN=dop_v1_{hexs(64)}\n")
v("npm", ".npmrc", "access token format (npm_ + 36 with base62 CRC32, random)", f"//registry.npmjs.org/:_authToken=npm_{checksummed('')}\n")
v("npm", ".github/workflows/publish.yml", "token in workflow env (random)", f"      - run: npm publish\n        env:\n          NODE_AUTH_TOKEN: {checksummed('npm_')}\n")
def pypi():
    raw = b"\x02\x01\x08pypi.org\x02\x24" + uid().encode() + b"\x00\x02\x2a" + rbytes(96)
    return "pypi-" + b64url(raw)
v("PyPI", ".pypirc", "API token format (pypi-AgEIcHlwaS5vcmc..., random macaroon body)", f"[pypi]\nusername = __token__\npassword = {pypi()}\n")
v("GitLab", ".env", "personal access token format (glpat- + 20, random)", f"GITLAB_TOKEN=glpat-{rnd(URL, 20)}\n")
v("GitLab", "scripts/mirror.sh", "PAT inside a clone URL (random)", f"git clone https://oauth2:glpat-{rnd(URL, 20)}@gitlab.com/acme/platform.git\n")
v("GitHub", ".env", "classic PAT format (ghp_ + 36 with base62 CRC32, random)", f"GITHUB_TOKEN={checksummed('ghp_')}\n")
v("GitHub", "home/ci/.git-credentials", "fine-grained PAT format (github_pat_ + 22 + _ + 59, random)", f"https://release-bot:github_pat_{rnd(AN, 22)}_{rnd(AN, 59)}@github.com\n")
v("GitHub", "app/config.json", "OAuth token format (gho_ + 36, random)", '{"github": {"token": "%s"}}' % checksummed("gho_"))
v("Slack", ".env", "bot token format (xoxb-digits-digits-24, random)", f"SLACK_BOT_TOKEN=xoxb-{rnd(string.digits, 12)}-{rnd(string.digits, 13)}-{rnd(AN, 24)}\n")
v("Slack", "config/slack.yml", "user token format (xoxp-d-d-d-32 hex, random)", f"slack:\n  user_token: xoxp-{rnd(string.digits, 12)}-{rnd(string.digits, 12)}-{rnd(string.digits, 13)}-{hexs(32)}\n")
v("Slack", "alertmanager.yml", "incoming webhook URL (T.../B.../24, random)", f"receivers:\n  - name: ops\n    slack_configs:\n      - api_url: https://hooks.slack.com/services/T{rnd(UP, 10)}/B{rnd(UP, 10)}/{rnd(AN, 24)}\n")
glc = b64(json.dumps({"o": str(R.randint(100000, 999999)), "n": "stack-%d-hm-write-ci" % R.randint(100000, 999999), "k": rnd(AN, 24), "m": {"r": "prod-eu-west-2"}}, separators=(",", ":")))
v("Grafana", ".env", "Cloud access policy token format (glc_ + base64 JSON, random)", f"GRAFANA_CLOUD_TOKEN=glc_{glc}\n")
v("Grafana", "provisioning/sync.yml", "service account token format (glsa_ + 32 + _ + 8 hex, random)", f"grafana:\n  url: https://grafana.internal\n  token: glsa_{rnd(AN, 32)}_{hexs(8)}\n")
v("New Relic", ".env", "user API key format (NRAK- + 27, random)", f"NEW_RELIC_API_KEY=NRAK-{rnd(UP, 27)}\n")
v("Sentry", ".env", "legacy DSN with public:secret key pair (random)", f"SENTRY_DSN=https://{hexs(32)}:{hexs(32)}@o{R.randint(100000, 999999)}.ingest.sentry.io/{R.randint(1000000, 9999999)}\n")
v("Sentry", ".sentryclirc", "user auth token format (sntryu_ + 64 hex, random)", f"[auth]\ntoken=sntryu_{hexs(64)}\n")
v("Square", ".env", "production access token format (EAAA + 60, random)", f"SQUARE_ENVIRONMENT=production\nSQUARE_ACCESS_TOKEN=EAAA{rnd(URL, 60)}\n")
v("Square", "config/square.yml", "legacy access token and application secret (sq0atp-22, sq0csp-43, random)", f"square:\n  access_token: sq0atp-{rnd(URL, 22)}\n  application_secret: sq0csp-{rnd(URL, 43)}\n")
v("Braintree", ".env", "PayPal/Braintree access token format (access_token$production$16$32 hex, random)", f"BRAINTREE_ACCESS_TOKEN=access_token$production${rnd(LOW, 16)}${hexs(32)}\n")
v("Okta", ".env", "API token format (00 + 40, random)", f"OKTA_ORG_URL=https://acme.okta.com\nOKTA_API_TOKEN=00{rnd(URL, 40)}\n")
v("Postman", ".env", "API key format (PMAK- + 24 hex - 34 hex, random)", f"POSTMAN_API_KEY=PMAK-{hexs(24)}-{hexs(34)}\n")
v("Pulumi", ".github/workflows/infra.yml", "access token format (pul- + 40 hex, random)", f"    env:\n      PULUMI_ACCESS_TOKEN: pul-{hexs(40)}\n")
v("Fly.io", ".env", "macaroon token format (FlyV1 fm2_ + base64, random)", f'FLY_API_TOKEN="FlyV1 fm2_{b64(rbytes(180))}"\n')
v("Vercel", ".github/workflows/preview.yml", "access token (24 alphanumeric) in VERCEL_TOKEN context (random)", f"    env:\n      VERCEL_ORG_ID: team_{rnd(AN, 24)}\n      VERCEL_TOKEN: {rnd(AN, 24)}\n")
v("Supabase", ".env", "service_role key (HS256 JWT with role service_role, random signature)",
  "SUPABASE_URL=https://%s.supabase.co\nSUPABASE_SERVICE_ROLE_KEY=%s\n" % ((ref := rnd(string.ascii_lowercase, 20)), jwt({"iss": "supabase", "ref": ref, "role": "service_role", "iat": 1712000000 + R.randint(0, 9 ** 6), "exp": 2027000000 + R.randint(0, 9 ** 6)})))
def openai(kind, n):
    return f"sk-{kind}-{rnd(URL, n)}T3BlbkFJ{rnd(URL, n)}"
v("OpenAI", ".env", "project API key format (sk-proj- 74 T3BlbkFJ 74, random)", f"OPENAI_API_KEY={openai('proj', 74)}\n")
v("OpenAI", "agents/config.py", "service account key format (sk-svcacct- 58 T3BlbkFJ 58, random)", f'client = OpenAI(api_key="{openai("svcacct", 58)}")\n')
v("Anthropic", ".env", "API key format (sk-ant-api03- + 93 + AA, random)", f"ANTHROPIC_API_KEY=sk-ant-api03-{rnd(URL, 93)}AA\n")
v("Hugging Face", ".env", "user access token format (hf_ + 34 letters, random)", f"HF_TOKEN=hf_{rnd(string.ascii_letters, 34)}\n")
v("Cloudflare", ".env", "API token (40 base64url) in CLOUDFLARE_API_TOKEN context (random)", f"CLOUDFLARE_ACCOUNT_ID={hexs(32)}\nCLOUDFLARE_API_TOKEN={rnd(URL, 40)}\n")
v("Cloudflare", "config/origin.yml", "Origin CA key format (v1.0-24 hex-146 hex, random)", f"origin_ca_key: v1.0-{hexs(24)}-{hexs(146)}\n")
v("Azure Storage", "local.settings.json", "storage connection string with AccountKey (88 base64, random)",
  '{\n  "Values": {\n    "AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=acmeprodfn;AccountKey=%s;EndpointSuffix=core.windows.net"\n  }\n}' % b64(rbytes(64)))
def az():
    return rnd(AN + "_~.", 3) + R.choice(string.digits) + "Q~" + rnd(AN + "_~.-", 34)
v("Azure AD", "infra/sp.auto.tfvars", "application client secret format (xxxNQ~ + 34, random)", f'client_id     = "{uid()}"\nclient_secret = "{az()}"\n')
sa = {"type": "service_account", "project_id": "acme-data-%d" % R.randint(1000, 9999), "private_key_id": hexs(40),
      "private_key": pem_pkcs8() + "\n", "client_email": "etl-runner@acme-data.iam.gserviceaccount.com",
      "client_id": rnd(string.digits, 21), "token_uri": "https://oauth2.googleapis.com/token"}
v("Google Cloud", "keys/etl-runner.json", "service account key JSON with private_key_id and private_key (random)", json.dumps(sa, indent=2))
v("Google Cloud", ".env", "API key format (AIza + 35, random)", f"GEMINI_API_KEY=AIzaSy{rnd(URL, 33)}\n")
v("Google OAuth", "client_secret.json", "OAuth client secret format (GOCSPX- + 28, random)",
  '{"web": {"client_id": "%s-%s.apps.googleusercontent.com", "client_secret": "GOCSPX-%s"}}' % (rnd(string.digits, 12), rnd(LOW, 32), rnd(URL, 28)))
v("AWS", "home/ops/.aws/credentials", "access key id and secret access key (AKIA + 16, 40 base64, random)",
  f"[default]\naws_access_key_id = AKIA{rnd('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}\naws_secret_access_key = {rnd(B64, 40)}\nregion = eu-west-1\n")
v("Dynatrace", ".env", "API token format (dt0c01. + 24 + . + 64, random)", f"DT_API_TOKEN=dt0c01.{rnd(UP, 24)}.{rnd(UP, 64)}\n")
v("Notion", ".env", "integration token format (ntn_ + 11 digits + 35, random)", f"NOTION_TOKEN=ntn_{rnd(string.digits, 11)}{rnd(AN, 35)}\n")
v("Airtable", "scripts/export.py", "personal access token format (pat + 14 . 64 hex, random)", f'AIRTABLE_TOKEN = "pat{rnd(AN, 14)}.{hexs(64)}"\n')
v("RubyGems", "home/ci/.gem/credentials", "API key format (rubygems_ + 48 hex, random)", f"---\n:rubygems_api_key: rubygems_{hexs(48)}\n")
v("Docker Hub", "ci/push.sh", "personal access token format (dckr_pat_ + 27, random)", f"echo dckr_pat_{rnd(URL, 27)} | docker login -u acmebuild --password-stdin\n")
v("Perplexity", ".env", "API key format (pplx- + 48, random)", f"PPLX_API_KEY=pplx-{rnd(AN, 48)}\n")
v("PlanetScale", ".env", "database password format (pscale_pw_ + 43, random)", f"DATABASE_USERNAME={rnd(LOW, 12)}\nDATABASE_PASSWORD=pscale_pw_{rnd(URL, 43)}\n")
v("Brevo", ".env", "Sendinblue/Brevo API key format (xkeysib- 64 hex - 16, random)", f"BREVO_API_KEY=xkeysib-{hexs(64)}-{rnd(AN, 16)}\n")

# private key material
group("secrets: private key material")
K = "private-key"
add(S, K, "deploy/id_rsa", "PEM RSA private key file (random body)", pem_rsa() + "\n")
add(S, K, "certs/server.key", "PEM EC private key file (random body)", pem_ec() + "\n")
add(S, K, "home/ci/.ssh/id_ed25519", "OpenSSH private key file (random body)", pem_openssh() + "\n")
add(S, K, "tls/key.pem", "PEM PKCS#8 private key file (random body)", pem_pkcs8() + "\n")
add(S, K, "release/signing-key.asc", "ASCII-armoured PGP private key block (random body)",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + wrap(b64(b"\x95\x03\xc6\x04" + rbytes(900)), 64) + "\n=" + b64(rbytes(3)) + "\n-----END PGP PRIVATE KEY BLOCK-----\n")
add(S, K, "config/jwt.yml", "PEM private key inline in YAML block scalar (random body)",
    "jwt:\n  algorithm: RS256\n  private_key: |\n" + "\n".join("    " + l for l in pem_rsa().split("\n")) + "\n")
add(S, K, "config/signing.json", "PEM private key inline in a JSON string (random body)",
    '{\n  "kid": "%s",\n  "privateKey": "%s\\n"\n}' % (hexs(16), pem_ec().replace("\n", "\\n")))
add(S, K, ".env", "PEM private key in a dotenv value with \\n escapes (random body)", 'JWT_PRIVATE_KEY="%s"\n' % pem_pkcs8().replace("\n", "\\n"))
add(S, K, "infra/tls.tf", "PEM private key in a Terraform heredoc (random body)",
    'resource "tls_locally_signed_cert" "edge" {\n  ca_private_key_pem = <<EOT\n' + pem_rsa() + '\nEOT\n}\n')
add(S, K, "keys/age.txt", "age identity (AGE-SECRET-KEY-1 + 58 bech32, random)",
    f"# created: 2025-02-11T09:12:44Z\n# public key: age1{rnd('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\nAGE-SECRET-KEY-1{rnd('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58)}\n")
add(S, K, "etc/wireguard/wg0.conf", "WireGuard interface PrivateKey (random 32 bytes base64)",
    f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {b64(rbytes(32))}\n\n[Peer]\nPublicKey = {b64(rbytes(32))}\nEndpoint = vpn.example.com:51820\nAllowedIPs = 10.8.0.0/24\n")
add(S, K, "keys/deploy.ppk", "PuTTY private key file v3 with Private-Lines (random)",
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@build\nPublic-Lines: 2\n" + wrap(ssh_ed25519_pub()[12:], 64) +
    "\nPrivate-Lines: 1\n" + b64(b"\x00\x00\x00\x20" + rbytes(32)) + "\nPrivate-MAC: " + hexs(64) + "\n")
add(S, K, "ansible/files/deploy_key", "OpenSSH private key inside an Ansible copy task (random body)",
    "- name: install deploy key\n  copy:\n    dest: /home/deploy/.ssh/id_ed25519\n    mode: '0600'\n    content: |\n" + "\n".join("      " + l for l in pem_openssh().split("\n")) + "\n")

# ---------------------------------------------------------------- harmless
H = "harmless"
# a. near misses: prefixes in code and docs, redacted or truncated tokens
group("harmless: vendor prefixes in code and docs, redacted or truncated tokens")
K = "near-miss-token"
add(H, K, ".gitlab-ci.yml", "npm_ prefix in npm's own config variable", "variables:\n  npm_config_cache: \"$CI_PROJECT_DIR/.npm\"\n")
add(H, K, "train/download.py", "hf_ prefix in a Hugging Face library function name", "from huggingface_hub import hf_hub_download\n\npath = hf_hub_download(repo_id=\"acme/tiny-bert\", filename=\"config.json\")\n")
add(H, K, "scanner/patterns.py", "a token regex in code, no token", 'GITLAB_PAT = re.compile(r"glpat-[0-9A-Za-z_-]{20}")\n')
add(H, K, "billing/keys.py", "prefix check in code, no key", 'if key.startswith(("sk_live_", "rk_live_")):\n    raise ValueError("live keys are not allowed in tests")\n')
add(H, K, "docs/slack.md", "documentation naming token prefixes", "Bot tokens begin with `xoxb-`, user tokens with `xoxp-`; store them in the vault, never in this repo.\n")
add(H, K, "logs/deploy.log", "a log line with the token redacted", "2025-04-02T10:11:03Z INFO auth ok user=ci token=ghp_************************************\n")
add(H, K, "docs/rotation.md", "a truncated AWS key id in an audit note", "Rotated access key AKIA2Q7M… on 2025-03-11 (ticket OPS-4411); the old key is deactivated.\n")
add(H, K, "docs/stripe.md", "a truncated Stripe key, last four shown", f"The dashboard shows the key as sk_live_…{rnd(AN, 4)}; ask finance for access.\n")
add(H, K, "assets/paths.txt", "an AWS-key-id-shaped string in lowercase (an object path)", f"s3://media-prod/uploads/akia{rnd(string.ascii_lowercase + string.digits, 16)}/avatar.png\n")
add(H, K, "docs/vault.md", "documentation naming Vault token prefixes", "Tokens created on Vault 1.10 and later start with `hvs.` (service) or `hvb.` (batch).\n")
add(H, K, "tests/test_tokens.py", "a too-short token in a negative unit test", 'def test_rejects_short():\n    assert not looks_like_pat("glpat-abc123")\n')
add(H, K, "scanner/prefixes.py", "a list of vendor prefixes, no bodies", 'PREFIXES = ["sk-ant-", "sk-proj-", "ghp_", "github_pat_", "xoxb-", "glpat-", "dop_v1_", "npm_"]\n')
add(H, K, "docs/maps.md", "a truncated Google API key in documentation", "Browser keys look like `AIzaSy…` and must be restricted by HTTP referrer.\n")
add(H, K, "local.settings.json", "Azure storage emulator connection string (no key)", '{\n  "Values": {\n    "AzureWebJobsStorage": "UseDevelopmentStorage=true"\n  }\n}')
add(H, K, "tests/fixtures/jwt.py", "an unsigned JWT (alg none, no signature) in a test fixture",
    'UNSIGNED = "%s.%s."\n' % (b64url('{"alg":"none","typ":"JWT"}'), b64url('{"sub":"alice","exp":0}')))
add(H, K, "docs/tokens.md", "a token prefix followed by an ellipsis", "Set `OPENAI_API_KEY=sk-proj-...` in your shell, not in the repository.\n")
add(H, K, "logs/api.log", "a masked bearer token in a log", "127.0.0.1 - - [02/Apr/2025:10:11:03 +0000] \"GET /v1/me HTTP/1.1\" 200 - auth=\"Bearer xoxb-****-****-****\"\n")
add(H, K, "src/config.ts", "hf_ and npm_ identifiers in code", 'const hf_cache_dir = process.env.HF_HOME ?? "~/.cache/huggingface";\nconst npm_registry = "https://registry.npmjs.org/";\n')
add(H, K, "web/src/spinner.css", "sk- prefix in CSS class names", ".sk-cube-grid { width: 40px; height: 40px; }\n.sk-cube-grid .sk-cube { float: left; }\n")
add(H, K, "scripts/slack-scopes.sh", "xoxb in a variable name, scopes as value", 'SLACK_XOXB_SCOPES="chat:write,channels:read,users:read"\n')
add(H, K, "tests/test_mask.py", "a masked Shopify token in a unit test, body built from zeros", 'def test_mask():\n    assert mask("shpat_" + "0" * 32) == "shpat_****"\n')
add(H, K, "docs/aws-keys.md", "a session key id truncated in prose", f"Temporary credentials use ids starting ASIA (e.g. ASIA{rnd(UP, 6)}…) and expire after an hour.\n")

# keys their vendors document as public
group("harmless: keys their vendors document as public")
K = "public-by-design"
add(H, K, "web/.env.production", "vendor:Stripe publishable key (pk_live_), documented as public", f"NEXT_PUBLIC_STRIPE_PUBLISHABLE_KEY=pk_live_51{rnd(AN, 97)}\n")
add(H, K, "web/src/checkout.js", "vendor:Stripe publishable test key (pk_test_), documented as public", f'const stripe = Stripe("pk_test_51{rnd(AN, 97)}");\n')
add(H, K, "web/src/map.js", "vendor:Mapbox public access token (pk.), documented as public",
    f'mapboxgl.accessToken = "pk.{b64url(json.dumps({"u": "acme-maps", "a": rnd(LOW, 25)}, separators=(",", ":")))}.{rnd(URL, 22)}";\n')
add(H, K, "web/.env", "vendor:Supabase anon key (JWT with role anon), documented as safe in the browser",
    "NEXT_PUBLIC_SUPABASE_URL=https://%s.supabase.co\nNEXT_PUBLIC_SUPABASE_ANON_KEY=%s\n" % ((ref := rnd(string.ascii_lowercase, 20)), jwt({"iss": "supabase", "ref": ref, "role": "anon", "iat": 1712000000, "exp": 2027576000})))
add(H, K, "app/lib/supabase.ts", "vendor:Supabase publishable key (sb_publishable_), documented as public", f'const supabase = createClient(url, "sb_publishable_{rnd(URL, 31)}");\n')
add(H, K, "web/src/sentry.client.config.ts", "vendor:Sentry DSN with only the public key, documented as safe to publish",
    f'Sentry.init({{ dsn: "https://{hexs(32)}@o{R.randint(100000, 999999)}.ingest.us.sentry.io/{R.randint(1000000, 9999999)}", tracesSampleRate: 0.1 }});\n')
add(H, K, "web/src/search.js", "vendor:Algolia search-only API key, documented for front-end use",
    f'const client = algoliasearch("{rnd(UP, 10)}", "{hexs(32)}"); // search-only key\n')
add(H, K, "web/templates/contact.html", "vendor:Google reCAPTCHA site key, public by design", f'<div class="g-recaptcha" data-sitekey="6L{rnd(URL, 38)}"></div>\n')
add(H, K, "web/src/auth.js", "vendor:Google OAuth client ID, public", f'const GOOGLE_CLIENT_ID = "{rnd(string.digits, 12)}-{rnd(LOW, 32)}.apps.googleusercontent.com";\n')
add(H, K, "web/src/analytics.js", "vendor:PostHog project API key (phc_), documented as public", f'posthog.init("phc_{rnd(AN, 43)}", {{ api_host: "https://eu.i.posthog.com" }});\n')
add(H, K, "web/.env", "vendor:Clerk publishable key (pk_live_ + base64 of the frontend API host)", f"NEXT_PUBLIC_CLERK_PUBLISHABLE_KEY=pk_live_{b64('clerk.acme-shop.com$').rstrip('=')}\n")
add(H, K, "web/templates/base.html", "vendor:New Relic browser agent key (NRJS-), embedded in every page", f'<script>window.NREUM||(NREUM={{}});NREUM.info={{licenseKey:"NRJS-{hexs(19)}",applicationID:"{R.randint(10 ** 8, 10 ** 9)}"}};</script>\n')
add(H, K, "github-app/app.yml", "vendor:GitHub App client ID (Iv1.), public", f"name: acme-ci\nclient_id: Iv1.{hexs(16)}\nurl: https://ci.acme.example\n")
add(H, K, "web/src/payments.js", "vendor:Square application ID (sq0idp-), public for the Web Payments SDK", f'const payments = Square.payments("sq0idp-{rnd(URL, 22)}", "L{rnd(UP, 12)}");\n')
add(H, K, "web/src/flags.js", "vendor:LaunchDarkly client-side ID, documented as not secret", f'const ld = LDClient.initialize("{hexs(24)}", {{ kind: "user", key: "anon" }});\n')

# identifiers and digests
group("harmless: identifiers and digests")
K = "identifier-digest"
add(H, K, "logs/app.log", "request UUIDs in a log line", f"2025-04-02T10:11:03Z INFO request_id={uid()} correlation_id={uid()} status=200\n")
add(H, K, "build/info.json", "git commit SHA in build info", '{"commit": "%s", "branch": "main", "built": "2025-04-02T10:11:03Z"}' % hexs(40))
add(H, K, "dist/SHA256SUMS", "sha256 checksums of release files", f"{hexs(64)}  app-1.4.2-linux-amd64.tar.gz\n{hexs(64)}  app-1.4.2-darwin-arm64.tar.gz\n")
add(H, K, "k8s/deployment.yaml", "container image pinned by digest", f"    spec:\n      containers:\n        - name: api\n          image: ghcr.io/acme/api@sha256:{hexs(64)}\n")
add(H, K, "Dockerfile", "base image pinned by digest", f"FROM python:3.12-slim@sha256:{hexs(64)}\nRUN pip install --no-cache-dir -r requirements.txt\n")
add(H, K, ".env", "Stripe price and product IDs (identifiers, not keys)", f"STRIPE_PRICE_ID=price_1P{rnd(AN, 22)}\nSTRIPE_PRODUCT_ID=prod_{rnd(AN, 14)}\n")
add(H, K, "iam/role.json", "AWS role unique ID (AROA...) from get-role output, an identifier",
    '{"Role": {"RoleName": "ci-deploy", "RoleId": "AROA%s", "Arn": "arn:aws:iam::%s:role/ci-deploy"}}' % (rnd(UP, 17), rnd(string.digits, 12)))
add(H, K, ".env", "Twilio messaging service SID (MG + 32 hex), an identifier", f"TWILIO_MESSAGING_SERVICE_SID=MG{hexs(32)}\n")
add(H, K, "config/notify.yml", "Slack team and channel IDs", f"slack:\n  team: T{rnd(UP, 10)}\n  channel: C{rnd(UP, 10)}\n")
add(H, K, "config/bot.yml", "Telegram chat ID and Discord application ID", f"telegram_chat_id: -100{rnd(string.digits, 10)}\ndiscord_application_id: \"{R.randint(10 ** 17, 10 ** 19 - 1)}\"\n")
add(H, K, "config/okta.yml", "Okta OAuth client ID (0oa...), public", f"okta:\n  issuer: https://acme.okta.com/oauth2/default\n  client_id: 0oa{rnd(AN, 17)}\n")
add(H, K, "config/email.yml", "SendGrid dynamic template IDs", f"templates:\n  welcome: d-{hexs(32)}\n  reset: d-{hexs(32)}\n")
add(H, K, "k8s/configmap.yaml", "ConfigMap with base64 of a plain message", f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: motd\nbinaryData:\n  motd: {b64('Welcome to the staging cluster. Deploys freeze on Fridays.')}\n")
add(H, K, "terraform.tfstate", "Terraform state lineage UUID and serial", '{\n  "version": 4,\n  "terraform_version": "1.7.5",\n  "serial": 42,\n  "lineage": "%s"\n}' % uid())
add(H, K, "logs/trace.log", "trace and span IDs", f"trace_id={hexs(32)} span_id={hexs(16)} parent_id={hexs(16)} name=GET /orders\n")
add(H, K, "assets/logo.png", "Git LFS pointer file", f"version https://git-lfs.github.com/spec/v1\noid sha256:{hexs(64)}\nsize {R.randint(10000, 900000)}\n")
add(H, K, "k8s/live.yaml", "Kubernetes metadata uid and resourceVersion", f"metadata:\n  name: api\n  uid: {uid()}\n  resourceVersion: \"{R.randint(10 ** 6, 10 ** 8)}\"\n  generation: 7\n")
add(H, K, "logs/docker.txt", "docker ps output with container IDs", f"CONTAINER ID   IMAGE          STATUS\n{hexs(12)}   nginx:1.27     Up 3 hours\n{hexs(12)}   redis:7        Up 3 hours\n")
add(H, K, "cache/headers.txt", "HTTP ETag and request id headers", f'ETag: "{hexs(32)}"\nX-Request-Id: {uid()}\n')
add(H, K, "mailchimp/audience.json", "Mailchimp audience (list) ID and server prefix", '{"list_id": "%s", "server": "us%d"}' % (hexs(10), R.randint(2, 21)))
add(H, K, "infra/azure.auto.tfvars", "Azure tenant and subscription IDs (UUIDs, not secrets)", f'tenant_id       = "{uid()}"\nsubscription_id = "{uid()}"\nlocation        = "westeurope"\n')
add(H, K, "infra/iam.tf", "AWS account ID inside a role ARN", f'  role_arn = "arn:aws:iam::{rnd(string.digits, 12)}:role/github-actions-deploy"\n')

# b. placeholders and templates
group("harmless: placeholders and demo values")
K = "placeholder"
for path, t in [
    (".env.example", "STRIPE_SECRET_KEY=<your-api-key>\n"),
    (".env.example", "DB_PASSWORD=changeme\n"),
    ("config/app.example.yml", "database:\n  user: app\n  password: xxxxxxxx\n"),
    ("docs/setup.md", "Log in with `admin` / `********` (ask the team lead for the password).\n"),
    ("config.example.json", '{"api_key": "REPLACE_ME", "api_secret": "REPLACE_ME"}'),
    ("settings.example.ini", "[smtp]\nuser = you@example.com\npassword = TODO\n"),
    ("config/app.yml", "auth:\n  client_secret: null\n"),
    ("config/app.json", '{"password": "", "token": ""}'),
    ("README.md", "docker run -e POSTGRES_PASSWORD=example -p 5432:5432 postgres:16\n"),
    ("docs/quickstart.md", "Use `password123` for the local demo user; it is reset on every `make seed`.\n"),
    ("docker-compose.example.yml", "services:\n  db:\n    environment:\n      MYSQL_ROOT_PASSWORD: dummy\n"),
    (".env.sample", "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"),
    (".env.template", "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n"),
    ("docs/mssql.md", "docker run -e 'ACCEPT_EULA=Y' -e 'MSSQL_SA_PASSWORD=<YourStrong@Passw0rd>' mcr.microsoft.com/mssql/server:2022-latest\n"),
    ("config/slack.example.yml", "slack:\n  bot_token: xoxb-your-bot-token\n  webhook: https://hooks.slack.com/services/XXX/YYY/ZZZ\n"),
    ("docs/api.md", "curl -H \"Authorization: Bearer YOUR_ACCESS_TOKEN\" https://api.example.com/v1/me\n"),
    ("src/main/resources/application-example.properties", "spring.datasource.password=your_password_here\n"),
    ("infra/example.tfvars", 'db_password = "CHANGE_ME"\n'),
    ("config/secrets.example.yml", "production:\n  secret_key_base: <%= 'generate with: bin/rails secret' %>\n"),
    ("docs/connection.md", "postgres://user:password@localhost:5432/mydb\n"),
    ("k8s/secret.template.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  password: <PASSWORD>\n"),
    ("docs/aws.md", "aws_access_key_id = <access-key-id>\naws_secret_access_key = <secret-access-key>\n"),
    ("config/mail.example.json", '{"smtp": {"user": "user@example.com", "pass": "secret"}}'),
    (".npmrc.example", "//registry.npmjs.org/:_authToken=NPM_TOKEN_HERE\n"),
    ("docs/mysql.md", "mysql -u root -p'your-password' -h 127.0.0.1\n"),
    ("README.md", "Set `JWT_SECRET` to a long random string, e.g. the output of `openssl rand -base64 32`.\n"),
    ("config/app.yml", "partner:\n  apiKey: \"YOUR_API_KEY\"\n  token: \"<token>\"\n"),
    ("config/ldap.yml", "ldap:\n  bind_dn: cn=reader,dc=example,dc=org\n  bind_password: \"********\"\n"),
    (".env.example", "SECRET_KEY=your-secret-key-here\nSESSION_SECRET=\n"),
    ("docs/oauth.md", '{"client_id": "...", "client_secret": "..."}\n'),
]:
    add(H, K, path, "placeholder or documented demo value, no real secret", t)

group("harmless: references to secrets held elsewhere")
K = "reference"
for path, t in [
    ("app/settings.py", 'DB_PASSWORD = os.environ["DB_PASSWORD"]\n'),
    ("config/app.yml", "database:\n  password: ${DB_PASSWORD}\n"),
    ("charts/app/templates/secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\nstringData:\n  password: {{ .Values.password | quote }}\n"),
    ("roles/db/templates/my.cnf.j2", "[client]\nuser = {{ db_user }}\npassword = {{ secret }}\n"),
    ("alembic.ini", "sqlalchemy.url = postgresql://app:%(password)s@db/app\n"),
    ("docker/entrypoint.sh", 'export DB_PASSWORD="$(cat /run/secrets/db_password)"\n'),
    ("config/vault.yml", "database:\n  password: vault:secret/data/db#password\n"),
    ("ecs/task.json", '{"secrets": [{"name": "DB_PASSWORD", "valueFrom": "arn:aws:ssm:eu-west-1:%s:parameter/prod/db/password"}]}' % rnd(string.digits, 12)),
    ("ecs/task-sm.json", '{"secrets": [{"name": "API_KEY", "valueFrom": "arn:aws:secretsmanager:eu-west-1:%s:secret:prod/api-key-%s"}]}' % (rnd(string.digits, 12), rnd(AN, 6))),
    ("k8s/deployment.yaml", "        env:\n          - name: DB_PASSWORD\n            valueFrom:\n              secretKeyRef:\n                name: orders-db\n                key: password\n"),
    (".github/workflows/deploy.yml", "    env:\n      NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n      AWS_SECRET_ACCESS_KEY: ${{ secrets.AWS_SECRET_ACCESS_KEY }}\n"),
    ("infra/rds.tf", 'resource "aws_db_instance" "main" {\n  username = "master"\n  password = var.db_password\n}\n'),
    ("infra/app.tf", "  api_key = data.aws_secretsmanager_secret_version.api.secret_string\n"),
    ("docker-compose.yml", "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD_FILE: /run/secrets/postgres_password\n    secrets:\n      - postgres_password\n"),
    ("infra/appsettings.bicep", "  DbPassword: '@Microsoft.KeyVault(SecretUri=https://acme-kv.vault.azure.net/secrets/db-password/)'\n"),
    (".env.tpl", "DB_PASSWORD=op://Production/orders-db/password\nSTRIPE_KEY=op://Production/stripe/secret-key\n"),
    ("cloudformation/db.yaml", "      MasterUserPassword: '{{resolve:secretsmanager:prod/db:SecretString:password}}'\n"),
    ("group_vars/all.yml", "db_password: \"{{ vault_db_password }}\"\n"),
    ("src/main/resources/application.yml", "spring:\n  datasource:\n    password: ${SPRING_DATASOURCE_PASSWORD:}\n"),
    ("src/config.js", "const apiKey = process.env.PARTNER_API_KEY;\nif (!apiKey) throw new Error('PARTNER_API_KEY is not set');\n"),
    ("k8s/external-secret.yaml", "apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nmetadata:\n  name: db\nspec:\n  secretStoreRef:\n    name: aws-sm\n    kind: ClusterSecretStore\n  data:\n    - secretKey: password\n      remoteRef:\n        key: prod/db\n        property: password\n"),
]:
    add(H, K, path, "reference to a secret held elsewhere (env, vault, secret store, template)", t)

group("harmless: encrypted values")
K = "encrypted-value"
add(H, K, "secrets/prod.enc.yaml", "sops-encrypted YAML values (random ciphertext)",
    f"db:\n  password: ENC[AES256_GCM,data:{b64(rbytes(18))},iv:{b64(rbytes(32))},tag:{b64(rbytes(16))},type:str]\nsops:\n  age:\n    - recipient: age1{rnd('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\n  lastmodified: \"2025-03-02T09:14:00Z\"\n  version: 3.9.0\n")
add(H, K, "secrets/api.enc.json", "sops-encrypted JSON value (random ciphertext)",
    '{\n  "api_key": "ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:str]"\n}' % (b64(rbytes(30)), b64(rbytes(32)), b64(rbytes(16))))
add(H, K, ".env.enc", "sops-encrypted dotenv (random ciphertext)",
    f"DB_PASSWORD=ENC[AES256_GCM,data:{b64(rbytes(15))},iv:{b64(rbytes(32))},tag:{b64(rbytes(16))},type:str]\nsops_version=3.9.0\n")
add(H, K, "secrets/token.age", "age-encrypted file (armoured, random body)",
    "-----BEGIN AGE ENCRYPTED FILE-----\n" + wrap(b64(b"age-encryption.org/v1\n-> X25519 " + rbytes(200)), 64) + "\n-----END AGE ENCRYPTED FILE-----\n")
add(H, K, "group_vars/prod/vault.yml", "Ansible Vault encrypted file (random hex body)",
    "$ANSIBLE_VAULT;1.1;AES256\n" + "\n".join(hexs(80) for _ in range(6)) + "\n")
add(H, K, "k8s/sealed.yaml", "Bitnami SealedSecret encryptedData (random ciphertext)",
    f"apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: orders-db\nspec:\n  encryptedData:\n    password: AgB{rnd(B64, 340)}==\n")
add(H, K, ".travis.yml", "Travis CI encrypted env var (secure:, random ciphertext)", f'env:\n  global:\n    - secure: "{b64(rbytes(256))}"\n')
add(H, K, "config/secrets.ejson", "EJSON encrypted value (random ciphertext)",
    '{\n  "_public_key": "%s",\n  "db_password": "EJ[1:%s:%s:%s]"\n}' % (hexs(64), b64(rbytes(32)), b64(rbytes(24)), b64(rbytes(30))))
add(H, K, "notes/handover.asc", "PGP encrypted message (random body)",
    "-----BEGIN PGP MESSAGE-----\n\n" + wrap(b64(b"\x84\x5e\x03" + rbytes(400)), 64) + "\n=" + b64(rbytes(3)) + "\n-----END PGP MESSAGE-----\n")
add(H, K, "ansible/host_vars/db1.yml", "inline Ansible !vault value (random hex)",
    "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n" + "\n".join("  " + hexs(80) for _ in range(4)) + "\n")
add(H, K, "config/kms.yml", "AWS KMS ciphertext blob (random, decryptable only with KMS access)", f"encrypted_api_key: AQICAHh{rnd(B64, 200)}==\n")
add(H, K, "config/payments.yml", "HashiCorp Vault transit ciphertext (vault:v1:, random)", f"card_vault_key: vault:v1:{b64(rbytes(60))}\n")

# c. ordinary configuration that merely looks random
group("harmless: lock-file hashes and checksums")
K = "lockfile-checksum"
add(H, K, "package-lock.json", "npm lockfile integrity hashes",
    '"node_modules/lodash": {\n  "version": "4.17.21",\n  "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",\n  "integrity": "sha512-%s"\n}' % b64(rbytes(64)))
add(H, K, "yarn.lock", "yarn.lock resolved URL and integrity",
    f'axios@^1.6.0:\n  version "1.6.8"\n  resolved "https://registry.yarnpkg.com/axios/-/axios-1.6.8.tgz#{hexs(40)}"\n  integrity sha512-{b64(rbytes(64))}\n')
add(H, K, "pnpm-lock.yaml", "pnpm lockfile resolution integrity", f"  /zod@3.22.4:\n    resolution: {{integrity: sha512-{b64(rbytes(64))}}}\n    dev: false\n")
add(H, K, "Cargo.lock", "Cargo.lock checksum", f'[[package]]\nname = "serde"\nversion = "1.0.197"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{hexs(64)}"\n')
add(H, K, "go.sum", "go.sum h1: hashes", f"github.com/google/uuid v1.6.0 h1:{b64(rbytes(32))}\ngithub.com/google/uuid v1.6.0/go.mod h1:{b64(rbytes(32))}\n")
add(H, K, "poetry.lock", "poetry.lock file hashes", f'[[package]]\nname = "requests"\nversion = "2.31.0"\nfiles = [\n    {{file = "requests-2.31.0-py3-none-any.whl", hash = "sha256:{hexs(64)}"}},\n]\n')
add(H, K, "requirements.txt", "pip requirements with --hash", f"django==5.0.4 \\\n    --hash=sha256:{hexs(64)} \\\n    --hash=sha256:{hexs(64)}\n")
add(H, K, ".terraform.lock.hcl", "Terraform provider lock hashes",
    f'provider "registry.terraform.io/hashicorp/aws" {{\n  version = "5.44.0"\n  hashes = [\n    "h1:{b64(rbytes(32))}",\n    "zh:{hexs(64)}",\n  ]\n}}\n')
add(H, K, "flake.lock", "Nix flake.lock narHash and rev",
    '{\n  "nodes": {\n    "nixpkgs": {\n      "locked": {\n        "narHash": "sha256-%s",\n        "rev": "%s",\n        "type": "github"\n      }\n    }\n  }\n}' % (b64(rbytes(32)), hexs(40)))
add(H, K, "ios/Podfile.lock", "CocoaPods SPEC CHECKSUMS", f"SPEC CHECKSUMS:\n  Alamofire: {hexs(40)}\n  SnapKit: {hexs(40)}\n\nPODFILE CHECKSUM: {hexs(40)}\n")
add(H, K, "gradle/verification-metadata.xml", "Gradle dependency verification sha256",
    f'<component group="com.squareup.okhttp3" name="okhttp" version="4.12.0">\n  <artifact name="okhttp-4.12.0.jar">\n    <sha256 value="{hexs(64)}" origin="Generated by Gradle"/>\n  </artifact>\n</component>\n')
add(H, K, "composer.lock", "composer.lock dist reference and shasum", '{"name": "monolog/monolog", "dist": {"type": "zip", "reference": "%s", "shasum": ""}}' % hexs(40))

group("harmless: public keys and certificates")
K = "public-key-cert"
add(H, K, "home/deploy/.ssh/authorized_keys", "SSH ed25519 public key (random)", f"{ssh_ed25519_pub()} alice@laptop\n")
add(H, K, "cloud-init/user-data.yaml", "SSH RSA public key in cloud-init (random)", f"users:\n  - name: ops\n    ssh_authorized_keys:\n      - {ssh_rsa_pub()} ops@bastion\n")
add(H, K, "ci/known_hosts", "known_hosts entry with hashed host (random)",
    "|1|%s|%s ecdsa-sha2-nistp256 %s\n" % (b64(rbytes(20)), b64(rbytes(20)),
                                           b64(b"\x00\x00\x00\x13ecdsa-sha2-nistp256\x00\x00\x00\x08nistp256\x00\x00\x00\x41\x04" + rbytes(64))))
add(H, K, "certs/ca.crt", "PEM certificate (random body)", pem("CERTIFICATE", bytes.fromhex("3082037d30820265a003020102") + rbytes(880)) + "\n")
add(H, K, "keys/jwt.pub", "PEM public key (random body)", pem("PUBLIC KEY", bytes.fromhex("30820122300d06092a864886f70d01010105000382010f00") + rbytes(270)) + "\n")
add(H, K, "KEYS.asc", "PGP public key block (random body)",
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + wrap(b64(b"\x99\x01\x0d\x04" + rbytes(600)), 64) + "\n=" + b64(rbytes(3)) + "\n-----END PGP PUBLIC KEY BLOCK-----\n")
add(H, K, ".sops.yaml", "age public recipients (random)", f"creation_rules:\n  - path_regex: secrets/.*\\.yaml$\n    age: age1{rnd('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)},age1{rnd('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\n")
add(H, K, "public/.well-known/jwks.json", "JWKS with public RSA parameters only (random modulus)",
    '{"keys": [{"kty": "RSA", "use": "sig", "kid": "%s", "alg": "RS256", "n": "%s", "e": "AQAB"}]}' % (hexs(16), b64url(rbytes(256))))
add(H, K, "minisign.pub", "minisign public key (random)", f"untrusted comment: minisign public key {hexs(16).upper()}\nRW{b64(rbytes(40))[:54]}\n")
add(H, K, "etc/wireguard/peers.conf", "WireGuard peer public keys only (random)", f"[Peer]\n# laptop-anna\nPublicKey = {b64(rbytes(32))}\nAllowedIPs = 10.8.0.3/32\n\n[Peer]\n# phone-ben\nPublicKey = {b64(rbytes(32))}\nAllowedIPs = 10.8.0.4/32\n")
add(H, K, "k8s/ca-configmap.yaml", "CA certificate in a ConfigMap (random body)",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: corp-ca\ndata:\n  ca.crt: |\n" + "\n".join("    " + l for l in pem("CERTIFICATE", bytes.fromhex("3082030d308201f5a003020102") + rbytes(760)).split("\n")) + "\n")
add(H, K, "cosign.pub", "cosign public key (random body)", pem("PUBLIC KEY", bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200") + b"\x04" + rbytes(64)) + "\n")
add(H, K, "docs/verify.md", "GPG key fingerprint in release docs (random)", "Releases are signed with key\n\n    " + " ".join(rnd("0123456789ABCDEF", 4) for _ in range(10)) + "\n\nImport it from KEYS.asc.\n")

group("harmless: ordinary config that looks random")
K = "benign-config"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00\x1f\xf3\xffa"
add(H, K, "web/src/styles.css", "base64 PNG data URI in CSS (random pixels)", f".icon-check {{ background-image: url(data:image/png;base64,{b64(PNG + rbytes(180))}); }}\n")
add(H, K, "web/templates/email.html", "inline base64 image (random pixels)", f'<img alt="logo" src="data:image/png;base64,{b64(PNG + rbytes(240))}">\n')
add(H, K, "docs/links.md", "URL with a long query string and no credentials",
    f"https://www.example.com/search?q=secret+scanning&utm_source=newsletter&utm_medium=email&utm_campaign=spring_2025&gclid={rnd(URL, 40)}&page=2\n")
add(H, K, "config/auth.yml", "password policy settings", "password_policy:\n  password_min_length: 12\n  require_symbols: true\n  max_password_age_days: 90\n  password_history: 5\n")
add(H, K, "config/app.yml", "key names describing where secrets go, no values", "auth:\n  api_key_header: X-API-Key\n  token_endpoint: https://login.example.com/oauth2/token\n  secret_name: prod/api/signing-key\n  token_ttl: 3600\n")
add(H, K, "ci/build.env", "build identifiers", f"BUILD_ID=20250402.{R.randint(1, 40)}-{hexs(7)}\nBUILD_NUMBER={R.randint(1000, 9999)}\nIMAGE_TAG=main-{hexs(12)}\n")
add(H, K, "web/index.html", "Subresource Integrity hash on a script tag", f'<script src="https://cdn.example.net/lib/app.min.js" integrity="sha384-{b64(rbytes(48))}" crossorigin="anonymous"></script>\n')
add(H, K, "web/dist/manifest.json", "content-hashed asset names", '{"main.js": "main.%s.js", "vendor.js": "vendor.%s.js", "app.css": "app.%s.css"}' % (hexs(8), hexs(20), hexs(8)))
add(H, K, "schemas/user.json", "JSON schema for a password field", '{"type": "object", "properties": {"password": {"type": "string", "minLength": 12, "writeOnly": true}}, "required": ["password"]}')
add(H, K, "openapi.yaml", "OpenAPI security scheme declaration", "components:\n  securitySchemes:\n    ApiKeyAuth:\n      type: apiKey\n      in: header\n      name: X-API-Key\n    bearerAuth:\n      type: http\n      scheme: bearer\n      bearerFormat: JWT\n")
add(H, K, "web/templates/login.html", "HTML password input", '<input type="password" name="password" autocomplete="current-password" minlength="12" required>\n')
add(H, K, "infra/random.tf", "Terraform random_password resource (generates, holds no value)",
    'resource "random_password" "db" {\n  length           = 24\n  special          = true\n  override_special = "!#%&*-_=+"\n}\n')
add(H, K, "k8s/sa-token.yaml", "service-account-token Secret with no data (filled by the controller)",
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ci-token\n  annotations:\n    kubernetes.io/service-account.name: ci\ntype: kubernetes.io/service-account-token\n")
add(H, K, "config/oauth.yml", "OAuth settings with public endpoints and algorithm names", "oauth:\n  issuer: https://login.example.com\n  jwks_uri: https://login.example.com/.well-known/jwks.json\n  jwt_algorithm: RS256\n  auth_type: client_secret_post\n")
add(H, K, "docs/links.md", "signed-looking but public CDN URL with a cache-busting version hash", f"https://cdn.example.net/assets/fonts/inter.woff2?v={hexs(32)}&display=swap\n")
add(H, K, "settings.py", "password-related settings without secret values", "PASSWORD_RESET_TIMEOUT = 259200\nAUTH_PASSWORD_VALIDATORS = [\n    {'NAME': 'django.contrib.auth.password_validation.MinimumLengthValidator'},\n]\nSESSION_COOKIE_NAME = 'sid'\n")
add(H, K, "config/seed.yml", "random seeds and sampling settings", f"experiment:\n  seed: {R.randint(1, 2 ** 31)}\n  shuffle_buffer: 10000\n  run_id: {hexs(8)}-{hexs(4)}\n")
add(H, K, ".github/workflows/ci.yml", "cache key expression with hashFiles", "      - uses: actions/cache@v4\n        with:\n          path: ~/.cargo\n          key: cargo-${{ runner.os }}-${{ hashFiles('**/Cargo.lock') }}\n")
add(H, K, "charts/app/templates/deployment.yaml", "Helm checksum annotation (rendered sha256)", f"  template:\n    metadata:\n      annotations:\n        checksum/config: {hexs(64)}\n")
add(H, K, "app/ids.py", "a UUID namespace constant in code", f'ORDER_NAMESPACE = uuid.UUID("{uid()}")\n')
add(H, K, "web/templates/base.html", "CSP nonce filled per request by the template", '<script nonce="{{ request.csp_nonce }}">window.APP_ENV = "prod";</script>\n')

print("# label\tkind\tpath\tsource\tsample (\\n = newline, \\t = tab). Held out for issue 39: generated by heldout2.py (seed 3939) before any rule change; measured, never tuned against.")
for r in rows:
    if r[0] == "#":
        print("# " + r[1])
        continue
    assert "\t" not in r[4] and "\n" not in r[4], r
    assert r[0] in ("secret", "harmless") and r[3], r
    print("\t".join(r))
