//! A Node as the scheduler sees it: the few fields its filters and scores read, so that a
//! heartbeat (a new `lastHeartbeatTime`) changes nothing and moves no pod.

use std::collections::BTreeMap;

use kgc_runtime::informer::View;
use serde_json::Value;

use crate::resources::Resources;
use crate::taints::Taint;

/// The annotation that marks a simulated node stopped (`kgc node stop`).
pub const STOPPED: &str = "kgc.io/stopped";
/// The taints the node-lifecycle controller puts on a node that is not Ready
/// (kubernetes/kubernetes pkg/controller/nodelifecycle, `nodeConditionToTaintKeyStatusMap`).
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub labels: BTreeMap<String, String>,
    /// The node's taints; for a node that is not Ready (or stopped) and does not carry it yet,
    /// the NoSchedule taint the node-lifecycle controller would add, so such a node is judged
    /// (and reported) as upstream's scheduler judges it once tainted.
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    pub allocatable: Resources,
    pub allowed_pods: i64,
}

impl View for Node {
    fn view(obj: &Value) -> Option<Self> {
        let meta = &obj["metadata"];
        let labels = meta["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        let mut taints = Taint::list(&obj["spec"]["taints"]);
        let ready = obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready")
            .and_then(|c| c["status"].as_str());
        let stopped = meta["annotations"][STOPPED] == "true";
        let missing = match (stopped, ready) {
            (true, _) | (false, Some("Unknown")) => Some(UNREACHABLE),
            (false, Some("True")) => None,
            (false, _) => Some(NOT_READY),
        };
        if let Some(key) = missing
            && !taints.iter().any(|t| t.key == key)
        {
            taints.push(Taint::new(key, "NoSchedule"));
        }
        // Admission canonicalises a node's quantities: a malformed one cannot be stored.
        let allocatable = &obj["status"]["allocatable"];
        let allowed_pods = kgc_meta::quantity::Quantity::from_json(&allocatable["pods"])
            .map_or(0, |q| q.scaled_value(0));
        Some(Node {
            labels,
            taints,
            unschedulable: obj["spec"]["unschedulable"] == true,
            allocatable: Resources::from_list(allocatable).unwrap_or_default(),
            allowed_pods,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_node_not_ready_or_stopped_counts_as_tainted() {
        let node = |ready: &str, annotations: Value| {
            Node::view(&json!({
                "metadata": {"name": "n", "annotations": annotations},
                "status": {"conditions": [{"type": "Ready", "status": ready}],
                           "allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"}},
            }))
            .unwrap()
        };
        let ready = node("True", json!({}));
        assert!(ready.taints.is_empty());
        assert_eq!(
            (ready.allocatable.milli_cpu, ready.allowed_pods),
            (2000, 10)
        );
        assert_eq!(
            node("False", json!({})).taints,
            [Taint::new(NOT_READY, "NoSchedule")]
        );
        assert_eq!(
            node("Unknown", json!({})).taints,
            [Taint::new(UNREACHABLE, "NoSchedule")]
        );
        assert_eq!(
            node("True", json!({STOPPED: "true"})).taints,
            [Taint::new(UNREACHABLE, "NoSchedule")]
        );
    }
}
