//! The default profile's filters, in its order, each with upstream's reasons
//! (kubernetes/kubernetes pkg/scheduler/framework/plugins: nodeunschedulable,
//! tainttoleration, nodeaffinity, noderesources/fit.go, volumebinding), and the message of a pod
//! that fits nowhere (pkg/scheduler/framework/types.go `FitError.Error`, with the
//! DefaultPreemption PostFilter's part).

use std::collections::BTreeMap;

use crate::node::Node;
use crate::pod::Spec;
use crate::resources::Resources;
use crate::selector::{Term, terms_match};
use crate::taints::{Taint, Toleration, untolerated};

pub const ERR_UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const ERR_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_TOO_MANY_PODS: &str = "Too many pods";
pub const ERR_VOLUME_AFFINITY: &str = "node(s) had volume node affinity conflict";
const PREEMPTION_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// Why one node was filtered out: the failing plugin's reasons, and whether it is
/// `UnschedulableAndUnresolvable` (preemption cannot help).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reasons: Vec<String>,
    pub unresolvable: bool,
}

impl Rejection {
    fn unresolvable(reason: impl Into<String>) -> Self {
        Self {
            reasons: vec![reason.into()],
            unresolvable: true,
        }
    }
}

/// What the pods bound or assumed on a node hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    pub requested: Resources,
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
    pub pods: i64,
}

/// Runs the filters on one node; the first that fails decides, as the framework stops there.
/// `volume_terms` are the node affinities of the PersistentVolumes the pod's claims are bound to.
pub fn filter(
    pod: &Spec,
    name: &str,
    node: &Node,
    usage: &Usage,
    volume_terms: &[Vec<Term>],
) -> Result<(), Rejection> {
    if node.unschedulable {
        let taint = Taint::new("node.kubernetes.io/unschedulable", "NoSchedule");
        if !pod.tolerations.iter().any(|t| t.tolerates(&taint)) {
            return Err(Rejection::unresolvable(ERR_UNSCHEDULABLE));
        }
    }
    taint_toleration(&node.taints, &pod.tolerations)?;
    if !pod.affinity.matches(name, &node.labels) {
        return Err(Rejection::unresolvable(ERR_AFFINITY));
    }
    fit(pod, node, usage)?;
    if volume_terms
        .iter()
        .any(|terms| !terms_match(terms, name, &node.labels))
    {
        return Err(Rejection::unresolvable(ERR_VOLUME_AFFINITY));
    }
    Ok(())
}

fn taint_toleration(taints: &[Taint], tolerations: &[Toleration]) -> Result<(), Rejection> {
    match untolerated(taints, tolerations) {
        Some(t) => Err(Rejection::unresolvable(format!(
            "node(s) had untolerated taint {{{}: {}}}",
            t.key, t.value
        ))),
        None => Ok(()),
    }
}

/// NodeResourcesFit (`fitsRequest`): the pod count, then each requested resource against what
/// is left of the allocatable; unresolvable when the request exceeds the allocatable itself.
fn fit(pod: &Spec, node: &Node, usage: &Usage) -> Result<(), Rejection> {
    let mut out = Rejection {
        reasons: Vec::new(),
        unresolvable: false,
    };
    let mut check = |reason: String, want: i64, used: i64, capacity: i64| {
        if want > capacity - used {
            out.reasons.push(reason);
            out.unresolvable |= want > capacity;
        }
    };
    check(
        ERR_TOO_MANY_PODS.to_owned(),
        1,
        usage.pods,
        node.allowed_pods,
    );
    let want = &pod.requests.requests;
    let have = &node.allocatable;
    let used = &usage.requested;
    if !want.is_zero() {
        for (name, w, u, c) in [
            ("cpu", want.milli_cpu, used.milli_cpu, have.milli_cpu),
            ("memory", want.memory, used.memory, have.memory),
            (
                "ephemeral-storage",
                want.ephemeral_storage,
                used.ephemeral_storage,
                have.ephemeral_storage,
            ),
        ] {
            if w > 0 {
                check(format!("Insufficient {name}"), w, u, c);
            }
        }
        for (name, w) in &want.scalar {
            if *w > 0 {
                check(
                    format!("Insufficient {name}"),
                    *w,
                    used.scalar(name),
                    have.scalar(name),
                );
            }
        }
    }
    if out.reasons.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

/// `0/N nodes are available: …` with the sorted histogram of the nodes' reasons (or the
/// PreFilter's message, which stands for every node), then the preemption part.
pub fn fit_error(
    nodes: usize,
    prefilter: Option<&str>,
    rejections: &[Rejection],
    never_preempts: bool,
) -> String {
    let mut msg = format!("0/{nodes} nodes are available:");
    match prefilter {
        Some(m) => msg.push_str(&format!(" {m}.")),
        None => {
            let reasons = rejections.iter().flat_map(|r| r.reasons.iter().cloned());
            if let Some(h) = histogram(reasons) {
                msg.push_str(&format!(" {h}."));
            }
        }
    }
    let preemption = if never_preempts {
        "preemption: not eligible due to preemptionPolicy=Never.".to_owned()
    } else {
        // kgc never preempts: pods share the default priority, so upstream finds no victims
        // where preemption could help, and says where it cannot.
        let per_node: Vec<String> = match prefilter {
            Some(_) => vec![PREEMPTION_NOT_HELPFUL.to_owned(); nodes],
            None => rejections
                .iter()
                .map(|r| {
                    if r.unresolvable {
                        PREEMPTION_NOT_HELPFUL
                    } else {
                        NO_VICTIMS
                    }
                    .to_owned()
                })
                .collect(),
        };
        let h = histogram(per_node.into_iter()).unwrap_or_default();
        format!("preemption: 0/{nodes} nodes are available: {h}.")
    };
    msg.push_str(&format!(" {preemption}."));
    msg
}

/// `"<count> <reason>"` for each distinct reason, sorted as strings, joined by `, `.
fn histogram(reasons: impl Iterator<Item = String>) -> Option<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for r in reasons {
        *counts.entry(r).or_default() += 1;
    }
    let mut lines: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    lines.sort();
    (!lines.is_empty()).then(|| lines.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pod::Pod;
    use kgc_runtime::informer::View;

    fn node(v: serde_json::Value) -> Node {
        let mut obj = json!({
            "metadata": {"name": "n", "labels": {"zone": "a"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "allocatable": {"cpu": "1", "memory": "1Gi", "pods": "2"}},
        });
        if let (Some(o), Some(extra)) = (obj.as_object_mut(), v.as_object()) {
            o.extend(extra.clone());
        }
        Node::view(&obj).unwrap()
    }

    fn spec(v: serde_json::Value) -> Spec {
        let mut pod = json!({"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "c"}]}});
        if let (Some(o), Some(extra)) = (pod["spec"].as_object_mut(), v.as_object()) {
            o.extend(extra.clone());
        }
        (*Pod::view(&pod).unwrap().spec).clone()
    }

    fn reasons(r: Result<(), Rejection>) -> Vec<String> {
        r.err().map(|r| r.reasons).unwrap_or_default()
    }

    #[test]
    fn each_filter_says_why() {
        let free = Usage::default();
        let plain = spec(json!({}));
        assert_eq!(filter(&plain, "n", &node(json!({})), &free, &[]), Ok(()));
        let cordoned = node(json!({"spec": {"unschedulable": true}}));
        assert_eq!(
            reasons(filter(&plain, "n", &cordoned, &free, &[])),
            [ERR_UNSCHEDULABLE]
        );
        let tainted =
            node(json!({"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}));
        assert_eq!(
            reasons(filter(&plain, "n", &tainted, &free, &[])),
            ["node(s) had untolerated taint {k: v}"]
        );
        let tolerant = spec(json!({"tolerations": [{"key": "k", "operator": "Exists"}]}));
        assert_eq!(filter(&tolerant, "n", &tainted, &free, &[]), Ok(()));
        let elsewhere = spec(json!({"nodeSelector": {"zone": "b"}}));
        assert_eq!(
            reasons(filter(&elsewhere, "n", &node(json!({})), &free, &[])),
            [ERR_AFFINITY]
        );
        let big = spec(
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "100Mi", "example.com/gpu": "1"}}}]}),
        );
        let r = filter(&big, "n", &node(json!({})), &free, &[]).unwrap_err();
        assert_eq!(
            r.reasons,
            ["Insufficient cpu", "Insufficient example.com/gpu"]
        );
        assert!(r.unresolvable);
        let full = Usage {
            pods: 2,
            ..Usage::default()
        };
        let r = filter(&plain, "n", &node(json!({})), &full, &[]).unwrap_err();
        assert_eq!(
            (r.reasons, r.unresolvable),
            (vec![ERR_TOO_MANY_PODS.to_owned()], false)
        );
    }

    #[test]
    fn messages_as_upstream_prints_them() {
        let taint = Rejection::unresolvable("node(s) had untolerated taint {k: v}");
        let cpu = Rejection {
            reasons: vec!["Insufficient cpu".into()],
            unresolvable: false,
        };
        assert_eq!(
            fit_error(3, None, &[taint, cpu.clone(), cpu], false),
            "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu. \
             preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, \
             2 No preemption victims found for incoming pod.."
        );
        assert_eq!(
            fit_error(
                1,
                Some("persistentvolumeclaim \"data\" not found"),
                &[],
                false
            ),
            "0/1 nodes are available: persistentvolumeclaim \"data\" not found. \
             preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.."
        );
        assert_eq!(
            fit_error(1, None, &[Rejection::unresolvable(ERR_AFFINITY)], true),
            "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. \
             preemption: not eligible due to preemptionPolicy=Never.."
        );
    }
}
