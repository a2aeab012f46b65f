//! Serving a resource in a version other than the one it is stored in.
//!
//! Custom resources (conversion `None`) differ between versions only in `apiVersion`.
//! HorizontalPodAutoscalers are stored as `autoscaling/v2` and also served as `autoscaling/v1`,
//! converted as upstream's `pkg/apis/autoscaling/v1/conversion.go` does: the CPU utilization
//! target is v1's `targetCPUUtilizationPercentage`, and what v1 cannot express (other metrics,
//! behavior, conditions, other current metrics) travels in `autoscaling.alpha.kubernetes.io/*`
//! annotations, so that a v1 round trip loses nothing.
//!
//! events.k8s.io Events are core Events (one storage, as upstream's
//! `pkg/registry/events/rest/storage_events.go` serves the core event store under that group):
//! stored as core/v1 and renamed field by field as upstream's
//! `pkg/apis/events/v1/conversion.go` does through the internal `core.Event`.

use kgc_meta::ResourceInfo;
use kgc_meta::catalog::api_version;
use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

/// The version a resource's objects are stored in.
pub fn storage_version(info: &ResourceInfo) -> &str {
    match &info.crd {
        Some(c) => &c.storage_version,
        None => info.preferred_version(),
    }
}

/// Whether objects of `info` served in `version` are not the stored ones as they are.
pub fn converts(info: &ResourceInfo, version: &str) -> bool {
    is_events_api(info) || version != storage_version(info)
}

fn is_events_api(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io" && info.plural == "events"
}

/// events.k8s.io/v1 field ↔ core/v1 field, where the names differ (the rest are the same:
/// `eventTime`, `series`, `action`, `reason`, `related`, `reportingInstance`, `type`).
const EVENT_FIELDS: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// Renames an Event's fields between the two versions (`to_core`: events.k8s.io/v1 → core/v1).
fn rename_event_fields(obj: &mut Value, to_core: bool) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let mut moved = Vec::new();
    for (events, core) in EVENT_FIELDS {
        let (from, to) = if to_core {
            (events, core)
        } else {
            (core, events)
        };
        if let Some(v) = map.remove(from) {
            moved.push((to, v));
        }
    }
    for (to, v) in moved {
        map.insert(to.to_owned(), v);
    }
}

fn is_hpa(info: &ResourceInfo) -> bool {
    info.group == "autoscaling" && info.plural == "horizontalpodautoscalers"
}

/// Converts a stored object to `version` for a response.
pub fn from_storage(info: &ResourceInfo, version: &str, obj: &mut Value) {
    if !converts(info, version) {
        return;
    }
    if is_hpa(info) && version == "v1" {
        hpa_v2_to_v1(obj);
    }
    if is_events_api(info) {
        rename_event_fields(obj, false);
    }
    let api_version = api_version(&info.group, version);
    obj["apiVersion"] = Value::from(api_version.as_str());
    if !info.custom {
        // Printed as that version's Go type prints it: v1 spells out zero values v2 leaves out
        // (a HorizontalPodAutoscaler status's `currentReplicas: 0`), which typed clients need.
        let _ = kgc_proto::typed::decode(&api_version, &info.kind, obj);
    }
}

/// Converts an object written in `version` to the storage version.
pub fn to_storage(info: &ResourceInfo, version: &str, obj: &mut Value) {
    let storage = storage_version(info).to_owned();
    if version != storage && is_hpa(info) && version == "v1" {
        hpa_v1_to_v2(obj);
    }
    if is_events_api(info) {
        rename_event_fields(obj, true);
        obj["apiVersion"] = Value::from("v1");
        return;
    }
    obj["apiVersion"] = Value::from(api_version(&info.group, &storage));
}

fn annotations(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    if !obj["metadata"]["annotations"].is_object() {
        obj["metadata"]["annotations"] = json!({});
    }
    obj["metadata"]["annotations"]
        .as_object_mut()
        .expect("made an object above")
}

fn is_cpu_utilization(m: &Value) -> bool {
    m["type"] == "Resource"
        && m["resource"]["name"] == "cpu"
        && m["resource"]["target"]["type"] == "Utilization"
}

fn hpa_v2_to_v1(obj: &mut Value) {
    let metrics = obj["spec"]
        .as_object_mut()
        .and_then(|s| s.remove("metrics"))
        .and_then(|m| m.as_array().cloned())
        .unwrap_or_default();
    let (cpu, other): (Vec<Value>, Vec<Value>) = metrics.into_iter().partition(is_cpu_utilization);
    if let Some(target) = cpu
        .first()
        .map(|m| m["resource"]["target"]["averageUtilization"].clone())
        && obj["spec"].is_object()
    {
        obj["spec"]["targetCPUUtilizationPercentage"] = target;
    }
    let behavior = obj["spec"]
        .as_object_mut()
        .and_then(|s| s.remove("behavior"));
    let status = obj.get_mut("status").and_then(Value::as_object_mut);
    let (mut conditions, mut current_other) = (None, Vec::new());
    if let Some(status) = status {
        conditions = status.remove("conditions");
        let current = status
            .remove("currentMetrics")
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default();
        for m in current {
            if m["type"] == "Resource" && m["resource"]["name"] == "cpu" {
                if let Some(u) = m["resource"]["current"].get("averageUtilization") {
                    status.insert("currentCPUUtilizationPercentage".into(), u.clone());
                }
            } else {
                current_other.push(m);
            }
        }
    }
    let ann = annotations(obj);
    if !other.is_empty() {
        ann.insert(METRICS.into(), Value::from(Value::Array(other).to_string()));
    }
    if let Some(b) = behavior.filter(|b| !b.is_null()) {
        ann.insert(BEHAVIOR.into(), Value::from(b.to_string()));
    }
    if let Some(c) = conditions.filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
        ann.insert(CONDITIONS.into(), Value::from(c.to_string()));
    }
    if !current_other.is_empty() {
        ann.insert(
            CURRENT_METRICS.into(),
            Value::from(Value::Array(current_other).to_string()),
        );
    }
    if ann.is_empty()
        && let Some(m) = obj["metadata"].as_object_mut()
    {
        m.remove("annotations");
    }
}

fn hpa_v1_to_v2(obj: &mut Value) {
    let take = |obj: &mut Value, key: &str| -> Option<Value> {
        let v = obj
            .get_mut("metadata")?
            .get_mut("annotations")?
            .as_object_mut()?
            .remove(key)?;
        serde_json::from_str(v.as_str()?).ok()
    };
    let other = take(obj, METRICS);
    let behavior = take(obj, BEHAVIOR);
    let conditions = take(obj, CONDITIONS);
    let current_other = take(obj, CURRENT_METRICS);
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut)
        && m.get("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        m.remove("annotations");
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics = Vec::new();
        if let Some(target) = spec
            .remove("targetCPUUtilizationPercentage")
            .filter(|t| !t.is_null())
        {
            metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": target}}}));
        }
        metrics.extend(
            other
                .and_then(|o| o.as_array().cloned())
                .unwrap_or_default(),
        );
        if !metrics.is_empty() {
            spec.insert("metrics".into(), Value::Array(metrics));
        }
        if let Some(b) = behavior {
            spec.insert("behavior".into(), b);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        let mut current = Vec::new();
        if let Some(u) = status
            .remove("currentCPUUtilizationPercentage")
            .filter(|u| !u.is_null())
        {
            current.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": u}}}));
        }
        current.extend(
            current_other
                .and_then(|o| o.as_array().cloned())
                .unwrap_or_default(),
        );
        if !current.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(c) = conditions {
            status.insert("conditions".into(), c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgc_meta::Catalog;

    #[test]
    fn hpa_round_trips_through_v1() {
        let c = Catalog::builtin();
        let info = c
            .get("autoscaling", "v1", "horizontalpodautoscalers")
            .unwrap();
        assert_eq!(storage_version(info), "v2");
        let stored = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"minReplicas": 1, "maxReplicas": 5,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"currentReplicas": 2, "desiredReplicas": 2,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]},
        });
        let mut v1 = stored.clone();
        from_storage(info, "v1", &mut v1);
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        assert!(v1["spec"].get("metrics").is_none());
        assert!(
            v1["metadata"]["annotations"][METRICS]
                .as_str()
                .unwrap()
                .contains("qps")
        );
        let mut back = v1.clone();
        to_storage(info, "v1", &mut back);
        assert_eq!(back, stored);
    }

    #[test]
    fn events_api_events_are_core_events_renamed() {
        let c = Catalog::builtin();
        let info = c.get("events.k8s.io", "v1", "events").unwrap();
        let stored = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m", "count": 3,
            "source": {"component": "c"}, "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:01:00Z", "reportingComponent": "c",
            "reportingInstance": "i", "reason": "R", "type": "Normal"});
        let mut served = stored.clone();
        from_storage(info, "v1", &mut served);
        assert_eq!(served["apiVersion"], "events.k8s.io/v1");
        assert_eq!(served["regarding"]["name"], "p");
        assert_eq!(served["note"], "m");
        assert_eq!(served["deprecatedCount"], 3);
        assert_eq!(served["deprecatedSource"]["component"], "c");
        assert_eq!(served["reportingController"], "c");
        assert!(served.get("message").is_none() && served.get("involvedObject").is_none());
        let mut back = served.clone();
        to_storage(info, "v1", &mut back);
        assert_eq!(back, stored);
    }

    #[test]
    fn custom_resources_change_only_api_version() {
        let mut o = json!({"apiVersion": "autoscaling/v2", "spec": {"a": 1}});
        let c = Catalog::builtin();
        let info = c
            .get("autoscaling", "v2", "horizontalpodautoscalers")
            .unwrap();
        from_storage(info, "v2", &mut o);
        assert_eq!(o["apiVersion"], "autoscaling/v2");
    }
}
