//! ConfigMap and Secret: keys, the 1 MiB payload limit, immutability and the Secret types'
//! required keys (kubernetes/kubernetes `pkg/apis/core/validation/validation.go`
//! `ValidateConfigMap`, `ValidateConfigMapUpdate`, `ValidateSecret`, `ValidateSecretUpdate`;
//! apimachinery `IsConfigMapKey`).

use kgc_meta::validation::{is_dns1123_subdomain, max_len_error, regex_error};
use serde_json::Value;

use crate::field::{Errors, Path};
use crate::json::{Json, same};

/// `core.MaxSecretSize`, which also bounds ConfigMaps.
pub(crate) const MAX_SECRET_SIZE: usize = 1024 * 1024;

const IMMUTABLE_SET: &str = "field is immutable when `immutable` is set";

/// apimachinery `IsConfigMapKey` (also used for Secret keys, `items[].key` and key selectors).
pub(crate) fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    let charset = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_');
    if value.is_empty() || !value.bytes().all(charset) {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(ch_dir_prefix(value));
    errs
}

/// apimachinery `hasChDirPrefix`.
pub(crate) fn ch_dir_prefix(value: &str) -> Option<String> {
    match value {
        "." => Some("must not be '.'".to_owned()),
        ".." => Some("must not be '..'".to_owned()),
        v if v.starts_with("..") => Some("must not start with '..'".to_owned()),
        _ => None,
    }
}

/// Upstream's name check for objects referenced by name (`ValidateSecretName`,
/// `ValidateConfigMapName`: DNS-1123 subdomains).
pub(crate) fn name_errors(name: &str) -> Vec<String> {
    is_dns1123_subdomain(name)
}

/// The decoded length of a base64 `[]byte` value as the API server holds it.
fn decoded_len(v: &Value) -> usize {
    let s = v.as_str().unwrap_or_default();
    let len = s.bytes().filter(|c| !matches!(c, b'\r' | b'\n')).count();
    let pad = s.bytes().rev().take_while(|c| *c == b'=').count().min(2);
    (len / 4 * 3).saturating_sub(pad)
}

fn decoded(v: &Value) -> Vec<u8> {
    use base64::Engine as _;
    let s: String = v
        .as_str()
        .unwrap_or_default()
        .chars()
        .filter(|c| !matches!(c, '\r' | '\n'))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_default()
}

/// The entries of a map field by key, borrowed.
fn sorted_keys<'a>(v: &'a Value, field: &str) -> Vec<(&'a str, &'a Value)> {
    let mut out: Vec<(&str, &Value)> = v
        .obj(field)
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

/// `ValidateConfigMap` (and, with `old`, `ValidateConfigMapUpdate`).
pub(crate) fn config_map(obj: &Value, old: Option<&Value>, errs: &mut Errors) {
    if let Some(old) = old {
        immutable_payload(obj, old, &["data", "binaryData"], errs);
    }
    let mut total = 0usize;
    let binary = obj.at("binaryData");
    let data = Path::new("data");
    for (k, v) in sorted_keys(obj, "data") {
        let p = data.key(k);
        errs.invalid_each(p, k, is_config_map_key(k));
        if binary.get(k).is_some() {
            errs.invalid(p, k, "duplicate of key present in binaryData");
        }
        total = total.saturating_add(v.as_str().map_or(0, str::len));
    }
    let binary_path = Path::new("binaryData");
    for (k, v) in sorted_keys(obj, "binaryData") {
        errs.invalid_each(binary_path.key(k), k, is_config_map_key(k));
        total = total.saturating_add(decoded_len(v));
    }
    if total > MAX_SECRET_SIZE {
        // Upstream passes the empty path (the whole object), which prints as `[]`.
        errs.too_long("[]", MAX_SECRET_SIZE);
    }
}

/// The `immutable: true` rules shared by ConfigMaps and Secrets.
fn immutable_payload(obj: &Value, old: &Value, fields: &[&str], errs: &mut Errors) {
    if old.opt_bool("immutable") != Some(true) {
        return;
    }
    if obj.opt_bool("immutable") != Some(true) {
        errs.forbidden("immutable", IMMUTABLE_SET);
    }
    for f in fields {
        if !same(obj.at(f), old.at(f)) {
            errs.forbidden(*f, IMMUTABLE_SET);
        }
    }
}

const SA_NAME_KEY: &str = "kubernetes.io/service-account.name";

/// `ValidateSecret` (and, with `old`, `ValidateSecretUpdate`).
pub(crate) fn secret(obj: &Value, old: Option<&Value>, errs: &mut Errors) {
    if let Some(old) = old {
        let (new_type, old_type) = (obj.str_of("type"), old.str_of("type"));
        if new_type != old_type {
            errs.invalid_typed("type", new_type, crate::field::IMMUTABLE);
        }
        immutable_payload(obj, old, &["data"], errs);
    }
    let data = obj.at("data");
    let mut total = 0usize;
    let data_path = Path::new("data");
    for (k, v) in sorted_keys(obj, "data") {
        errs.invalid_each(data_path.key(k), k, is_config_map_key(k));
        total = total.saturating_add(decoded_len(v));
    }
    if total > MAX_SECRET_SIZE {
        errs.too_long("data", MAX_SECRET_SIZE);
    }
    let has = |k: &str| data.get(k).is_some();
    match obj.str_of("type") {
        "kubernetes.io/service-account-token"
            if obj
                .at("metadata")
                .at("annotations")
                .str_of(SA_NAME_KEY)
                .is_empty() =>
        {
            errs.required(Path::new("metadata.annotations").key(SA_NAME_KEY), "");
        }
        t @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let k = if t == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match data.get(k) {
                None => errs.required(data_path.key(k), ""),
                Some(v) => {
                    if let Err(e) = crate::json_syntax::unmarshal_into_map(&decoded(v)) {
                        errs.invalid(data_path.key(k), "<secret contents redacted>", e);
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.required(data_path.key("username"), "");
            errs.required(data_path.key("password"), "");
        }
        "kubernetes.io/ssh-auth" if decoded_len(data.at("ssh-privatekey")) == 0 => {
            errs.required(data_path.key("ssh-privatekey"), "");
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    errs.required(data_path.key(k), "");
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::messages as run;
    use serde_json::json;

    const KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

    /// `TestValidateConfigMap`.
    #[test]
    fn test_validate_config_map() {
        assert!(
            run(|e| config_map(
                &json!({"data": {"key": "value", ".dotted": "x", "a-b_c": "y"}}),
                None,
                e
            ))
            .is_empty()
        );
        assert_eq!(
            run(|e| config_map(
                &json!({"data": {"a b": "x", "..dot": "y", "both": "z"}, "binaryData": {"both": "eg=="}}),
                None,
                e
            )),
            vec![
                "data[..dot]: Invalid value: \"..dot\": must not start with '..'".to_owned(),
                format!("data[a b]: Invalid value: \"a b\": {KEY_MSG}"),
                "data[both]: Invalid value: \"both\": duplicate of key present in binaryData"
                    .to_owned(),
            ]
        );
        let big = "x".repeat(MAX_SECRET_SIZE);
        assert_eq!(
            run(|e| config_map(
                &json!({"data": {"a": big}, "binaryData": {"b": "eA=="}}),
                None,
                e
            )),
            vec!["[]: Too long: may not be more than 1048576 bytes"]
        );
    }

    /// `TestValidateConfigMapUpdate`.
    #[test]
    fn test_validate_config_map_update() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        assert!(run(|e| config_map(&old, Some(&old), e)).is_empty());
        assert_eq!(
            run(|e| config_map(&json!({"data": {"a": "2"}}), Some(&old), e)),
            vec![
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        // A mutable ConfigMap may become immutable.
        assert!(run(|e| config_map(&old, Some(&json!({"data": {"a": "0"}})), e)).is_empty());
    }

    /// `TestValidateSecret` and the type-specific cases.
    #[test]
    fn test_validate_secret() {
        assert!(
            run(|e| secret(&json!({"type": "Opaque", "data": {"k": "dg=="}}), None, e)).is_empty()
        );
        assert_eq!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/service-account-token", "metadata": {}}),
                None,
                e
            )),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        assert_eq!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/dockerconfigjson", "data": {}}),
                None,
                e
            )),
            vec!["data[.dockerconfigjson]: Required value"]
        );
        // "{x" base64-encoded.
        assert_eq!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": "e3g="}}),
                None,
                e
            )),
            vec![
                "data[.dockercfg]: Invalid value: \"<secret contents redacted>\": invalid character 'x' looking for beginning of object key string"
            ]
        );
        assert!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": "e30="}}),
                None,
                e
            ))
            .is_empty()
        );
        assert_eq!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/basic-auth", "data": {}}),
                None,
                e
            )),
            vec![
                "data[username]: Required value",
                "data[password]: Required value"
            ]
        );
        assert!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}}),
                None,
                e
            ))
            .is_empty()
        );
        assert_eq!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
                None,
                e
            )),
            vec!["data[ssh-privatekey]: Required value"]
        );
        assert_eq!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/tls", "data": {"tls.crt": ""}}),
                None,
                e
            )),
            vec!["data[tls.key]: Required value"]
        );
        assert_eq!(
            run(|e| secret(&json!({"data": {"bad key": ""}}), None, e)),
            vec![format!(
                "data[bad key]: Invalid value: \"bad key\": {KEY_MSG}"
            )]
        );
    }

    /// `MaxSecretSize` counts decoded bytes: 1 MiB of payload is 1398104 base64 characters.
    #[test]
    fn secret_size_counts_decoded_bytes() {
        let exactly = "A".repeat(MAX_SECRET_SIZE / 3 * 4) + "AA==";
        assert_eq!(decoded_len(&json!(exactly)), MAX_SECRET_SIZE);
        assert!(run(|e| secret(&json!({"data": {"a": exactly}}), None, e)).is_empty());
        let over = "A".repeat((MAX_SECRET_SIZE / 3 + 1) * 4);
        assert_eq!(
            run(|e| secret(&json!({"data": {"a": over}}), None, e)),
            vec!["data: Too long: may not be more than 1048576 bytes"]
        );
    }

    /// `TestValidateSecretUpdate`.
    #[test]
    fn test_validate_secret_update() {
        let old = json!({"type": "Opaque", "immutable": true, "data": {"a": "MQ=="}});
        assert_eq!(
            run(|e| secret(
                &json!({"type": "kubernetes.io/tls", "immutable": true, "data": {"a": "Mg==", "tls.crt": "", "tls.key": ""}}),
                Some(&old),
                e
            )),
            vec![
                "type: Invalid value: \"kubernetes.io/tls\": field is immutable",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
    }
}
