//! Encryption at rest for `kgc serve`: which `EncryptionConfiguration` the store writes with.
//!
//! kube-apiserver encrypts nothing unless given `--encryption-provider-config`; kgc encrypts
//! Secrets by default. Without the flag it uses `DATA_DIR/pki/encryption-config.yaml`, which
//! the first start writes (0600) in kube-apiserver's own format: Secrets with AES-GCM under a
//! fresh 256-bit key, then identity, so Secrets stored before encryption are still read (and
//! rewritten encrypted). With the flag, that file is used instead, for the resources it names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use kgc_encryption::{EncryptionConfig, Transformers};

#[derive(clap::Args)]
pub struct EncryptionArgs {
    /// kube-apiserver's EncryptionConfiguration (apiserver.config.k8s.io/v1: identity, aescbc,
    /// aesgcm, secretbox) for the values kgc writes to disk [default:
    /// DATA_DIR/pki/encryption-config.yaml, made on first start: Secrets with AES-GCM].
    #[arg(long, global = true)]
    encryption_provider_config: Option<PathBuf>,
}

/// The default configuration's file in a data directory.
pub fn default_config_path(data_dir: &Path) -> PathBuf {
    crate::tls::pki_dir(data_dir).join("encryption-config.yaml")
}

impl EncryptionArgs {
    /// The configuration file in use: `--encryption-provider-config`, else the data
    /// directory's default one (which may not exist yet).
    pub fn config_path(&self, data_dir: &Path) -> PathBuf {
        self.encryption_provider_config
            .clone()
            .unwrap_or_else(|| default_config_path(data_dir))
    }

    /// The transformers of `--encryption-provider-config`, else of the data directory's default
    /// configuration, which is created first when `create` is set; `None` when there is none.
    pub fn transformers(
        &self,
        data_dir: &Path,
        create: bool,
    ) -> anyhow::Result<Option<Arc<Transformers>>> {
        let path = match &self.encryption_provider_config {
            Some(p) => p.clone(),
            None => {
                let path = default_config_path(data_dir);
                if !path.exists() {
                    if !create {
                        return Ok(None);
                    }
                    crate::data_dir::private_dir(&crate::tls::pki_dir(data_dir))?;
                    crate::tls::write_private(&path, &kgc_encryption::default_config()?)?;
                    tracing::info!(path = %path.display(), "created the encryption key for Secrets at rest");
                }
                path
            }
        };
        let transformers = EncryptionConfig::load(&path)
            .and_then(|c| c.transformers())
            .with_context(|| format!("loading the encryption configuration {}", path.display()))?;
        Ok(Some(Arc::new(transformers)))
    }
}
