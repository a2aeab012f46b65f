//! `EncryptionConfiguration` (apiserver.config.k8s.io/v1): decoding, upstream's validation
//! (kubernetes/apiserver `pkg/apis/apiserver/validation/validation_encryption.go`) and building
//! the transformers (`pkg/server/options/encryptionconfig/config.go`).

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use kgc_meta::FieldError;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Error;
use crate::aes::{Cbc, Gcm};
use crate::secretbox::SecretBox;
use crate::transformer::{Provider, Rule, Transformers};

const API_VERSION: &str = "apiserver.config.k8s.io/v1";
const KIND: &str = "EncryptionConfiguration";

/// The key name of the configuration `kgc serve` generates.
pub const DEFAULT_KEY_NAME: &str = "key1";

/// A parsed and validated `EncryptionConfiguration`. Decoding is strict: an unknown field is an
/// error rather than silently ignored, since a misspelt provider would leave data unencrypted.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EncryptionConfig {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfiguration>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderConfiguration {
    aesgcm: Option<Keys>,
    aescbc: Option<Keys>,
    secretbox: Option<Keys>,
    identity: Option<Identity>,
    /// Decoded only to be refused by name: kgc talks to no KMS plugin.
    kms: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    #[serde(default)]
    keys: Vec<Key>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Identity {}

const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
const SECRETBOX_KEY_SIZES: &[usize] = &[32];

/// `schema.ParseGroupResource`: `resource.group`, split at the first dot.
fn parse_group_resource(s: &str) -> (String, String) {
    match s.split_once('.') {
        Some((resource, group)) => (group.to_owned(), resource.to_owned()),
        None => (String::new(), s.to_owned()),
    }
}

/// How upstream prints a group-resource in the masking error (`grYAMLString`).
fn yaml_string(group: &str, resource: &str) -> String {
    if group.is_empty() && resource == "*" {
        "*.".to_owned()
    } else if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

impl EncryptionConfig {
    /// Reads and validates a configuration file (`loadConfig`).
    pub fn load(path: &Path) -> Result<Self, Error> {
        let shown = path.display().to_string();
        let data = std::fs::read(path).map_err(|source| Error::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&data, &shown)
    }

    /// Decodes (YAML or JSON) and validates a configuration; `path` names it in errors.
    pub fn parse(data: &[u8], path: &str) -> Result<Self, Error> {
        if data.is_empty() {
            return Err(Error::Empty(path.to_owned()));
        }
        let decode = |reason: String| Error::Decode {
            path: path.to_owned(),
            reason,
        };
        let text = std::str::from_utf8(data).map_err(|e| decode(e.to_string()))?;
        let config: Self = serde_saphyr::from_str(text).map_err(|e| decode(e.to_string()))?;
        if config.kind.is_empty() {
            return Err(decode("Object 'Kind' is missing".to_owned()));
        }
        if config.kind != KIND || config.api_version != API_VERSION {
            return Err(decode(format!(
                "no kind {:?} is registered for version {:?}",
                config.kind, config.api_version
            )));
        }
        let errs = config.validate();
        if !errs.is_empty() {
            return Err(Error::Invalid(kgc_meta::validation::aggregate(&errs)));
        }
        Ok(config)
    }

    /// `ValidateEncryptionConfiguration`, plus the refusal of KMS providers.
    fn validate(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if self.resources.is_empty() {
            errs.push(FieldError::required(
                "resources",
                "at least one resources is required",
            ));
            return errs;
        }
        for (i, conf) in self.resources.iter().enumerate() {
            let r = format!("resources[{i}].resources");
            let p = format!("resources[{i}].providers");
            if conf.resources.is_empty() {
                errs.push(FieldError::required(
                    &r,
                    format!("at least one {r} is required"),
                ));
            }
            errs.extend(validate_overlap(&conf.resources, &r));
            errs.extend(validate_names(&conf.resources, &r));
            if conf.providers.is_empty() {
                errs.push(FieldError::required(
                    &p,
                    format!("at least one {p} is required"),
                ));
            }
            for (j, provider) in conf.providers.iter().enumerate() {
                let path = format!("{p}[{j}]");
                let found = [
                    provider.kms.is_some(),
                    provider.aesgcm.is_some(),
                    provider.aescbc.is_some(),
                    provider.secretbox.is_some(),
                    provider.identity.is_some(),
                ]
                .iter()
                .filter(|f| **f)
                .count();
                if found == 0 {
                    errs.push(FieldError::invalid_value(
                        &path,
                        &provider.redacted(),
                        "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
                    ));
                    continue;
                }
                if found > 1 {
                    errs.push(FieldError::invalid_value(
                        &path,
                        &provider.redacted(),
                        "more than one provider specified in a single element, should split into different list elements",
                    ));
                    continue;
                }
                if provider.kms.is_some() {
                    errs.push(FieldError::forbidden(
                        format!("{path}.kms"),
                        "KMS providers are not supported by kgc: use aesgcm, aescbc, secretbox or identity",
                    ));
                } else if let Some(k) = &provider.aesgcm {
                    errs.extend(validate_keys(
                        &k.keys,
                        &format!("{path}.aesgcm.keys"),
                        AES_KEY_SIZES,
                    ));
                } else if let Some(k) = &provider.aescbc {
                    errs.extend(validate_keys(
                        &k.keys,
                        &format!("{path}.aescbc.keys"),
                        AES_KEY_SIZES,
                    ));
                } else if let Some(k) = &provider.secretbox {
                    errs.extend(validate_keys(
                        &k.keys,
                        &format!("{path}.secretbox.keys"),
                        SECRETBOX_KEY_SIZES,
                    ));
                }
            }
        }
        errs
    }

    /// The transformers of every resource the configuration names
    /// (`getTransformerOverridesAndKMSPluginProbes`).
    pub fn transformers(&self) -> Result<Transformers, Error> {
        let mut rules: Vec<Rule> = Vec::new();
        for conf in &self.resources {
            let providers: Vec<Arc<Provider>> = conf
                .providers
                .iter()
                .map(|p| p.build().map(Arc::new))
                .collect::<Result<_, _>>()?;
            for resource in &conf.resources {
                let (group, resource) = parse_group_resource(resource);
                for (mg, mr) in [(group.as_str(), "*"), ("*", "*")] {
                    if rules.iter().any(|r| r.group == mg && r.resource == mr) {
                        return Err(Error::Build(format!(
                            "resource {:?} is masked by earlier rule {:?}",
                            yaml_string(&group, &resource),
                            yaml_string(mg, mr)
                        )));
                    }
                }
                match rules
                    .iter_mut()
                    .find(|r| r.group == group && r.resource == resource)
                {
                    Some(rule) => rule.providers.extend(providers.iter().cloned()),
                    None => rules.push(Rule {
                        group,
                        resource,
                        providers: providers.clone(),
                    }),
                }
            }
        }
        Ok(Transformers::new(rules))
    }
}

impl ProviderConfiguration {
    /// The provider as an error shows it, secrets redacted.
    fn redacted(&self) -> Value {
        let keys = |k: &Keys| json!({"keys": k.keys.iter().map(|k| json!({"name": k.name, "secret": "REDACTED"})).collect::<Vec<_>>()});
        let mut out = serde_json::Map::new();
        if let Some(k) = &self.aesgcm {
            out.insert("aesgcm".into(), keys(k));
        }
        if let Some(k) = &self.aescbc {
            out.insert("aescbc".into(), keys(k));
        }
        if let Some(k) = &self.secretbox {
            out.insert("secretbox".into(), keys(k));
        }
        if self.identity.is_some() {
            out.insert("identity".into(), json!({}));
        }
        if self.kms.is_some() {
            out.insert("kms".into(), json!({}));
        }
        Value::Object(out)
    }

    /// The provider's transformer (`prefixTransformersAndProbes`); validation has checked keys.
    fn build(&self) -> Result<Provider, Error> {
        if let Some(k) = &self.aesgcm {
            return Ok(Provider::AesGcm(k.ciphers(Gcm::new)?));
        }
        if let Some(k) = &self.aescbc {
            return Ok(Provider::AesCbc(k.ciphers(Cbc::new)?));
        }
        if let Some(k) = &self.secretbox {
            return Ok(Provider::SecretBox(k.ciphers(SecretBox::new)?));
        }
        if self.identity.is_some() {
            return Ok(Provider::Identity);
        }
        Err(Error::Build(
            "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
                .to_owned(),
        ))
    }
}

impl Keys {
    /// Each key's cipher, with its name (`aesPrefixTransformer`, `secretboxPrefixTransformer`).
    fn ciphers<C>(&self, make: impl Fn(&[u8]) -> Option<C>) -> Result<Vec<(String, C)>, Error> {
        self.keys
            .iter()
            .map(|k| {
                let secret = base64::engine::general_purpose::STANDARD
                    .decode(&k.secret)
                    .map_err(|e| {
                        Error::Build(format!(
                            "could not obtain secret for named key {}: {e}",
                            k.name
                        ))
                    })?;
                let cipher = make(&secret).ok_or_else(|| {
                    Error::Build(format!(
                        "error while creating cipher for named key {}: invalid key size {}",
                        k.name,
                        secret.len()
                    ))
                })?;
                Ok((k.name.clone(), cipher))
            })
            .collect()
    }
}

fn validate_overlap(resources: &[String], path: &str) -> Vec<FieldError> {
    if resources.len() < 2 {
        return Vec::new();
    }
    let parsed: Vec<(String, String)> = resources.iter().map(|r| parse_group_resource(r)).collect();
    let (mut duplicate, mut overlap) = (false, false);
    for (i, r1) in parsed.iter().enumerate() {
        for (j, r2) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if r1 == r2 && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if r1.0 == "*" && r1.1 == "*" {
                overlap = true;
                continue;
            }
            if r1.0 != r2.0 {
                continue;
            }
            if r1.1 == "*" || r2.1 == "*" {
                overlap = true;
            }
        }
    }
    let value = Value::from(resources.to_vec());
    let mut errs = Vec::new();
    if duplicate {
        errs.push(FieldError::invalid_value(
            path,
            &value,
            "the same resource cannot be specified multiple times",
        ));
    }
    if overlap {
        errs.push(FieldError::invalid_value(
            path,
            &value,
            "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
        ));
    }
    errs
}

fn validate_names(resources: &[String], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, res) in resources.iter().enumerate() {
        let field = format!("{path}[{j}]");
        let (group, resource) = parse_group_resource(res);
        let detail = if res.to_lowercase() != *res {
            "resource name should not contain capital letters"
        } else if res == "*" {
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        } else if matches!(
            res.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            "resources which do not have REST API/s cannot be encrypted"
        } else if group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
        } else if group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if group == "*" && resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        errs.push(FieldError::invalid(field, res.as_str(), detail));
    }
    errs
}

fn validate_keys(keys: &[Key], path: &str, sizes: &[usize]) -> Vec<FieldError> {
    if keys.is_empty() {
        return vec![FieldError::required(path, "at least one keys is required")];
    }
    let mut errs = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if key.name.is_empty() {
            errs.push(FieldError::required(
                format!("{at}.name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errs.push(FieldError::required(
                format!("{at}.secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        match base64::engine::general_purpose::STANDARD.decode(&key.secret) {
            Err(_) => errs.push(FieldError::invalid(
                format!("{at}.secret"),
                "REDACTED",
                "secrets must be base64 encoded",
            )),
            Ok(secret) if !sizes.contains(&secret.len()) => {
                let expected: Vec<String> = sizes.iter().map(ToString::to_string).collect();
                errs.push(FieldError::invalid(
                    format!("{at}.secret"),
                    "REDACTED",
                    format!(
                        "secret is not of the expected length, got {}, expected one of [{}]",
                        secret.len(),
                        expected.join(" ")
                    ),
                ));
            }
            Ok(_) => {}
        }
    }
    errs
}

/// The configuration `kgc serve` writes when none is given: Secrets encrypted with AES-GCM under
/// a fresh random 256-bit key named [`DEFAULT_KEY_NAME`], and Secrets stored before encryption
/// still read (identity, second) until they are rewritten.
pub fn default_config() -> Result<String, Error> {
    let mut key = [0u8; 32];
    crate::aes::random(&mut key).map_err(Error::Build)?;
    let secret = base64::engine::general_purpose::STANDARD.encode(key);
    Ok(format!(
        "# Encryption at rest of `kgc serve`, in kube-apiserver's EncryptionConfiguration format.
# kgc made this key on first start; without it the Secrets in kgc.db cannot be read.
# To rotate: copy this file, add a second key, make it first, pass the copy with
# --encryption-provider-config (kgc rewrites Secrets with the first key when it starts),
# then remove the old key.
apiVersion: {API_VERSION}
kind: {KIND}
resources:
  - resources:
      - secrets
    providers:
      - aesgcm:
          keys:
            - name: {DEFAULT_KEY_NAME}
              secret: {secret}
      - identity: {{}}
"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<EncryptionConfig, Error> {
        EncryptionConfig::parse(yaml.as_bytes(), "enc.yaml")
    }

    fn message(yaml: &str) -> String {
        parse(yaml)
            .and_then(|c| c.transformers().map(|_| ()))
            .unwrap_err()
            .to_string()
    }

    const KEY32: &str = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=";

    #[test]
    fn the_generated_default_parses_and_encrypts_secrets() {
        let text = default_config().unwrap();
        let t = parse(&text).unwrap().transformers().unwrap();
        assert!(t.encrypts("", "secrets"));
        assert!(!t.encrypts("", "configmaps"));
        assert_ne!(
            text,
            default_config().unwrap(),
            "every default has its own key"
        );
    }

    #[test]
    fn upstream_json_and_yaml_forms_parse() {
        let json = format!(
            r#"{{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration",
            "resources":[{{"resources":["secrets","configmaps"],"providers":[
              {{"secretbox":{{"keys":[{{"name":"k","secret":"{KEY32}"}}]}}}},
              {{"aescbc":{{"keys":[{{"name":"c","secret":"{KEY32}"}}]}}}},
              {{"identity":{{}}}}]}},
             {{"resources":["*.apps"],"providers":[{{"aesgcm":{{"keys":[{{"name":"g","secret":"{KEY32}"}}]}}}}]}}]}}"#
        );
        let t = parse(&json).unwrap().transformers().unwrap();
        assert!(t.encrypts("", "configmaps"));
        assert!(t.encrypts("apps", "deployments"));
        assert!(!t.encrypts("", "pods"));
    }

    #[test]
    fn invalid_configurations_get_upstreams_messages() {
        let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";
        assert_eq!(
            EncryptionConfig::parse(b"", "enc.yaml")
                .unwrap_err()
                .to_string(),
            "error while parsing file: error while loading file: encryption provider configuration file \"enc.yaml\" is empty"
        );
        assert_eq!(
            message(&format!("{head}resources: []\n")),
            "error while parsing file: resources: Required value: at least one resources is required"
        );
        assert_eq!(
            message(&format!(
                "{head}resources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n      - name: k\n        secret: c2hvcnQ=\n"
            )),
            "error while parsing file: resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]"
        );
        assert_eq!(
            message(&format!(
                "{head}resources:\n- resources: [secrets]\n  providers:\n  - secretbox:\n      keys:\n      - name: ''\n        secret: '%%%'\n"
            )),
            "error while parsing file: [resources[0].providers[0].secretbox.keys[0].name: Required value: name is a mandatory field for a key, resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secrets must be base64 encoded]"
        );
        assert_eq!(
            message(&format!(
                "{head}resources:\n- resources: [Secrets, '*']\n  providers:\n  - identity: {{}}\n"
            )),
            "error while parsing file: [resources[0].resources: Invalid value: [\"Secrets\",\"*\"]: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked, resources[0].resources[0]: Invalid value: \"Secrets\": resource name should not contain capital letters, resources[0].resources[1]: Invalid value: \"*\": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources]"
        );
        assert_eq!(
            message(&format!(
                "{head}resources:\n- resources: [secrets]\n  providers:\n  - {{}}\n"
            )),
            "error while parsing file: resources[0].providers[0]: Invalid value: {}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
        );
        assert_eq!(
            message(&format!(
                "{head}resources:\n- resources: ['*.']\n  providers:\n  - identity: {{}}\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n"
            )),
            "error while building transformers: resource \"secrets\" is masked by earlier rule \"*.\""
        );
        assert!(
            message("apiVersion: v1\nkind: Config\n").starts_with(
                "error while parsing file: error decoding encryption provider configuration file \"enc.yaml\": no kind \"Config\""
            )
        );
        assert!(
            message(&format!(
                "{head}resources:\n- resources: [secrets]\n  provider: []\n"
            ))
            .contains("unknown field `provider`")
        );
    }
}
