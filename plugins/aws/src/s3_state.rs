//! The s3 state backend's objects, read through the AWS SDK for a
//! `${terraform.KEY}` source (the tofu plugin's state reader names this
//! function): S3 GetObject with the backend's region and profile, else the
//! standard credential chain; `AWS_ENDPOINT_URL` honoured.

use crate::sdk::{Clients, said};

/// The object `bucket`/`key` of `fields`, whole.
pub fn get_object(fields: &[(String, String)]) -> Result<Vec<u8>, String> {
    let field = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.as_str());
    let (Some(bucket), Some(key)) = (field("bucket"), field("key")) else {
        return Err("the request names no bucket and key".into());
    };
    let clients = Clients::at(field("region").unwrap_or("us-east-1"), field("profile"))?;
    let object = clients
        .block_on(clients.s3.get_object().bucket(bucket).key(key).send())
        .map_err(said)?;
    let body = clients
        .block_on(object.body.collect())
        .map_err(|e| format!("reading the object's body: {e}"))?;
    Ok(body.into_bytes().to_vec())
}
