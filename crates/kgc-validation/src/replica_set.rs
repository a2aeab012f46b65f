//! apps/v1 ReplicaSet and core/v1 ReplicationController, the two "keep N pods" controllers,
//! following kubernetes/kubernetes `pkg/apis/apps/validation/validation.go`
//! (`ValidateReplicaSetSpec`, `ValidateReplicaSetStatus`, `ValidateReplicaSetStatusUpdate`),
//! `pkg/apis/core/validation/validation.go` (`ValidateReplicationControllerSpec`,
//! `ValidateNonEmptySelector`, `ValidatePodTemplateSpecForRC`,
//! `ValidateReplicationControllerStatus`) and `pkg/registry/apps/replicaset/strategy.go`
//! (the immutable selector of apps/v1).

use serde_json::{Value, json};

use crate::Op;
use crate::field::{Errors, Path};
use crate::json::Json;
use crate::labels::Selector;
use crate::workload::{
    Rules, counters, immutable_selector, replica_bounds, route, selector_and_template,
    template_for_replicas,
};

/// A ReplicaSet create, update or `status` update.
pub(crate) fn replica_set(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    let rules = Rules {
        spec: replica_set_spec,
        update: immutable_selector,
        status,
    };
    route(obj, op, &rules, errs);
}

/// `ValidateReplicaSetSpec`.
fn replica_set_spec(spec: &Value, errs: &mut Errors) {
    errs.nonnegative("spec.replicas", spec.int_of("replicas"));
    errs.nonnegative("spec.minReadySeconds", spec.int_of("minReadySeconds"));
    selector_and_template(spec, errs);
}

/// A ReplicationController create, update or `status` update (its selector is a plain label
/// map, and mutable).
pub(crate) fn replication_controller(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    let rules = Rules {
        spec: controller_spec,
        update: |_, _, _| {},
        status,
    };
    route(obj, op, &rules, errs);
}

/// `ValidateReplicationControllerSpec`.
fn controller_spec(spec: &Value, errs: &mut Errors) {
    errs.nonnegative("spec.minReadySeconds", spec.int_of("minReadySeconds"));
    // `labels.Set(selector).AsSelector()`: an equality per entry, everything if empty.
    let as_expr = json!({"matchLabels": spec.at("selector")});
    let selector = Selector::from_json(&as_expr).unwrap_or(Selector::Nothing);
    if selector.is_everything() {
        errs.required("spec.selector", "");
    }
    errs.nonnegative("spec.replicas", spec.int_of("replicas"));
    let template = spec.at("template");
    if template.is_null() {
        errs.required("spec.template", "");
    } else {
        template_for_replicas(
            &selector,
            template,
            "ReplicationController",
            &Path::new("spec.template"),
            errs,
        );
    }
}

/// `ValidateReplicaSetStatus` / `ValidateReplicationControllerStatus`.
fn status(s: &Value, errs: &mut Errors) {
    counters(
        s,
        &[
            "replicas",
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
            "observedGeneration",
        ],
        errs,
    );
    replica_bounds(
        s,
        &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"],
        "cannot be greater than readyReplicas",
        errs,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {
            "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}})
    }

    /// `TestValidateReplicaSet` / `TestValidateReplicaSetUpdate`.
    #[test]
    fn test_validate_replica_set() {
        let rs = json!({"spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}}, "template": template(json!({"a": "b"}))}});
        assert!(crate::testutil::check(replica_set, &rs, None, None).is_empty());
        let bad = json!({"spec": {"replicas": -1, "selector": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b c"]}]}, "template": template(json!({"a": "b"}))}});
        assert_eq!(
            crate::testutil::check(replica_set, &bad, None, None),
            vec![
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.selector.matchExpressions[0].values[0]: Invalid value: \"b c\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"b c\"]}]}: invalid label selector",
            ]
        );
        let moved = json!({"spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b", "c": "d"}}, "template": template(json!({"a": "b", "c": "d"}))}});
        assert_eq!(
            crate::testutil::check(replica_set, &moved, Some(&rs), None),
            vec![
                "spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\",\"c\":\"d\"}}: field is immutable"
            ]
        );
        let status = json!({"status": {"replicas": 1, "fullyLabeledReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}});
        assert_eq!(
            crate::testutil::check(replica_set, &status, Some(&rs), Some("status")),
            vec![
                "status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than status.replicas"
            ]
        );
    }

    /// `TestValidateReplicationController`.
    #[test]
    fn test_validate_replication_controller() {
        let rc = json!({"spec": {"replicas": 1, "selector": {"a": "b"}, "template": template(json!({"a": "b"}))}});
        assert!(crate::testutil::check(replication_controller, &rc, None, None).is_empty());
        let empty = json!({"spec": {"replicas": 1, "selector": {}, "template": template(json!({"a": "b"}))}});
        assert_eq!(
            crate::testutil::check(replication_controller, &empty, None, None),
            vec!["spec.selector: Required value"]
        );
        let mismatch = json!({"spec": {"replicas": 1, "selector": {"a": "c"}, "template": template(json!({"a": "b"}))}});
        assert_eq!(
            crate::testutil::check(replication_controller, &mismatch, None, None),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"a\":\"b\"}: `selector` does not match template `labels`"
            ]
        );
        // The selector of a ReplicationController may change.
        assert!(
            crate::testutil::check(replication_controller, &rc, Some(&mismatch), None).is_empty()
        );
    }
}
