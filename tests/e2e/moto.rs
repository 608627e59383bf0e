//! A real EC2/SSM API server for the tests that reach AWS: moto's server
//! mode (PyPI `moto[server]`), started on 127.0.0.1 on a free port for one
//! test and killed when the handle drops. `.ci/run` installs it and names
//! it in CSIS_MOTO_SERVER; without it (and without CSIS_REQUIRE_MOTO) the
//! tests that need it are skipped with a notice.
//!
//! moto answers every SSM command with Success and no output without
//! running it: what the tests learn from it is csis's use of the APIs
//! (the machine found by its launch tags, its power state and boot image,
//! one command per check, a stopped machine started and stopped again),
//! not what a command would find on a machine.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Moto {
    child: Child,
    pub endpoint: String,
    /// Empty AWS config and credentials files: the operator's ~/.aws is
    /// never read.
    aws_dir: tempfile::TempDir,
}

impl Moto {
    pub fn start() -> Option<Moto> {
        let program = std::env::var("CSIS_MOTO_SERVER").unwrap_or_else(|_| "moto_server".into());
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // The vendor AMIs it knows: fixtures/clouds' Debian query finds
        // one (moto's own list has no Debian image).
        let amis =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/e2e/moto-amis.json");
        let child = Command::new(&program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("MOTO_AMIS_PATH", amis)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = child else {
            csis_test_support::skipped_without(
                "CSIS_REQUIRE_MOTO",
                &format!("moto's server ({program}) could not be started"),
                "the tests against a real EC2/SSM API are skipped",
            );
            return None;
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
                let _ = child.kill();
                panic!("moto's server did not listen on 127.0.0.1:{port}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let aws_dir = tempfile::tempdir().unwrap();
        std::fs::write(aws_dir.path().join("config"), "").unwrap();
        std::fs::write(aws_dir.path().join("credentials"), "").unwrap();
        Some(Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            aws_dir,
        })
    }

    /// The environment a csis step (and the test doubles) reach it with.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let file = |n: &str| -> PathBuf { self.aws_dir.path().join(n) };
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_DEFAULT_REGION", "us-east-1".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ("AWS_CONFIG_FILE", file("config").display().to_string()),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                file("credentials").display().to_string(),
            ),
        ]
    }

    /// A Python one-off against the server with boto3 (the same Python
    /// the test doubles run with): its stdout, trimmed.
    pub fn python(&self, code: &str) -> String {
        let out = Command::new("python3")
            .args([
                "-c",
                &format!("import boto3\nec2 = boto3.client('ec2')\n{code}"),
            ])
            .envs(self.env())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `(instance id, state)` of every EC2 instance carrying
    /// `csis_instance=<instance>`.
    pub fn instances(&self, instance: &str) -> Vec<(String, String)> {
        let out = self.python(&format!(
            "r = ec2.describe_instances(Filters=[{{'Name': 'tag:csis_instance', 'Values': ['{instance}']}}])\n\
             for x in r['Reservations']:\n    for i in x['Instances']:\n        print(i['InstanceId'], i['State']['Name'])"
        ));
        out.lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }
}

/// What a test of fixtures/clouds against moto starts from: the server,
/// a copy of the tree (edited by `edit` before anything runs), and the
/// packer, tofu and gcloud doubles. `None` when the test is skipped
/// (no python-hcl2 for the doubles, or no moto).
pub fn clouds(
    edit: impl FnOnce(&std::path::Path),
) -> Option<(Moto, tempfile::TempDir, tempfile::TempDir)> {
    if !crate::support::hcl2_available() {
        return None;
    }
    let moto = Moto::start()?;
    let t = csis_test_support::tree("clouds");
    edit(t.path());
    let d = crate::support::doubles(&["packer", "tofu", "gcloud"]);
    Some((moto, t, d))
}

impl Moto {
    /// `csis --root-dir ROOT ARGS` at `now`, with the doubles of `d` first
    /// on PATH and this server's environment: its exit code, and its
    /// stdout then stderr as one text.
    pub fn csis(
        &self,
        root: &std::path::Path,
        d: &std::path::Path,
        now: i64,
        args: &[&str],
    ) -> (Option<i32>, String) {
        self.csis_with(root, d, now, args, &[])
    }

    /// [`Moto::csis`] with more environment (the doubles' settings).
    pub fn csis_with(
        &self,
        root: &std::path::Path,
        d: &std::path::Path,
        now: i64,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Option<i32>, String) {
        let path = format!(
            "{}:{}",
            d.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = Command::new(env!("CARGO_BIN_EXE_csis"))
            .current_dir(root)
            .arg("--root-dir")
            .arg(root)
            .args(args)
            .env("CSIS_NOW", now.to_string())
            .env_remove("CSIS_RUN_ID")
            .env("PATH", path)
            .env("CSIS_DOUBLE_CLOUD", d.join("cloud"))
            .envs(self.env())
            .env_remove("PACKER_DOUBLE_FAIL")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (
            o.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
