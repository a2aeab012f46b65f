//! admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and
//! MutatingWebhookConfiguration, following kubernetes/kubernetes
//! `pkg/apis/admissionregistration/validation/validation.go` (`validateWebhook`,
//! `validateRuleWithOperations`, `ValidateWebhookURL`, `ValidateWebhookService`).
//! `matchConditions` are checked in [`crate::cel`].

use std::collections::HashSet;

use kgc_meta::validation::is_dns1123_subdomain;
use serde_json::Value;

use crate::field::{Errors, Path};
use crate::json::Json;

/// A webhook configuration (`mutating` for MutatingWebhookConfiguration).
pub(crate) fn configuration(obj: &Value, mutating: bool, errs: &mut Errors) {
    let root = Path::new("webhooks");
    let mut names = HashSet::new();
    for (i, hook) in obj.list("webhooks").iter().enumerate() {
        let path = root.index(i);
        let name = hook.str_of("name");
        if !names.insert(name) {
            errs.duplicate(path.child("name"), name);
        }
        webhook(hook, mutating, &path, errs);
    }
}

fn webhook(hook: &Value, mutating: bool, path: &Path<'_>, errs: &mut Errors) {
    let name = hook.str_of("name");
    if name.is_empty() {
        errs.required(path.child("name"), "");
    } else if !is_dns1123_subdomain(name).is_empty() || name.split('.').count() < 3 {
        errs.invalid(
            path.child("name"),
            name,
            "should be a domain with at least three segments separated by dots",
        );
    }
    for (i, rule) in hook.list("rules").iter().enumerate() {
        rule_with_operations(rule, &path.child("rules").index(i), errs);
    }
    enumerated(hook, "failurePolicy", &["Fail", "Ignore"], path, errs);
    enumerated(hook, "matchPolicy", &["Equivalent", "Exact"], path, errs);
    match hook.opt_str("sideEffects") {
        None => errs.required(
            path.child("sideEffects"),
            "must specify one of None, NoneOnDryRun",
        ),
        Some(v) if !matches!(v, "None" | "NoneOnDryRun") => {
            errs.not_supported(path.child("sideEffects"), v, &["None", "NoneOnDryRun"]);
        }
        Some(_) => {}
    }
    if let Some(t) = hook.opt_int("timeoutSeconds")
        && !(1..=30).contains(&t)
    {
        errs.invalid_int(
            path.child("timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        );
    }
    let versions = hook.list("admissionReviewVersions");
    if versions.is_empty() {
        errs.required(
            path.child("admissionReviewVersions"),
            "must specify one of v1, v1beta1",
        );
    } else if !versions
        .iter()
        .any(|v| matches!(v.as_str(), Some("v1" | "v1beta1")))
    {
        errs.invalid_json(
            path.child("admissionReviewVersions"),
            hook.at("admissionReviewVersions"),
            "must include at least one of v1, v1beta1",
        );
    }
    if mutating {
        enumerated(
            hook,
            "reinvocationPolicy",
            &["IfNeeded", "Never"],
            path,
            errs,
        );
    }
    crate::cel::match_conditions(hook, &kgc_cel::WEBHOOK_VARIABLES, path, errs);
    client_config(hook.at("clientConfig"), &path.child("clientConfig"), errs);
}

pub(crate) fn enumerated(
    hook: &Value,
    key: &str,
    supported: &[&str],
    path: &Path<'_>,
    errs: &mut Errors,
) {
    if let Some(v) = hook.opt_str(key)
        && !supported.contains(&v)
    {
        errs.not_supported(path.child(key), v, supported);
    }
}

pub(crate) fn rule_with_operations(rule: &Value, path: &Path<'_>, errs: &mut Errors) {
    let ops = rule.list("operations");
    if ops.is_empty() {
        errs.required(path.child("operations"), "");
    }
    const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (i, op) in ops.iter().enumerate() {
        let op = op.as_str().unwrap_or_default();
        if !OPERATIONS.contains(&op) {
            errs.not_supported(path.child("operations").index(i), op, &OPERATIONS);
        }
    }
    for key in ["apiGroups", "apiVersions", "resources"] {
        if rule.list(key).is_empty() {
            errs.required(path.child(key), "");
        }
    }
    enumerated(rule, "scope", &["*", "Cluster", "Namespaced"], path, errs);
}

fn client_config(cc: &Value, path: &Path<'_>, errs: &mut Errors) {
    match (cc.opt_str("url"), cc.at("service").is_object()) {
        (Some(_), true) | (None, false) => {
            errs.required(*path, "exactly one of url or service is required");
        }
        (Some(url), false) => {
            let p = path.child("url");
            match url.split_once("://") {
                Some(("https", rest)) => {
                    if rest.contains('@') {
                        errs.invalid(p, url, "user information is not permitted in the URL");
                    } else if rest.contains('#') {
                        errs.invalid(p, url, "fragments are not permitted in the URL");
                    } else if rest.contains('?') {
                        errs.invalid(p, url, "query parameters are not permitted in the URL");
                    } else if rest.is_empty() || rest.starts_with('/') {
                        errs.invalid(p, url, "host must be specified");
                    }
                }
                _ => errs.invalid(p, url, "'https' is the only allowed URL scheme"),
            }
        }
        (None, true) => {
            let svc = cc.at("service");
            let p = path.child("service");
            for key in ["name", "namespace"] {
                if svc.str_of(key).is_empty() {
                    errs.required(p.child(key), format!("service {key} is required"));
                }
            }
            if let Some(sp) = svc.opt_str("path")
                && !sp.starts_with('/')
            {
                errs.invalid(p.child("path"), sp, "must start with a '/'");
            }
            if let Some(port) = svc.opt_int("port")
                && !(1..=65535).contains(&port)
            {
                errs.invalid_int(
                    p.child("port"),
                    port,
                    "port is not valid: must be between 1 and 65535, inclusive",
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(hook: Value) -> Vec<String> {
        let mut e = Errors::default();
        configuration(&json!({"webhooks": [hook]}), true, &mut e);
        e.into_vec().iter().map(ToString::to_string).collect()
    }

    fn valid() -> Value {
        json!({"name": "a.example.com", "clientConfig": {"url": "https://127.0.0.1:8443/x"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]})
    }

    #[test]
    fn accepts_a_plain_webhook() {
        assert!(run(valid()).is_empty(), "{:?}", run(valid()));
    }

    #[test]
    fn refuses_what_upstream_refuses() {
        let mut h = valid();
        h["name"] = json!("short");
        h["timeoutSeconds"] = json!(31);
        h["sideEffects"] = json!("Some");
        h["clientConfig"] = json!({"url": "http://x/"});
        h["matchConditions"] = json!([{"name": "c", "expression": "params.x"}]);
        assert_eq!(
            run(h),
            vec![
                "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots",
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].matchConditions[0].expression: Invalid value: \"params.x\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.x\n | ^",
                "webhooks[0].clientConfig.url: Invalid value: \"http://x/\": 'https' is the only allowed URL scheme",
            ]
        );
    }
}
