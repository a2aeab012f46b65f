//! Encryption at rest, as kube-apiserver does it.
//!
//! kube-apiserver encrypts the values it writes to etcd with the providers an
//! `EncryptionConfiguration` names for each resource (`--encryption-provider-config`): the first
//! provider encrypts, every provider is tried on read by the prefix of the stored value
//! (`k8s:enc:aesgcm:v1:<key name>:`…), and a value read with anything but the first provider is
//! *stale* and is rewritten. This crate is that machinery without the storage: the configuration
//! ([`EncryptionConfig`]: parsing, upstream's validation and its error texts), the transformers
//! (identity, aescbc, aesgcm, secretbox, with upstream's envelopes byte for byte), and the
//! per-resource lookup ([`Transformers`]). kgc's store applies it on the way to and from SQLite.
#![forbid(unsafe_code)]

mod aes;
mod config;
mod secretbox;
mod transformer;

use kgc_meta::gojson::go_quote;

pub use config::{DEFAULT_KEY_NAME, EncryptionConfig, default_config};
pub use transformer::{Read, Transformers};

/// What can go wrong loading a configuration or transforming a value. The texts are
/// kube-apiserver's (operators and scripts match on them).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file cannot be read (`loadDataAndHash`).
    #[error(
        "error while parsing file: error while loading file: error reading encryption provider configuration file {}: {source}",
        go_quote(path)
    )]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("error while parsing file: error while loading file: encryption provider configuration file {} is empty", go_quote(.0))]
    Empty(String),
    /// Not an `EncryptionConfiguration` (`codecs.UniversalDecoder().Decode`).
    #[error(
        "error while parsing file: error decoding encryption provider configuration file {}: {reason}",
        go_quote(path)
    )]
    Decode { path: String, reason: String },
    /// `ValidateEncryptionConfiguration` failed: the aggregated field errors.
    #[error("error while parsing file: {0}")]
    Invalid(String),
    /// A rule that can never apply (`resource "x" is masked by earlier rule "*."`), or a
    /// provider kgc does not have.
    #[error("error while building transformers: {0}")]
    Build(String),
    /// A stored value could not be decrypted (`unable to transform key "/registry/…": …`).
    #[error("unable to transform key {}: {reason}", go_quote(key))]
    Transform { key: String, reason: String },
    /// Encrypting failed (no randomness).
    #[error("unable to transform key {}: {reason}", go_quote(key))]
    Encrypt { key: String, reason: String },
}

/// The prefix every encrypted value starts with; the identity provider refuses to read such a
/// value as plain data.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// The storage key of an object, as kube-apiserver names its etcd keys (`/registry/secrets/ns/name`;
/// other groups as custom resources are keyed, `/registry/<group>/<resource>/…`). It is the
/// authenticated data of AES-GCM, so a value copied to another key does not decrypt.
pub fn storage_key(group: &str, resource: &str, namespace: &str, name: &str) -> String {
    let mut key =
        String::with_capacity(10 + group.len() + resource.len() + namespace.len() + name.len() + 3);
    key.push_str("/registry/");
    if !group.is_empty() {
        key.push_str(group);
        key.push('/');
    }
    key.push_str(resource);
    key.push('/');
    if !namespace.is_empty() {
        key.push_str(namespace);
        key.push('/');
    }
    key.push_str(name);
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_keys_follow_the_registry_layout() {
        assert_eq!(
            storage_key("", "secrets", "default", "s"),
            "/registry/secrets/default/s"
        );
        assert_eq!(storage_key("", "nodes", "", "n1"), "/registry/nodes/n1");
        assert_eq!(
            storage_key("example.com", "widgets", "ns", "w"),
            "/registry/example.com/widgets/ns/w"
        );
    }
}
