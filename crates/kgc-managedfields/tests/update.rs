//! Ownership tracking for non-apply writes (`update`).

mod common;

use common::*;
use kgc_managedfields::{DefaultSchema, Manager, apply, update, update_or_keep};
use serde_json::{Value, json};

fn configmap(data: Value, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "cm", "namespace": "ns", "labels": labels}, "data": data})
}

fn v1<'a>(name: &'a str, time: &'a str) -> Manager<'a> {
    Manager {
        name,
        api_version: "v1",
        time,
        subresource: "",
    }
}

#[test]
fn create_records_everything_for_the_creator() {
    let cm = configmap(json!({"a": "1"}), json!({"app": "x"}));
    let out = update(None, &cm, &v1("kubectl-create", T1), &DefaultSchema).unwrap();
    assert_eq!(without_managed_fields(&out), cm);
    // What a real cluster records for `kubectl create configmap` with a label: maps that appear
    // are owned themselves (".") as well as their keys.
    assert_eq!(
        entries(&out),
        vec![json!({
            "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
        })]
    );
    assert_eq!(
        fields(&out, "kubectl-create", "Update"),
        r#"{"f:data":{"f:a":{},".":{}},"f:metadata":{"f:labels":{"f:app":{},".":{}}}}"#
    );
}

#[test]
fn later_writers_take_what_they_change_and_removals_leave_every_set() {
    let cm = configmap(json!({"a": "1", "b": "2"}), json!({"app": "x"}));
    let created = update(None, &cm, &v1("kubectl-create", T1), &DefaultSchema).unwrap();

    // kubectl label adds a label.
    let mut labelled = created.clone();
    labelled["metadata"]["labels"]["tier"] = json!("web");
    let labelled = update(
        Some(&created),
        &labelled,
        &v1("kubectl-label", T2),
        &DefaultSchema,
    )
    .unwrap();
    assert_eq!(
        fields(&labelled, "kubectl-label", "Update"),
        r#"{"f:metadata":{"f:labels":{"f:tier":{}}}}"#
    );

    // kubectl edit changes `a` and deletes `b`: it owns `a`; nobody owns `b` any more.
    let mut edited = labelled.clone();
    edited["data"] = json!({"a": "9"});
    let edited = update(
        Some(&labelled),
        &edited,
        &v1("kubectl-edit", T3),
        &DefaultSchema,
    )
    .unwrap();
    assert_eq!(
        fields(&edited, "kubectl-edit", "Update"),
        r#"{"f:data":{"f:a":{}}}"#
    );
    // The creator keeps the map itself (".", written as a bare member) and the label.
    assert_eq!(
        fields(&edited, "kubectl-create", "Update"),
        r#"{"f:data":{},"f:metadata":{"f:labels":{"f:app":{},".":{}}}}"#
    );
    assert!(owns(
        &edited,
        "kubectl-label",
        "Update",
        ".metadata.labels.tier"
    ));
}

#[test]
fn a_writer_that_changes_nothing_keeps_its_entry_and_time() {
    let cm = configmap(json!({"a": "1"}), json!({"app": "x"}));
    let created = update(None, &cm, &v1("m", T1), &DefaultSchema).unwrap();
    let again = update(Some(&created), &created, &v1("m", T2), &DefaultSchema).unwrap();
    assert_eq!(again, created);
    // Another manager writing the same object gets no entry.
    let other = update(Some(&created), &created, &v1("n", T2), &DefaultSchema).unwrap();
    assert_eq!(entries(&other).len(), 1);
}

#[test]
fn the_same_manager_accumulates_and_restamps() {
    let cm = configmap(json!({"a": "1"}), json!({"app": "x"}));
    let created = update(None, &cm, &v1("m", T1), &DefaultSchema).unwrap();
    let mut next = created.clone();
    next["data"]["c"] = json!("3");
    let out = update(Some(&created), &next, &v1("m", T2), &DefaultSchema).unwrap();
    assert_eq!(entries(&out).len(), 1);
    assert_eq!(entry(&out, "m", "Update").unwrap()["time"], T2);
    assert!(owns(&out, "m", "Update", ".data.a"));
    assert!(owns(&out, "m", "Update", ".data.c"));
    // Another apiVersion is another entry.
    let mut next2 = out.clone();
    next2["data"]["d"] = json!("4");
    let other_version = Manager {
        api_version: "v2",
        ..v1("m", T3)
    };
    let out2 = update(Some(&out), &next2, &other_version, &DefaultSchema).unwrap();
    assert_eq!(entries(&out2).len(), 2);
}

#[test]
fn clients_can_reset_or_replace_managed_fields() {
    let cm = configmap(json!({"a": "1"}), json!({"app": "x"}));
    let created = update(None, &cm, &v1("m", T1), &DefaultSchema).unwrap();

    // `[]` resets: the object is no longer tracked.
    let mut reset = created.clone();
    reset["metadata"]["managedFields"] = json!([]);
    let out = update(Some(&created), &reset, &v1("n", T2), &DefaultSchema).unwrap();
    assert!(out["metadata"].get("managedFields").is_none());
    let mut reset = created.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    let out = update(Some(&created), &reset, &v1("n", T2), &DefaultSchema).unwrap();
    assert!(out["metadata"].get("managedFields").is_none());

    // A valid replacement is taken as is.
    let mut replaced = created.clone();
    replaced["metadata"]["managedFields"] = json!([{
        "manager": "someone", "operation": "Update", "apiVersion": "v1", "time": T1,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]);
    let out = update(Some(&created), &replaced, &v1("n", T2), &DefaultSchema).unwrap();
    assert_eq!(entries(&out).len(), 1);
    assert_eq!(entries(&out)[0]["manager"], "someone");

    // Garbage, or nothing, keeps the stored ones.
    for sent in [json!([{"manager": "x", "operation": "Nope"}]), Value::Null] {
        let mut bad = created.clone();
        bad["metadata"]["managedFields"] = sent;
        let out = update(Some(&created), &bad, &v1("n", T2), &DefaultSchema).unwrap();
        assert_eq!(entries(&out), entries(&created));
    }
}

#[test]
fn subresource_writes_ignore_sent_managed_fields_and_are_recorded_as_such() {
    let created = update(
        None,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n1"}}),
        &v1("kubectl-create", T1),
        &DefaultSchema,
    )
    .unwrap();
    let mut status = created.clone();
    status["status"] = json!({"phase": "Running"});
    status["metadata"]["managedFields"] = json!([]);
    let kubelet = Manager {
        subresource: "status",
        ..v1("kubelet", T2)
    };
    let out = update(Some(&created), &status, &kubelet, &DefaultSchema).unwrap();
    assert_eq!(entries(&out).len(), 2);
    let e = entry(&out, "kubelet", "Update").unwrap();
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        fields(&out, "kubelet", "Update"),
        r#"{"f:status":{"f:phase":{},".":{}}}"#
    );
}

#[test]
fn existing_objects_without_managed_fields_stay_untracked() {
    let old = configmap(json!({"a": "1"}), json!({"app": "x"}));
    let mut new = old.clone();
    new["data"]["a"] = json!("2");
    let out = update(Some(&old), &new, &v1("m", T1), &DefaultSchema).unwrap();
    assert_eq!(out, new);
}

#[test]
fn create_honours_sent_managed_fields() {
    let mut cm = configmap(json!({"a": "1"}), json!({"app": "x"}));
    cm["metadata"]["managedFields"] = json!([{
        "manager": "exported", "operation": "Apply", "apiVersion": "v1", "time": T1,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]);
    let out = update(None, &cm, &v1("kubectl-create", T2), &DefaultSchema).unwrap();
    assert!(owns(&out, "kubectl-create", "Update", ".data.a"));
    assert!(
        entry(&out, "exported", "Apply").is_none(),
        "the creator took .data.a from it"
    );
}

#[test]
fn update_managers_are_capped_at_ten() {
    let mut obj = update(
        None,
        &configmap(json!({"k": "v"}), json!({})),
        &v1("creator", "2024-01-01T00:00:00Z"),
        &DefaultSchema,
    )
    .unwrap();
    // An applier is not counted.
    obj = apply(
        Some(&obj),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}, "data": {"k": "v"}}),
        &v1("applier", "2024-01-01T00:00:01Z"),
        false,
        &DefaultSchema,
    )
    .unwrap();
    // Eleven updaters each add a label: twelve updaters in all, the three oldest merge.
    for i in 0..11 {
        let mut next = obj.clone();
        next["metadata"]["labels"][format!("l{i}")] = json!("v");
        let t = format!("2024-01-01T00:01:{i:02}Z");
        obj = update(
            Some(&obj),
            &next,
            &v1(&format!("m{i:02}"), &t),
            &DefaultSchema,
        )
        .unwrap();
    }
    let updaters: Vec<String> = entries(&obj)
        .iter()
        .filter(|e| e["operation"] == "Update")
        .map(|e| e["manager"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(updaters.len(), 10, "{updaters:?}");
    assert!(updaters.contains(&"ancient-changes".to_string()));
    assert!(!updaters.contains(&"m00".to_string()) && !updaters.contains(&"m01".to_string()));
    assert!(owns(
        &obj,
        "ancient-changes",
        "Update",
        ".metadata.labels.l1"
    ));
    assert!(owns(
        &obj,
        "ancient-changes",
        "Update",
        ".metadata.labels.l0"
    ));
    assert!(owns(&obj, "m02", "Update", ".metadata.labels.l2"));
    assert!(entry(&obj, "applier", "Apply").is_some());
}

#[test]
fn malformed_objects_fall_back_to_the_stored_managed_fields() {
    let schema = Apps;
    let created = update(None, &deployment(1, "x"), &mgr("c", T1), &schema).unwrap();
    let mut bad = created.clone();
    bad["spec"]["template"]["spec"]["containers"] = json!([{"image": "no-name"}]);
    assert!(update(Some(&created), &bad, &mgr("e", T2), &schema).is_err());
    let out = update_or_keep(Some(&created), &bad, &mgr("e", T2), &schema);
    assert_eq!(entries(&out), entries(&created));
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["image"],
        "no-name"
    );
}
