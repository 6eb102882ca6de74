//! Artifacts' content in an S3-compatible object store (for core replicas that share no disk),
//! behind `skill_store::BlobStore`: each blob under `<prefix>/<2 hex>/<sha256>`.
//!
//! ```no_run
//! let blobs = skill_blobs::S3Blobs::new(&skill_blobs::S3Options {
//!     url: "s3://artifacts/core".to_owned(),
//!     endpoint: Some("http://127.0.0.1:9000".to_owned()),
//!     ..skill_blobs::S3Options::default()
//! })?;
//! # Ok::<(), String>(())
//! ```

use futures::future::BoxFuture;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ObjectStoreExt as _, PutPayload};
use skill_store::{BlobStore, ErrorKind, StoreError};

/// Where the blobs go. Credentials and region not given here come from the usual `AWS_*`
/// variables of the environment.
#[derive(Debug, Clone, Default)]
pub struct S3Options {
    /// `s3://<bucket>[/<prefix>]`.
    pub url: String,
    /// The server, for an S3-compatible store other than AWS (`http://` allowed then).
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
}

/// Blobs in an S3 bucket.
#[derive(Debug)]
pub struct S3Blobs {
    store: AmazonS3,
    prefix: String,
}

impl S3Blobs {
    /// The store `options` describe; an error names what is wrong with them.
    pub fn new(options: &S3Options) -> Result<Self, String> {
        let Some(rest) = options.url.strip_prefix("s3://") else {
            return Err(format!("{:?} is not an s3://<bucket>[/<prefix>] URL", options.url));
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!("{:?} names no bucket: s3://<bucket>[/<prefix>]", options.url));
        }
        // A store that does not answer fails a write within seconds, not minutes: the request
        // that waits on it (a call's end) is retried by its sender.
        let retry = object_store::RetryConfig {
            max_retries: 3,
            retry_timeout: std::time::Duration::from_secs(10),
            ..object_store::RetryConfig::default()
        };
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket).with_retry(retry);
        if let Some(endpoint) = &options.endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        for (value, set) in [
            (&options.region, AmazonS3Builder::with_region as fn(AmazonS3Builder, String) -> AmazonS3Builder),
            (&options.access_key_id, AmazonS3Builder::with_access_key_id),
            (&options.secret_access_key, AmazonS3Builder::with_secret_access_key),
        ] {
            if let Some(value) = value {
                builder = set(builder, value.clone());
            }
        }
        let store = builder.build().map_err(|error| format!("the S3 store cannot be set up: {error}"))?;
        Ok(Self { store, prefix: prefix.trim_matches('/').to_owned() })
    }

    fn path(&self, sha256: &str) -> Result<Path, StoreError> {
        skill_store::check_blob_name(sha256)?;
        let key = format!("{}/{sha256}", &sha256[..2]);
        Ok(if self.prefix.is_empty() { Path::from(key) } else { Path::from(format!("{}/{key}", self.prefix)) })
    }
}

fn failure(error: &object_store::Error) -> StoreError {
    let kind = match error {
        object_store::Error::NotFound { .. } => ErrorKind::NotFound,
        _ => ErrorKind::Unavailable,
    };
    StoreError::new(kind, format!("the S3 store: {error}"))
}

impl BlobStore for S3Blobs {
    fn put<'a>(&'a self, sha256: &'a str, content: &'a [u8]) -> BoxFuture<'a, skill_store::Result<()>> {
        Box::pin(async move {
            let path = self.path(sha256)?;
            // Content-addressed: a second write of the same name writes the same bytes.
            self.store.put(&path, PutPayload::from(content.to_vec())).await.map_err(|error| failure(&error))?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, sha256: &'a str) -> BoxFuture<'a, skill_store::Result<Vec<u8>>> {
        Box::pin(async move {
            let path = self.path(sha256)?;
            let found = self.store.get(&path).await.map_err(|error| failure(&error))?;
            let bytes = found.bytes().await.map_err(|error| failure(&error))?;
            Ok(bytes.to_vec())
        })
    }
}
