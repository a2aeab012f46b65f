//! ResourceQuota, following kubernetes/kubernetes `pkg/apis/core/validation/validation.go`
//! (`ValidateResourceQuota`, `ValidateResourceQuotaUpdate`, `ValidateResourceQuotaStatusUpdate`,
//! `ValidateResourceQuotaResourceName`, `validateResourceQuotaScopes`,
//! `validateScopedResourceSelectorRequirement`) and `pkg/apis/core/helper/helpers.go`
//! (`IsStandardQuotaResourceName`, `IsStandardResourceQuotaScope`,
//! `IsResourceQuotaScopeValidForResource`). Map entries are checked in key order (Go's map
//! order is random).

use kgc_meta::quantity::Quantity;
use serde_json::Value;

use crate::Op;
use crate::field::{Errors, Path};
use crate::json::Json;
use crate::resources::{validate_quantity_value, validate_resource_name};

/// `standardQuotaResources`.
const QUOTA_RESOURCES: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// `standardResourceQuotaScopes`.
const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// `podComputeQuotaResources` and `pods`: what the pod scopes apply to.
const POD_SCOPED: [&str; 7] = [
    "pods",
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];

const CONFLICTING: [[&str; 2]; 2] = [
    ["BestEffort", "NotBestEffort"],
    ["Terminating", "NotTerminating"],
];

/// `IsStandardQuotaResourceName`.
fn is_quota_resource(name: &str) -> bool {
    QUOTA_RESOURCES.contains(&name) || name.starts_with("requests.hugepages-")
}

/// `IsResourceQuotaScopeValidForResource`.
fn scope_valid_for(scope: &str, resource: &str) -> bool {
    match scope {
        "BestEffort" => resource == "pods",
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => POD_SCOPED.contains(&resource),
        _ => true,
    }
}

/// A ResourceQuota create, update or status update.
pub(crate) fn resource_quota(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    if !op.is_status() {
        spec(obj.at("spec"), errs);
    }
    if let Op::Update(old) = op {
        let (new_scopes, old_scopes) = (scope_set(obj), scope_set(old));
        if new_scopes != old_scopes {
            errs.invalid_json(
                "spec.scopes",
                obj.at("spec").at("scopes"),
                crate::field::IMMUTABLE,
            );
        }
    }
    let (status, root) = (obj.at("status"), Path::new("status"));
    for field in ["hard", "used"] {
        list(status, field, &root.child(field), errs);
    }
}

fn scope_set(obj: &Value) -> std::collections::BTreeSet<&str> {
    obj.at("spec")
        .at("scopes")
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The entries of a resource list: names for quota, quantities not negative (whole for
/// counted resources).
fn list(parent: &Value, field: &str, path: &Path<'_>, errs: &mut Errors) {
    let Some(map) = parent.obj(field) else {
        return;
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for k in keys {
        let p = path.key(k);
        if validate_resource_name(k, &p, errs) && !k.contains('/') && !is_quota_resource(k) {
            errs.invalid_typed(p, k, "must be a standard resource for quota");
        }
        if let Ok(q) = Quantity::from_json(&map[k]) {
            validate_quantity_value(k, &q, &p, errs);
        }
    }
}

/// `ValidateResourceQuotaSpec`.
fn spec(spec: &Value, errs: &mut Errors) {
    list(spec, "hard", &Path::new("spec.hard"), errs);
    let mut hard: Vec<&str> = spec
        .obj("hard")
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    hard.sort_unstable();
    let scopes = spec.at("scopes");
    if let Some(list) = scopes.as_array().filter(|l| !l.is_empty()) {
        let mut set = Vec::new();
        for scope in list.iter().map(|s| s.as_str().unwrap_or_default()) {
            if !SCOPES.contains(&scope) {
                errs.invalid_json("spec.scopes", scopes, "unsupported scope");
            }
            for k in &hard {
                if is_quota_resource(k) && !scope_valid_for(scope, k) {
                    errs.invalid_json(
                        "spec.scopes",
                        scopes,
                        "unsupported scope applied to resource",
                    );
                }
            }
            set.push(scope);
        }
        if CONFLICTING
            .iter()
            .any(|pair| pair.iter().all(|s| set.contains(s)))
        {
            errs.invalid_json("spec.scopes", scopes, "conflicting scopes");
        }
    }
    let selector = spec.at("scopeSelector");
    if selector.is_null() {
        return;
    }
    let path = Path::new("spec.scopeSelector.matchExpressions");
    let mut set = Vec::new();
    for req in selector
        .at("matchExpressions")
        .as_array()
        .into_iter()
        .flatten()
    {
        let scope = req.str_of("scopeName");
        let operator = req.str_of("operator");
        if !SCOPES.contains(&scope) {
            errs.invalid_typed(path.child("scopeName"), scope, "unsupported scope");
        }
        for k in &hard {
            if is_quota_resource(k) && !scope_valid_for(scope, k) {
                errs.invalid_json(path, selector, "unsupported scope applied to resource");
            }
        }
        if matches!(
            scope,
            "BestEffort"
                | "NotBestEffort"
                | "Terminating"
                | "NotTerminating"
                | "CrossNamespacePodAffinity"
        ) && operator != "Exists"
        {
            errs.invalid_typed(
                path.child("operator"),
                operator,
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            );
        }
        let values = req.at("values");
        let has_values = values.as_array().is_some_and(|v| !v.is_empty());
        match operator {
            "In" | "NotIn" if !has_values => errs.required(
                path.child("values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            ),
            "Exists" | "DoesNotExist" if has_values => errs.invalid_json(
                path.child("values"),
                values,
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => errs.invalid_typed(
                path.child("operator"),
                operator,
                "not a valid selector operator",
            ),
        }
        set.push(scope);
    }
    if CONFLICTING
        .iter()
        .any(|pair| pair.iter().all(|s| set.contains(s)))
    {
        errs.invalid_json(path, selector, "conflicting scopes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(obj: Value) -> Vec<String> {
        let mut e = Errors::default();
        resource_quota(&obj, Op::Create, &mut e);
        e.into_vec().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn valid_quotas() {
        assert!(run(json!({"spec": {"hard": {"pods": "20", "requests.cpu": "2",
            "count/deployments.apps": "3", "gold.storageclass.storage.k8s.io/requests.storage": "10Gi"},
            "scopes": ["NotTerminating"]}})).is_empty());
        assert!(
            run(
                json!({"spec": {"hard": {"pods": "2"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}})
            )
            .is_empty()
        );
    }

    #[test]
    fn names_quantities_and_scopes() {
        assert_eq!(
            run(
                json!({"spec": {"hard": {"foo": "1", "storage": "1Gi", "pods": "-1", "services": "1500m"}}})
            ),
            vec![
                "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0",
                "spec.hard[services]: Invalid value: \"1500m\": must be an integer",
                "spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota",
            ]
        );
        assert_eq!(
            run(
                json!({"spec": {"hard": {"pods": "1", "configmaps": "1"}, "scopes": ["BestEffort", "NotBestEffort", "Nope"]}})
            ),
            vec![
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Nope\"]: unsupported scope applied to resource",
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Nope\"]: unsupported scope applied to resource",
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Nope\"]: unsupported scope",
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Nope\"]: conflicting scopes",
            ]
        );
        assert_eq!(
            run(
                json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "Terminating", "operator": "In", "values": []},
                {"scopeName": "PriorityClass", "operator": "Maybe"}]}}})
            ),
            vec![
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"Maybe\": not a valid selector operator",
            ]
        );
    }

    #[test]
    fn scopes_are_immutable() {
        let old = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}});
        let new = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["NotBestEffort"]}});
        let mut e = Errors::default();
        resource_quota(&new, Op::Update(&old), &mut e);
        assert_eq!(
            e.into_vec()[0].to_string(),
            "spec.scopes: Invalid value: [\"NotBestEffort\"]: field is immutable"
        );
    }
}
