//! The `/scale` subresource: an `autoscaling/v1 Scale` view of a workload's replica count
//! (deployments, replicasets, statefulsets, replicationcontrollers, and custom resources that
//! declare it). `kubectl scale` rejects anything but a Scale (its client is
//! kubernetes/kubernetes `staging/src/k8s.io/client-go/scale/client.go`).

use kgc_meta::ResourceInfo;
use serde_json::{Map, Value, json};

/// The paths a resource keeps its replica counts and selector at.
struct Paths {
    spec_replicas: String,
    status_replicas: String,
    selector: Selector,
}

enum Selector {
    /// `spec.selector` is a `metav1.LabelSelector` (apps kinds).
    Structured,
    /// `spec.selector` is a plain map (ReplicationController).
    Map,
    /// A custom resource's `labelSelectorPath`, holding the selector string.
    Path(String),
    None,
}

fn paths(info: &ResourceInfo) -> Paths {
    if let Some(scale) = info.crd.as_ref().and_then(|c| c.scale.as_ref()) {
        return Paths {
            spec_replicas: scale.spec_replicas.clone(),
            status_replicas: scale.status_replicas.clone(),
            selector: scale
                .label_selector
                .clone()
                .map(Selector::Path)
                .unwrap_or(Selector::None),
        };
    }
    Paths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        selector: if info.group.is_empty() {
            Selector::Map
        } else {
            Selector::Structured
        },
    }
}

/// `.a.b` to the JSON pointer `/a/b`.
fn pointer(path: &str) -> String {
    path.split('.')
        .filter(|p| !p.is_empty())
        .fold(String::new(), |mut acc, p| {
            acc.push('/');
            acc.push_str(&p.replace('~', "~0").replace('/', "~1"));
            acc
        })
}

/// `metav1.LabelSelector` rendered as a selector string (`LabelSelectorAsSelector().String()`).
fn selector_string(sel: &Value) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e["key"].as_str().unwrap_or_default().to_owned();
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key, text));
    }
    reqs.sort();
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// The Scale of an object.
pub fn to_scale(info: &ResourceInfo, obj: &Value) -> Value {
    let p = paths(info);
    let spec = obj
        .pointer(&pointer(&p.spec_replicas))
        .and_then(Value::as_i64)
        .unwrap_or(if info.custom { 0 } else { 1 });
    let status = obj
        .pointer(&pointer(&p.status_replicas))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = match &p.selector {
        Selector::Structured => obj.pointer("/spec/selector").map(selector_string),
        Selector::Map => obj
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .map(|m| {
                let mut pairs: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect();
                pairs.sort();
                pairs.join(",")
            }),
        Selector::Path(path) => obj
            .pointer(&pointer(path))
            .and_then(Value::as_str)
            .map(str::to_owned),
        Selector::None => None,
    };
    let m = &obj["metadata"];
    let mut metadata = Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(k) {
            metadata.insert(k.into(), v.clone());
        }
    }
    let mut status_obj = json!({"replicas": status});
    if let Some(s) = selector.filter(|s| !s.is_empty()) {
        status_obj["selector"] = json!(s);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": spec},
        "status": status_obj,
    })
}

/// Writes a Scale's `spec.replicas` into the object, carrying the Scale's resourceVersion as a
/// precondition. Errors name the field.
pub fn apply_scale(info: &ResourceInfo, obj: &mut Value, scale: &Value) -> Result<(), String> {
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| "spec.replicas: Invalid value: must be an integer".to_owned())?,
    };
    if replicas < 0 {
        return Err(format!(
            "spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
        ));
    }
    let p = pointer(&paths(info).spec_replicas);
    let mut cur = &mut *obj;
    let parts: Vec<&str> = p.split('/').skip(1).collect();
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let map = cur.as_object_mut().expect("made an object above");
        if i + 1 == parts.len() {
            map.insert((*part).to_owned(), json!(replicas));
            break;
        }
        cur = map.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
    if let Some(rv) = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
    {
        obj["metadata"]["resourceVersion"] = json!(rv);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgc_meta::Catalog;

    #[test]
    fn deployment_scale_round_trip() {
        let c = Catalog::builtin();
        let info = c.get("apps", "v1", "deployments").unwrap();
        let mut d = json!({
            "metadata": {"name": "d", "namespace": "ns", "resourceVersion": "7", "uid": "u"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}},
            "status": {"replicas": 1},
        });
        let s = to_scale(info, &d);
        assert_eq!(s["spec"]["replicas"], 2);
        assert_eq!(s["status"]["replicas"], 1);
        assert_eq!(s["status"]["selector"], "app=x,tier in (a,b)");
        assert_eq!(s["metadata"]["resourceVersion"], "7");
        apply_scale(info, &mut d, &json!({"spec": {"replicas": 5}})).unwrap();
        assert_eq!(d["spec"]["replicas"], 5);
        assert!(apply_scale(info, &mut d, &json!({"spec": {"replicas": -1}})).is_err());
    }

    #[test]
    fn replication_controller_selector_is_a_map() {
        let c = Catalog::builtin();
        let info = c.get("", "v1", "replicationcontrollers").unwrap();
        let rc = json!({"metadata": {"name": "r"}, "spec": {"selector": {"b": "2", "a": "1"}}});
        let s = to_scale(info, &rc);
        assert_eq!(s["status"]["selector"], "a=1,b=2");
        assert_eq!(s["spec"]["replicas"], 1);
    }
}
