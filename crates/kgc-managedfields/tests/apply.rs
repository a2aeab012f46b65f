//! Server-side apply scenarios, after structured-merge-diff's `merge/*_test.go` and
//! apimachinery's field manager tests.

mod common;

use common::*;
use kgc_managedfields::{Error, Manager, Operation, apply, update};
use serde_json::{Value, json};

#[test]
fn create_via_apply_records_the_applied_fields() {
    let cfg = deployment(3, "nginx");
    let out = apply(None, &cfg, &mgr("kubectl", T1), false, &Apps).unwrap();
    assert_eq!(without_managed_fields(&out), cfg);
    assert_eq!(
        entries(&out),
        vec![json!({
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": serde_json::from_str::<Value>(&fields(&out, "kubectl", "Apply")).unwrap(),
        })]
    );
    // Struct fields are owned through their leaves, list items whole ("."), the atomic selector
    // as one leaf; the port key gets its schema default.
    assert_eq!(
        fields(&out, "kubectl", "Apply"),
        concat!(
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"#,
            r#""f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"#,
            r#""k:{\"name\":\"c\"}":{"f:image":{},"f:name":{},"f:ports":{"#,
            r#""k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{"f:containerPort":{},".":{}}},".":{}}}}}}}"#
        )
    );
}

#[test]
fn reapplying_the_same_configuration_changes_nothing() {
    let cfg = deployment(3, "nginx");
    let first = apply(None, &cfg, &mgr("kubectl", T1), false, &Apps).unwrap();
    let second = apply(Some(&first), &cfg, &mgr("kubectl", T2), false, &Apps).unwrap();
    assert_eq!(
        second, first,
        "no-op apply keeps the object and its entry time"
    );
}

#[test]
fn equal_values_are_shared_without_conflict() {
    let a = apply(None, &deployment(3, "nginx"), &mgr("a", T1), false, &Apps).unwrap();
    let b = apply(
        Some(&a),
        &partial(json!({"replicas": 3})),
        &mgr("b", T2),
        false,
        &Apps,
    )
    .unwrap();
    assert_eq!(without_managed_fields(&b), without_managed_fields(&a));
    assert!(owns(&b, "a", "Apply", ".spec.replicas"));
    assert!(owns(&b, "b", "Apply", ".spec.replicas"));
    assert_eq!(fields(&b, "b", "Apply"), r#"{"f:spec":{"f:replicas":{}}}"#);
}

#[test]
fn a_differing_value_conflicts_with_upstreams_message() {
    let a = apply(None, &deployment(3, "nginx"), &mgr("a", T1), false, &Apps).unwrap();
    let err = apply(
        Some(&a),
        &partial(json!({"replicas": 5})),
        &mgr("b", T2),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "a": .spec.replicas"#
    );
    let c = &err.conflicts()[0];
    assert_eq!(c.field, ".spec.replicas");
    assert_eq!(c.message(), r#"conflict with "a""#);
    assert_eq!(c.operation, Operation::Apply);

    // Two fields of one manager.
    let err = apply(
        Some(&a),
        &partial(json!({"replicas": 5, "template": {"spec": {"containers": [{"name": "c", "image": "httpd"}]}}})),
        &mgr("b", T2),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"c\"].image"
    );
}

#[test]
fn conflicts_with_several_managers_are_grouped_by_manager() {
    let a = apply(None, &deployment(3, "nginx"), &mgr("a", T1), false, &Apps).unwrap();
    // An updater takes the image.
    let mut edited = a.clone();
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    let e = update(Some(&a), &edited, &mgr("kubectl-edit", T2), &Apps).unwrap();
    let err = apply(
        Some(&e),
        &partial(json!({"replicas": 5, "template": {"spec": {"containers": [{"name": "c", "image": "httpd"}]}}})),
        &mgr("b", T3),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.replicas\nconflicts with \"kubectl-edit\" using apps/v1:\n- .spec.template.spec.containers[name=\"c\"].image"
    );
}

#[test]
fn force_takes_ownership() {
    let a = apply(None, &deployment(3, "nginx"), &mgr("a", T1), false, &Apps).unwrap();
    let b = apply(
        Some(&a),
        &partial(json!({"replicas": 5})),
        &mgr("b", T2),
        true,
        &Apps,
    )
    .unwrap();
    assert_eq!(b["spec"]["replicas"], 5);
    assert!(owns(&b, "b", "Apply", ".spec.replicas"));
    assert!(!owns(&b, "a", "Apply", ".spec.replicas"));
    // a keeps the rest.
    assert!(owns(&b, "a", "Apply", ".metadata.labels.app"));
    // Re-applying a's configuration now conflicts with b.
    let err = apply(
        Some(&b),
        &deployment(3, "nginx"),
        &mgr("a", T3),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "b": .spec.replicas"#
    );
}

#[test]
fn force_drops_an_emptied_entry() {
    let a = apply(
        None,
        &partial(json!({"replicas": 1})),
        &mgr("a", T1),
        false,
        &Apps,
    )
    .unwrap();
    let b = apply(
        Some(&a),
        &partial(json!({"replicas": 2})),
        &mgr("b", T2),
        true,
        &Apps,
    )
    .unwrap();
    assert!(entry(&b, "a", "Apply").is_none());
    assert_eq!(entries(&b).len(), 1);
}

#[test]
fn fields_no_longer_applied_are_removed_unless_someone_else_owns_them() {
    let mut cfg = deployment(3, "nginx");
    cfg["metadata"]["labels"] = json!({"app": "x", "tier": "web", "team": "t"});
    let a = apply(None, &cfg, &mgr("a", T1), false, &Apps).unwrap();
    // b co-owns `team` with the same value.
    let b = apply(
        Some(&a),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "ns", "labels": {"team": "t"}}}),
        &mgr("b", T2),
        false,
        &Apps,
    )
    .unwrap();
    // a stops applying `tier`, `team` and `replicas`.
    let mut cfg2 = deployment(3, "nginx");
    cfg2["spec"].as_object_mut().unwrap().remove("replicas");
    let out = apply(Some(&b), &cfg2, &mgr("a", T3), false, &Apps).unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"app": "x", "team": "t"}));
    assert!(out["spec"].get("replicas").is_none());
    assert!(owns(&out, "b", "Apply", ".metadata.labels.team"));
    assert!(!owns(&out, "a", "Apply", ".metadata.labels.team"));
    assert_eq!(entry(&out, "a", "Apply").unwrap()["time"], T3);
}

#[test]
fn fields_owned_by_an_updater_survive_the_applier_dropping_them() {
    // kubectl create owns everything (Update); a applies the same labels, then drops one.
    let mut obj = deployment(3, "nginx");
    obj["metadata"]["labels"] = json!({"app": "x", "tier": "web"});
    let created = update(None, &obj, &mgr("kubectl-create", T1), &Apps).unwrap();
    let mut cfg = deployment(3, "nginx");
    cfg["metadata"]["labels"] = json!({"app": "x", "tier": "web"});
    let a = apply(Some(&created), &cfg, &mgr("a", T2), false, &Apps).unwrap();
    let out = apply(
        Some(&a),
        &deployment(3, "nginx"),
        &mgr("a", T3),
        false,
        &Apps,
    )
    .unwrap();
    assert_eq!(out["metadata"]["labels"]["tier"], "web");
}

#[test]
fn a_whole_object_field_goes_when_nothing_below_it_is_owned() {
    let cfg = partial(json!({"strategy": {"rollingUpdate": {"maxSurge": 1}}, "replicas": 1}));
    let a = apply(None, &cfg, &mgr("a", T1), false, &Apps).unwrap();
    let out = apply(
        Some(&a),
        &partial(json!({"replicas": 1})),
        &mgr("a", T2),
        false,
        &Apps,
    )
    .unwrap();
    assert!(out["spec"].get("strategy").is_none(), "{out:#}");
}

#[test]
fn list_map_items_are_owned_per_item() {
    let two = partial(json!({"template": {"spec": {"containers": [
        {"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}}));
    let a = apply(None, &two, &mgr("a", T1), false, &Apps).unwrap();
    let b = apply(
        Some(&a),
        &partial(json!({"template": {"spec": {"containers": [{"name": "c3", "image": "i3"}]}}})),
        &mgr("b", T2),
        false,
        &Apps,
    )
    .unwrap();
    let names = |o: &Value| -> Vec<String> {
        o["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&b), ["c1", "c2", "c3"]);
    assert!(owns(
        &b,
        "b",
        "Apply",
        r#".spec.template.spec.containers[name="c3"]"#
    ));
    assert!(!owns(
        &b,
        "b",
        "Apply",
        r#".spec.template.spec.containers[name="c1"]"#
    ));

    // a drops c2: removed; c3 (b's) stays.
    let one =
        partial(json!({"template": {"spec": {"containers": [{"name": "c1", "image": "i1"}]}}}));
    let out = apply(Some(&b), &one, &mgr("a", T3), false, &Apps).unwrap();
    assert_eq!(names(&out), ["c1", "c3"]);

    // b changing c1's image conflicts on that item's field only.
    let err = apply(
        Some(&out),
        &partial(json!({"template": {"spec": {"containers": [
            {"name": "c3", "image": "i3"}, {"name": "c1", "image": "other"}]}}})),
        &mgr("b", T4),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "a": .spec.template.spec.containers[name="c1"].image"#
    );
}

#[test]
fn list_map_merge_keeps_live_order_and_places_new_items_after_their_predecessors() {
    let a = apply(
        None,
        &partial(json!({"template": {"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "b", "image": "1"}, {"name": "c", "image": "1"}]}}})),
        &mgr("m", T1),
        false,
        &Apps,
    )
    .unwrap();
    let out = apply(
        Some(&a),
        &partial(json!({"template": {"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "x", "image": "1"}, {"name": "b", "image": "1"},
            {"name": "c", "image": "1"}]}}})),
        &mgr("m", T2),
        false,
        &Apps,
    )
    .unwrap();
    let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "x", "b", "c"]);
}

#[test]
fn set_items_are_owned_per_value() {
    let with = |f: &[&str]| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": "ns", "finalizers": f}})
    };
    let a = apply(None, &with(&["example.com/a"]), &mgr("a", T1), false, &Apps).unwrap();
    let b = apply(
        Some(&a),
        &with(&["example.com/b"]),
        &mgr("b", T2),
        false,
        &Apps,
    )
    .unwrap();
    assert_eq!(
        b["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b"])
    );
    assert_eq!(
        fields(&b, "b", "Apply"),
        r#"{"f:metadata":{"f:finalizers":{"v:\"example.com/b\"":{}}}}"#
    );
    // a stops applying its finalizer: only that one goes.
    let out = apply(
        Some(&b),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}}),
        &mgr("a", T3),
        false,
        &Apps,
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["example.com/b"]));
    assert!(entry(&out, "a", "Apply").is_none());
}

#[test]
fn an_update_takes_a_field_and_the_next_apply_conflicts() {
    let a = apply(
        None,
        &deployment(3, "nginx"),
        &mgr("kubectl", T1),
        false,
        &Apps,
    )
    .unwrap();
    // kubectl edit: the full object comes back, managedFields echoed.
    let mut edited = a.clone();
    edited["spec"]["replicas"] = json!(5);
    let e = update(Some(&a), &edited, &mgr("kubectl-edit", T2), &Apps).unwrap();
    assert_eq!(
        fields(&e, "kubectl-edit", "Update"),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    assert!(!owns(&e, "kubectl", "Apply", ".spec.replicas"));
    assert_eq!(entry(&e, "kubectl-edit", "Update").unwrap()["time"], T2);

    let err = apply(
        Some(&e),
        &deployment(3, "nginx"),
        &mgr("kubectl", T3),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas"#
    );
    assert_eq!(
        err.conflicts()[0].message(),
        r#"conflict with "kubectl-edit" using apps/v1"#
    );

    let forced = apply(
        Some(&e),
        &deployment(3, "nginx"),
        &mgr("kubectl", T3),
        true,
        &Apps,
    )
    .unwrap();
    assert_eq!(forced["spec"]["replicas"], 3);
    assert!(entry(&forced, "kubectl-edit", "Update").is_none());
    assert!(owns(&forced, "kubectl", "Apply", ".spec.replicas"));
}

#[test]
fn an_untracked_object_is_attributed_to_before_first_apply() {
    let live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": {"replicas": 1}});
    let err = apply(
        Some(&live),
        &partial(json!({"replicas": 3})),
        &mgr("a", T1),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas"#
    );
    let out = apply(
        Some(&live),
        &partial(json!({"replicas": 1})),
        &mgr("a", T1),
        false,
        &Apps,
    )
    .unwrap();
    assert_eq!(
        fields(&out, "before-first-apply", "Update"),
        r#"{"f:spec":{"f:replicas":{},".":{}}}"#
    );
    assert!(owns(&out, "a", "Apply", ".spec.replicas"));
}

#[test]
fn nulls_in_the_configuration_unset_and_never_clobber_system_metadata() {
    let live = apply(None, &deployment(3, "nginx"), &mgr("a", T1), false, &Apps).unwrap();
    let mut live = live;
    live["metadata"]["creationTimestamp"] = json!("2024-05-01T09:00:00Z");
    live["metadata"]["uid"] = json!("u1");
    let mut cfg = deployment(3, "nginx");
    cfg["metadata"]["creationTimestamp"] = Value::Null;
    cfg["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
    cfg["spec"]["strategy"] = json!({});
    cfg["status"] = json!({});
    let out = apply(Some(&live), &cfg, &mgr("a", T2), false, &Apps).unwrap();
    assert_eq!(out["metadata"]["creationTimestamp"], "2024-05-01T09:00:00Z");
    assert_eq!(out["metadata"]["uid"], "u1");
    assert!(
        out["spec"]["template"]["metadata"]
            .get("creationTimestamp")
            .is_none()
    );
    // The applier owns the null field (as upstream) but not the empty structs.
    assert!(owns(
        &out,
        "a",
        "Apply",
        ".spec.template.metadata.creationTimestamp"
    ));
    assert!(!owns(&out, "a", "Apply", ".status"));
    assert!(!owns(&out, "a", "Apply", ".metadata.creationTimestamp"));

    // An explicit null removes a field another manager set.
    let b = apply(
        Some(&out),
        &partial(json!({"paused": true})),
        &mgr("b", T3),
        false,
        &Apps,
    )
    .unwrap();
    let err = apply(
        Some(&b),
        &partial(json!({"paused": null})),
        &mgr("c", T4),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(err.conflicts()[0].field, ".spec.paused");
    let c = apply(
        Some(&b),
        &partial(json!({"paused": null})),
        &mgr("c", T4),
        true,
        &Apps,
    )
    .unwrap();
    assert!(c["spec"].get("paused").is_none());
}

#[test]
fn bad_configurations_are_rejected() {
    let m = mgr("a", T1);
    let mut cfg = deployment(1, "x");
    cfg["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        apply(None, &cfg, &m, false, &Apps).unwrap_err(),
        Error::Invalid("metadata.managedFields must be nil".into())
    );
    let mut cfg = deployment(1, "x");
    cfg["apiVersion"] = json!("apps/v1beta1");
    assert_eq!(
        apply(None, &cfg, &m, false, &Apps).unwrap_err().message(),
        "Incorrect version specified in apply patch. Specified patch version: apps/v1beta1, expected: apps/v1"
    );
    let cfg = partial(json!({"template": {"spec": {"containers": [{"image": "x"}]}}}));
    assert!(matches!(
        apply(None, &cfg, &m, false, &Apps),
        Err(Error::Invalid(_))
    ));
    let cfg =
        partial(json!({"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}));
    let err = apply(None, &cfg, &m, false, &Apps).unwrap_err();
    assert!(
        err.message()
            .contains("duplicate entries for key [name=\"a\"]"),
        "{err}"
    );
    assert!(matches!(
        apply(None, &json!([1]), &m, false, &Apps),
        Err(Error::Invalid(_))
    ));
    // Null managedFields is accepted.
    let mut cfg = deployment(1, "x");
    cfg["metadata"]["managedFields"] = Value::Null;
    assert!(apply(None, &cfg, &m, false, &Apps).is_ok());
}

#[test]
fn undecodable_stored_managed_fields_fail_the_apply() {
    let mut live = deployment(1, "x");
    live["metadata"]["managedFields"] = json!([{"manager": "m", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
    let err = apply(
        Some(&live),
        &deployment(1, "x"),
        &mgr("a", T1),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::ManagedFields("operation must be `Apply` or `Update`".into())
    );
}

#[test]
fn entries_are_ordered_apply_first_then_by_time() {
    let created = update(None, &deployment(1, "x"), &mgr("kubectl-create", T1), &Apps).unwrap();
    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(2);
    let scaled = update(Some(&created), &scaled, &mgr("kube-controller", T2), &Apps).unwrap();
    let applied = apply(
        Some(&scaled),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "ns", "annotations": {"a": "b"}}}),
        &mgr("zz", T3),
        false,
        &Apps,
    )
    .unwrap();
    let order: Vec<(String, String)> = entries(&applied)
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_string(),
                e["operation"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("zz".to_string(), "Apply".to_string()),
            ("kubectl-create".to_string(), "Update".to_string()),
            ("kube-controller".to_string(), "Update".to_string()),
        ]
    );
}

#[test]
fn subresource_appliers_are_separate_entries() {
    let a = apply(None, &deployment(1, "x"), &mgr("m", T1), false, &Apps).unwrap();
    let status = Manager {
        name: "m",
        api_version: "apps/v1",
        time: T2,
        subresource: "status",
    };
    let out = apply(
        Some(&a),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "ns"}, "status": {"replicas": 1}}),
        &status,
        false,
        &Apps,
    )
    .unwrap();
    let all = entries(&out);
    let e: Vec<&Value> = all.iter().filter(|e| e["manager"] == "m").collect();
    assert_eq!(e.len(), 2);
    assert_eq!(e[1]["subresource"], "status");
    assert_eq!(out["spec"]["replicas"], 1, "the main entry is untouched");
    let err = apply(
        Some(&out),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "ns"}, "status": {"replicas": 2}}),
        &mgr("other", T3),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "m" with subresource "status": .status.replicas"#
    );
}

#[test]
fn kubectl_upgrades_from_client_side_apply() {
    // `kubectl apply` (client-side) created the object with the annotation.
    let cfg = deployment(3, "nginx");
    let mut obj = cfg.clone();
    obj["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": serde_json::to_string(&cfg).unwrap() + "\n"
    });
    let created = update(None, &obj, &mgr("kubectl-client-side-apply", T1), &Apps).unwrap();

    // `kubectl apply --server-side` of a new image: the image conflict is allowed because the
    // annotation records the live value.
    let cfg2 = deployment(3, "nginx:2");
    let out = apply(Some(&created), &cfg2, &mgr("kubectl", T2), false, &Apps).unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    let annotation =
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap();
    assert!(annotation.ends_with('\n'));
    assert_eq!(serde_json::from_str::<Value>(annotation).unwrap(), cfg2);
    assert!(annotation.starts_with(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"#));

    // Another manager gets the ordinary conflict.
    let err = apply(Some(&created), &cfg2, &mgr("other", T2), false, &Apps).unwrap_err();
    assert_eq!(
        err.message(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.template.spec.containers[name=\"c\"].image"
    );

    // A field changed since the annotation was written is a real conflict, even for kubectl.
    let mut edited = created.clone();
    edited["spec"]["replicas"] = json!(5);
    let edited = update(Some(&created), &edited, &mgr("kubectl-edit", T2), &Apps).unwrap();
    let err = apply(
        Some(&edited),
        &deployment(3, "nginx"),
        &mgr("kubectl", T3),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas"#
    );
}

#[test]
fn deployment_round_trip_of_managed_fields_shape() {
    // The stored entries parse back to the same sets.
    let out = apply(
        None,
        &deployment(3, "nginx"),
        &mgr("kubectl", T1),
        false,
        &Apps,
    )
    .unwrap();
    let decoded =
        kgc_managedfields::decode_managed_fields(out["metadata"].get("managedFields")).unwrap();
    assert_eq!(decoded.len(), 1);
    assert_eq!(decoded[0].to_json(), entries(&out)[0]);
}

#[test]
fn the_same_managers_update_entry_is_another_manager() {
    // As upstream: `kubectl` that edited a field through an update conflicts with itself when it
    // then applies a different value.
    let created = update(None, &deployment(1, "x"), &mgr("kubectl", T1), &Apps).unwrap();
    let err = apply(
        Some(&created),
        &partial(json!({"replicas": 2})),
        &mgr("kubectl", T2),
        false,
        &Apps,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas"#
    );
    let out = apply(
        Some(&created),
        &partial(json!({"replicas": 1})),
        &mgr("kubectl", T2),
        false,
        &Apps,
    )
    .unwrap();
    assert!(owns(&out, "kubectl", "Update", ".spec.replicas"));
    assert!(owns(&out, "kubectl", "Apply", ".spec.replicas"));
}

#[test]
fn applied_nulls_where_nothing_is_set_are_not_conflicts() {
    let a = apply(
        None,
        &partial(json!({"replicas": 1, "paused": null})),
        &mgr("a", T1),
        false,
        &Apps,
    )
    .unwrap();
    assert!(a["spec"].get("paused").is_none());
    let b = apply(
        Some(&a),
        &partial(json!({"paused": null})),
        &mgr("b", T2),
        false,
        &Apps,
    )
    .unwrap();
    assert!(owns(&b, "a", "Apply", ".spec.paused") && owns(&b, "b", "Apply", ".spec.paused"));
}

#[test]
fn an_explicit_empty_value_survives_pruning() {
    let a = apply(
        None,
        &partial(json!({"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}})),
        &mgr("a", T1),
        false,
        &Apps,
    )
    .unwrap();
    let cfg = partial(json!({"replicas": 1, "template": {"spec": {"containers": []}}}));
    let out = apply(Some(&a), &cfg, &mgr("a", T2), false, &Apps).unwrap();
    assert_eq!(out["spec"]["template"]["spec"]["containers"], json!([]));
    assert_eq!(
        apply(Some(&out), &cfg, &mgr("a", T3), false, &Apps).unwrap(),
        out
    );
}

#[test]
fn large_pod_templates_apply_quickly() {
    let containers: Vec<Value> = (0..200)
        .map(|i| {
            json!({"name": format!("c{i}"), "image": format!("img:{i}"),
                   "env": (0..10).map(|j| json!({"name": format!("E{j}"), "value": "v"})).collect::<Vec<_>>(),
                   "ports": [{"containerPort": 8000 + i}, {"containerPort": 9000 + i, "protocol": "UDP"}]})
        })
        .collect();
    let cfg = partial(json!({"template": {"spec": {"containers": containers}}}));
    let start = std::time::Instant::now();
    let first = apply(None, &cfg, &mgr("a", T1), false, &Apps).unwrap();
    let second = apply(Some(&first), &cfg, &mgr("a", T2), false, &Apps).unwrap();
    let mut edited = second.clone();
    edited["spec"]["template"]["spec"]["containers"][7]["image"] = json!("new");
    let third = update(Some(&second), &edited, &mgr("e", T3), &Apps).unwrap();
    let elapsed = start.elapsed();
    assert_eq!(second, first);
    assert!(owns(
        &third,
        "e",
        "Update",
        r#".spec.template.spec.containers[name="c7"].image"#
    ));
    assert!(elapsed.as_secs() < 5, "{elapsed:?}");
    eprintln!("200-container apply, re-apply and update: {elapsed:?}");
}
