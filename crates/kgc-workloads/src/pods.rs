//! What the workload controllers keep of a pod, and upstream's order of which pods to delete
//! first on scale-down (`kubernetes/kubernetes pkg/controller/controller_utils.go`,
//! `ActivePodsWithRanks`).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::Timestamp;
use kgc_runtime::informer::View;
use serde_json::Value;

/// The annotation that orders pods for deletion (upstream `core.PodDeletionCost`).
pub const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// A pod's controller reference (`ownerReferences[]` with `controller: true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// The fields a workload controller judges a pod by.
#[derive(Debug, Clone, PartialEq)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    pub controller: Option<ControllerRef>,
    pub deleting: bool,
    pub phase: String,
    pub node_name: String,
    /// The node the pod is bound to or, before it is, the one its required node affinity
    /// names by `metadata.name` (upstream `daemon/util.GetTargetNodeName`): where a DaemonSet
    /// pod belongs while it waits for the scheduler.
    pub target_node: String,
    /// Whether the Ready condition is True (upstream `IsPodReady`: its status alone).
    pub ready: bool,
    /// When the Ready condition last became True, if it is True and says so.
    pub ready_since: Option<Timestamp>,
    /// The most restarts of any of its containers.
    pub restarts: i64,
    pub created: Option<Timestamp>,
    pub deletion_cost: i64,
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

impl View for Pod {
    fn view(obj: &Value) -> Option<Self> {
        let m = &obj["metadata"];
        let controller = m["ownerReferences"].as_array().and_then(|refs| {
            refs.iter()
                .find(|r| r["controller"].as_bool() == Some(true))
                .map(|r| ControllerRef {
                    api_version: text(&r["apiVersion"]),
                    kind: text(&r["kind"]),
                    name: text(&r["name"]),
                    uid: text(&r["uid"]),
                })
        });
        let ready_condition = obj["status"]["conditions"].as_array().and_then(|cs| {
            cs.iter()
                .find(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        let ready_since =
            ready_condition.and_then(|c| c["lastTransitionTime"].as_str()?.parse().ok());
        let restarts = obj["status"]["containerStatuses"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c["restartCount"].as_i64())
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        Some(Self {
            namespace: text(&m["namespace"]),
            name: m["name"].as_str()?.to_owned(),
            uid: m["uid"].as_str()?.to_owned(),
            labels: m["labels"]
                .as_object()
                .map(|l| l.iter().map(|(k, v)| (k.clone(), text(v))).collect())
                .unwrap_or_default(),
            controller,
            deleting: !m["deletionTimestamp"].is_null(),
            phase: text(&obj["status"]["phase"]),
            node_name: text(&obj["spec"]["nodeName"]),
            target_node: target_node(&obj["spec"]),
            ready: ready_condition.is_some(),
            ready_since,
            restarts,
            created: m["creationTimestamp"].as_str().and_then(|t| t.parse().ok()),
            deletion_cost: m["annotations"][DELETION_COST]
                .as_str()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
        })
    }
}

/// `spec.nodeName`, else the single `metadata.name` a `matchFields` term of the required node
/// affinity allows.
fn target_node(spec: &Value) -> String {
    if let Some(n) = spec["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return n.to_owned();
    }
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["matchFields"].as_array().into_iter().flatten())
        .find(|f| {
            f["key"] == "metadata.name"
                && f["operator"] == "In"
                && f["values"].as_array().is_some_and(|v| v.len() == 1)
        })
        .map(|f| text(&f["values"][0]))
        .unwrap_or_default()
}

impl Pod {
    /// Neither finished nor being deleted (upstream `IsPodActive`).
    pub fn is_active(&self) -> bool {
        self.phase != "Succeeded" && self.phase != "Failed" && !self.deleting
    }

    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// Ready for at least `min_ready_seconds` at `now` (upstream `IsPodAvailable`): with no
    /// minimum a ready pod is available whether or not its condition says since when.
    pub fn is_available(&self, min_ready_seconds: i64, now: Timestamp) -> bool {
        self.ready
            && (min_ready_seconds <= 0
                || self
                    .ready_since
                    .is_some_and(|since| now.as_second() - since.as_second() >= min_ready_seconds))
    }

    fn phase_rank(&self) -> u8 {
        match self.phase.as_str() {
            "Pending" => 0,
            "Unknown" => 1,
            "Running" => 2,
            _ => 3,
        }
    }
}

/// Upstream's `ActivePodsWithRanks.Less`: whether `a` should be deleted before `b`, where a
/// pod's rank is how many related pods share its node.
pub fn delete_first(a: &Pod, rank_a: usize, b: &Pod, rank_b: usize) -> Ordering {
    let by = |x: bool, y: bool| y.cmp(&x);
    // 1. Unassigned before assigned.
    by(a.node_name.is_empty(), b.node_name.is_empty())
        // 2. Pending < Unknown < Running.
        .then_with(|| a.phase_rank().cmp(&b.phase_rank()))
        // 3. Not ready before ready.
        .then_with(|| a.is_ready().cmp(&b.is_ready()))
        // 4. Lower deletion cost first.
        .then_with(|| a.deletion_cost.cmp(&b.deletion_cost))
        // 5. Doubled up (more related pods on the node) first.
        .then_with(|| rank_b.cmp(&rank_a))
        // 6. Ready for less time first.
        .then_with(|| match (a.ready_since, b.ready_since) {
            (Some(x), Some(y)) => y.cmp(&x),
            _ => Ordering::Equal,
        })
        // 7. More restarts first.
        .then_with(|| b.restarts.cmp(&a.restarts))
        // 8. Newer first (no creation time first).
        .then_with(|| match (a.created, b.created) {
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => y.cmp(&x),
            (None, None) => Ordering::Equal,
        })
}

/// The `n` pods of `pods` to delete first; `related` are every active pod of the owner's
/// family, counted per node for the rank (upstream `getPodsToDelete`).
pub fn to_delete<'a>(pods: &[&'a Pod], related: &[&Pod], n: usize) -> Vec<&'a Pod> {
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for p in related {
        if !p.node_name.is_empty() {
            *per_node.entry(p.node_name.as_str()).or_default() += 1;
        }
    }
    let rank = |p: &Pod| {
        if p.node_name.is_empty() {
            0
        } else {
            per_node.get(p.node_name.as_str()).copied().unwrap_or(0)
        }
    };
    let mut ranked: Vec<&Pod> = pods.to_vec();
    ranked.sort_by(|a, b| delete_first(a, rank(a), b, rank(b)));
    ranked.truncate(n);
    ranked
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(name: &str, node: &str, phase: &str, ready: Option<&str>) -> Pod {
        let mut status = json!({"phase": phase});
        if let Some(t) = ready {
            status["conditions"] =
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": t}]);
        }
        Pod::view(&json!({
            "metadata": {"name": name, "namespace": "ns", "uid": name,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": node},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn unassigned_pending_and_unready_pods_go_first() {
        let running = pod("running", "n1", "Running", Some("2026-01-01T00:00:10Z"));
        let newer_ready = pod("newer", "n2", "Running", Some("2026-01-01T00:05:00Z"));
        let pending = pod("pending", "n1", "Pending", None);
        let unassigned = pod("unassigned", "", "Pending", None);
        let all = [&running, &newer_ready, &pending, &unassigned];
        let order: Vec<&str> = to_delete(&all, &all, 4)
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        // n1 holds two related pods, but phase and readiness come before the rank.
        assert_eq!(order, ["unassigned", "pending", "running", "newer"]);
        let order: Vec<&str> = to_delete(&[&running, &newer_ready], &[&running, &newer_ready], 1)
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(order, ["newer"], "ready for less time goes first");
    }

    /// Upstream `IsPodReady` reads the condition's status alone, and `IsPodAvailable` needs
    /// its `lastTransitionTime` only for a positive `minReadySeconds`.
    #[test]
    fn a_ready_condition_without_a_transition_time_is_ready() {
        let p = Pod::view(&json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "p"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .unwrap();
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        assert!(p.is_ready());
        assert!(p.is_available(0, now));
        assert!(!p.is_available(5, now));
    }

    #[test]
    fn finished_and_deleting_pods_are_not_active() {
        assert!(pod("a", "n", "Running", None).is_active());
        assert!(!pod("b", "n", "Succeeded", None).is_active());
        let mut c = pod("c", "n", "Running", None);
        c.deleting = true;
        assert!(!c.is_active());
    }
}
