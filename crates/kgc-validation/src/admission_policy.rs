//! admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding, following kubernetes/kubernetes
//! `pkg/apis/admissionregistration/validation/validation.go`
//! (`validateValidatingAdmissionPolicySpec`, `validateValidatingAdmissionPolicyBindingSpec`).

use std::collections::HashSet;

use kgc_cel::POLICY_VARIABLES;
use kgc_meta::validation::is_dns1123_subdomain;
use serde_json::Value;

use crate::cel::{Returns, expression, match_conditions};
use crate::field::{Errors, Path};
use crate::json::Json;
use crate::webhook::{enumerated, rule_with_operations};

/// The reasons a validation may give (`supportedValidationPolicyReason`).
const REASONS: [&str; 4] = [
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];
const VALIDATION_ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];

/// A ValidatingAdmissionPolicy.
pub(crate) fn policy(obj: &Value, errs: &mut Errors) {
    let spec = obj.at("spec");
    let path = Path::new("spec");
    enumerated(spec, "failurePolicy", &["Fail", "Ignore"], &path, errs);
    if let Some(kind) = spec.obj("paramKind") {
        let p = path.child("paramKind");
        let text = |k: &str| kind.get(k).and_then(Value::as_str).unwrap_or_default();
        if text("apiVersion").is_empty() {
            errs.required(p.child("apiVersion"), "");
        }
        if text("kind").is_empty() {
            errs.required(p.child("kind"), "");
        }
    }
    match spec.at("matchConstraints") {
        Value::Object(_) => match_resources(
            spec.at("matchConstraints"),
            true,
            &path.child("matchConstraints"),
            errs,
        ),
        _ => errs.required(path.child("matchConstraints"), ""),
    }
    let validations = spec.list("validations");
    if validations.is_empty() && spec.list("auditAnnotations").is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        errs.required(path.child("validations"), why);
        errs.required(path.child("auditAnnotations"), why);
    }
    let validations_path = path.child("validations");
    for (i, v) in validations.iter().enumerate() {
        validation(v, &validations_path.index(i), errs);
    }
    match_conditions(spec, &POLICY_VARIABLES, &path, errs);
    let mut names = HashSet::new();
    let variables = path.child("variables");
    for (i, v) in spec.list("variables").iter().enumerate() {
        let p = variables.index(i);
        let name = v.str_of("name");
        if name.is_empty() {
            errs.required(p.child("name"), "");
        } else if !is_cel_identifier(name) {
            errs.invalid(p.child("name"), name, "name is not a valid CEL identifier");
        } else if !names.insert(name) {
            errs.duplicate(p.child("name"), name);
        }
        let expr = v.str_of("expression");
        if expr.trim().is_empty() {
            errs.required(p.child("expression"), "");
        } else {
            expression(
                expr,
                &POLICY_VARIABLES,
                Returns::Any,
                &p.child("expression"),
                errs,
            );
        }
    }
}

/// A CEL identifier: a letter or `_`, then letters, digits or `_`.
fn is_cel_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn validation(v: &Value, path: &Path<'_>, errs: &mut Errors) {
    let expr = v.str_of("expression");
    if expr.trim().is_empty() {
        errs.required(path.child("expression"), "");
    } else {
        expression(
            expr,
            &POLICY_VARIABLES,
            Returns::Bool,
            &path.child("expression"),
            errs,
        );
    }
    let message = v.str_of("message");
    if !message.is_empty() && message.trim().is_empty() {
        errs.invalid(
            path.child("message"),
            message,
            "message must be non-empty if specified",
        );
    } else if message.contains('\n') {
        errs.invalid(
            path.child("message"),
            message,
            "message must not contain line breaks",
        );
    }
    if let Some(m) = v.opt_str("messageExpression")
        && !m.trim().is_empty()
    {
        expression(
            m,
            &POLICY_VARIABLES,
            Returns::String,
            &path.child("messageExpression"),
            errs,
        );
    }
    if let Some(r) = v.opt_str("reason")
        && !REASONS.contains(&r)
    {
        errs.not_supported(path.child("reason"), r, &REASONS);
    }
}

/// `matchConstraints` or `matchResources`; a policy's must name resources.
fn match_resources(m: &Value, policy: bool, path: &Path<'_>, errs: &mut Errors) {
    enumerated(m, "matchPolicy", &["Equivalent", "Exact"], path, errs);
    let rules = m.list("resourceRules");
    if policy && rules.is_empty() {
        errs.required(path.child("resourceRules"), "");
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, r) in m.list(key).iter().enumerate() {
            rule_with_operations(r, &path.child(key).index(i), errs);
        }
    }
}

/// A ValidatingAdmissionPolicyBinding.
pub(crate) fn binding(obj: &Value, errs: &mut Errors) {
    let spec = obj.at("spec");
    let path = Path::new("spec");
    let policy = spec.str_of("policyName");
    if policy.is_empty() {
        errs.required(path.child("policyName"), "");
    } else {
        errs.invalid_each(
            path.child("policyName"),
            policy,
            is_dns1123_subdomain(policy),
        );
    }
    if spec.at("paramRef").is_object() {
        param_ref(spec.at("paramRef"), &path.child("paramRef"), errs);
    }
    if spec.at("matchResources").is_object() {
        match_resources(
            spec.at("matchResources"),
            false,
            &path.child("matchResources"),
            errs,
        );
    }
    let actions = spec.list("validationActions");
    let p = path.child("validationActions");
    if actions.is_empty() {
        errs.required(p, "");
    }
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        let a = a.as_str().unwrap_or_default();
        if !seen.insert(a) {
            errs.duplicate(p.index(i), a);
        } else if !VALIDATION_ACTIONS.contains(&a) {
            errs.not_supported(p.index(i), a, &VALIDATION_ACTIONS);
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        let listed: Vec<String> = actions
            .iter()
            .map(|a| format!("{:?}", a.as_str().unwrap_or_default()))
            .collect();
        errs.invalid_raw(
            p,
            format!("[]admissionregistration.ValidationAction{{{}}}", listed.join(", ")),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        );
    }
}

fn param_ref(r: &Value, path: &Path<'_>, errs: &mut Errors) {
    let has_selector = r.at("selector").is_object();
    match (r.str_of("name").is_empty(), has_selector) {
        (true, false) => errs.required(*path, "one of name or selector must be specified"),
        (false, true) => errs.forbidden(
            path.child("name"),
            "name and selector are mutually exclusive",
        ),
        _ => {}
    }
    match r.opt_str("parameterNotFoundAction") {
        None => errs.required(path.child("parameterNotFoundAction"), ""),
        Some(a) if !matches!(a, "Allow" | "Deny") => {
            errs.not_supported(path.child("parameterNotFoundAction"), a, &["Allow", "Deny"]);
        }
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(f: fn(&Value, &mut Errors), obj: Value) -> Vec<String> {
        let mut e = Errors::default();
        f(&obj, &mut e);
        e.into_vec().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_policy_as_upstream_checks_it() {
        let good = json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
            "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]}});
        assert!(run(policy, good).is_empty());
        assert_eq!(
            run(
                policy,
                json!({"spec": {"failurePolicy": "Maybe",
                "validations": [{"expression": "'x'", "reason": "Nope", "message": "a\nb"}],
                "variables": [{"name": "1x", "expression": "params.y"}]}})
            ),
            vec![
                "spec.failurePolicy: Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\"",
                "spec.matchConstraints: Required value",
                "spec.validations[0].expression: Invalid value: \"'x'\": must evaluate to bool",
                "spec.validations[0].message: Invalid value: \"a\\nb\": message must not contain line breaks",
                "spec.validations[0].reason: Unsupported value: \"Nope\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"",
                "spec.variables[0].name: Invalid value: \"1x\": name is not a valid CEL identifier",
            ]
        );
        assert_eq!(
            run(
                policy,
                json!({"spec": {"matchConstraints": {"resourceRules": []}}})
            ),
            vec![
                "spec.matchConstraints.resourceRules: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
    }

    #[test]
    fn a_binding_as_upstream_checks_it() {
        assert!(
            run(
                binding,
                json!({"spec": {"policyName": "p", "validationActions": ["Deny"]}})
            )
            .is_empty()
        );
        assert_eq!(
            run(
                binding,
                json!({"spec": {"paramRef": {"parameterNotFoundAction": "Maybe"},
                "validationActions": ["Deny", "Warn", "Deny"]}})
            ),
            vec![
                "spec.policyName: Required value",
                "spec.paramRef: Required value: one of name or selector must be specified",
                "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Maybe\": supported values: \"Allow\", \"Deny\"",
                "spec.validationActions[2]: Duplicate value: \"Deny\"",
                "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
    }
}
