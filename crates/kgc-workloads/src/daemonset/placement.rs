//! Where a DaemonSet's pods belong and what they look like (`kubernetes/kubernetes
//! pkg/controller/daemon/daemon_controller.go` `NodeShouldRunDaemonPod`, `podsShouldBeOnNode`;
//! `pkg/controller/daemon/util/daemonset_util.go`): a node is judged by the pod's node
//! selector, required node affinity and tolerations against the node's taints — the same
//! rules the scheduler applies, read with kgc-scheduler's own parsers so both agree — and a pod
//! is pinned to its node by a required node affinity on `metadata.name`, which the scheduler
//! then binds.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PodTemplateSpec, Toleration as TypedToleration,
};
use kgc_scheduler::node::Node;
use kgc_scheduler::selector::RequiredAffinity;
use kgc_scheduler::taints::{Toleration, untolerated};
use serde_json::Value;

use crate::pods::Pod;

/// The label with the template generation a pod was made from (upstream
/// `DaemonSetTemplateGenerationKey`).
pub const TEMPLATE_GENERATION: &str = "pod-template-generation";
/// The label with the hash of the revision a pod was made from (upstream
/// `DefaultDaemonSetUniqueLabelKey`).
pub const REVISION_HASH: &str = "controller-revision-hash";

/// The tolerations every daemon pod gets (upstream `AddOrUpdateDaemonPodTolerations`): it
/// stays on a node that is not ready or unreachable, and is placed on one under pressure or
/// cordoned — a node's daemons are what keep it going.
const DAEMON_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];
/// Added too for a pod on the host's network (upstream, the same function).
const HOST_NETWORK_TOLERATION: (&str, &str) =
    ("node.kubernetes.io/network-unavailable", "NoSchedule");

/// The template the DaemonSet's pods are made from (upstream `CreatePodTemplate`): its own,
/// with the daemon tolerations and the generation and revision-hash labels.
pub fn daemon_template(template: &PodTemplateSpec, generation: i64, hash: &str) -> PodTemplateSpec {
    let mut t = template.clone();
    let meta = t.metadata.get_or_insert_with(Default::default);
    let labels = meta.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(TEMPLATE_GENERATION.into(), generation.to_string());
    labels.insert(REVISION_HASH.into(), hash.into());
    if let Some(spec) = t.spec.as_mut() {
        let host_network = spec.host_network == Some(true);
        let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
        let extra = host_network.then_some(HOST_NETWORK_TOLERATION);
        for (key, effect) in DAEMON_TOLERATIONS.into_iter().chain(extra) {
            let wanted = TypedToleration {
                key: Some(key.into()),
                operator: Some("Exists".into()),
                effect: Some(effect.into()),
                ..TypedToleration::default()
            };
            if !tolerations.contains(&wanted) {
                tolerations.push(wanted);
            }
        }
    }
    t
}

/// Pins a pod's spec to `node` (upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`): the
/// required node affinity becomes the one term `metadata.name In [node]` — the node was judged
/// against the template's own affinity already.
pub fn pin_to_node(template: &mut PodTemplateSpec, node: &str) {
    let Some(spec) = template.spec.as_mut() else {
        return;
    };
    let required = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".into(),
                operator: "In".into(),
                values: Some(vec![node.into()]),
            }]),
            match_expressions: None,
        }],
    };
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default)
        .required_during_scheduling_ignored_during_execution = Some(required);
}

/// Whether a daemon pod should be placed on a node, and whether one there may stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub should_run: bool,
    pub should_continue_running: bool,
}

/// Upstream `NodeShouldRunDaemonPod` for the daemon template's `spec` (as JSON, with the daemon
/// tolerations): a node the template names otherwise, or whose labels or name its node
/// selector or required affinity reject, gets none and keeps none; a taint it does not
/// tolerate keeps new pods off, and evicts the running one only if its effect is NoExecute.
pub fn judge(spec: &Value, node_name: &str, node: &Node) -> Verdict {
    let no = Verdict {
        should_run: false,
        should_continue_running: false,
    };
    if spec["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty() && n != node_name)
    {
        return no;
    }
    if !RequiredAffinity::of(spec).matches(node_name, &node.labels) {
        return no;
    }
    let tolerations = Toleration::list(&spec["tolerations"]);
    if untolerated(&node.taints, &tolerations).is_none() {
        return Verdict {
            should_run: true,
            should_continue_running: true,
        };
    }
    let evicting = node
        .taints
        .iter()
        .any(|t| t.effect == "NoExecute" && !tolerations.iter().any(|tol| tol.tolerates(t)));
    Verdict {
        should_run: false,
        should_continue_running: !evicting,
    }
}

/// Made from the current template (upstream `IsPodUpdated`): the revision hash or the template
/// generation matches.
pub fn is_updated(pod: &Pod, hash: &str, generation: i64) -> bool {
    pod.labels.get(REVISION_HASH).map(String::as_str) == Some(hash)
        || pod.labels.get(TEMPLATE_GENERATION) == Some(&generation.to_string())
}

/// What to do on one node (upstream `podsShouldBeOnNode`).
#[derive(Debug, Default, PartialEq)]
pub struct NodeWork<'a> {
    /// The node needs a daemon pod.
    pub create: bool,
    /// Pods to delete now: extra ones, finished ones, ones that may not stay.
    pub delete: Vec<&'a Pod>,
    /// Failed pods, to delete once the node's back-off allows (upstream `FailedDaemonPod`).
    pub failed: Vec<&'a Pod>,
}

/// Upstream `podsShouldBeOnNode`: `pods` are the DaemonSet's on the node (deleting ones
/// included, so none is created before the old one is gone). With surge, an updated pod and
/// an old one may share a node while the rollout replaces one with the other; otherwise only
/// the oldest stays.
pub fn node_work<'a>(
    verdict: Verdict,
    pods: &[&'a Pod],
    surge: bool,
    hash: &str,
    generation: i64,
) -> NodeWork<'a> {
    let mut work = NodeWork::default();
    if verdict.should_run && pods.is_empty() {
        work.create = true;
    } else if verdict.should_continue_running {
        let mut running: Vec<&Pod> = Vec::new();
        for &p in pods.iter().filter(|p| !p.deleting) {
            match p.phase.as_str() {
                "Failed" => work.failed.push(p),
                "Succeeded" => work.delete.push(p),
                _ => running.push(p),
            }
        }
        running.sort_by_key(|p| p.created);
        let (mut kept_new, mut kept_old) = (false, false);
        for (i, p) in running.into_iter().enumerate() {
            let keep = if surge {
                let slot = if is_updated(p, hash, generation) {
                    &mut kept_new
                } else {
                    &mut kept_old
                };
                !std::mem::replace(slot, true)
            } else {
                i == 0
            };
            if !keep {
                work.delete.push(p);
            }
        }
    } else {
        work.delete = pods.iter().copied().filter(|p| !p.deleting).collect();
    }
    work
}

#[cfg(test)]
mod tests {
    use kgc_runtime::informer::View;
    use serde_json::json;

    use super::*;

    fn node(labels: Value, taints: Value) -> Node {
        Node::view(&json!({
            "metadata": {"name": "n1", "labels": labels},
            "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .unwrap()
    }

    fn spec(template: Value) -> Value {
        let t: PodTemplateSpec = serde_json::from_value(json!({"spec": template})).unwrap();
        serde_json::to_value(daemon_template(&t, 1, "h").spec).unwrap()
    }

    fn pod(name: &str, phase: &str, hash: &str, created: &str) -> Pod {
        Pod::view(&json!({
            "metadata": {"name": name, "uid": name, "creationTimestamp": created,
                         "labels": {REVISION_HASH: hash}},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    const RUN: Verdict = Verdict {
        should_run: true,
        should_continue_running: true,
    };

    #[test]
    fn the_template_gets_the_daemon_tolerations_and_labels_once() {
        let t: PodTemplateSpec = serde_json::from_value(json!({
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [], "hostNetwork": true},
        }))
        .unwrap();
        let d = daemon_template(&daemon_template(&t, 2, "h"), 2, "h");
        let labels = d.metadata.unwrap().labels.unwrap();
        assert_eq!(labels[TEMPLATE_GENERATION], "2");
        assert_eq!(labels[REVISION_HASH], "h");
        assert_eq!(labels["app"], "a");
        assert_eq!(d.spec.unwrap().tolerations.unwrap().len(), 7);
    }

    #[test]
    fn a_pod_is_pinned_by_node_affinity_on_its_name() {
        let mut t: PodTemplateSpec =
            serde_json::from_value(json!({"spec": {"containers": []}})).unwrap();
        pin_to_node(&mut t, "n2");
        let mut p = serde_json::to_value(&t).unwrap();
        p["metadata"] = json!({"name": "p", "uid": "u"});
        assert_eq!(Pod::view(&p).unwrap().target_node, "n2");
        let spec = serde_json::to_value(&t.spec).unwrap();
        assert!(RequiredAffinity::of(&spec).matches("n2", &BTreeMap::new()));
        assert!(!RequiredAffinity::of(&spec).matches("n1", &BTreeMap::new()));
    }

    #[test]
    fn nodes_are_judged_by_selector_affinity_and_taints() {
        let plain = node(json!({"disk": "ssd"}), json!([]));
        assert_eq!(judge(&spec(json!({})), "n1", &plain), RUN);
        let hdd = spec(json!({"nodeSelector": {"disk": "hdd"}}));
        assert!(!judge(&hdd, "n1", &plain).should_continue_running);
        let other = spec(json!({"nodeName": "n2"}));
        assert!(!judge(&other, "n1", &plain).should_run);

        let no_schedule = node(json!({}), json!([{"key": "k", "effect": "NoSchedule"}]));
        let v = judge(&spec(json!({})), "n1", &no_schedule);
        assert!(!v.should_run && v.should_continue_running);
        let no_execute = node(json!({}), json!([{"key": "k", "effect": "NoExecute"}]));
        let v = judge(&spec(json!({})), "n1", &no_execute);
        assert!(!v.should_run && !v.should_continue_running);
        let tolerant = spec(json!({"tolerations": [{"key": "k", "operator": "Exists"}]}));
        assert_eq!(judge(&tolerant, "n1", &no_execute), RUN);
        // Cordoned: daemon pods tolerate it.
        let cordoned = node(
            json!({}),
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
        );
        assert_eq!(judge(&spec(json!({})), "n1", &cordoned), RUN);
    }

    #[test]
    fn one_pod_per_node_failed_ones_backed_off_and_surge_keeps_one_of_each() {
        let old1 = pod("old1", "Running", "old", "2026-01-01T00:00:00Z");
        let old2 = pod("old2", "Running", "old", "2026-01-01T00:01:00Z");
        let new1 = pod("new1", "Running", "h", "2026-01-01T00:02:00Z");
        let failed = pod("failed", "Failed", "h", "2026-01-01T00:03:00Z");
        assert!(node_work(RUN, &[], false, "h", 1).create);
        let w = node_work(RUN, &[&old2, &old1, &new1, &failed], false, "h", 1);
        assert!(!w.create);
        let names = |v: &[&Pod]| v.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&w.delete), ["old2", "new1"]);
        assert_eq!(names(&w.failed), ["failed"]);
        let w = node_work(RUN, &[&old2, &old1, &new1], true, "h", 1);
        assert_eq!(names(&w.delete), ["old2"]);
        let gone = Verdict {
            should_run: false,
            should_continue_running: false,
        };
        assert_eq!(
            names(&node_work(gone, &[&old1], false, "h", 1).delete),
            ["old1"]
        );
    }
}
