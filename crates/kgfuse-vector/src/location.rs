//! Where the vector table lives: a directory, or S3-compatible object storage
//! (`s3://bucket/prefix`, LanceDB's object-store backend).
//!
//! On object storage, credentials come from the standard `AWS_*` environment
//! variables; the endpoint, region and `allow_http` may also be given as storage
//! options (`[vectors.storage]` in `kgfuse.toml`, never secrets). LanceDB commits
//! a table version with a conditional PUT (`If-None-Match: *`), so two writers are
//! safe only on a store that honours it: [`VectorLocation::check_for_writers`]
//! probes that, and that the bucket exists (LanceDB does not create buckets).

use crate::VectorError;
use kgfuse_core::config::MemoryConfig;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How soon a reader in another process sees a new commit on object storage.
pub const READ_CONSISTENCY: Duration = Duration::from_secs(5);

/// Storage options that are secrets: they belong in the environment.
const SECRET_OPTIONS: [&str; 6] = [
    "aws_access_key_id",
    "access_key_id",
    "aws_secret_access_key",
    "secret_access_key",
    "aws_session_token",
    "session_token",
];

/// A directory or an object-storage URI, with LanceDB storage options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorLocation {
    /// A path, or `s3://bucket/prefix`.
    pub uri: String,
    /// LanceDB storage options (`aws_endpoint`, `aws_region`, `allow_http`, …).
    pub storage: HashMap<String, String>,
}

impl From<&Path> for VectorLocation {
    fn from(dir: &Path) -> Self {
        Self {
            uri: dir.to_string_lossy().into_owned(),
            storage: HashMap::new(),
        }
    }
}

impl VectorLocation {
    /// Whether the table is on S3-compatible object storage.
    pub fn is_object_store(&self) -> bool {
        self.uri.starts_with("s3://")
    }

    /// Refuses secrets among the storage options (they would end up in
    /// `kgfuse.toml`) and URIs of stores kgfuse does not support.
    pub fn check(&self) -> Result<(), VectorError> {
        if let Some(secret) = self
            .storage
            .keys()
            .find(|k| SECRET_OPTIONS.contains(&k.to_ascii_lowercase().as_str()))
        {
            return Err(VectorError::Invalid(format!(
                "the vector storage option {secret} is a secret: set AWS_ACCESS_KEY_ID, \
                 AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the environment instead"
            )));
        }
        if self.uri.contains("://") && !self.is_object_store() {
            return Err(VectorError::Invalid(format!(
                "vectors at {}: kgfuse keeps vectors in a directory or on s3:// object storage",
                self.uri
            )));
        }
        Ok(())
    }

    /// A LanceDB connection whose caches stay within `memory`'s budgets; on
    /// object storage readers look for new commits every [`READ_CONSISTENCY`].
    pub(crate) async fn connect(
        &self,
        memory: &MemoryConfig,
    ) -> Result<lancedb::Connection, VectorError> {
        self.check()?;
        let session = lancedb::Session::new(
            memory.vector_index_cache_bytes(),
            memory.vector_metadata_cache_bytes(),
            Arc::new(lancedb::ObjectStoreRegistry::default()),
        );
        let mut builder = lancedb::connect(&self.uri)
            .storage_options(self.storage.clone())
            .session(Arc::new(session));
        if self.is_object_store() {
            builder = builder.read_consistency_interval(READ_CONSISTENCY);
        }
        Ok(builder.execute().await?)
    }

    /// On object storage: checks that the bucket exists and honours a
    /// conditional PUT, with two PUTs of one probe object under the prefix (then
    /// deleted). A store that lets the second overwrite the first would let two
    /// writers lose each other's commits, so it is refused. A directory needs no
    /// check.
    pub async fn check_for_writers(&self) -> Result<(), VectorError> {
        if !self.is_object_store() {
            return Ok(());
        }
        let (bucket, prefix) = split_s3_uri(&self.uri)?;
        let store = self.object_store(&bucket)?;
        let probe = ObjectPath::from(format!(
            "{}.kgfuse-probe-{}-{}",
            if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let create = || PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let unreachable = |e: object_store::Error| -> VectorError {
            let text = e.to_string();
            if text.contains("NoSuchBucket") || text.contains("does not exist") {
                VectorError::Invalid(format!(
                    "the bucket {bucket} does not exist: LanceDB does not create buckets, \
                     create it first (e.g. `aws s3 mb s3://{bucket}` with the same endpoint)"
                ))
            } else {
                VectorError::Invalid(format!("cannot write to {}: {text}", self.uri))
            }
        };
        store
            .put_opts(&probe, PutPayload::from_static(b"1"), create())
            .await
            .map_err(unreachable)?;
        let second = store
            .put_opts(&probe, PutPayload::from_static(b"2"), create())
            .await;
        // Best effort: a probe left behind is one small object.
        let _ = store.delete(&probe).await;
        match second {
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(()),
            Ok(_) => Err(VectorError::Invalid(format!(
                "the object store at {} ignored a conditional PUT (If-None-Match: *): two \
                 kgfuse writers could silently lose each other's commits there, so kgfuse \
                 refuses to keep vectors on it; use a store that honours conditional PUT \
                 (AWS S3, Ceph RGW, MinIO, R2)",
                self.uri
            ))),
            Err(other) => Err(unreachable(other)),
        }
    }

    /// An object store client for `bucket` from the environment and the storage
    /// options.
    fn object_store(&self, bucket: &str) -> Result<impl ObjectStore, VectorError> {
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        for (key, value) in &self.storage {
            let key = key.to_ascii_lowercase();
            if key == "allow_http" || key == "aws_allow_http" {
                builder = builder.with_allow_http(value == "true");
            } else if let Ok(parsed) = key.parse::<AmazonS3ConfigKey>() {
                builder = builder.with_config(parsed, value);
            }
        }
        builder
            .build()
            .map_err(|e| VectorError::Invalid(format!("object storage for {}: {e}", self.uri)))
    }
}

/// `s3://bucket/some/prefix` as (`bucket`, `some/prefix`).
fn split_s3_uri(uri: &str) -> Result<(String, String), VectorError> {
    let rest = uri
        .strip_prefix("s3://")
        .ok_or_else(|| VectorError::Invalid(format!("{uri} is not an s3:// URI")))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(VectorError::Invalid(format!("{uri} names no bucket")));
    }
    Ok((bucket.to_owned(), prefix.trim_matches('/').to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_refused_and_uris_split() {
        let location = VectorLocation {
            uri: "s3://kg/vectors".into(),
            storage: HashMap::from([("AWS_SECRET_ACCESS_KEY".into(), "x".into())]),
        };
        let error = location.check().expect_err("a secret");
        assert!(error.to_string().contains("environment"), "{error}");
        assert_eq!(
            split_s3_uri("s3://kg/a/b/").expect("uri"),
            ("kg".to_owned(), "a/b".to_owned())
        );
        assert_eq!(
            split_s3_uri("s3://kg").expect("uri"),
            ("kg".to_owned(), String::new())
        );
        assert!(split_s3_uri("s3:///x").is_err());
        let gcs = VectorLocation {
            uri: "gs://kg".into(),
            storage: HashMap::new(),
        };
        assert!(gcs.check().is_err());
    }
}
