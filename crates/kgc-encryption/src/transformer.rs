//! Choosing the transformer of a stored value by its prefix (kubernetes/apiserver
//! `pkg/storage/value/transformer.go` `prefixTransformers`), and the per-resource rules
//! (`pkg/server/options/encryptionconfig/config.go`, with the wildcard lookup of
//! `transformerFromOverrides`).

use std::borrow::Cow;
use std::sync::Arc;

use crate::aes::{Cbc, Gcm};
use crate::secretbox::SecretBox;
use crate::{ENCRYPTED_PREFIX, Error};

const AESGCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
const AESCBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
const SECRETBOX_PREFIX: &str = "k8s:enc:secretbox:v1:";

/// One provider of a rule, its keys in configuration order (the first one encrypts).
pub(crate) enum Provider {
    Identity,
    AesGcm(Vec<(String, Gcm)>),
    AesCbc(Vec<(String, Cbc)>),
    SecretBox(Vec<(String, SecretBox)>),
}

impl Provider {
    fn prefix(&self) -> &'static str {
        match self {
            Provider::Identity => "",
            Provider::AesGcm(_) => AESGCM_PREFIX,
            Provider::AesCbc(_) => AESCBC_PREFIX,
            Provider::SecretBox(_) => SECRETBOX_PREFIX,
        }
    }

    /// Decrypts `data` (the provider's prefix already stripped) with the key it names: the
    /// plain value and whether a key other than the first one was needed.
    fn open(&self, data: &[u8], aad: &[u8]) -> Result<(Vec<u8>, bool), String> {
        let no_key = match self {
            Provider::SecretBox(_) => {
                "no matching key was found for the provided Secretbox transformer"
            }
            _ => "no matching key was found for the provided AES transformer",
        };
        let names: Vec<&str> = match self {
            Provider::Identity => return Ok((data.to_vec(), false)),
            Provider::AesGcm(keys) => keys.iter().map(|(n, _)| n.as_str()).collect(),
            Provider::AesCbc(keys) => keys.iter().map(|(n, _)| n.as_str()).collect(),
            Provider::SecretBox(keys) => keys.iter().map(|(n, _)| n.as_str()).collect(),
        };
        let mut errors = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let Some(rest) = data
                .strip_prefix(name.as_bytes())
                .and_then(|r| r.strip_prefix(b":"))
            else {
                continue;
            };
            let opened = match self {
                Provider::Identity => unreachable!("returned above"),
                Provider::AesGcm(keys) => keys[i].1.open(rest, aad),
                Provider::AesCbc(keys) => keys[i].1.open(rest),
                Provider::SecretBox(keys) => keys[i].1.open(rest),
            };
            match opened {
                Ok(plain) => return Ok((plain, i != 0)),
                Err(e) => errors.push(e),
            }
        }
        Err(reduce(errors).unwrap_or_else(|| no_key.to_owned()))
    }

    /// `prefix ‖ key name ‖ ":" ‖ sealed value` with the first key; `None` for identity.
    fn seal(&self, data: &[u8], aad: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let name = match self {
            Provider::Identity => return Ok(None),
            Provider::AesGcm(keys) => &keys[0].0,
            Provider::AesCbc(keys) => &keys[0].0,
            Provider::SecretBox(keys) => &keys[0].0,
        };
        let mut out = Vec::with_capacity(self.prefix().len() + name.len() + 1 + data.len() + 48);
        out.extend_from_slice(self.prefix().as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(b':');
        match self {
            Provider::Identity => unreachable!("returned above"),
            Provider::AesGcm(keys) => keys[0].1.seal(data, aad, &mut out)?,
            Provider::AesCbc(keys) => keys[0].1.seal(data, &mut out)?,
            Provider::SecretBox(keys) => keys[0].1.seal(data, &mut out)?,
        }
        Ok(Some(out))
    }
}

/// Go's `errors.Reduce(errors.NewAggregate(errs))`: none, the one, or `[a, b]` (repeats once).
fn reduce(errors: Vec<String>) -> Option<String> {
    let mut unique: Vec<String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop(),
        _ => Some(format!("[{}]", unique.join(", "))),
    }
}

/// A stored value read back.
#[derive(Debug)]
pub struct Read<'a> {
    /// The plain value (borrowed when it was stored unencrypted).
    pub data: Cow<'a, [u8]>,
    /// Read with a provider or key other than the first: rewrite it to move it to the first.
    pub stale: bool,
}

/// The providers of one resource (`group` and `resource` may be `*`): those of every
/// `resources[]` entry that names it, in order, as upstream concatenates them.
pub(crate) struct Rule {
    pub group: String,
    pub resource: String,
    pub providers: Vec<Arc<Provider>>,
}

/// Every rule of a configuration: which providers each resource is written and read with.
/// The default has no rule: nothing is encrypted, and encrypted values are refused.
#[derive(Default)]
pub struct Transformers {
    rules: Vec<Rule>,
}

impl std::fmt::Debug for Transformers {
    /// The resources and their providers' prefixes; never a key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut m = f.debug_map();
        for r in &self.rules {
            let providers: Vec<&str> = r
                .providers
                .iter()
                .map(|p| match p.prefix() {
                    "" => "identity",
                    other => other,
                })
                .collect();
            m.entry(&format!("{}.{}", r.resource, r.group), &providers);
        }
        m.finish()
    }
}

impl Transformers {
    pub(crate) fn new(rules: Vec<Rule>) -> Self {
        Self { rules }
    }

    /// The providers of a resource: its own rule, else its group's `*.group`, else `*.*`.
    fn providers(&self, group: &str, resource: &str) -> Option<&[Arc<Provider>]> {
        let find = |g: &str, r: &str| {
            self.rules
                .iter()
                .find(|rule| rule.group == g && rule.resource == r)
                .map(|rule| rule.providers.as_slice())
        };
        find(group, resource)
            .or_else(|| find(group, "*"))
            .or_else(|| find("*", "*"))
    }

    /// Whether values of this resource are written encrypted.
    pub fn encrypts(&self, group: &str, resource: &str) -> bool {
        self.providers(group, resource)
            .and_then(|p| p.first())
            .is_some_and(|p| !matches!(**p, Provider::Identity))
    }

    /// Reads a stored value of `key`: tries the providers whose prefix it carries, in order.
    /// A resource no rule names is read as plain data (and refused if it looks encrypted).
    pub fn read<'a>(
        &self,
        group: &str,
        resource: &str,
        key: &str,
        data: &'a [u8],
    ) -> Result<Read<'a>, Error> {
        let fail = |reason: String| Error::Transform {
            key: key.to_owned(),
            reason,
        };
        let identity = |data: &'a [u8], stale| {
            if data.starts_with(ENCRYPTED_PREFIX) {
                Err("identity transformer tried to read encrypted data".to_owned())
            } else {
                Ok(Read {
                    data: Cow::Borrowed(data),
                    stale,
                })
            }
        };
        let Some(providers) = self.providers(group, resource) else {
            return identity(data, false).map_err(fail);
        };
        let mut errors = Vec::new();
        for (i, p) in providers.iter().enumerate() {
            let Some(rest) = data.strip_prefix(p.prefix().as_bytes()) else {
                continue;
            };
            if let Provider::Identity = **p {
                // Upstream skips the identity provider's refusal of encrypted data, so that a
                // later provider can read it (how one migrates away from encryption).
                match identity(rest, i != 0) {
                    Ok(read) => return Ok(read),
                    Err(_) => continue,
                }
            }
            match p.open(rest, key.as_bytes()) {
                Ok((plain, stale)) => {
                    return Ok(Read {
                        data: Cow::Owned(plain),
                        stale: stale || i != 0,
                    });
                }
                Err(e) => errors.push(e),
            }
        }
        Err(fail(
            reduce(errors).unwrap_or_else(|| "no matching prefix found".to_owned()),
        ))
    }

    /// The value to store for `data`: encrypted by the resource's first provider, or `None` to
    /// store `data` itself (identity, or a resource no rule names).
    pub fn write(
        &self,
        group: &str,
        resource: &str,
        key: &str,
        data: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        let Some(first) = self.providers(group, resource).and_then(|p| p.first()) else {
            return Ok(None);
        };
        first
            .seal(data, key.as_bytes())
            .map_err(|reason| Error::Encrypt {
                key: key.to_owned(),
                reason,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gcm(name: &str, byte: u8) -> (String, Gcm) {
        (name.to_owned(), Gcm::new(&[byte; 32]).unwrap())
    }

    fn rule(group: &str, resource: &str, providers: Vec<Provider>) -> Rule {
        Rule {
            group: group.to_owned(),
            resource: resource.to_owned(),
            providers: providers.into_iter().map(Arc::new).collect(),
        }
    }

    fn secrets(providers: Vec<Provider>) -> Transformers {
        Transformers::new(vec![rule("", "secrets", providers)])
    }

    const KEY: &str = "/registry/secrets/ns/s";

    #[test]
    fn the_first_provider_writes_and_every_provider_reads_by_prefix() {
        let t = secrets(vec![
            Provider::AesGcm(vec![gcm("key1", 1)]),
            Provider::Identity,
        ]);
        let sealed = t.write("", "secrets", KEY, b"{\"a\":1}").unwrap().unwrap();
        assert!(sealed.starts_with(b"k8s:enc:aesgcm:v1:key1:"));
        let read = t.read("", "secrets", KEY, &sealed).unwrap();
        assert_eq!(&*read.data, b"{\"a\":1}");
        assert!(!read.stale);
        // Plain data from before encryption: read by identity, stale.
        let plain = t.read("", "secrets", KEY, b"{\"old\":1}").unwrap();
        assert_eq!(&*plain.data, b"{\"old\":1}");
        assert!(plain.stale);
        // Another key or resource does not decrypt it: the storage key is authenticated.
        let moved = t.read("", "secrets", "/registry/secrets/ns/other", &sealed);
        assert_eq!(
            moved.unwrap_err().to_string(),
            "unable to transform key \"/registry/secrets/ns/other\": cipher: message authentication failed"
        );
        // Resources no rule names are stored as they are.
        assert!(
            t.write("", "configmaps", "/registry/configmaps/ns/c", b"{}")
                .unwrap()
                .is_none()
        );
        assert!(!t.encrypts("", "configmaps"));
        assert!(t.encrypts("", "secrets"));
    }

    #[test]
    fn rotation_reads_the_second_key_as_stale() {
        let old = secrets(vec![Provider::AesGcm(vec![gcm("key1", 1)])]);
        let sealed = old.write("", "secrets", KEY, b"v").unwrap().unwrap();
        // Step 1: key2 added second; key1 still writes.
        let added = secrets(vec![Provider::AesGcm(vec![gcm("key1", 1), gcm("key2", 2)])]);
        assert!(!added.read("", "secrets", KEY, &sealed).unwrap().stale);
        // Step 2: key2 first; key1's values are stale until rewritten.
        let swapped = secrets(vec![Provider::AesGcm(vec![gcm("key2", 2), gcm("key1", 1)])]);
        let read = swapped.read("", "secrets", KEY, &sealed).unwrap();
        assert!(read.stale);
        let rewritten = swapped
            .write("", "secrets", KEY, &read.data)
            .unwrap()
            .unwrap();
        assert!(rewritten.starts_with(b"k8s:enc:aesgcm:v1:key2:"));
        // Step 4: key1 removed; rewritten values still read, old ones name a missing key.
        let only = secrets(vec![Provider::AesGcm(vec![gcm("key2", 2)])]);
        assert!(!only.read("", "secrets", KEY, &rewritten).unwrap().stale);
        assert_eq!(
            only.read("", "secrets", KEY, &sealed)
                .unwrap_err()
                .to_string(),
            "unable to transform key \"/registry/secrets/ns/s\": no matching key was found for the provided AES transformer"
        );
    }

    #[test]
    fn unmatched_and_encrypted_data_give_upstreams_errors() {
        let t = secrets(vec![Provider::AesGcm(vec![gcm("key1", 1)])]);
        let err = t.read("", "secrets", KEY, b"{\"plain\":1}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unable to transform key \"/registry/secrets/ns/s\": no matching prefix found"
        );
        let sealed = t.write("", "secrets", KEY, b"v").unwrap().unwrap();
        // Identity first (migrating away from encryption) still reads encrypted values.
        let back = secrets(vec![
            Provider::Identity,
            Provider::AesGcm(vec![gcm("key1", 1)]),
        ]);
        let read = back.read("", "secrets", KEY, &sealed).unwrap();
        assert_eq!(&*read.data, b"v");
        assert!(read.stale);
        assert!(back.write("", "secrets", KEY, b"v").unwrap().is_none());
        // With no rule for the resource, an encrypted value is refused.
        let none = Transformers::new(Vec::new());
        assert_eq!(
            none.read("", "secrets", KEY, &sealed)
                .unwrap_err()
                .to_string(),
            "unable to transform key \"/registry/secrets/ns/s\": identity transformer tried to read encrypted data"
        );
        // Two keys that both fail are aggregated.
        let wrong = secrets(vec![
            Provider::AesGcm(vec![gcm("key1", 9)]),
            Provider::AesGcm(vec![gcm("key1", 8)]),
        ]);
        assert_eq!(
            wrong
                .read("", "secrets", KEY, &sealed)
                .unwrap_err()
                .to_string(),
            "unable to transform key \"/registry/secrets/ns/s\": cipher: message authentication failed"
        );
    }

    #[test]
    fn wildcards_apply_when_no_exact_rule_does() {
        let t = Transformers::new(vec![
            rule("", "secrets", vec![Provider::Identity]),
            rule("apps", "*", vec![Provider::AesGcm(vec![gcm("k", 1)])]),
            rule(
                "*",
                "*",
                vec![Provider::SecretBox(vec![(
                    "s".to_owned(),
                    SecretBox::new(&[1; 32]).unwrap(),
                )])],
            ),
        ]);
        assert!(!t.encrypts("", "secrets"));
        let d = t.write("apps", "deployments", "k", b"x").unwrap().unwrap();
        assert!(d.starts_with(b"k8s:enc:aesgcm:v1:k:"));
        let c = t.write("", "configmaps", "k", b"x").unwrap().unwrap();
        assert!(c.starts_with(b"k8s:enc:secretbox:v1:s:"));
    }
}
