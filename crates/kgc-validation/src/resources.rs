//! Resource names and quantities (container requests and limits, node capacity, claim
//! requests), following kubernetes/kubernetes `pkg/apis/core/validation/validation.go`
//! (`ValidateResourceRequirements`, `validateContainerResourceName`, `validateResourceName`,
//! `ValidateResourceQuantityValue`, `ValidatePositiveQuantityValue`) and
//! `pkg/apis/core/helper/helpers.go` (`IsStandardResourceName`, `IsExtendedResourceName`,
//! `IsOvercommitAllowed`, ...).

use kgc_meta::quantity::Quantity;
use kgc_meta::validation::is_qualified_name;
use serde_json::Value;

use crate::field::{Errors, NEGATIVE, Path};
use crate::json::Json;

const STANDARD_RESOURCES: [&str; 20] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
    "storage",
    "requests.storage",
];

const INTEGER_RESOURCES: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_standard_resource(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name)
        || is_hugepages(name)
        || name.starts_with("requests.hugepages-")
        || name.starts_with("limits.hugepages-")
}

fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || is_hugepages(name)
}

/// `IsNativeResource`: unprefixed or in the `kubernetes.io/` domain.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`.
fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

pub(crate) fn is_overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

pub(crate) fn is_integer_resource(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended(name)
}

/// `validateResourceName`.
pub(crate) fn validate_resource_name(name: &str, path: &Path<'_>, errs: &mut Errors) -> bool {
    let before = errs.len();
    for m in is_qualified_name(name) {
        errs.invalid_typed(path, name, m);
    }
    if errs.len() != before {
        return false;
    }
    if !name.contains('/') && !is_standard_resource(name) {
        errs.invalid_typed(
            path,
            name,
            "must be a standard resource type or fully qualified",
        );
    }
    errs.len() == before
}

/// `validateContainerResourceName`.
pub(crate) fn validate_container_resource_name(name: &str, path: &Path<'_>, errs: &mut Errors) {
    validate_resource_name(name, path, errs);
    if !name.contains('/') {
        if !is_standard_container_resource(name) {
            errs.invalid_typed(path, name, "must be a standard resource for containers");
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.invalid_typed(path, name, "doesn't follow extended resource name standard");
    }
}

/// `ValidateResourceQuantityValue`: not negative, and whole for integer resources.
pub(crate) fn validate_quantity_value(
    name: &str,
    q: &Quantity,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    if q.is_negative() {
        errs.invalid(path, &q.to_string(), NEGATIVE);
    }
    if is_integer_resource(name) && !q.is_integer() {
        errs.invalid_typed(path, &q.to_string(), "must be an integer");
    }
}

/// `ValidatePositiveQuantityValue`.
pub(crate) fn validate_positive(q: &Quantity, path: &Path<'_>, errs: &mut Errors) -> bool {
    if q.is_positive() {
        return true;
    }
    errs.invalid(path, &q.to_string(), "must be greater than zero");
    false
}

/// A resource list as sorted `(name, quantity)` pairs; unparsable quantities are skipped (the
/// typed decode reports them).
pub(crate) fn resource_list<'a>(v: &'a Value, field: &str) -> Vec<(&'a str, Quantity)> {
    let mut out: Vec<(&str, Quantity)> = v
        .obj(field)
        .map(|m| {
            m.iter()
                .filter_map(|(k, q)| Quantity::from_json(q).ok().map(|q| (k.as_str(), q)))
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

/// `ValidateResourceRequirements` of a container's `resources`.
pub(crate) fn validate_requirements(res: &Value, path: &Path<'_>, errs: &mut Errors) {
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let limits = resource_list(res, "limits");
    let (mut lim_cpu_mem, mut req_cpu_mem, mut hugepages) = (false, false, false);
    for (name, q) in &limits {
        let p = lim_path.key(name);
        validate_container_resource_name(name, &p, errs);
        validate_quantity_value(name, q, &p, errs);
        hugepages |= is_hugepages(name);
        lim_cpu_mem |= matches!(*name, "cpu" | "memory");
    }
    for (name, q) in resource_list(res, "requests") {
        let p = req_path.key(name);
        validate_container_resource_name(name, &p, errs);
        validate_quantity_value(name, &q, &p, errs);
        match limits.iter().find(|(n, _)| *n == name) {
            Some((_, limit)) => {
                let ord = q.cmp(limit);
                if ord.is_ne() && !is_overcommit_allowed(name) {
                    errs.invalid(
                        req_path,
                        &q.to_string(),
                        format!("must be equal to {name} limit of {limit}"),
                    );
                } else if ord.is_gt() {
                    errs.invalid(
                        req_path,
                        &q.to_string(),
                        format!("must be less than or equal to {name} limit of {limit}"),
                    );
                }
            }
            None if !is_overcommit_allowed(name) => {
                errs.required(
                    lim_path,
                    "Limit must be set for non overcommitable resources",
                );
            }
            None => {}
        }
        hugepages |= is_hugepages(name);
        req_cpu_mem |= matches!(name, "cpu" | "memory");
    }
    if hugepages && !lim_cpu_mem && !req_cpu_mem {
        errs.forbidden(path, "HugePages require cpu or memory");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(res: Value) -> Vec<String> {
        crate::testutil::messages(|e| {
            validate_requirements(&res, &Path::new("spec.containers[0].resources"), e)
        })
    }

    /// `TestValidateResourceRequirements` (the main cases).
    #[test]
    fn test_validate_resource_requirements() {
        assert!(run(json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1024Mi"}})).is_empty());
        assert!(
            run(json!({"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "2"}}))
                .is_empty()
        );
        assert_eq!(
            run(json!({"limits": {"cpu": "1"}, "requests": {"cpu": "2000m"}})),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"
            ]
        );
        assert_eq!(
            run(json!({"requests": {"memory": "-1Mi"}})),
            vec![
                "spec.containers[0].resources.requests[memory]: Invalid value: \"-1Mi\": must be greater than or equal to 0"
            ]
        );
        assert_eq!(
            run(json!({"requests": {"example.com/gpu": "1"}})),
            vec![
                "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
            ]
        );
        assert_eq!(
            run(json!({"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}})),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2"
            ]
        );
        assert_eq!(
            run(json!({"limits": {"pods": "1", "foo": "1"}})),
            vec![
                "spec.containers[0].resources.limits[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.containers[0].resources.limits[foo]: Invalid value: \"foo\": must be a standard resource for containers",
                "spec.containers[0].resources.limits[pods]: Invalid value: \"pods\": must be a standard resource for containers",
            ]
        );
        assert_eq!(
            run(
                json!({"limits": {"example.com/gpu": "500m"}, "requests": {"example.com/gpu": "500m"}})
            ),
            vec![
                "spec.containers[0].resources.limits[example.com/gpu]: Invalid value: \"500m\": must be an integer",
                "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: \"500m\": must be an integer",
            ]
        );
        assert_eq!(
            run(json!({"limits": {"hugepages-2Mi": "2Mi"}})),
            vec!["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"]
        );
    }
}
