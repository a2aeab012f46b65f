#![allow(dead_code)]

use kgc_managedfields::{DefaultSchema, FieldSet, ListType, Manager, Schema};
use serde_json::{Value, json};

pub const T1: &str = "2024-05-01T10:00:00Z";
pub const T2: &str = "2024-05-01T11:00:00Z";
pub const T3: &str = "2024-05-01T12:00:00Z";
pub const T4: &str = "2024-05-01T13:00:00Z";

/// The list semantics of the built-in workload types that the tests use (upstream's
/// `x-kubernetes-list-type`/`-map-keys`).
pub struct Apps;

impl Schema for Apps {
    fn list_type(&self, path: &[&str]) -> ListType {
        match path {
            [.., "containers"] | [.., "initContainers"] | [.., "env"] => {
                ListType::Map(vec!["name".into()])
            }
            [.., "containers", "ports"] => {
                ListType::Map(vec!["containerPort".into(), "protocol".into()])
            }
            _ => DefaultSchema.list_type(path),
        }
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        path == ["spec", "selector"]
    }

    fn list_map_key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        (path.last() == Some(&"ports") && key == "protocol").then(|| json!("TCP"))
    }
}

pub fn mgr<'a>(name: &'a str, time: &'a str) -> Manager<'a> {
    Manager {
        name,
        api_version: "apps/v1",
        time,
        subresource: "",
    }
}

pub fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "labels": {"app": "x"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": image, "ports": [{"containerPort": 80}]}]}
            }
        }
    })
}

/// A partial configuration: identity plus `spec`.
pub fn partial(spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": spec
    })
}

pub fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

pub fn entry<'a>(obj: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    obj["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

/// The fieldsV1 of an entry in upstream's byte order.
pub fn fields(obj: &Value, manager: &str, operation: &str) -> String {
    let e = entry(obj, manager, operation)
        .unwrap_or_else(|| panic!("no {operation} entry for {manager} in {obj:#}"));
    FieldSet::from_fields_v1(&e["fieldsV1"])
        .unwrap()
        .to_fields_v1_string()
}

pub fn owns(obj: &Value, manager: &str, operation: &str, path: &str) -> bool {
    let Some(e) = entry(obj, manager, operation) else {
        return false;
    };
    let set = FieldSet::from_fields_v1(&e["fieldsV1"]).unwrap();
    set.paths().iter().any(|p| p.to_string() == path)
}

pub fn without_managed_fields(obj: &Value) -> Value {
    let mut v = obj.clone();
    v["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    v
}
