//! The AWS SDK clients of one `aws` runtime: its region, its profile (else
//! the standard credential chain), and whatever endpoint the environment
//! names (`AWS_ENDPOINT_URL`, as every AWS SDK reads it), on a
//! current-thread tokio runtime the plugin owns for the call. csis itself
//! is synchronous; each execution-time hook blocks on its own requests.

use std::future::Future;

use aws_config::{BehaviorVersion, Region};
use csis_plugin_api::BuilderDecl;

pub struct Clients {
    rt: tokio::runtime::Runtime,
    pub ec2: aws_sdk_ec2::Client,
    pub ssm: aws_sdk_ssm::Client,
    pub sts: aws_sdk_sts::Client,
    pub s3: aws_sdk_s3::Client,
}

impl Clients {
    /// The clients of `runtime`, which must be a cloud runtime with a
    /// region.
    pub fn connect(runtime: &BuilderDecl) -> Result<Clients, String> {
        let region = runtime
            .cloud()
            .map(|c| c.region.trim().to_string())
            .filter(|r| !r.is_empty())
            .ok_or_else(|| format!("runtime '{}' declares no region", runtime.name()))?;
        Clients::at(&region, crate::profile(runtime))
    }

    /// The clients of `region` with `profile` (else the standard chain).
    pub fn at(region: &str, profile: Option<&str>) -> Result<Clients, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("could not start the AWS SDK's runtime: {e}"))?;
        let mut loader =
            aws_config::defaults(BehaviorVersion::latest()).region(Region::new(region.to_string()));
        if let Some(profile) = profile {
            loader = loader.profile_name(profile);
        }
        let config = rt.block_on(loader.load());
        // An endpoint of one's own (AWS_ENDPOINT_URL: a local S3 such as
        // moto's or MinIO's) has no bucket subdomains: address by path.
        let s3 = aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(config.endpoint_url().is_some())
            .build();
        Ok(Clients {
            ec2: aws_sdk_ec2::Client::new(&config),
            ssm: aws_sdk_ssm::Client::new(&config),
            sts: aws_sdk_sts::Client::new(&config),
            s3: aws_sdk_s3::Client::from_conf(s3),
            rt,
        })
    }

    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Wait `seconds` without a busy loop, on the clients' runtime.
    pub fn sleep(&self, seconds: u64) {
        self.rt
            .block_on(tokio::time::sleep(std::time::Duration::from_secs(seconds)));
    }
}

/// An SDK error with its causes, each once (the SDK's own `Display` says
/// only "service error", and its context printer appends the whole Debug
/// form of the response).
pub fn said<E: std::error::Error>(e: E) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}
