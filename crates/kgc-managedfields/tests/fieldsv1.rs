//! `FieldsV1` samples in the shapes real clusters store, parsed and written back.

use kgc_managedfields::{FieldSet, Path, PathElement, decode_managed_fields};
use serde_json::{Value, json};

/// Parses, checks the set against `paths`, and checks that writing it back and parsing again
/// gives the same set, in both renderings.
fn check(fields_v1: Value, paths: &[&str]) {
    let set = FieldSet::from_fields_v1(&fields_v1).unwrap();
    let printed: Vec<String> = set.paths().iter().map(Path::to_string).collect();
    assert_eq!(printed, paths, "{fields_v1:#}");
    let text = set.to_fields_v1_string();
    assert_eq!(
        FieldSet::from_fields_v1(&serde_json::from_str(&text).unwrap()).unwrap(),
        set
    );
    assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()).unwrap(), set);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), fields_v1);
}

#[test]
fn kubectl_create_deployment() {
    // `kubectl create deployment web --image=nginx` (manager kubectl-create, Update).
    check(
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
                "f:selector": {},
                "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
                "f:template": {
                    "f:metadata": {"f:creationTimestamp": {}, "f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:containers": {"k:{\"name\":\"nginx\"}": {
                            ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                            "f:resources": {}, "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {}}},
                        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                        "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}
                    }
                }
            }
        }),
        &[
            ".metadata.labels",
            ".metadata.labels.app",
            ".spec.progressDeadlineSeconds",
            ".spec.replicas",
            ".spec.revisionHistoryLimit",
            ".spec.selector",
            ".spec.strategy.rollingUpdate",
            ".spec.strategy.type",
            ".spec.strategy.rollingUpdate.maxSurge",
            ".spec.strategy.rollingUpdate.maxUnavailable",
            ".spec.template.metadata.creationTimestamp",
            ".spec.template.metadata.labels",
            ".spec.template.metadata.labels.app",
            ".spec.template.spec.dnsPolicy",
            ".spec.template.spec.restartPolicy",
            ".spec.template.spec.schedulerName",
            ".spec.template.spec.securityContext",
            ".spec.template.spec.terminationGracePeriodSeconds",
            r#".spec.template.spec.containers[name="nginx"]"#,
            r#".spec.template.spec.containers[name="nginx"].image"#,
            r#".spec.template.spec.containers[name="nginx"].imagePullPolicy"#,
            r#".spec.template.spec.containers[name="nginx"].name"#,
            r#".spec.template.spec.containers[name="nginx"].resources"#,
            r#".spec.template.spec.containers[name="nginx"].terminationMessagePath"#,
            r#".spec.template.spec.containers[name="nginx"].terminationMessagePolicy"#,
        ],
    );
}

#[test]
fn kube_controller_manager_status() {
    // The deployment controller's status entry (subresource status).
    check(
        json!({
            "f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}},
            "f:status": {
                "f:availableReplicas": {},
                "f:conditions": {
                    ".": {},
                    "k:{\"type\":\"Available\"}": {".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}},
                    "k:{\"type\":\"Progressing\"}": {".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}
                },
                "f:observedGeneration": {}, "f:readyReplicas": {}, "f:replicas": {}, "f:updatedReplicas": {}
            }
        }),
        &[
            ".metadata.annotations",
            ".metadata.annotations.deployment.kubernetes.io/revision",
            ".status.availableReplicas",
            ".status.conditions",
            ".status.observedGeneration",
            ".status.readyReplicas",
            ".status.replicas",
            ".status.updatedReplicas",
            r#".status.conditions[type="Available"]"#,
            r#".status.conditions[type="Progressing"]"#,
            r#".status.conditions[type="Available"].lastTransitionTime"#,
            r#".status.conditions[type="Available"].lastUpdateTime"#,
            r#".status.conditions[type="Available"].message"#,
            r#".status.conditions[type="Available"].reason"#,
            r#".status.conditions[type="Available"].status"#,
            r#".status.conditions[type="Available"].type"#,
            r#".status.conditions[type="Progressing"].lastTransitionTime"#,
            r#".status.conditions[type="Progressing"].lastUpdateTime"#,
            r#".status.conditions[type="Progressing"].message"#,
            r#".status.conditions[type="Progressing"].reason"#,
            r#".status.conditions[type="Progressing"].status"#,
            r#".status.conditions[type="Progressing"].type"#,
        ],
    );
}

#[test]
fn replicaset_owner_references_finalizers_and_ports() {
    check(
        json!({
            "f:metadata": {
                "f:finalizers": {".": {}, "v:\"foregroundDeletion\"": {}},
                "f:ownerReferences": {".": {}, "k:{\"uid\":\"8f7c2c9e-1d0a-4b4e-9d55-0d4f5c2b7a11\"}": {}}
            },
            "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
                "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}
            }}}}}
        }),
        &[
            ".metadata.finalizers",
            ".metadata.ownerReferences",
            r#".metadata.finalizers[="foregroundDeletion"]"#,
            r#".metadata.ownerReferences[uid="8f7c2c9e-1d0a-4b4e-9d55-0d4f5c2b7a11"]"#,
            r#".spec.template.spec.containers[name="web"].ports"#,
            r#".spec.template.spec.containers[name="web"].ports[containerPort=8080,protocol="TCP"]"#,
            r#".spec.template.spec.containers[name="web"].ports[containerPort=8080,protocol="TCP"].containerPort"#,
            r#".spec.template.spec.containers[name="web"].ports[containerPort=8080,protocol="TCP"].protocol"#,
        ],
    );
}

#[test]
fn kubectl_server_side_apply_configmap_and_indices() {
    check(
        json!({"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}),
        &[".data.a", ".metadata.labels.app"],
    );
    check(
        json!({"f:spec": {"f:args": {"i:0": {}, "i:1": {}}}}),
        &[".spec.args[0]", ".spec.args[1]"],
    );
    check(json!({}), &[]);
}

#[test]
fn keys_with_special_characters_and_values_of_every_kind() {
    let mut set = FieldSet::new();
    let f = PathElement::field;
    set.insert(&[f("metadata"), f("annotations"), f("a.b/c<d>")]);
    set.insert(&[f("spec"), f("s"), PathElement::Value(json!(3))]);
    set.insert(&[f("spec"), f("s"), PathElement::Value(json!(true))]);
    set.insert(&[f("spec"), f("s"), PathElement::Value(json!("q\"uote"))]);
    set.insert(&[
        f("spec"),
        f("m"),
        PathElement::key([("a".into(), json!(1)), ("b".into(), json!("x&y"))]),
    ]);
    let text = set.to_fields_v1_string();
    assert_eq!(
        text,
        r#"{"f:metadata":{"f:annotations":{"f:a.b/c\u003cd\u003e":{}}},"f:spec":{"f:m":{"k:{\"a\":1,\"b\":\"x\\u0026y\"}":{}},"f:s":{"v:3":{},"v:\"q\\\"uote\"":{},"v:true":{}}}}"#
    );
    assert_eq!(
        FieldSet::from_fields_v1(&serde_json::from_str(&text).unwrap()).unwrap(),
        set
    );
}

#[test]
fn a_full_managed_fields_list_decodes() {
    let mf = json!([
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": "2024-05-01T10:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": "2024-05-01T10:00:01Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:status": {"f:phase": {}}}, "subresource": "status"}
    ]);
    let entries = decode_managed_fields(Some(&mf)).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].subresource, "status");
    let back: Vec<Value> = entries.iter().map(|e| e.to_json()).collect();
    assert_eq!(Value::Array(back), mf);
    for bad in [
        json!([{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1"}]),
        json!([{"manager": "m", "operation": "Update", "apiVersion": "v1"}]),
        json!([{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
        json!([{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"bogus": {}}}]),
        json!({"not": "a list"}),
    ] {
        assert!(decode_managed_fields(Some(&bad)).is_err(), "{bad}");
    }
}
