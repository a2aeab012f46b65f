//! core/v1 Node, following kubernetes/kubernetes `pkg/apis/core/validation/validation.go`
//! (`ValidateNode`, `ValidateNodeResources`, `ValidateNodeUpdate`, `validateNodeTaints`).

use std::collections::BTreeSet;

use kgc_meta::gojson::go_json;
use serde_json::Value;

use crate::field::{Errors, Path, go_struct, typed};
use crate::json::{Json, strings};
use crate::net::{is_dual_stack_cidrs, validate_cidr};
use crate::resources::{resource_list, validate_quantity_value};
use crate::taint::validate_taints;

/// A Node create or update (`status` updates are full updates upstream, too).
pub(crate) fn node(obj: &Value, old: Option<&Value>, errs: &mut Errors) {
    let spec = obj.at("spec");
    // Upstream builds this path from `metadata`.
    validate_taints(spec.list("taints"), &Path::new("metadata.taints"), errs);
    resources(obj.at("status"), errs);
    match old {
        None => pod_cidrs(spec, errs),
        Some(old) => update(obj, old, errs),
    }
}

/// The pod CIDRs, with the singular field standing in for an unset list.
fn cidrs(spec: &Value) -> Vec<&str> {
    let list = strings(spec, "podCIDRs");
    if list.is_empty() && !spec.str_of("podCIDR").is_empty() {
        vec![spec.str_of("podCIDR")]
    } else {
        list
    }
}

fn pod_cidrs(spec: &Value, errs: &mut Errors) {
    let list = cidrs(spec);
    let mut valid = true;
    for (i, c) in list.iter().enumerate() {
        valid &= validate_cidr(&Path::new("spec.podCIDRs").index(i), c, errs);
    }
    if list.len() > 1 {
        if valid && !is_dual_stack_cidrs(&list) {
            let rendered: Vec<Value> = list.iter().map(|c| Value::from(*c)).collect();
            errs.invalid_raw(
                "spec.podCIDRs",
                go_json(&Value::Array(rendered)),
                "may specify no more than one CIDR for each IP family",
            );
        }
        let mut seen = BTreeSet::new();
        for (i, c) in list.iter().enumerate() {
            if !seen.insert(*c) {
                errs.duplicate(Path::new("spec.podCIDRs").index(i), c);
            }
        }
    }
}

/// `ValidateNodeResources`: capacity and allocatable quantities.
fn resources(status: &Value, errs: &mut Errors) {
    for field in ["capacity", "allocatable"] {
        for (name, q) in resource_list(status, field) {
            validate_quantity_value(
                name,
                &q,
                &Path::new("status").child(field).child(name),
                errs,
            );
        }
    }
}

/// `ValidateNodeUpdate`.
fn update(node: &Value, old: &Value, errs: &mut Errors) {
    let mut seen = Vec::new();
    for (i, a) in node.at("status").list("addresses").iter().enumerate() {
        let key = (a.str_of("type"), a.str_of("address"));
        if seen.contains(&key) {
            errs.duplicate_raw(
                Path::new("status.addresses").index(i),
                go_struct(&[("Type", typed(key.0)), ("Address", typed(key.1))]),
            );
        }
        seen.push(key);
    }
    let (spec, old_spec) = (node.at("spec"), old.at("spec"));
    let old_cidrs = cidrs(old_spec);
    if !old_cidrs.is_empty() && old_cidrs != cidrs(spec) {
        errs.forbidden(
            "spec.podCIDRs",
            "node updates may not change podCIDR except from \"\" to valid",
        );
    }
    let provider = old_spec.str_of("providerID");
    if !provider.is_empty() && provider != spec.str_of("providerID") {
        errs.forbidden(
            "spec.providerID",
            "node updates may not change providerID except from \"\" to valid",
        );
    }
    if spec.str_of("externalID") != old_spec.str_of("externalID") {
        errs.forbidden("spec.externalID", "may not be updated");
    }
    if old_cidrs.is_empty() {
        pod_cidrs(spec, errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(obj: &Value, old: Option<&Value>) -> Vec<String> {
        crate::testutil::messages(|e| node(obj, old, e))
    }

    /// `TestValidateNode` (the main failure cases).
    #[test]
    fn test_validate_node() {
        assert!(run(&json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}, "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}), None).is_empty());
        assert_eq!(
            run(
                &json!({"spec": {"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"], "taints": [{"key": "a", "effect": "Sometimes"}]}, "status": {"capacity": {"cpu": "-1", "pods": "1.5"}}}),
                None
            ),
            vec![
                "metadata.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "status.capacity.cpu: Invalid value: \"-1\": must be greater than or equal to 0",
                "status.capacity.pods: Invalid value: \"1500m\": must be an integer",
                "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one CIDR for each IP family",
            ]
        );
        assert_eq!(
            run(&json!({"spec": {"podCIDR": "10.0.0.0/33"}}), None),
            vec![
                "spec.podCIDRs[0]: Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            ]
        );
    }

    /// `TestValidateNodeUpdate`: pod CIDRs and provider ID are set once.
    #[test]
    fn test_validate_node_update() {
        let old = json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "p1"}});
        assert!(run(&json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "p1", "unschedulable": true}}), Some(&old)).is_empty());
        assert_eq!(
            run(
                &json!({"spec": {"podCIDRs": ["10.9.0.0/24"], "providerID": "p2"}}),
                Some(&old)
            ),
            vec![
                "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
                "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid",
            ]
        );
        assert!(
            run(
                &json!({"spec": {"podCIDRs": ["10.0.0.0/24"]}}),
                Some(&json!({"spec": {}}))
            )
            .is_empty()
        );
    }
}
